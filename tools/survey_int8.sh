#!/usr/bin/env bash
# int8-affine on the torchvision zoo (seeded weights; docs/accuracy.md, "int8 on the zoo"). Run by hand, after
# `make zoo` (tools/survey_torchvision.py) has exported the models and their test inputs into DIR:
#
#   tools/survey_int8.sh [--npuc build/bin/npuc] [--dir /tmp/npuc_tv] [--out /tmp/npuc_int8] [NAME ...]
#
# Per model: 8 calibration samples (the model's own test input, then 7 variants x/2 + N(0, 1/2), seeded), translate
# for generic-int8, then `npuc compare` on the test input: the package's output cosine against the float model, the
# lowest layer cosine and the first sharp SNR drop. One line per model in OUT/results.txt.
set -u -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NPUC="$ROOT/build/bin/npuc"
DIR=/tmp/npuc_tv
OUT=/tmp/npuc_int8
NAMES=()
while [ $# -gt 0 ]; do
  case "$1" in
    --npuc) NPUC="$2"; shift 2 ;;
    --dir) DIR="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) NAMES+=("$1"); shift ;;
  esac
done
mkdir -p "$OUT"
: >"$OUT/results.txt"
if [ ${#NAMES[@]} -eq 0 ]; then
  for f in "$DIR"/*.onnx; do NAMES+=("$(basename "$f" .onnx)"); done
fi
for m in "${NAMES[@]}"; do
  f="$DIR/$m.onnx"
  [ -f "$DIR/${m}_in.npy" ] || continue
  /usr/bin/python3 - "$DIR/${m}_in.npy" "$OUT/cal_$m.npy" <<'PY'
import sys
import numpy as np
x = np.load(sys.argv[1])
rng = np.random.default_rng(0)
np.save(sys.argv[2], np.concatenate([x] + [(x * 0.5 + rng.normal(0, 0.5, x.shape)).astype(np.float32) for _ in range(7)]))
PY
  name=$(/usr/bin/python3 -c "import onnx, sys; print(onnx.load(sys.argv[1], load_external_data=False).graph.input[0].name)" "$f")
  if "$NPUC" translate "$m" -onnx "$f" --target generic-int8 --calib "$name=$OUT/cal_$m.npy" --out "$OUT/pk" >"$OUT/tr_$m.log" 2>&1; then
    "$NPUC" compare "$f" "$OUT/pk/$m" --input "$name=$DIR/${m}_in.npy" -o "$OUT/cmp_$m" >"$OUT/cmp_$m.log" 2>&1
    last=$(grep -E "^ +[0-9]+ " "$OUT/cmp_$m.log" | grep -v "no matching" | tail -1 | awk '{print $(NF-1)}')
    echo "$m output-cosine=$last :: $(grep -E 'layers matched' "$OUT/cmp_$m.log")" >>"$OUT/results.txt"
  else
    echo "$m translate-FAILED: $(grep -iE 'error|unsupported' "$OUT/tr_$m.log" | head -2 | tr '\n' ' ')" >>"$OUT/results.txt"
  fi
  rm -rf "$OUT/pk/$m"
done
cat "$OUT/results.txt"
