#!/usr/bin/env bash
# make demo: the sample digits CNN over its held-out test split — float on the reference engine, then translated
# for the DRP-AI target (fp16 object package) and simulated sample by sample on the host.
set -euo pipefail
npuc=${1:-build/bin/npuc}
model=models/digits/digits_cnn.onnx
out=build/demo
echo "== npuc demo: digits CNN (trained on scikit-learn's handwritten digits) =="
"$npuc" inspect "$model" | tail -n 7
echo
echo "-- float32, reference engine"
"$npuc" eval "$model" --input input=models/digits/test_x.npy --labels models/digits/test_y.npy --batch 64 | tee "$out.float.txt"
echo "(accuracy recorded at training time: $(grep -o '"test_accuracy": [0-9.]*' models/digits/reference.json | cut -d' ' -f2))"
echo
echo "-- translate for drpai (fp16 object package)"
"$npuc" translate digits -onnx "$model" --target drpai --out "$out"
echo
echo "-- the package on the simulator (fp16 numerics, bit-exact)"
"$npuc" eval "$out/digits" --input input=models/digits/test_x.npy --labels models/digits/test_y.npy | tee "$out.pkg.txt"
f=$(grep '^accuracy' "$out.float.txt" | grep -o '[0-9.]*')
p=$(grep '^accuracy' "$out.pkg.txt" | grep -o '[0-9.]*')
echo
echo "accuracy: float32 engine $f %, drpai fp16 package $p % (difference $(awk -v a="$f" -v b="$p" 'BEGIN{d=a-b; if(d<0)d=-d; printf "%.2f", d}') points)"
