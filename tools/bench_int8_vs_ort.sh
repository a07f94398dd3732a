#!/usr/bin/env bash
# int8 speed side by side (docs/accuracy.md, "int8 speed against ONNX Runtime"). Run by hand, after `make zoo` has
# exported the models into DIR and ONNX Runtime is installed into .bench/ (see tools/bench_vs_ort.sh):
#
#   tools/bench_int8_vs_ort.sh [--dir /tmp/npuc_tv] [--runs 20] [--rounds 3] [NAME ...]
#                                                        (default: resnet50 mobilenet_v2 googlenet squeezenet1_1)
#
# Per model: translate for generic-int8 on 8 calibration samples (as tools/survey_int8.sh) with --save-qdq-onnx, then
# in one run, ROUNDS times in turn: ONNX Runtime on the float model (fp32) and on the QDQ model (its int8 path), and
# npuc's package in fast mode at 1 and 2 threads; then npuc --exact at 1 thread once. Each line gives a median and a
# min in ms. A last line per model takes each peer's best median over the rounds (this VM's speed drifts by tens of
# per cent over seconds; interleaved rounds let both peers meet the same drift) and gives npuc's ratio to ORT fp32.
set -u -o pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NPUC="$ROOT/build/bin/npuc"
DIR=/tmp/npuc_tv
RUNS=20
ROUNDS=3
NAMES=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) DIR="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
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
  : >"$OUT/lines"
  for ((round = 1; round <= ROUNDS; round++)); do
    node "$ROOT/tools/ort_bench.mjs" --threads 1,2 --runs "$RUNS" --warmup 3 --module "$ROOT/.bench/node_modules/onnxruntime-node" \
         "$DIR/$m.onnx" "$OUT/$m/${m}_qdq.onnx" 2>&1 | grep ORT | tee -a "$OUT/lines"
    for t in 1 2; do
      echo "npuc-int8-fast $m $t $("$NPUC" bench "$OUT/$m" --runs "$RUNS" -t $t 2>&1 | grep -E 'median|min:' | tr '\n' ' ')" | tee -a "$OUT/lines"
    done
  done
  echo "npuc-int8-exact $m 1 $("$NPUC" bench "$OUT/$m" --runs 3 --warmup 1 -t 1 --exact 2>&1 | grep -E 'median|min:' | tr '\n' ' ')"
  awk -v m="$m" '
    $1 == "ORT" && $2 == m { if (!(($3) in o) || $4 < o[$3]) o[$3] = $4 }
    $1 == "ORT" && $2 == m "_qdq" { if (!(($3) in q) || $4 < q[$3]) q[$3] = $4 }
    $1 == "npuc-int8-fast" { if (!(($3) in n) || $5 < n[$3]) n[$3] = $5 }
    END { printf "best %s: ORT fp32 %.2f / %.2f, ORT int8 %.2f / %.2f, npuc int8 %.2f / %.2f ms (1t / 2t): %.2fx / %.2fx ORT fp32\n",
                 m, o[1], o[2], q[1], q[2], n[1], n[2], o[1] / n[1], o[2] / n[2] }' "$OUT/lines"
done
