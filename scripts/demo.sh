#!/usr/bin/env bash
# make demo: the sample digits CNN over its held-out test split on the reference engine.
set -euo pipefail
npuc=${1:-build/bin/npuc}
model=models/digits/digits_cnn.onnx
echo "== npuc demo: digits CNN (trained on scikit-learn's handwritten digits), reference engine =="
"$npuc" inspect "$model" | tail -n 7
echo
"$npuc" eval "$model" --input input=models/digits/test_x.npy --labels models/digits/test_y.npy --batch 64
echo "(accuracy recorded at training time: $(grep -o '"test_accuracy": [0-9.]*' models/digits/reference.json | cut -d' ' -f2))"
