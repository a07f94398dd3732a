#!/usr/bin/env bash
# The simulator acceptance checks over the exported model zoo (models/zoo, made by tools/export_models.py; not part
# of `make test` because the zoo needs python3-torch to create). For each model and target (generic, drpai):
# translate, simulate in --exact and fast modes at 1 and 2 threads each, compare the raw output
# bytes of the four runs (must be identical), and compare the float outputs with the reference engine (generic:
# max error relative to the output's magnitude; drpai: cosine). Needs /usr/bin/python3 with numpy.
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
  for t in generic drpai; do
    "$npuc" translate "$m" -onnx "$onnx" --target "$t" --out "$tmp/$t" >/dev/null
    pkg="$tmp/$t/$m"
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
    cmpres=$(/usr/bin/python3 - "$tmp/ref_$m" "$tmp/e_${m}_$t" <<'PY'
import glob, os, sys
import numpy as np
ref, sim = sys.argv[1], sys.argv[2]
out = []
for f in sorted(glob.glob(os.path.join(ref, "*.npy"))):
    r = np.load(f).astype(np.float64).ravel()
    s = np.load(os.path.join(sim, os.path.basename(f))).astype(np.float64).ravel()
    rel = np.abs(s - r).max() / max(np.abs(r).max(), 1e-30)
    cos = float(s @ r / (np.linalg.norm(s) * np.linalg.norm(r)))
    out.append(f"max rel err {rel:.2e}, cosine {cos:.7f}")
print("; ".join(out))
PY
)
    printf '%-14s %-8s %-22s %s\n' "$m" "$t" "$same" "$cmpres"
  done
done
