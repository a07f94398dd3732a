#!/usr/bin/env bash
# The simulator acceptance checks over the exported model zoo (models/zoo, made by tools/export_models.py; not part
# of `make test` because the zoo needs python3-torch to create). For each model and target (generic, drpai, and
# drpai with --calib: the fp16 bias correction measured on 4 seeded standard-normal calibration samples, the zoo's
# input distribution, other samples than the evaluated input): translate, simulate in --exact and fast modes at 1
# and 2 threads each, compare the raw output bytes of the four runs (must be identical), and compare the float
# outputs with the reference engine (generic: max error relative to the output's magnitude; drpai: cosine). For
# drpai it also prints what float16 storage itself costs the model, as cosines of float32 runs of the reference
# engine that round one thing to float16 the way the package stores it (tools/fp16_sensitivity.py): the input
# alone; the Conv / Gemm weights alone (of the optimized model, -SaveOptOnnx: BatchNorm folded in float32, biases
# float32); the input and every layer output (weights exact) — the package's storage of activations, which no
# choice of weights or biases changes. Needs /usr/bin/python3 with numpy and onnx.
#   tools/check_zoo_packages.sh [build/bin/npuc]
set -euo pipefail
npuc=${1:-build/bin/npuc}
zoo=models/zoo
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-14s %-12s %-22s %s\n' model target "exact == fast 1T/2T" "vs reference engine"
for onnx in "$zoo"/*.onnx; do
  m=$(basename "$onnx" .onnx)
  in="$zoo/${m}_input.npy"
  "$npuc" run "$onnx" --input "input=$in" --output-dir "$tmp/ref_$m" >/dev/null
  /usr/bin/python3 -c 'import sys, numpy as np; np.save(sys.argv[2], np.load(sys.argv[1]).astype(np.float16).astype(np.float32))' \
    "$in" "$tmp/in16_$m.npy"
  "$npuc" run "$onnx" --input "input=$tmp/in16_$m.npy" --output-dir "$tmp/ref16_$m" >/dev/null
  /usr/bin/python3 -c 'import sys, numpy as np; np.save(sys.argv[2], np.random.default_rng(1).standard_normal((4,) + np.load(sys.argv[1]).shape[1:]).astype(np.float32))' \
    "$in" "$tmp/cal_$m.npy"
  for t in generic drpai drpai_calib; do
    opt=(--target "${t%_calib}")
    [ "$t" = drpai ] && opt+=(-SaveOptOnnx)  # the optimized model, for the float16 sensitivity runs below
    [ "$t" = drpai_calib ] && opt+=(--calib "input=$tmp/cal_$m.npy")
    "$npuc" translate "$m" -onnx "$onnx" --out "$tmp/$t" "${opt[@]}" >/dev/null
    pkg="$tmp/$t/$m"
    if [ "$t" = drpai ]; then
      /usr/bin/python3 tools/fp16_sensitivity.py weights "$pkg/${m}_opt.onnx" "$tmp/w16_$m.onnx"
      /usr/bin/python3 tools/fp16_sensitivity.py outputs "$pkg/${m}_opt.onnx" "$tmp/o16_$m.onnx"
      "$npuc" run "$tmp/w16_$m.onnx" --input "input=$in" --output-dir "$tmp/w16_$m" >/dev/null
      "$npuc" run "$tmp/o16_$m.onnx" --input "input=$tmp/in16_$m.npy" --output-dir "$tmp/o16_$m" >/dev/null
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
    cmpres=$(/usr/bin/python3 - "$tmp/ref_$m" "$tmp/e_${m}_$t" "$t" "$tmp/ref16_$m" "$tmp/w16_$m" "$tmp/o16_$m" <<'PY'
import glob, os, sys
import numpy as np
ref, sim, target, ref16, w16, o16 = sys.argv[1:7]
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
        o = np.load(os.path.join(o16, os.path.basename(f))).astype(np.float64).ravel()
        line += (f" (float16 input alone {cosine(r16, r):.7f}, weights alone {cosine(w, r):.7f},"
                 f" input and layer outputs {cosine(o, r):.7f})")
    out.append(line)
print("; ".join(out))
PY
)
    printf '%-14s %-12s %-22s %s\n' "$m" "$t" "$same" "$cmpres"
  done
done
