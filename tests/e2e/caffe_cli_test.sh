#!/usr/bin/env bash
# End-to-end checks of Caffe models through the CLI (docs/frontends.md, "Caffe"): inspect, run, check and translate
# take PROTOTXT CAFFEMODEL; bad input -> one clear error, exit status 2.
source "$(dirname "$0")/lib.sh"

net=$src/tests/data/caffe/small_net
if "$npuc" inspect "$net/model.prototxt" "$net/model.caffemodel" >"$tmp/inspect.out" &&
   grep -q "output prob : float32 1x3" "$tmp/inspect.out"; then ok "inspect PROTOTXT CAFFEMODEL"
else bad "inspect: $(tail -3 "$tmp/inspect.out")"; fi

# (npuc_caffe_test compares the numbers with OpenCV's.)
if "$npuc" run "$net/model.prototxt" "$net/model.caffemodel" --input "data=$net/input_data.npy" --output-dir "$tmp/run" >/dev/null &&
   [ -s "$tmp/run/prob.npy" ]; then ok "run PROTOTXT CAFFEMODEL writes prob.npy"; else bad "run did not write prob.npy"; fi

if "$npuc" check "$net/model.prototxt" "$net/model.caffemodel" --target generic --no-report >/dev/null; then
  ok "check generic -> 0"; else bad "check generic failed"; fi

# translate -caffe: a generic package whose simulated outputs are the engine's; compare --caffe-model matches it layer by
# layer; quantize takes the pair and writes a QDQ ONNX model.
if "$npuc" translate sn -caffe "$net/model.prototxt" "$net/model.caffemodel" --target generic --out "$tmp/tr" >"$tmp/tr.log" 2>&1; then
  if "$npuc" simulate "$tmp/tr/sn" --input "data=$net/input_data.npy" -o "$tmp/sim" >/dev/null 2>&1 &&
     cmp -s "$tmp/sim/prob.npy" "$tmp/run/prob.npy"; then ok "translate -caffe: the generic package computes run's outputs bit for bit"
  else bad "translate -caffe: simulate differs from run"; fi
else bad "translate -caffe: $(tail -2 "$tmp/tr.log")"; fi
if "$npuc" compare "$net/model.prototxt" "$tmp/tr/sn" --caffe-model "$net/model.caffemodel" -o "$tmp/cmp" >"$tmp/cmp.log" 2>&1 &&
   grep -q "layers matched; lowest cosine 1.0000000" "$tmp/cmp.log"; then ok "compare --caffe-model"
else bad "compare --caffe-model: $(tail -2 "$tmp/cmp.log")"; fi
if "$npuc" quantize "$net/model.prototxt" "$net/model.caffemodel" --calib "data=$net/input_data.npy" -o "$tmp/q.onnx" >/dev/null 2>&1 &&
   "$npuc" inspect "$tmp/q.onnx" | grep -q QuantizeLinear; then ok "quantize PROTOTXT CAFFEMODEL writes a QDQ model"
else bad "quantize PROTOTXT CAFFEMODEL"; fi

# inspect --save-onnx: the imported network as standard ONNX, which runs to the same bits.
if "$npuc" inspect "$net/model.prototxt" "$net/model.caffemodel" --save-onnx "$tmp/sn.onnx" >/dev/null &&
   "$npuc" run "$tmp/sn.onnx" --input "data=$net/input_data.npy" --output-dir "$tmp/run_onnx" >/dev/null &&
   cmp -s "$tmp/run_onnx/prob.npy" "$tmp/run/prob.npy"; then ok "inspect --save-onnx: the Caffe network as ONNX, same outputs"
else bad "inspect --save-onnx"; fi
expect_error 2 "give its trained weights (.caffemodel)" -- "$npuc" inspect "$net/model.prototxt"
expect_error 2 "not a valid .caffemodel" -- "$npuc" inspect "$net/model.prototxt" "$src/models/digits/digits_cnn.onnx"
printf 'layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 4 } } }\nlayer { name: "p" type: "Normalize" bottom: "data" top: "p" }\n' >"$tmp/prior.prototxt"
expect_error 2 "layer 'p' (Normalize): layer type 'Normalize' is not one npuc imports" -- "$npuc" inspect "$tmp/prior.prototxt" "$net/model.caffemodel"

if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "all Caffe CLI checks passed"
