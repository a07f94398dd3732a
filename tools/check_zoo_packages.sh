#!/usr/bin/env bash
# The simulator acceptance checks over the exported model zoo (models/zoo, made by tools/export_models.py; not part
# of `make test` because the zoo needs python3-torch to create). For each model and target (generic, drpai):
# translate, simulate in --exact and fast modes at 1 and 2 threads each, compare the raw output
# bytes of the four runs (must be identical), and compare the float outputs with the reference engine (generic:
# max error relative to the output's magnitude; drpai: cosine). For drpai it also prints the model's own
# sensitivity to float16 storage, on the reference engine (everything else float32): the cosine between its outputs
# and those for the input rounded to float16, and for the optimized model (-SaveOptOnnx: BatchNorm folded in float32)
# with its Conv / Gemm weights rounded to float16, biases float32 — the package stores the input and weights so, and
# rounds every layer's output too. Needs /usr/bin/python3 with numpy and onnx.
#   tools/check_zoo_packages.sh [build/bin/npuc]
set -euo pipefail
npuc=${1:-build/bin/npuc}
zoo=models/zoo
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-14s %-8s %-22s %s\n' model target "exact == fast 1T/2T" "vs reference engine"
for onnx in "$zoo"/*.onnx; do
  m=$(basename "$onnx" .onnx)
  in="$zoo/${m}_input.npy"
  "$npuc" run "$onnx" --input "input=$in" --output-dir "$tmp/ref_$m" >/dev/null
  /usr/bin/python3 -c 'import sys, numpy as np; np.save(sys.argv[2], np.load(sys.argv[1]).astype(np.float16).astype(np.float32))' \
    "$in" "$tmp/in16_$m.npy"
  "$npuc" run "$onnx" --input "input=$tmp/in16_$m.npy" --output-dir "$tmp/ref16_$m" >/dev/null
  for t in generic drpai; do
    opt=()
    [ "$t" = drpai ] && opt=(-SaveOptOnnx)  # the optimized model, for the weights-alone run below
    "$npuc" translate "$m" -onnx "$onnx" --target "$t" --out "$tmp/$t" "${opt[@]}" >/dev/null
    pkg="$tmp/$t/$m"
    if [ "$t" = drpai ]; then
      /usr/bin/python3 - "$pkg/${m}_opt.onnx" "$tmp/w16_$m.onnx" <<'PY'
import sys
import numpy as np
import onnx
from onnx import numpy_helper
model = onnx.load(sys.argv[1])
weights = {n.input[1] for n in model.graph.node if n.op_type in ("Conv", "Gemm", "MatMul") and len(n.input) > 1}
for init in model.graph.initializer:
    if init.name in weights:
        a = numpy_helper.to_array(init)
        init.CopyFrom(numpy_helper.from_array(a.astype(np.float16).astype(np.float32), init.name))
onnx.save(model, sys.argv[2])
PY
      "$npuc" run "$tmp/w16_$m.onnx" --input "input=$in" --output-dir "$tmp/w16_$m" >/dev/null
    fi
    "$npuc" simulate "$pkg" --input "input=$in" -o "$tmp/e_${m}_$t" --exact >/dev/null
    "$npuc" simulate "$pkg" --input "input=$in" -o "$tmp/e2_${m}_$t" --exact -t 2 >/dev/null
    "$npuc" simulate "$pkg" --input "input=$in" -o "$tmp/f1_${m}_$t" -t 1 >/dev/null
    "$npuc" simulate "$pkg" --input "input=$in" -o "$tmp/f2_${m}_$t" -t 2 >/dev/null
    same=identical
    for f in "$tmp/e_${m}_$t"/*.npy; do
      b=$(basename "$f")
      cmp -s "$f" "$tmp/e2_${m}_$t/$b" && cmp -s "$f" "$tmp/f1_${m}_$t/$b" && cmp -s "$f" "$tmp/f2_${m}_$t/$b" ||
        same=DIFFERENT
    done
    cmpres=$(/usr/bin/python3 - "$tmp/ref_$m" "$tmp/e_${m}_$t" "$t" "$tmp/ref16_$m" "$tmp/w16_$m" <<'PY'
import glob, os, sys
import numpy as np
ref, sim, target, ref16, w16 = sys.argv[1:6]
cosine = lambda a, b: float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
out = []
for f in sorted(glob.glob(os.path.join(ref, "*.npy"))):
    r = np.load(f).astype(np.float64).ravel()
    s = np.load(os.path.join(sim, os.path.basename(f))).astype(np.float64).ravel()
    rel = np.abs(s - r).max() / max(np.abs(r).max(), 1e-30)
    line = f"max rel err {rel:.2e}, cosine {cosine(s, r):.7f}"
    if target == "drpai":
        r16 = np.load(os.path.join(ref16, os.path.basename(f))).astype(np.float64).ravel()
        w = np.load(os.path.join(w16, os.path.basename(f))).astype(np.float64).ravel()
        line += f" (float16 input alone {cosine(r16, r):.7f}, weights alone {cosine(w, r):.7f})"
    out.append(line)
print("; ".join(out))
PY
)
    printf '%-14s %-8s %-22s %s\n' "$m" "$t" "$same" "$cmpres"
  done
done
