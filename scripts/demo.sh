#!/usr/bin/env bash
# make demo: the sample digits CNN over its held-out test split — float on the reference engine, then translated
# for the DRP-AI target (fp16 object package) and simulated sample by sample on the host; then the same model
# behind a YUY2 camera pipeline (pre/post-processing on the device) with an address map, fed a frame made from a
# picture of a test digit.
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

echo
echo "== the camera pipeline: YUY2 frame in, probabilities out, pre/post-processing on the device =="
demo=models/digits/demo
"$npuc" translate digits_cam -onnx "$model" --target drpai -prepost "$demo/prepost_yuy2.yaml" -addr "$demo/addrmap.yaml" --out "$out" \
  >"$out.cam.txt"
grep -E "^(estimated time|package):" "$out.cam.txt"
echo "files written to $out/digits_cam:"
ls "$out/digits_cam" | awk '{printf "  %-38s", $0; if (NR % 3 == 0) print ""} END {if (NR % 3) print ""}'
echo "address map ($out/digits_cam/digits_cam_addrmap_intm.txt):"
sed 's/^/  /' "$out/digits_cam/digits_cam_addrmap_intm.txt" | head -n 20
echo "what the translator did with the pre/post-processing ($out/digits_cam/digits_cam_prepost_opt.yaml):"
grep '^#' "$out/digits_cam/digits_cam_prepost_opt.yaml" | tail -n +3
echo
echo "-- $demo/digit.png (test sample 0, label $(cat "$demo/digit_label.txt")) made into a 64x48 YUY2 frame and run"
"$npuc" simulate "$out/digits_cam" --input cam="$demo/digit.png" -o "$out/cam_out" --top 3
