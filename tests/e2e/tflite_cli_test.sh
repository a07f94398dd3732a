#!/usr/bin/env bash
# End-to-end checks of TensorFlow Lite models through the CLI (docs/frontends.md, "TensorFlow Lite"): inspect, run,
# check and translate take a .tflite file (detected by its content); a generic package computes run's outputs bit
# for bit; a quantized model's generic-int8 package keeps its own quantization and equals Arm NN's outputs within
# one code; bad input -> one clear error, exit status 2.
source "$(dirname "$0")/lib.sh"

d=$src/tests/data/tflite
net=$d/mobilenet
if "$npuc" inspect "$net/model.tflite" >"$tmp/inspect.out" &&
   grep -q "input  input : float32 1x16x16x3" "$tmp/inspect.out" && grep -q "output prob : float32 1x10" "$tmp/inspect.out"
then ok "inspect model.tflite: the model's own NHWC input"; else bad "inspect: $(tail -3 "$tmp/inspect.out")"; fi
n_t=$(grep -c " Transpose " "$tmp/inspect.out")
if [ "$n_t" -le 2 ]; then ok "a MobileNet-shaped model keeps $n_t boundary Transpose(s)"; else bad "$n_t Transposes"; fi

# (npuc_tflite_test compares the numbers with Arm NN's.)
if "$npuc" run "$net/model.tflite" --input "input=$net/input_input.npy" --output-dir "$tmp/run" >/dev/null &&
   [ -s "$tmp/run/prob.npy" ]; then ok "run model.tflite writes prob.npy"; else bad "run did not write prob.npy"; fi

if "$npuc" check "$net/model.tflite" --target generic --no-report >/dev/null; then ok "check generic -> 0"
else bad "check generic failed"; fi

if "$npuc" translate mb -tflite "$net/model.tflite" --target generic --out "$tmp/tr" >"$tmp/tr.log" 2>&1; then
  if "$npuc" simulate "$tmp/tr/mb" --input "input=$net/input_input.npy" -o "$tmp/sim" >/dev/null 2>&1 &&
     cmp -s "$tmp/sim/prob.npy" "$tmp/run/prob.npy"; then ok "translate: the generic package computes run's outputs bit for bit"
  else bad "translate: simulate differs from run"; fi
else bad "translate: $(tail -2 "$tmp/tr.log")"; fi
if "$npuc" compare "$net/model.tflite" "$tmp/tr/mb" -o "$tmp/cmp" >"$tmp/cmp.log" 2>&1 &&
   grep -q "layers matched; lowest cosine 1.0000000" "$tmp/cmp.log"; then ok "compare model.tflite PACKAGE"
else bad "compare: $(tail -2 "$tmp/cmp.log")"; fi

if "$npuc" quantize "$net/model.tflite" --calib "input=$net/input_input.npy" -o "$tmp/q.onnx" >/dev/null 2>&1 &&
   "$npuc" inspect "$tmp/q.onnx" >"$tmp/q.txt" && grep -q QuantizeLinear "$tmp/q.txt"; then ok "quantize model.tflite writes a QDQ model"
else bad "quantize model.tflite"; fi

# The int8 model: generic-int8 without --calib (its own scales), simulated on its int8 input.
q=$d/quant_int8
if "$npuc" translate q8 -tflite "$q/model.tflite" --target generic-int8 --out "$tmp/trq" >"$tmp/trq.log" 2>&1 &&
   "$npuc" simulate "$tmp/trq/q8" --input "input=$q/input_input.npy" -o "$tmp/simq" >/dev/null 2>&1 &&
   [ -s "$tmp/simq/logits.npy" ]; then ok "translate generic-int8 of the int8 model, no calibration"
else bad "translate generic-int8: $(tail -3 "$tmp/trq.log")"; fi
if grep -q "Conv+Clip | mac" "$tmp/trq/q8/q8_summary.md" 2>/dev/null; then ok "its convolution is an integer layer"
else bad "no integer convolution in the int8 package"; fi
if /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  if /usr/bin/python3 - "$tmp/simq" "$q" <<'PY'
import sys, numpy as np
sim, ref = sys.argv[1], sys.argv[2]
worst = 0
for n in ["conv", "add", "logits"]:
    a, b = np.load(f"{sim}/{n}.npy").astype(int), np.load(f"{ref}/output_{n}.npy").astype(int)
    worst = max(worst, int(np.abs(a - b).max()))
    print(f"  {n}: {(a == b).sum()} of {a.size} codes equal Arm NN's")
sys.exit(0 if worst <= 1 else 1)
PY
  then ok "the int8 package equals Arm NN within one code"; else bad "the int8 package is further than one code from Arm NN"; fi
fi

expect_error 2 "not a valid TensorFlow Lite model" -- "$npuc" inspect "$d/bad/truncated.tflite"
expect_error 2 "operator 1 (LSTM): LSTM is not an operator npuc imports" -- "$npuc" inspect "$d/bad/unknown_op.tflite"
expect_error 2 "tensor index 99 is out of range" -- "$npuc" inspect "$d/bad/tensor_index.tflite"

# tidl-import modelType 3 (TIDL's TensorFlow Lite): the guide's sample configuration on the TFLite model translates for
# tidl, the input's size keys read NHWC; another extension for modelType 3 is refused naming the key.
mkdir -p "$tmp/ti"
sed -e 's|^modelType .*|modelType = 3|' -e "s|^inputNetFile .*|inputNetFile = \"$net/model.tflite\"|" -e '/^inputParamsFile/d' \
    -e "s|^sampleInData .*|sampleInData = \"$net/input_input.npy\"|" -e '/^rawSampleInData/d' -e '/^preProcType/d' \
    -e '/^inWidth/d' -e '/^inHeight/d' -e '/^inNumChannels/d' \
    -e "s|^outputNetFile .*|outputNetFile = \"$tmp/ti/tidl_net_mn.bin\"|" "$src/tests/data/tidl/tidl_import_j11_v2.txt" >"$tmp/ti/import.txt"
if "$npuc" tidl-import "$tmp/ti/import.txt" >"$tmp/ti/out.txt" 2>&1 && grep -q "modelType          = 3            TensorFlow Lite" "$tmp/ti/out.txt" &&
   grep -q '"numerics": "int8-pow2"' "$tmp/ti/tidl_net_mn/manifest.json"; then ok "tidl-import modelType 3: the guide's sample on a TFLite model"
else bad "tidl-import modelType 3: $(tail -5 "$tmp/ti/out.txt")"; fi
printf 'inWidth = 16\ninHeight = 16\ninNumChannels = 3\n' >>"$tmp/ti/import.txt"
if "$npuc" tidl-import "$tmp/ti/import.txt" --dry-run >"$tmp/ti/dry.txt" 2>&1 && ! grep -q "input-shape" "$tmp/ti/dry.txt"; then
  ok "tidl-import modelType 3: inWidth / inHeight / inNumChannels read as the model's NHWC input"
else bad "tidl-import modelType 3 sizes: $(tail -3 "$tmp/ti/dry.txt")"; fi
sed -e "s|^inputNetFile .*|inputNetFile = \"$d/../tf/mobilenet/model.pb\"|" "$tmp/ti/import.txt" >"$tmp/ti/wrong.txt"
expect_error 2 "is not a .tflite file (modelType 3 is TensorFlow Lite)" -- "$npuc" tidl-import "$tmp/ti/wrong.txt"

if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "all TFLite CLI checks passed"
