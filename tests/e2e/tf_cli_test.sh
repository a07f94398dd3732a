#!/usr/bin/env bash
# End-to-end checks of TensorFlow frozen graphs through the CLI (docs/frontends.md, "TensorFlow"): inspect, run, check,
# translate -tf (generic, simulated bit for bit against run) and compare take a .pb; bad input -> one clear error,
# exit status 2.
source "$(dirname "$0")/lib.sh"

net=$src/tests/data/tf/mobilenet
if "$npuc" inspect "$net/model.pb" >"$tmp/inspect.out" && grep -Eq "input +input : float32 1x32x32x3" "$tmp/inspect.out" &&
   grep -q "output prob : float32 1x10" "$tmp/inspect.out"; then ok "inspect PB: the model's own NHWC input"
else bad "inspect: $(tail -3 "$tmp/inspect.out")"; fi

# (npuc_tf_test compares the numbers with OpenCV's.)
if "$npuc" run "$net/model.pb" --input "input=$net/input_input.npy" --output-dir "$tmp/run" >/dev/null &&
   [ -s "$tmp/run/prob.npy" ]; then ok "run PB writes prob.npy"; else bad "run did not write prob.npy"; fi

if "$npuc" check "$net/model.pb" --target generic --no-report >/dev/null; then ok "check generic -> 0"
else bad "check generic failed"; fi

if "$npuc" translate mn -tf "$net/model.pb" --target generic --out "$tmp/tr" >"$tmp/tr.log" 2>&1; then
  if "$npuc" simulate "$tmp/tr/mn" --input "input=$net/input_input.npy" -o "$tmp/sim" >/dev/null 2>&1 &&
     cmp -s "$tmp/sim/prob.npy" "$tmp/run/prob.npy"; then ok "translate -tf: the generic package computes run's outputs bit for bit"
  else bad "translate -tf: simulate differs from run"; fi
else bad "translate -tf: $(tail -2 "$tmp/tr.log")"; fi
if "$npuc" compare "$net/model.pb" "$tmp/tr/mn" -o "$tmp/cmp" >"$tmp/cmp.log" 2>&1 &&
   grep -q "lowest cosine 1.0000000" "$tmp/cmp.log"; then ok "compare PB PACKAGE"
else bad "compare PB PACKAGE: $(tail -2 "$tmp/cmp.log")"; fi

# tidl-import modelType 1: the guide's sample configuration on the TensorFlow graph translates for tidl.
mkdir -p "$tmp/ti"
sed -e 's|^modelType .*|modelType = 1|' -e "s|^inputNetFile .*|inputNetFile = \"$net/model.pb\"|" -e '/^inputParamsFile/d' \
    -e "s|^sampleInData .*|sampleInData = \"$net/input_input.npy\"|" -e '/^rawSampleInData/d' -e '/^preProcType/d' \
    -e '/^inWidth/d' -e '/^inHeight/d' -e '/^inNumChannels/d' \
    -e "s|^outputNetFile .*|outputNetFile = \"$tmp/ti/tidl_net_mn.bin\"|" "$src/tests/data/tidl/tidl_import_j11_v2.txt" >"$tmp/ti/import.txt"
if "$npuc" tidl-import "$tmp/ti/import.txt" >"$tmp/ti/out.txt" 2>&1 && grep -q "modelType          = 1            TensorFlow" "$tmp/ti/out.txt" &&
   grep -q '"numerics": "int8-pow2"' "$tmp/ti/tidl_net_mn/manifest.json"; then ok "tidl-import modelType 1: the guide's sample on a TensorFlow graph"
else bad "tidl-import modelType 1: $(tail -5 "$tmp/ti/out.txt")"; fi

head -c 300 "$net/model.pb" >"$tmp/cut.pb"
expect_error 2 "not a valid TensorFlow GraphDef" -- "$npuc" inspect "$tmp/cut.pb"
printf '\x0a\x08\x0a\x01x\x12\x03Erf' >"$tmp/erf.pb"  # one node 'x' of op Erf
expect_error 2 "node 'x' (Erf): op 'Erf' is not one npuc imports" -- "$npuc" inspect "$tmp/erf.pb"

if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "all TensorFlow CLI checks passed"
