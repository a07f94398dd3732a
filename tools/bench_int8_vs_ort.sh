#!/usr/bin/env bash
# int8 speed side by side (docs/accuracy.md, "int8 speed against ONNX Runtime"). Run by hand, after `make zoo` has
# exported the models into DIR and ONNX Runtime is installed into .bench/ (see tools/bench_vs_ort.sh):
#
#   tools/bench_int8_vs_ort.sh [--dir /tmp/npuc_tv] [--runs 20] [NAME ...]   (default: resnet50 mobilenet_v2 googlenet squeezenet1_1)
#
# Per model: translate for generic-int8 on 8 calibration samples (as tools/survey_int8.sh) with --save-qdq-onnx, then
# in one run ONNX Runtime on the float model (fp32) and on the QDQ model (its int8 path), and npuc's package in fast
# mode at 1 and 2 threads and in --exact mode at 1 thread. Median and min, in ms.
set -u -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NPUC="$ROOT/build/bin/npuc"
DIR=/tmp/npuc_tv
RUNS=20
NAMES=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) DIR="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    *) NAMES+=("$1"); shift ;;
  esac
done
[ ${#NAMES[@]} -gt 0 ] || NAMES=(resnet50 mobilenet_v2 googlenet squeezenet1_1)
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
for m in "${NAMES[@]}"; do
  /usr/bin/python3 - "$DIR/${m}_in.npy" "$OUT/cal.npy" <<'PY'
import sys
import numpy as np
x = np.load(sys.argv[1])
rng = np.random.default_rng(0)
np.save(sys.argv[2], np.concatenate([x] + [(x * 0.5 + rng.normal(0, 0.5, x.shape)).astype(np.float32) for _ in range(7)]))
PY
  "$NPUC" translate "$m" -onnx "$DIR/$m.onnx" --target generic-int8 --calib "input=$OUT/cal.npy" --save-qdq-onnx --out "$OUT" >/dev/null || { echo "$m: translate failed"; continue; }
  node "$ROOT/tools/ort_bench.mjs" --threads 1,2 --runs "$RUNS" --warmup 3 --module "$ROOT/.bench/node_modules/onnxruntime-node" \
       "$DIR/$m.onnx" "$OUT/$m/${m}_qdq.onnx" 2>&1 | grep ORT
  for t in 1 2; do
    echo "npuc-int8-fast $m $t $("$NPUC" bench "$OUT/$m" --runs "$RUNS" -t $t 2>&1 | grep -E 'median|min:' | tr '\n' ' ')"
  done
  echo "npuc-int8-exact $m 1 $("$NPUC" bench "$OUT/$m" --runs 3 --warmup 1 -t 1 --exact 2>&1 | grep -E 'median|min:' | tr '\n' ' ')"
done
