#!/usr/bin/env bash
# End-to-end checks of the npuc CLI: outputs written, and bad input -> one clear error, exit status 2.
source "$(dirname "$0")/lib.sh"

digits=$src/models/digits/digits_cnn.onnx
if "$npuc" run "$digits" --input "input=$src/models/digits/test_x.npy" --output-dir "$tmp/out_dir" >/dev/null &&
   [ -s "$tmp/out_dir/logits.npy" ]; then ok "run writes logits.npy"; else bad "run did not write logits.npy"; fi

d=$src/tests/data/bad
expect_error 2 "truncated or corrupt" -- "$npuc" inspect "$d/truncated.onnx"
expect_error 2 "file not found" -- "$npuc" inspect "$d/does_not_exist.onnx"
expect_error 2 "opset 18 is not supported" -- "$npuc" inspect "$d/opset18.onnx"
expect_error 2 "node 'conv_without_weights' (Conv): input 'W_missing'" -- "$npuc" inspect "$d/missing_initializer.onnx"
expect_error 2 "node 'fancy' (FancyNewOp): unknown op" -- "$npuc" inspect "$d/unknown_op.onnx"
expect_error 2 "inconsistent shapes" -- "$npuc" inspect "$d/inconsistent_shapes.onnx"
expect_error 2 "not a positive dimension" -- "$npuc" inspect "$digits" --input-shape input=1,x,8
expect_error 2 "not an input of the model" -- "$npuc" inspect "$digits" --input-shape nope=1,1,8,8
printf 'garbage' >"$tmp/x.npy"
expect_error 2 "bad magic" -- "$npuc" run "$digits" --input "input=$tmp/x.npy" --output-dir "$tmp/o2"
[ -e "$tmp/o2" ] && bad "a failed run left $tmp/o2 behind" || ok "failed run wrote nothing"

# check: supported -> 0; unsupported -> 1 with the three report files, byte-identical on a second run.
if "$npuc" check "$digits" --target generic --out "$tmp/chk" >/dev/null; then ok "check generic -> 0"; else bad "check generic failed"; fi
unsup="$src/tests/data/small_plane_conv.onnx"  # a 3x3 stride-2 conv on a 4x4 plane breaks drpai's minimum plane size
"$npuc" check "$unsup" --target drpai --out "$tmp/chk" --prefix d >"$tmp/chk.out" 2>&1
rc=$?
if [ $rc -eq 1 ] && [ -s "$tmp/chk/d_error_report.csv" ] && [ -s "$tmp/chk/d_error_report.json" ] && [ -s "$tmp/chk/d_error_report.xlsx" ]; then
  ok "check drpai -> 1 with csv/json/xlsx"
else
  bad "check drpai: rc=$rc, files: $(ls "$tmp/chk" 2>&1)"
fi
head -1 "$tmp/chk/d_error_report.csv" | grep -qx "node_idx,name,op_type,message,rule_id,rule,actual,fix" &&
  grep -q '^0,.*,Conv,".*(actual: .*)",drpai\.' "$tmp/chk/d_error_report.csv" &&
  grep -q '"node_idx": 0' "$tmp/chk/d_error_report.json" && ok "error report: the manual's columns (node_idx, name, op_type, message) first" ||
  bad "error report columns: $(head -2 "$tmp/chk/d_error_report.csv")"
sum1=$(cat "$tmp"/chk/d_error_report.* | md5sum)
sleep 1
"$npuc" check "$unsup" --target drpai --out "$tmp/chk" --prefix d >/dev/null 2>&1
[ "$sum1" = "$(cat "$tmp"/chk/d_error_report.* | md5sum)" ] && ok "reports are byte-identical across runs" || bad "reports differ across runs"
expect_error 2 "unknown target 'nope'" -- "$npuc" check "$digits" --target nope
# The vendor's answer by default, npuc's own under a named relaxation (issue 47): Conv -> Clip(0, 5) fuses into one
# layer, whose Clip is still checked by the manual's Clip rule; --relax clip-bounds turns it off (check and translate).
/usr/bin/python3 - "$tmp/conv_clip5.onnx" <<'PY'
import struct, sys
def key(f, t): return varint(f << 3 | t)
def varint(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n: return out
def fld(f, v): return key(f, 0) + varint(v)
def msg(f, b): return key(f, 2) + varint(len(b)) + b
def s(f, t): return msg(f, t.encode())
def tensor(name, dims, vals):
    return b"".join(fld(1, d) for d in dims) + fld(2, 1) + s(8, name) + msg(9, struct.pack("<%df" % len(vals), *vals))
def vinfo(name, dims):
    shape = b"".join(msg(1, fld(1, d)) for d in dims)
    return s(1, name) + msg(2, msg(1, fld(1, 1) + msg(2, shape)))
conv = s(1, "x") + s(1, "w") + s(2, "c") + s(3, "conv") + s(4, "Conv") + msg(5, s(1, "pads") + b"".join(fld(8, 1) for _ in range(4)) + fld(20, 7))
clip = s(1, "c") + s(1, "lo") + s(1, "hi") + s(2, "y") + s(3, "clip") + s(4, "Clip")
graph = (msg(1, conv) + msg(1, clip) + s(2, "g") + msg(5, tensor("w", [8, 4, 3, 3], [0.01 * (i % 7) for i in range(288)])) +
         msg(5, tensor("lo", [], [0.0])) + msg(5, tensor("hi", [], [5.0])) + msg(11, vinfo("x", [1, 4, 8, 8])) + msg(12, vinfo("y", [1, 8, 8, 8])))
open(sys.argv[1], "wb").write(fld(1, 7) + msg(7, graph) + msg(8, s(1, "") + fld(2, 13)))
PY
"$npuc" check "$tmp/conv_clip5.onnx" --target drpai --out "$tmp/chk" --prefix clip5 >"$tmp/clip5.out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q 'ai.npuc.Conv,.*drpai\.clip\.bounds,.*min 0, max 5 (Clip fused into Conv)' "$tmp/chk/clip5_error_report.csv"; then
  ok "check drpai: a Clip(0, 5) fused into its Conv breaks drpai.clip.bounds"
else bad "check drpai of Conv -> Clip(0, 5): rc=$rc $(cat "$tmp/clip5.out")"; fi
if "$npuc" check "$tmp/conv_clip5.onnx" --target drpai --relax clip-bounds --no-report >"$tmp/clip5r.out" 2>&1 &&
   grep -q "relax clip-bounds" "$tmp/clip5r.out" &&
   "$npuc" translate clip5 -onnx "$tmp/conv_clip5.onnx" --relax clip-bounds --out "$tmp/clip5" >/dev/null 2>&1 &&
   [ -s "$tmp/clip5/clip5/manifest.json" ] && ! "$npuc" translate clip5b -onnx "$tmp/conv_clip5.onnx" --out "$tmp/clip5" >/dev/null 2>&1; then
  ok "--relax clip-bounds: check passes and translate packages it; without it translate refuses"
else bad "--relax clip-bounds: $(cat "$tmp/clip5r.out")"; fi
expect_error 2 "target 'drpai' has no relaxation 'nope'" -- "$npuc" check "$digits" --target drpai --relax broadcast,nope
"$npuc" targets >"$tmp/targets.txt"
grep -q '^drpai' "$tmp/targets.txt" && ok "targets lists drpai" || bad "targets does not list drpai"
"$npuc" targets --supported-ops drpai >"$tmp/page.md"
grep -q '### Conv' "$tmp/page.md" && ok "supported-ops page" || bad "supported-ops page lacks Conv"
grep -q '^| `reshape-transpose` |' "$tmp/page.md" && ok "supported-ops page lists the relaxations" || bad "supported-ops page lacks the relaxations"

# translate: the DRP-AI style command line and the argument errors of the manual's §9.
(
  cd "$tmp" && mkdir -p onnx && cp "$digits" onnx/digits.onnx && cp "$unsup" onnx/unsup.onnx
  if "$npuc" translate digits --target generic -SaveOptOnnx >/dev/null && [ -s output/digits/digits_summary.csv ] &&
     [ -s output/digits/digits_summary.xlsx ] && [ -s output/digits/digits_opt.onnx ] && [ -s output/digits/manifest.json ] &&
     [ -s output/digits/digits_weight.dat ] && [ -s output/digits/digits_addrmap_intm.yaml ] &&
     [ -s output/digits/digits_tbl_addr_merge.txt ] && [ -s output/digits/digits_data_in_list.txt ]; then
    echo "ok: translate (simple specification case) writes the package and address map files"; else echo "FAILED: translate"; fi
  if "$npuc" translate d16 -onnx onnx/digits.onnx >/dev/null && [ -s output/d16/manifest.json ]; then echo "ok: translate digits for drpai"; else echo "FAILED: translate digits drpai"; fi
  # simulate: raw device bytes in (float16 1x1x8x8 = 128 bytes), outputs and traces out
  head -c 128 /dev/zero >x16.bin
  if "$npuc" simulate output/d16 --input input=x16.bin -o sim --trace trace >/dev/null && [ -s sim/logits.npy ] &&
     [ -s sim/logits.raw.npy ] && [ -s trace/trace_index.csv ] && [ -s trace/trace_dump_0_8x8.y ] && [ -s trace/trace_5.npy ]; then
    echo "ok: simulate writes outputs and traces"; else echo "FAILED: simulate"; fi
  head -c 100 /dev/zero >short.bin
  "$npuc" simulate output/d16 --input input=short.bin -o sim2 >sim2.out 2>&1
  if [ $? -eq 2 ] && grep -q "needs exactly 128 bytes" sim2.out; then echo "ok: simulate rejects a short input"; else echo "FAILED: simulate short input"; fi
  cp -r output/d16 broken && printf 'x' >>broken/d16_weight.dat
  "$npuc" simulate broken --input input=x16.bin -o sim3 >sim3.out 2>&1
  if [ $? -eq 2 ] && grep -q "truncated or replaced" sim3.out; then echo "ok: simulate rejects a damaged package"; else echo "FAILED: damaged package"; fi
  if "$npuc" bench output/d16 --runs 3 --warmup 1 | grep -q "median"; then echo "ok: bench times a package"; else echo "FAILED: bench package"; fi
  if "$npuc" compare onnx/digits.onnx output/d16 -o cmp >cmp.out && grep -q "6 of 6 layers matched" cmp.out &&
     [ -s cmp/compare.csv ] && grep -q "<svg" cmp/compare.html && [ "$(wc -l <cmp/compare.csv)" -eq 7 ]; then
    echo "ok: compare matches every layer and writes csv/html"; else echo "FAILED: compare"; fi
  "$npuc" translate digits2 -onnx onnx/unsup.onnx >/dev/null 2>&1
  if [ $? -eq 1 ] && [ -s output/digits2/digits2_error_report.csv ] && [ ! -e output/digits2/digits2_summary.csv ]; then
    echo "ok: translate of an unsupported model -> 1 with the error report"; else echo "FAILED: translate unsupported"; fi
  ls -a output | grep -q tmp && echo "FAILED: a temporary folder was left in output/" || echo "ok: no temporary folder left"
) | tee "$tmp/translate.log"
fails=$((fails + $(grep -c FAILED "$tmp/translate.log")))
# --calib: the fp16 biases corrected for weight rounding, measured on calibration samples; bad samples refused
# (the digits' logits, 540x10, are not samples of its 1x1x8x8 input) and nothing written.
if "$npuc" translate cal -onnx "$digits" --calib "input=$src/models/digits/test_x.npy" --out "$tmp/cal" >"$tmp/cal.out" &&
   grep -q "bias correction: 4 layer(s), input means of 540 calibration sample(s)" "$tmp/cal.out"; then
  ok "translate --calib corrects the fp16 biases"; else bad "translate --calib: $(cat "$tmp/cal.out")"; fi
expect_error 2 "does not stack samples of the input's shape 1x1x8x8" -- "$npuc" translate calbad -onnx "$digits" --calib "input=$tmp/out_dir/logits.npy" --out "$tmp/calbad"
[ -e "$tmp/calbad/calbad" ] && bad "a refused --calib translate left output behind" || ok "refused --calib translate wrote nothing"
# int8-affine: translate on calibration samples (+ the standard QDQ model), traces of int8 codes with their scales,
# compare against the float model layer by layer on a real image (the first test sample: an .npy of one 1x1x8x8 float32
# image cut from test_x.npy, whose 128-byte header and C order put sample 0 right after it)
{ printf '\x93NUMPY\x01\x00\x76\x00'; printf "%-117s\n" "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 8, 8), }"
  tail -c +129 "$src/models/digits/test_x.npy" | head -c 256; } >"$tmp/x1.npy"
if "$npuc" translate q8 -onnx "$digits" --target generic-int8 --calib "input=$src/models/digits/test_x.npy" --save-qdq-onnx \
     --out "$tmp/q8" >"$tmp/q8.out" && [ -s "$tmp/q8/q8/q8_qdq.onnx" ] && [ -s "$tmp/q8/q8/manifest.json" ] &&
   "$npuc" simulate "$tmp/q8/q8" --input "input=$tmp/x1.npy" -o "$tmp/q8sim" --trace "$tmp/q8tr" >"$tmp/q8sim.out" 2>&1; then
  if grep -q '^1,1,mac,conv,.*,int8,.*,0\.[0-9]*,-\?[0-9]*,/features' "$tmp/q8tr/trace_index.csv"; then
    ok "int8 traces record each layer's scale and zero point"; else bad "int8 traces: $(head -3 "$tmp/q8tr/trace_index.csv")"; fi
else
  bad "translate / simulate generic-int8: $(cat "$tmp/q8.out" "$tmp/q8sim.out")"
fi
# int8-pow2 (tidl): traces give each layer's q of the frame, and the real values at 2^-q (the conv's codes, unsigned
# after its Relu, at scale 2^-q with q in the last column)
if "$npuc" translate p2 -onnx "$digits" --target tidl --calib "input=$src/models/digits/test_x.npy" --out "$tmp/p2" >"$tmp/p2.out" &&
   "$npuc" simulate "$tmp/p2/p2" --input "input=$tmp/x1.npy" -o "$tmp/p2sim" --trace "$tmp/p2tr" >"$tmp/p2sim.out" 2>&1 &&
   grep -q '^1,1,[a-z]*,conv,.*,uint8,.*,0\.[0-9]*,0,[^,]*,[0-9]\+,[0-9]*$' "$tmp/p2tr/trace_index.csv"; then
  ok "int8-pow2 traces record each layer's q and scale"
else
  bad "int8-pow2 traces: $(cat "$tmp/p2.out" "$tmp/p2sim.out"; head -3 "$tmp/p2tr/trace_index.csv" 2>/dev/null)"
fi
# --calib NAME=DIR: a folder of .npy shards (in name order) is the same calibration set as one file
mkdir -p "$tmp/shards" "$tmp/noshards"
/usr/bin/python3 -c "import numpy as np, sys; x = np.load(sys.argv[1]); [np.save('%s/%02d.npy' % (sys.argv[2], i), x[i * 200:(i + 1) * 200]) for i in range(3)]" \
  "$src/models/digits/test_x.npy" "$tmp/shards"
if "$npuc" translate p2 -onnx "$digits" --target tidl --calib "input=$tmp/shards" --out "$tmp/p2s" >"$tmp/p2s.out" &&
   [ "$(grep '^package:' "$tmp/p2.out")" = "$(grep '^package:' "$tmp/p2s.out")" ]; then
  ok "--calib NAME=DIR: shards give the same package as one file"
else
  bad "--calib NAME=DIR: $(cat "$tmp/p2s.out"; grep '^package:' "$tmp/p2.out")"
fi
expect_error 2 "the folder holds no .npy files" -- "$npuc" translate p2 -onnx "$digits" --target tidl --calib "input=$tmp/noshards" --out "$tmp/p2n"
# --calib NAME=DIR of pictures: 8-bit grey PNGs of the first 100 digits are the samples round(255 x) / 255 (the
# default --calib-scale), the same package as those samples in a .npy; a bad --calib-mean is refused
mkdir -p "$tmp/pics"
/usr/bin/python3 - "$src/models/digits/test_x.npy" "$tmp/pics" "$tmp/pics.npy" <<'PY'
import sys
import numpy as np
from PIL import Image
x = np.round(np.load(sys.argv[1])[:100] * 255)
for i in range(len(x)):
    Image.fromarray(x[i, 0].astype(np.uint8), "L").save("%s/%03d.png" % (sys.argv[2], i))
np.save(sys.argv[3], (x.astype(np.float64) * (1.0 / 255)).astype(np.float32))
PY
if "$npuc" translate pp -onnx "$digits" --target generic-int8 --calib "input=$tmp/pics" --out "$tmp/ppics" >"$tmp/ppics.out" &&
   "$npuc" translate pp -onnx "$digits" --target generic-int8 --calib "input=$tmp/pics.npy" --out "$tmp/pnpy" >"$tmp/pnpy.out" &&
   [ "$(grep '^package:' "$tmp/ppics.out")" = "$(grep '^package:' "$tmp/pnpy.out")" ]; then
  ok "--calib NAME=DIR of pictures: the same package as their samples in a .npy"
else
  bad "--calib pictures: $(cat "$tmp/ppics.out"; grep '^package:' "$tmp/pnpy.out")"
fi
expect_error 2 "--calib-mean 'a,b': numbers separated by commas" -- "$npuc" translate pp -onnx "$digits" --target generic-int8 \
  --calib "input=$tmp/pics" --calib-mean a,b --out "$tmp/ppbad"
# A folder of both kinds is refused (neither would be taken silently).
mkdir -p "$tmp/mixed" && cp "$tmp/pics/000.png" "$tmp/shards/00.npy" "$tmp/mixed/"
expect_error 2 "the folder holds both .npy shards (00.npy, …) and pictures (000.png, …); give a folder of one kind" -- \
  "$npuc" translate pm -onnx "$digits" --target generic-int8 --calib "input=$tmp/mixed" --out "$tmp/pmixed"
if "$npuc" compare "$digits" "$tmp/q8/q8" --input "input=$tmp/x1.npy" -o "$tmp/q8cmp" >"$tmp/q8cmp.out" &&
   grep -q "^   1  .*conv .* 0\.99" "$tmp/q8cmp.out"; then
  ok "compare matches int8 layers to their float tensors"; else bad "compare int8: $(head -5 "$tmp/q8cmp.out")"; fi
# -prepost: validated against the model with the manual's messages, then translated into the package: a uint8
# frame in (8x8x1 = 64 bytes), the post-processed float32 probabilities out.
pp="$src/tests/data/prepost/digits_prepost.yaml"
head -c 64 /dev/urandom >"$tmp/frame.bin"
if "$npuc" translate ppok -onnx "$digits" -prepost "$pp" --out "$tmp/ppok" >/dev/null &&
   grep -q "cast_any_to_fp16 fused into normalize" "$tmp/ppok/ppok/ppok_prepost_opt.yaml" &&
   "$npuc" simulate "$tmp/ppok/ppok" --input pre_in="$tmp/frame.bin" -o "$tmp/ppsim" >/dev/null && [ -s "$tmp/ppsim/post_out.npy" ]; then
  ok "translate -prepost puts pre/post-processing into the package; simulate runs it"; else bad "translate -prepost"; fi
if "$npuc" compare "$digits" "$tmp/ppok/ppok" --prepost "$pp" -o "$tmp/ppcmp" >"$tmp/ppcmp.out" &&
   grep -q "layers matched" "$tmp/ppcmp.out" && grep -q "normalize" "$tmp/ppcmp/compare.csv"; then
  ok "compare --prepost matches the pre/post layers too"; else bad "compare --prepost"; fi
# A channel-last (NHWC) model behind pre/post-processing (Appendix B): the package computes the engine's numbers,
# compare checks each boundary against the declared layout, and the data lists give channel / width / height as
# declared (HWC frame in, CHW result out).
nh="$src/tests/data/prepost/bodies"
if "$npuc" translate nh -onnx "$nh/nhwc_model.onnx" -prepost "$nh/nhwc_prepost.yaml" --target generic --out "$tmp/nh" >/dev/null &&
   "$npuc" compare "$nh/nhwc_model.onnx" "$tmp/nh/nh" --prepost "$nh/nhwc_prepost.yaml" -o "$tmp/nhcmp" >"$tmp/nhcmp.out" &&
   grep -q "output_from_body 'feat': the 12x16x5 HWC values are the model's 1x12x16x5 read as NHWC" "$tmp/nhcmp.out" &&
   ! grep -q "LAYOUT MISTAKE" "$tmp/nhcmp.out" && grep -q "lowest cosine 1.0000000" "$tmp/nhcmp.out"; then
  ok "a channel-last model with -prepost: compare finds the package equal and each boundary in the declared layout"
else bad "channel-last model with -prepost: $(cat "$tmp/nhcmp.out")"; fi
if tr -d ' ' <"$tmp/nh/nh/nh_data_in_list.txt" | tr '\n' ' ' | grep -q "Input_node_name:cam Address:0x[0-9a-f]* Channel:3 Width:16 Height:12" &&
   tr -d ' ' <"$tmp/nh/nh/nh_data_out_list.txt" | tr '\n' ' ' | grep -q "Output_node_name:feat_chw Address:0x[0-9a-f]* Channel:5 Width:16 Height:12"; then
  ok "data lists: an HWC frame and a CHW result give their own channel / width / height"
else bad "data lists: $(cat "$tmp/nh/nh/nh_data_in_list.txt" "$tmp/nh/nh/nh_data_out_list.txt")"; fi
# An in-model normalisation, (x - mean) / std with no Conv before it: drpai accepts it as one per-channel affine
# layer (the manual's Sub / Div "equivalent to BatchNormalization"), and the package computes the model.
if "$npuc" check "$nh/normalised_input.onnx" --target drpai --no-report >/dev/null &&
   "$npuc" translate norm -onnx "$nh/normalised_input.onnx" --out "$tmp/norm" >/dev/null &&
   grep -q "BatchNormalization+Sub+Div" "$tmp/norm/norm/norm_summary.csv" &&
   "$npuc" compare "$nh/normalised_input.onnx" "$tmp/norm/norm" -o "$tmp/normcmp" >"$tmp/normcmp.out" &&
   grep -o "lowest cosine [-0-9.]*" "$tmp/normcmp.out" | awk '{ exit !($3 > 0.9999) }'; then
  ok "an in-model (x - mean) / std translates for drpai as one affine layer, close to the model"
else bad "in-model normalisation: $(cat "$tmp/normcmp.out" 2>&1)"; fi
ex="$src/tests/data/prepost/examples"
if "$npuc" translate ex2 -onnx "$ex/example2.onnx" -prepost "$ex/example2.yaml" --out "$tmp/ex2" >/dev/null &&
   tr -d ' ' <"$tmp/ex2/ex2/ex2_data_in_list.txt" | tr '\n' ' ' | grep -q "Channel:2 Width:640 Height:480" &&
   tr -d ' ' <"$tmp/ex2/ex2/ex2_data_out_list.txt" | tr '\n' ' ' | grep -q "Channel:125 Width:13 Height:13"; then
  ok "data lists of the manual's example 2: YUY2 [480, 640, 2] HWC in, [125, 13, 13] CHW out"
else bad "data lists of example 2: $(cat "$tmp/ex2/ex2/ex2_data_in_list.txt" "$tmp/ex2/ex2/ex2_data_out_list.txt")"; fi
sed 's/name: "logits"/name: "logitz"/' "$pp" >"$tmp/pp_bad.yaml"
expect_error 2 "[Error Y01] Error in prepost yaml" -- "$npuc" translate ppd -onnx "$digits" -prepost "$tmp/pp_bad.yaml" -CheckPrePost ON --out "$tmp/ppon"
# -CheckPrePost ON keeps the hint's promise: the optimized model is saved to compare with the definition (issue 47.9).
grep -q "the optimized model is saved as $tmp/ppon/ppd/ppd_opt.onnx" "$tmp/err" && "$npuc" inspect "$tmp/ppon/ppd/ppd_opt.onnx" >/dev/null &&
  ok "-CheckPrePost ON saves the optimized model when the definition is refused" || bad "-CheckPrePost ON: $(cat "$tmp/err")"
expect_error 2 "Converter-007" -- "$npuc" translate ppd -onnx "$digits" -prepost "$tmp/pp_bad.yaml" --out "$tmp/ppout"
sed 's/\[8, 8, 1\]/[9, 8, 1]/' "$pp" >"$tmp/pp_size.yaml"
expect_error 2 "the size of ONNX vs. YAML does not match" -- "$npuc" translate ppd -onnx "$digits" -prepost "$tmp/pp_size.yaml" --out "$tmp/ppout"
expect_error 2 "cannot reshape 9x8x1" -- "$npuc" translate ppd -onnx "$digits" -prepost "$tmp/pp_size.yaml" -NotCheckSizeONNXvsYAML --out "$tmp/ppout"
grep -q "hint: the pre/post-processing definition .* run again with -CheckPrePost ON" "$tmp/err" &&
  ok "a definition that disagrees with the model gets the manual's -CheckPrePost hint" || bad "no -CheckPrePost hint: $(cat "$tmp/err")"
# The simple specification case (§7.2.1): ./UserConfig/prepost_<model>.yaml and addrmap_in_<model>.yaml are found by
# the ONNX file's name, and the banner (after the version line) says which files are used; a named definition that
# is missing stops the run with the manual's "file is not exist" (§7.2.2); without a ./UserConfig folder npuc uses
# none and says so.
mkdir -p "$tmp/sc/onnx" "$tmp/sc/UserConfig" && cp "$digits" "$tmp/sc/onnx/modelA.onnx" && cp "$pp" "$tmp/sc/UserConfig/prepost_modelA.yaml"
printf -- '- name: "all"\n  addr: 0x40_000_000\n  lst_elemsp:\n%s' "$(for e in data_in data data_out work weight drp_config drp_param desc_aimac desc_drp; do printf '    - { name: "%s" }\n' $e; done)" >"$tmp/sc/UserConfig/addrmap_in_modelA.yaml"
if (cd "$tmp/sc" && "$npuc" translate test -onnx ./onnx/modelA.onnx >"$tmp/sc.out") &&
   grep -q "^\[Run npuc translate\] Ver. [0-9.]*$" "$tmp/sc.out" &&
   grep -q "Prepost file          : ./UserConfig/prepost_modelA.yaml" "$tmp/sc.out" &&
   grep -q "Address mapping file  : ./UserConfig/addrmap_in_modelA.yaml" "$tmp/sc.out" &&
   [ -s "$tmp/sc/output/test/test_prepost_opt.yaml" ]; then
  ok "simple specification case: UserConfig/prepost_<model>.yaml and addrmap_in_<model>.yaml used, the banner says so"
else bad "simple specification case: $(cat "$tmp/sc.out")"; fi
rm "$tmp/sc/UserConfig/prepost_modelA.yaml"
(cd "$tmp/sc" && "$npuc" translate test2 -onnx ./onnx/modelA.onnx >"$tmp/sc2.out" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "\[ERROR\] :  ./UserConfig/prepost_modelA.yaml file is not exist." "$tmp/sc2.out" && [ ! -e "$tmp/sc/output/test2" ] &&
  [ "$(grep -n "Input file information" "$tmp/sc2.out" | cut -d: -f1)" -lt "$(grep -n "file is not exist" "$tmp/sc2.out" | cut -d: -f1)" ] &&
  ok "simple specification case: a missing named definition stops with the manual's message, after the banner" || bad "missing definition: rc $rc $(cat "$tmp/sc2.out")"
mkdir -p "$tmp/nouc" && (cd "$tmp/nouc" && "$npuc" translate test3 -onnx "$digits" >"$tmp/sc3.out")
grep -q "Prepost file          : none (no ./UserConfig folder): no pre/post-processing" "$tmp/sc3.out" &&
  ok "without a ./UserConfig folder the banner says there is no definition" || bad "banner without UserConfig: $(cat "$tmp/sc3.out")"
if "$npuc" translate pp2 -onnx "$digits" -prepot "$pp" --out "$tmp/pp2" >/dev/null && [ -s "$tmp/pp2/pp2/pp2_prepost_opt.yaml" ]; then
  ok "-prepot (the manual's spelling in §7.3) is -prepost"; else bad "-prepot"; fi
expect_error 2 "Invalid option name: -prepst (did you mean -prepost?)" -- "$npuc" translate x -onnx "$digits" -prepst "$pp"
expect_error 2 "Invalid argument: option -addr needs a value (none given)" -- "$npuc" translate x -onnx "$digits" -addr
expect_error 2 "the package has no input 'nope' (its inputs: 'pre_in')" -- "$npuc" simulate "$tmp/ppok/ppok" --input nope="$tmp/frame.bin" -o "$tmp/nope"
if "$npuc" check "$digits" --target drpai --prepost "$pp" --save-opt-onnx "$tmp/full.onnx" --no-report >/dev/null && "$npuc" inspect "$tmp/full.onnx" | grep -q "ai.npuc.Normalize"; then ok "check --prepost writes the combined model"; else bad "check --prepost"; fi
[ -e "$tmp/ppout/ppd" ] && bad "a refused translate left output behind" || ok "refused prepost translate wrote nothing"
# --aipp: a dynamic AIPP package takes its parameter block from --aipp (YAML or the raw kAippDynamicPara bytes);
# both forms give the same output, a missing or broken block is refused with the rule.
an="$src/tests/data/aipp/aipp_net.onnx"
printf 'aipp_op {\n  aipp_mode: dynamic\n  related_input_rank: 0\n  max_src_image_size: 1536\n}\n' >"$tmp/dyn.cfg"
printf 'inputFormat: YUV420SP_U8\nsrcImageSizeW: 32\nsrcImageSizeH: 32\ndtcPixelMeanChn0: 16\ndtcPixelVarReciChn0: 0.004\n' >"$tmp/p.yaml"
head -c 1536 /dev/urandom >"$tmp/nv12.bin"
head -c 4096 /dev/zero >"$tmp/mask.bin"
if "$npuc" translate ap -onnx "$an" --aipp "$tmp/dyn.cfg" --target generic --out "$tmp/ap" >/dev/null &&
   "$npuc" simulate "$tmp/ap/ap" --input image="$tmp/nv12.bin" --input mask="$tmp/mask.bin" --aipp image="$tmp/p.yaml" -o "$tmp/apsim" >/dev/null &&
   [ -s "$tmp/apsim/out.npy" ]; then ok "translate --aipp (dynamic), simulate --aipp name=params.yaml"; else bad "translate/simulate --aipp"; fi
# The seed's two-input example: a dynamic block per input, --aipp given once for each.
printf 'aipp_op {\n  aipp_mode: dynamic\n  related_input_rank: 0\n  max_src_image_size: 1536\n}\naipp_op {\n  aipp_mode: dynamic\n  related_input_rank: 1\n  max_src_image_size: 1024\n}\n' >"$tmp/dyn2.cfg"
printf 'inputFormat: YUV400_U8\nsrcImageSizeW: 32\nsrcImageSizeH: 32\ndtcPixelVarReciChn0: 0.01\n' >"$tmp/p400.yaml"
head -c 1024 /dev/urandom >"$tmp/y.bin"
if "$npuc" translate ap2 -onnx "$an" --aipp "$tmp/dyn2.cfg" --target generic --out "$tmp/ap2" >/dev/null &&
   "$npuc" simulate "$tmp/ap2/ap2" --input image="$tmp/nv12.bin" --input mask="$tmp/y.bin" --aipp image="$tmp/p.yaml" \
     --aipp mask="$tmp/p400.yaml" -o "$tmp/ap2sim" >/dev/null && [ -s "$tmp/ap2sim/out.npy" ]; then
  ok "two dynamic AIPP inputs: simulate takes --aipp once for each"; else bad "simulate with two --aipp"; fi
# Gears (ATC's --dynamic_batch_size with --input_shape): one package per batch size, simulate picks one.
"$npuc" translate gb -onnx "$digits" --target generic --input_shape "input:-1,1,8,8" --dynamic_batch_size "1,2" --out "$tmp/gb" >/dev/null
/usr/bin/python3 -c "import numpy as np; np.save('$tmp/x2.npy', np.load('$src/models/digits/test_x.npy')[:2])"
if [ -s "$tmp/gb/gb/gears.json" ] && [ -s "$tmp/gb/gb/batch_1/manifest.json" ] &&
   "$npuc" simulate "$tmp/gb/gb" --dynamic_batch_size 2 --input input="$tmp/x2.npy" -o "$tmp/gbsim" >/dev/null &&
   /usr/bin/python3 -c "import numpy as np, sys; sys.exit(0 if np.load('$tmp/gbsim/logits.npy').shape == (2, 10) else 1)"; then
  ok "translate --dynamic_batch_size writes a gear per batch size; simulate --dynamic_batch_size runs one"
else bad "gears: $(ls -R "$tmp/gb" 2>&1 | head -5)"; fi
expect_error 2 "no gear of batch size 3 (the package's gears: 1, 2)" -- "$npuc" simulate "$tmp/gb/gb" --dynamic-batch-size 3 --input input="$tmp/x2.npy" -o "$tmp/gbsim3"
# --input_shape ranges: a range nothing fixes makes one package serving every size (here the batch: a batch of 3 runs
# it); a static AIPP stage sets the height and width, inside the range.
if "$npuc" translate gr -onnx "$digits" --target generic --input_shape "input:1~4,1,8,8" --out "$tmp/gr" >/dev/null &&
   /usr/bin/python3 -c "import numpy as np; np.save('$tmp/x3.npy', np.load('$src/models/digits/test_x.npy')[:3])" &&
   "$npuc" simulate "$tmp/gr/gr" --input input="$tmp/x3.npy" -o "$tmp/grsim" >/dev/null &&
   /usr/bin/python3 -c "import numpy as np, sys; sys.exit(0 if np.load('$tmp/grsim/logits.npy').shape == (3, 10) else 1)"; then
  ok "an --input_shape range over the batch: one package, simulate runs a batch of 3"; else bad "--input_shape batch range"; fi
expect_error 2 "give an upper bound (LO~HI)" -- "$npuc" translate gr2 -onnx "$digits" --target generic --input_shape "input:1~4,1,8,-1" --out "$tmp/gr2"
printf 'aipp_op {\n  aipp_mode: static\n  input_format: RGB888_U8\n  src_image_size_w: 40\n  src_image_size_h: 40\n  crop: true\n  load_start_pos_w: 4\n  load_start_pos_h: 4\n  crop_size_w: 32\n  crop_size_h: 32\n}\n' >"$tmp/st.cfg"
if "$npuc" translate rg -onnx "$an" --aipp "$tmp/st.cfg" --target generic --input_shape "image:1,3,16~64,16~64" --out "$tmp/rg" >/dev/null &&
   [ -s "$tmp/rg/rg/manifest.json" ]; then ok "an --input_shape range is set by the static AIPP stage's 32x32 output"; else bad "--input_shape range with static AIPP"; fi
expect_error 2 "the AIPP stage delivers height 32, outside the range 16~24" -- "$npuc" translate rg2 -onnx "$an" --aipp "$tmp/st.cfg" --target generic --input_shape "image:1,3,16~24,16~64" --out "$tmp/rg"
# Issue 47: a dynamic AIPP input's range fixed inside it with --input-shape (ATC's --input_shape_range spelling); its
# frame input takes frames smaller than max_src_image_size (the same output as the max-size frame).
printf 'aipp_op {\n  aipp_mode: dynamic\n  related_input_rank: 0\n  max_src_image_size: 3072\n}\n' >"$tmp/dynbig.cfg"
if "$npuc" translate rgd -onnx "$an" --aipp "$tmp/dynbig.cfg" --target generic --input_shape_range "image:[1,3,16~64,16~64]" --input-shape image=1,3,32,32 --out "$tmp/rgd" >/dev/null &&
   { cat "$tmp/nv12.bin"; head -c 1536 /dev/urandom; } >"$tmp/nv12big.bin" &&
   "$npuc" simulate "$tmp/rgd/rgd" --input image="$tmp/nv12.bin" --input mask="$tmp/mask.bin" --aipp image="$tmp/p.yaml" -o "$tmp/rgdsim1" >/dev/null &&
   "$npuc" simulate "$tmp/rgd/rgd" --input image="$tmp/nv12big.bin" --input mask="$tmp/mask.bin" --aipp image="$tmp/p.yaml" -o "$tmp/rgdsim2" >/dev/null &&
   cmp -s "$tmp/rgdsim1/out.npy" "$tmp/rgdsim2/out.npy"; then
  ok "dynamic AIPP with --input_shape_range; simulate takes a frame smaller than max_src_image_size"; else bad "dynamic AIPP range / small frame"; fi
head -c 1000 /dev/urandom >"$tmp/nv12small.bin"
expect_error 2 "a frame of 1000 bytes per image is smaller than the 32x32 YUV420SP_U8 source" -- "$npuc" simulate "$tmp/rgd/rgd" --input image="$tmp/nv12small.bin" --input mask="$tmp/mask.bin" --aipp image="$tmp/p.yaml" -o "$tmp/rgdsim3"
expect_error 2 "--input-shape gives height 32, outside the range 16~24" -- "$npuc" translate rgd2 -onnx "$an" --aipp "$tmp/dynbig.cfg" --target generic --input_shape "image:1,3,16~24,16~64" --input-shape image=1,3,32,32 --out "$tmp/rgd2"
# One package for the whole range behind a dynamic AIPP stage: the block's picture size (crop, then scf to 24 x 40)
# selects the body's size.
printf 'aipp_op {\n  aipp_mode: dynamic\n  related_input_rank: 0\n  max_src_image_size: 3072\n}\n' >"$tmp/dynx.cfg"
printf 'inputFormat: YUV420SP_U8\nsrcImageSizeW: 32\nsrcImageSizeH: 32\nscfSwitch: 1\nscfInputSizeW: 32\nscfInputSizeH: 32\nscfOutputSizeW: 40\nscfOutputSizeH: 24\n' >"$tmp/scf.yaml"
if "$npuc" translate rx -onnx "$src/tests/data/ranges/ranges_net.onnx" --aipp "$tmp/dynx.cfg" --target generic --input_shape "x:1,3,16~48,16~48" --out "$tmp/rx" >/dev/null &&
   "$npuc" simulate "$tmp/rx/rx" --input x="$tmp/nv12.bin" --aipp x="$tmp/scf.yaml" -o "$tmp/rxsim" >/dev/null &&
   /usr/bin/python3 -c "import numpy as np, sys; sys.exit(0 if np.load('$tmp/rxsim/feat.npy').shape == (1, 16, 6, 10) else 1)"; then
  ok "one package for an --input_shape range behind dynamic AIPP: the block's 24x40 picture runs"; else bad "range package with dynamic AIPP"; fi
# The same block as raw bytes (kAippDynamicPara: format 1, batchNum 1, 32x32; mean0 16 at 120; var_reci at 136).
{ printf '\x01\x00\x00\x00\x01\x00\x00\x00\x20\x00\x00\x00\x20\x00\x00\x00'; head -c 104 /dev/zero; printf '\x10\x00'
  head -c 14 /dev/zero; printf '\x19\x1c\x00\x3c\x00\x3c\x00\x3c'; head -c 16 /dev/zero; } >"$tmp/p.bin"
if "$npuc" simulate "$tmp/ap/ap" --input image="$tmp/nv12.bin" --input mask="$tmp/mask.bin" --aipp image="$tmp/p.bin" -o "$tmp/apsim_bin" >/dev/null &&
   cmp -s "$tmp/apsim/out.npy" "$tmp/apsim_bin/out.npy"; then ok "simulate --aipp: params.bin and params.yaml agree"; else bad "simulate --aipp .bin"; fi
expect_error 2 "missing --aipp image=" -- "$npuc" simulate "$tmp/ap/ap" --input image="$tmp/nv12.bin" --input mask="$tmp/mask.bin" -o "$tmp/apsim2"
if "$npuc" bench "$tmp/ap/ap" --aipp image="$tmp/p.yaml" --runs 2 --warmup 0 | grep -q "median"; then ok "bench --aipp"; else bad "bench --aipp"; fi
expect_error 2 "give it with --aipp image=" -- "$npuc" bench "$tmp/ap/ap" --runs 1
if "$npuc" compare "$an" "$tmp/ap/ap" --aipp-config "$tmp/dyn.cfg" --aipp image="$tmp/p.yaml" -o "$tmp/apcmp" >"$tmp/apcmp.out" &&
   grep -q "6 of 6 layers matched; lowest cosine 1.0000000" "$tmp/apcmp.out" && grep -q ",aipp," "$tmp/apcmp/compare.csv"; then
  ok "compare --aipp-config --aipp: the generic package equals the engine layer by layer"; else bad "compare --aipp"; fi
printf 'inputFormat: YUV420SP_U8\nsrcImageSizeW: 40\nsrcImageSizeH: 32\n' >"$tmp/p_big.yaml"
expect_error 2 "aipp.src_size" -- "$npuc" simulate "$tmp/ap/ap" --input image="$tmp/nv12.bin" --input mask="$tmp/mask.bin" --aipp image="$tmp/p_big.yaml" -o "$tmp/apsim2"
printf 'aipp_op {\n  aipp_mode: static\n  crop: true\n  crop_size_w: 48\n}\n' >"$tmp/bad_aipp.cfg"
expect_error 2 "src_image_size_w must be set" -- "$npuc" translate apd -onnx "$an" --aipp "$tmp/bad_aipp.cfg" --out "$tmp/apout"
expect_error 2 "cannot be combined" -- "$npuc" translate apd -onnx "$digits" --aipp "$tmp/dyn.cfg" -prepost "$pp" --out "$tmp/apout"
[ -e "$tmp/apout/apd" ] && bad "a refused --aipp translate left output behind" || ok "refused --aipp translate wrote nothing"
# The manual's sample-model mode: no arguments, PREFIX and a model number asked on stdin; the device variants.
mkdir -p "$tmp/smp"
if (cd "$tmp/smp" && printf 'smp\n5\n' | "$npuc" translate >"$tmp/smp.out") && grep -q "5: digits_cnn" "$tmp/smp.out" &&
   grep -q "1: resnet50v1" "$tmp/smp.out" && grep -q "4: yolov2" "$tmp/smp.out" &&
   [ -s "$tmp/smp/output/smp/manifest.json" ]; then ok "npuc translate without arguments translates the sample model picked on stdin"
else bad "sample-model mode: $(cat "$tmp/smp.out")"; fi
# The manual's own samples: made with random weights by models/drpai_samples/make_samples.py (a missing one is named
# with that command); tiny_yolov2 made here, then translated with its sample definitions as the manual's banner shows.
mkdir -p "$tmp/smp2/samples"
cp -r "$src/models/drpai_samples" "$tmp/smp2/samples/"
expect_error 2 "make_samples.py --out $tmp/smp2/samples/drpai_samples resnet50v1" -- \
  env NPUC_SAMPLES_DIR="$tmp/smp2/samples" sh -c "printf 'r\n1\n' | '$npuc' translate"
if /usr/bin/python3 -c "import onnx" 2>/dev/null; then
  if /usr/bin/python3 "$src/models/drpai_samples/make_samples.py" --out "$tmp/smp2/samples/drpai_samples" tiny_yolov2 >/dev/null &&
     (cd "$tmp/smp2" && printf 'ty\n3\n' | NPUC_SAMPLES_DIR="$tmp/smp2/samples" "$npuc" translate >"$tmp/smp2.out" 2>&1) &&
     grep -q "Prepost file *: .*UserConfig/sample/prepost_tiny_yolov2.yaml" "$tmp/smp2.out" &&
     grep -q '"target": "drpai"' "$tmp/smp2/output/ty/manifest.json" && [ -s "$tmp/smp2/output/ty/ty_prepost_opt.yaml" ]; then
    ok "sample-model mode: the manual's tiny_yolov2 (random weights) with its sample pre/post and address map definitions"
  else bad "sample-model mode, tiny_yolov2: $(tail -5 "$tmp/smp2.out")"; fi
else echo "note: no python3-onnx: the manual's sample models are not made here"; fi
expect_error 2 "PREFIX is not set" -- "$npuc" translate </dev/null
if "$npuc" translate v2l -onnx "$digits" --target drpai-v2l --out "$tmp/v2l" >/dev/null &&
   grep -q '"target": "drpai-v2l"' "$tmp/v2l/v2l/manifest.json"; then ok "target drpai-v2l (the V2L script's device) translates"
else bad "target drpai-v2l"; fi
expect_error 2 "PREFIX is not set" -- "$npuc" translate -onnx "$digits"
expect_error 2 "Please enter only 1 prefix name" -- "$npuc" translate a b -onnx "$digits"
expect_error 2 "Invalid option name" -- "$npuc" translate a -onnx "$digits" -Frobnicate
expect_error 2 "Invalid argument" -- "$npuc" translate a -onnx
expect_error 2 "Please choose ON/OFF for -CheckPrePost option" -- "$npuc" translate a -onnx "$digits" -CheckPrePost maybe
expect_error 2 "Please add option name (-addr or -prepost or -onnx) before the file" -- "$npuc" translate a "$digits"
expect_error 2 "./onnx/nothere.onnx file is not exist." -- "$npuc" translate nothere

# npuc view: the .dot and the page of a package (with compare's SNR) and of an ONNX model; the page opened in headless
# Chromium, whose script fills the summary from the embedded data.
if "$npuc" translate vw -onnx "$digits" --reuse-memory --out "$tmp/vw" >/dev/null &&
   "$npuc" compare "$digits" "$tmp/vw/vw" -o "$tmp/vwcmp" >/dev/null &&
   "$npuc" view "$tmp/vw/vw" -o "$tmp/view" --compare "$tmp/vwcmp/compare.csv" >/dev/null &&
   "$npuc" view "$src/models/fashion/fashion_resnet.onnx" -o "$tmp/view" >/dev/null &&
   grep -q -- '-> l1;' "$tmp/view/vw.dot" && grep -q 'SNR' "$tmp/view/vw.dot" && [ "$(grep -c -- '->' "$tmp/view/fashion_resnet.dot")" -ge 27 ]; then
  ok "npuc view writes the .dot and the page of a package (SNR from compare) and of a model"
else bad "npuc view"; fi
if command -v chromium >/dev/null; then
  dom=$(chromium --headless --disable-gpu --no-sandbox --dump-dom "file://$tmp/view/vw.html" 2>/dev/null)
  if echo "$dom" | grep -q '<p id="summary">6 layers (mac: 4, vector: 2); estimated [0-9.]* us; lowest SNR [0-9.]* dB at ' &&
     echo "$dom" | grep -q '<g class="node" data-i="1">'; then
    ok "the view page in headless Chromium: its script summarises the 6 layers, their time and the lowest SNR"
  else bad "view page in Chromium: $(echo "$dom" | grep -o '<p id="summary">[^<]*')"; fi
else
  echo "note: chromium is not installed: the view page's browser check is skipped"
fi
# A model on a target without packages (tidl): nodes on the engines the target puts them, with estimated times.
if "$npuc" view "$digits" --on tidl -o "$tmp/view_tidl" >/dev/null &&
   grep -q '"engine":"eve"' "$tmp/view_tidl/digits_cnn.html" && grep -q '"engine":"dsp"' "$tmp/view_tidl/digits_cnn.html" &&
   grep -q '"time_us":[1-9]' "$tmp/view_tidl/digits_cnn.html"; then
  ok "npuc view MODEL --on tidl: nodes on eve and dsp with their estimated time"
else bad "npuc view --on tidl"; fi
expect_error 2 "--on applies to an ONNX model" -- "$npuc" view "$tmp/vw/vw" --on tidl -o "$tmp/view_tidl"

# npuc tidl-import: the TIDL guide's sample configurations parse and stop at their Caffe network, which is not here
# (modelType 0, the guide's default, reads it); the same configuration on a Caffe network that is here
# (tests/data/caffe/batch_norm) translates for tidl, and an ONNX variant too; broken variants are each an error naming
# file, line and key.
td="$src/tests/data/tidl"
expect_error 2 "tidl_import_j11_v2.txt:25: inputNetFile: \"import/dogs_deploy.prototxt\" does not exist" -- "$npuc" tidl-import "$td/tidl_import_j11_v2.txt"
expect_error 2 "tidl_import_j11_split.txt:" -- "$npuc" tidl-import "$td/tidl_import_j11_split.txt"
mkdir -p "$tmp/ti/caffe"
# caffe_sample NET_DIR SAMPLE OUT_NAME: the guide's sample configuration pointed at a Caffe network of tests/data
# (model.prototxt, model.caffemodel), its calibration SAMPLE, and the package tidl_net_OUT_NAME under $tmp/ti/caffe.
caffe_sample() {
  sed -e "s|^inputNetFile .*|inputNetFile = \"$1/model.prototxt\"|" \
      -e "s|^inputParamsFile .*|inputParamsFile = \"$1/model.caffemodel\"|" \
      -e "s|^sampleInData .*|sampleInData = \"$2\"|" \
      -e "s|^outputNetFile .*|outputNetFile = \"$tmp/ti/caffe/tidl_net_$3.bin\"|" "$td/tidl_import_j11_v2.txt"
}
head -c 144 /dev/urandom >"$tmp/ti/caffe/frame.raw"
caffe_sample "$src/tests/data/caffe/batch_norm" "$tmp/ti/caffe/frame.raw" small >"$tmp/ti/caffe/import.txt"
if "$npuc" tidl-import "$tmp/ti/caffe/import.txt" >"$tmp/ti/caffe/out.txt" && grep -q "modelType          = 0            Caffe" "$tmp/ti/caffe/out.txt" &&
   grep -q '"numerics": "int8-pow2"' "$tmp/ti/caffe/tidl_net_small/manifest.json"; then ok "tidl-import modelType 0: the guide's sample on a Caffe network"
else bad "tidl-import modelType 0: $(cat "$tmp/ti/caffe/out.txt")"; fi
# A JDetNet-shaped SSD (PriorBox, DetectionOutput) through the guide's sample configuration: the package detects
# (DetectionOutput on the DSP; its output 200 records of 7 values).
ssd="$src/tests/data/caffe/ssd"
head -c 3072 /dev/urandom >"$tmp/ti/caffe/ssd.raw"
caffe_sample "$ssd" "$tmp/ti/caffe/ssd.raw" ssd >"$tmp/ti/caffe/ssd.txt"
if "$npuc" tidl-import "$tmp/ti/caffe/ssd.txt" >"$tmp/ti/caffe/ssd.out" 2>&1 &&
   "$npuc" simulate "$tmp/ti/caffe/tidl_net_ssd" --input "data=$ssd/input_data.npy" -o "$tmp/ti/caffe/ssdsim" >"$tmp/ti/caffe/ssdsim.out" 2>&1 &&
   grep -q "detection_out float32 1x1x200x7" "$tmp/ti/caffe/ssdsim.out"; then ok "tidl-import modelType 0: an SSD-shaped Caffe network (PriorBox, DetectionOutput) translates and detects"
else bad "tidl-import SSD: $(tail -3 "$tmp/ti/caffe/ssd.out" "$tmp/ti/caffe/ssdsim.out")"; fi
# The guide's own sample (JacintoNet11 v2, tidl_import_j11_v2.txt as written: Caffe, inElementType 0, raw 8-bit
# calibration frame, 12-bit weights) on a JacintoNet11-shaped network (tests/data/caffe/jacintonet11): the int8-pow2
# package gives OpenCV's class for the picture; and a JDetNet-shaped SSD with five heads, whose tidl package
# detects (npuc_caffe_test compares its detections with OpenCV's and the float package's).
j11="$src/tests/data/caffe/jacintonet11"
caffe_sample "$j11" "$j11/input_data.raw" j11 >"$tmp/ti/caffe/j11.txt"
if "$npuc" tidl-import "$tmp/ti/caffe/j11.txt" >"$tmp/ti/caffe/j11.out" 2>&1 &&
   "$npuc" simulate "$tmp/ti/caffe/tidl_net_j11" --input "data=$j11/input_data.npy" --top 1 -o "$tmp/ti/caffe/j11sim" >"$tmp/ti/caffe/j11sim.out" 2>&1 &&
   grep -q "modelType          = 0            Caffe" "$tmp/ti/caffe/j11.out" &&
   grep -q "top 1: index 9 " "$tmp/ti/caffe/j11sim.out"; then ok "tidl-import: the guide's JacintoNet11 sample configuration on a JacintoNet11-shaped Caffe network gives OpenCV's class (9)"
else bad "tidl-import JacintoNet11: $(tail -3 "$tmp/ti/caffe/j11.out" "$tmp/ti/caffe/j11sim.out")"; fi
# The import trace's lines as the guide prints them (T:L672-687): id, TIDL type, group, #in, #out, 8 input ids, the output
# id, in and out N C H W — the inner product reads layer 17 (the pooling), the last data layer reads the dequantize.
if grep -Eq "^ +18, TIDL_InnerProductLayer +,  1,   1 ,  1 , +17 ,  x ,  x ,  x ,  x ,  x ,  x ,  x , 18 ," "$tmp/ti/caffe/j11.out" &&
   grep -Eq "^ +21, TIDL_DataLayer +,  0,   1 , -1 , +20 ," "$tmp/ti/caffe/j11.out"; then ok "tidl-import: the trace's lines in the guide's form (group, inputs and their ids)"
else bad "tidl-import trace lines: $(grep -E "TIDL_(InnerProduct|Data)Layer" "$tmp/ti/caffe/j11.out")"; fi
# npuc view takes tidl-import's reference at outputNetFile as it takes the package folder (the audit: "not a valid ONNX
# model"): the same page.
# -p prints the layer table (tidl_viewer -p): the inner product fc10 on the DSP with its MACs (10 x 128) and time.
if "$npuc" view "$tmp/ti/caffe/tidl_net_j11.bin" -o "$tmp/ti/caffe/viewref" --name j11 -p >"$tmp/ti/caffe/view.out" 2>&1 &&
   "$npuc" view "$tmp/ti/caffe/tidl_net_j11" -o "$tmp/ti/caffe/viewdir" --name j11 >/dev/null 2>&1 &&
   cmp -s "$tmp/ti/caffe/viewref/j11.dot" "$tmp/ti/caffe/viewdir/j11.dot" &&
   grep -Eq "^ +[0-9]+  fc10 +gemm +dsp .* 1280 +[0-9.]+$" "$tmp/ti/caffe/view.out"; then ok "view: tidl-import's package reference is its package, -p its layer table"
else bad "view of a package reference: $("$npuc" view "$tmp/ti/caffe/tidl_net_j11.bin" -o "$tmp/ti/caffe/viewref" 2>&1 | tail -2)"; fi
jdet="$src/tests/data/caffe/jdetnet"
caffe_sample "$jdet" "$jdet/input_data.raw" jdet >"$tmp/ti/caffe/jdet.txt"
if "$npuc" tidl-import "$tmp/ti/caffe/jdet.txt" >"$tmp/ti/caffe/jdet.out" 2>&1 &&
   "$npuc" simulate "$tmp/ti/caffe/tidl_net_jdet" --input "data=$jdet/input_data.npy" -o "$tmp/ti/caffe/jdetsim" >"$tmp/ti/caffe/jdetsim.out" 2>&1 &&
   grep -q "detection_out float32 1x1x50x7" "$tmp/ti/caffe/jdetsim.out"; then ok "tidl-import: a JDetNet-shaped SSD (five heads) through the guide's sample configuration detects"
else bad "tidl-import JDetNet: $(tail -3 "$tmp/ti/caffe/jdet.out" "$tmp/ti/caffe/jdetsim.out")"; fi
sed -e "/^inputParamsFile/d" "$tmp/ti/caffe/import.txt" >"$tmp/ti/caffe/noparams.txt"
expect_error 2 "inputParamsFile: is required with modelType 0 (Caffe)" -- "$npuc" tidl-import "$tmp/ti/caffe/noparams.txt"
onnxify() {  # the guide's sample as an ONNX configuration for the digits model
  sed -e 's|^modelType .*|modelType = 2|' -e "s|^inputNetFile .*|inputNetFile = \"$digits\"|" \
      -e "s|^sampleInData .*|sampleInData = \"$src/models/digits/test_x.npy\"|" \
      -e "s|^outputNetFile .*|outputNetFile = \"$tmp/ti/out/tidl_net_digits.bin\"|" "$1"
}
onnxify "$td/tidl_import_j11_v2.txt" >"$tmp/ti/ok.txt"
if "$npuc" tidl-import "$tmp/ti/ok.txt" >"$tmp/ti/ok.out" && grep -q "numParamBits       = 12" "$tmp/ti/ok.out" &&
   [ -s "$tmp/ti/out/tidl_net_digits/tidl_net_digits_summary.csv" ] &&
   grep -q '"numerics": "int8-pow2"' "$tmp/ti/out/tidl_net_digits/manifest.json" &&
   grep -q '"quant_round_add": 50' "$tmp/ti/out/tidl_net_digits/manifest.json" &&
   grep -q "^layer,/features/features.0/Conv,conv,,,,,[0-9]*,[0-9]*," "$tmp/ti/out/tidl_net_digits/tidl_net_digits_pow2_table.csv"; then
  ok "tidl-import: an ONNX configuration translates for tidl into an int8-pow2 package (its keys as the options), every key's use printed"
else bad "tidl-import ONNX configuration: $(cat "$tmp/ti/ok.out")"; fi
onnxify "$td/tidl_import_j11_split.txt" | grep -v '^layersGroupId\|^conv2dKernelType' >"$tmp/ti/split.txt"
cp "$tmp/ti/split.txt" "$tmp/ti/split6.txt"
# The digits package has 8 layers: 5 in group 1 (EVE), 3 in group 2 (DSP), TIDL's input / output 0s around them.
printf 'layersGroupId = 0 1 1 1 1 1 2 2 2 0\nconv2dKernelType = 1 0 0 0 0 0 0 0 0 1\n' >>"$tmp/ti/split.txt"
if "$npuc" tidl-import "$tmp/ti/split.txt" >"$tmp/ti/split.out" && grep -q "each group a pipeline stage" "$tmp/ti/split.out" &&
   [ "$(grep -c '"group": 2' "$tmp/ti/out/tidl_net_digits/manifest.json")" = 3 ] &&
   "$npuc" bench "$tmp/ti/out/tidl_net_digits" --pipeline --runs 5 | grep -q "pipeline: 2 stages (groups 1, 2)" &&
   grep -q "3 sparse, 0 dense" "$tmp/ti/out/tidl_net_digits/tidl_net_digits_summary.md"; then
  ok "tidl-import: layersGroupId becomes the package's layers groups, and bench --pipeline runs them as two stages; conv2dKernelType sets the estimate's kernels"
else bad "tidl-import with layer groups: $(cat "$tmp/ti/split.out")"; fi
cp "$tmp/ti/split6.txt" "$tmp/ti/kernels.txt"
printf 'conv2dKernelType = 1 0 0 1\n' >>"$tmp/ti/kernels.txt"
expect_error 2 ":$(wc -l <"$tmp/ti/kernels.txt"): conv2dKernelType: convolution kernels: 2 values for 8 layers (one per layer of the package" -- "$npuc" tidl-import "$tmp/ti/kernels.txt"
printf 'layersGroupId = 0 1 1 1 1 2 2 0\n' >>"$tmp/ti/split6.txt"
expect_error 2 "layersGroupId: layers groups: 6 groups listed for the package's 8 layers" -- "$npuc" tidl-import "$tmp/ti/split6.txt"
printf 'layersGroupId = 0 1 1 2 2 1 1 2 2 0\n' >"$tmp/ti/order.txt"
grep -v '^layersGroupId' "$tmp/ti/split6.txt" >>"$tmp/ti/order.txt"
expect_error 2 "in group 1 after layer '/features/features.6/Conv' in group 2" -- "$npuc" tidl-import "$tmp/ti/order.txt"
# A 0 inside the list (not TIDL's input / output layer) would shift every later value: refused at its line.
grep -v '^layersGroupId' "$tmp/ti/split6.txt" >"$tmp/ti/mid0.txt"
printf 'layersGroupId = 0 1 1 1 0 1 2 2 2 0\n' >>"$tmp/ti/mid0.txt"
expect_error 2 "mid0.txt:$(wc -l <"$tmp/ti/mid0.txt"): layersGroupId: value 5 of 10 is 0: group 0 is TIDL's input and output data layers" -- "$npuc" tidl-import "$tmp/ti/mid0.txt"
# A failed import leaves no output folder behind (not even the empty folder of outputNetFile), and its count error
# names the package's layers.
sed -e "s|^outputNetFile .*|outputNetFile = \"$tmp/ti/fresh/sub/x.bin\"|" "$tmp/ti/split6.txt" >"$tmp/ti/fresh.txt"
expect_error 2 "as manifest.json lists them: 0 input/p2_quantize, 1 /features/features.0/Conv" -- "$npuc" tidl-import "$tmp/ti/fresh.txt"
[ ! -e "$tmp/ti/fresh" ] && ok "a failed tidl-import leaves no folder behind" || bad "a failed tidl-import left $(find "$tmp/ti/fresh")"
# … but never removes a folder that was there before, even an empty one reached through "..".
mkdir -p "$tmp/ti/victim"
"$npuc" translate p -onnx "$digits" --target generic --layer-group nosuch=2 --out "$tmp/ti/new/../victim" >/dev/null 2>&1
[ -d "$tmp/ti/victim" ] && [ ! -e "$tmp/ti/new" ] && ok "a failed run keeps the folders that were there (a path through ..)" ||
  bad "a failed run with --out new/../victim: victim $( [ -d "$tmp/ti/victim" ] && echo kept || echo removed), new $( [ -e "$tmp/ti/new" ] && echo left || echo removed)"
# The package view: each layer on its group's engine (TIDL: group 1 EVE, group 2 DSP), the groups as .dot clusters.
if "$npuc" view "$tmp/ti/out/tidl_net_digits" -o "$tmp/ti/view" >/dev/null &&
   grep -q '"engine":"eve","stream":"mac","group":1' "$tmp/ti/view/tidl_net_digits.html" &&
   grep -q '"engine":"dsp","stream":"[a-z]*","group":2' "$tmp/ti/view/tidl_net_digits.html" &&
   ! grep -q '"engine":"vector"' "$tmp/ti/view/tidl_net_digits.html" &&
   grep -q 'subgraph cluster_group2 { label="group 2"' "$tmp/ti/view/tidl_net_digits.dot"; then
  ok "npuc view of a tidl package with layers groups: layers on eve / dsp by group, the groups as clusters"
else bad "npuc view of a grouped tidl package: $(grep -o '"engine":"[a-z]*","stream":"[a-z]*","group":[0-9]' "$tmp/ti/view/tidl_net_digits.html" | sort | uniq -c)"; fi
# translate's own options: --layer-groups auto (the estimate's cut) and --layer-group LAYER=ID.
if "$npuc" translate lg -onnx "$digits" --target tidl --calib "input=$src/models/digits/test_x.npy" --layer-groups auto \
     --out "$tmp/lg" >/dev/null && grep -q '"group": 1' "$tmp/lg/lg/manifest.json" && grep -q '"group": 2' "$tmp/lg/lg/manifest.json" &&
   "$npuc" translate lg2 -onnx "$digits" --target generic --layer-group /features/features.6/Conv=2 --out "$tmp/lg" >/dev/null &&
   [ "$(grep -c '"group": 2' "$tmp/lg/lg2/manifest.json")" -ge 2 ]; then
  ok "translate --layer-groups auto / --layer-group LAYER=ID record the package's layers groups"
else bad "translate with layer groups"; fi
# Several packages at once, each on its own simulated core.
"$npuc" bench "$tmp/lg/lg" --with "$tmp/lg/lg2" --runs 3 | grep -q "concurrent: 2 packages, one simulated core each" &&
  ok "bench --with: two packages run at once, one simulated core each" || bad "bench --with"
expect_error 2 "not a package directory" -- "$npuc" bench "$tmp/lg/lg" --with "$tmp/lg/none" --runs 1
expect_error 2 "--layer-group takes LAYER=ID (got 'conv')" -- "$npuc" translate lg3 -onnx "$digits" --target generic --layer-group conv --out "$tmp/lg"
expect_error 2 "--layer-groups takes 'auto'" -- "$npuc" translate lg3 -onnx "$digits" --target generic --layer-groups eve --out "$tmp/lg"
n=0
tidl_bad() {  # tidl_bad 'sed script' 'expected text'
  n=$((n + 1))
  sed -e "$1" "$tmp/ti/ok.txt" >"$tmp/ti/bad$n.txt"
  expect_error 2 "$2" -- "$npuc" tidl-import "$tmp/ti/bad$n.txt" --dry-run
}
tidl_bad 's|^numParamBits .*|numParamBits = 13|' ":22: numParamBits: 13 is outside the guide's range [4, 12]"
tidl_bad 's|^numParamBits .*|numParamBits = 3|' "numParamBits: 3 is outside"
tidl_bad 's|^numParamBits .*|numParamBits = 8.5|' "numParamBits: '8.5' is not an integer"
tidl_bad 's|^numParamBits .*|numParamBits = eight|' "numParamBits: 'eight' is not a number"
tidl_bad 's|^numParamBits .*|numParamBits = "8"|' "numParamBits: expects a number, got a string"
tidl_bad 's|^numParamBits .*|numParamBits = 8 8|' "numParamBits: expects one value, got 2"
tidl_bad 's|^numParamBits .*|numParamBits =|' "numParamBits: has no value"
tidl_bad 's|^quantRoundAdd .*|quantRoundAdd = 101|' "quantRoundAdd: 101 is outside the guide's range [0, 100]"
tidl_bad 's|^quantizationStyle .*|quantizationStyle = 0|' "quantizationStyle: 0 (fixed quantization by the training framework) is not supported"
tidl_bad 's|^inElementType .*|inElementType = 2|' "inElementType: 2 is outside"
tidl_bad 's|^rawSampleInData .*|rawSampleInData = -1|' "rawSampleInData: -1 is outside"
tidl_bad 's|^modelType .*|modelType = 1|' "is not a .pb file (modelType 1 is a TensorFlow frozen graph)"
tidl_bad 's|^modelType .*|modelType = 4|' "modelType: 4 is outside"
tidl_bad 's|^modelType .*|modelType = 3|' "is not a .tflite file (modelType 3 is TensorFlow Lite)"
tidl_bad 's|^randParams .*|randParams = 0\nnumParamBit = 8|' ":3: numParamBit: unknown key"
tidl_bad 's|^randParams .*|randparams = 0|' "randparams: unknown key (did you mean randParams?)"
tidl_bad 's|^randParams .*|randParams = 0\nrandParams = 1|' "randParams: set twice (first at line 2)"
tidl_bad 's|^randParams .*|randParams 0|' ":2: randParams 0: expected key = value"
tidl_bad 's|^inputNetFile .*|inputNetFile = "nowhere.onnx"|' "inputNetFile: \"nowhere.onnx\" does not exist"
tidl_bad "s|^inputNetFile .*|inputNetFile = \"$td/README.md\"|" "is not an .onnx file (modelType 2 is ONNX)"
tidl_bad 's|^inputNetFile .*|inputNetFile = "unterminated|' "inputNetFile: unterminated string"
tidl_bad 's|^inputNetFile .*|inputNetFile = "a.onnx"x|' "inputNetFile: text after the closing quote: 'x'"
tidl_bad 's|^outputNetFile .*|outputNetFile = "sub/"|' "outputNetFile: \"sub/\" names a folder: give a file name"
tidl_bad '/^inputNetFile/d' ".txt: inputNetFile: is required"
tidl_bad 's|^sampleInData .*|sampleInData = "missing.raw"|' "sampleInData: \"missing.raw\" does not exist"
tidl_bad 's|^foldBnInConv2D .*|foldBnInConv2D = 1\npreProcType = 7|;s|^rawSampleInData .*|rawSampleInData = 0|' "preProcType: 7 is a configuration error in the guide's table"
tidl_bad 's|^foldBnInConv2D .*|foldBnInConv2D = 1\npreProcType = 300|' "preProcType: 300 is outside the guide's range [0, 256]"
tidl_bad 's|^foldBnInConv2D .*|foldBnInConv2D = 1\nrawSampleInData2 = 1|' "rawSampleInData2: unknown key"
tidl_bad 's|^foldBnInConv2D .*|foldBnInConv2D = 1\ninNumChannels = 2000|' "inNumChannels: 2000 is outside the guide's range [1, 1024]"
tidl_bad 's|^foldBnInConv2D .*|foldBnInConv2D = 1\ninMean = 1 2 3\ninScale = 1 2|' "inScale: 2 values for 3 inMean values"
tidl_bad 's|^foldBnInConv2D .*|foldBnInConv2D = 1\ninQuantFactor = 0|' "inQuantFactor: must be > 0, or -1"
tidl_bad 's|^foldBnInConv2D .*|foldBnInConv2D = 1\nlayersGroupId = 0 1 1 0\nconv2dKernelType = 1 1|' "conv2dKernelType: 2 values, layersGroupId has 4"
tidl_bad 's|^foldBnInConv2D .*|foldBnInConv2D = 1\nconv2dKernelType = 1 2|' "conv2dKernelType: 2 is outside the guide's range [0, 1]"
tidl_bad 's|^outputNetFile .*|outputNetFile = "/tmp/.hidden.bin"|' "outputNetFile: outputNetFile's name '.hidden' starts with '.'"
# outputNetFile outside the configuration's folder and the current one: refused unless --output-anywhere (issue 46).
tidl_bad "s|^outputNetFile .*|outputNetFile = \"$tmp/elsewhere/net.bin\"|" "is outside the configuration's folder and the current folder; npuc writes there only with --output-anywhere"
sed -e "s|^outputNetFile .*|outputNetFile = \"$tmp/elsewhere/net.bin\"|" "$tmp/ti/ok.txt" >"$tmp/ti/anywhere.txt"
if "$npuc" tidl-import "$tmp/ti/anywhere.txt" --dry-run --output-anywhere >/dev/null; then ok "tidl-import --output-anywhere"; else bad "tidl-import --output-anywhere"; fi
expect_error 2 "cannot read the import configuration" -- "$npuc" tidl-import "$tmp/ti/none.txt"
tidl_bad 's|^foldBnInConv2D .*|foldBnInConv2D = 1\ninQuantFactor = 3|' "inQuantFactor: 3 is not a power of two"
tidl_bad 's|^foldBnInConv2D .*|foldBnInConv2D = 1\nquantHistoryParam1 = 101|' "quantHistoryParam1: 101 is outside"
head -c 100 /dev/zero >"$tmp/ti/short.raw"
tidl_bad "s|^sampleInData .*|sampleInData = \"$tmp/ti/short.raw\"\nnumSampleInData = 4|" "has 100 bytes; 4 frames of 1x8x8 need 256"
tidl_bad "s|^sampleInData .*|sampleInData = \"$tmp/ti/short.raw\"|;s|^rawSampleInData .*|rawSampleInData = 0|" "short.raw: not a picture npuc can decode"
# Readers that never block or read without end: a FIFO as the configuration, /dev/zero as the raw frames (issue 46).
mkfifo "$tmp/ti/fifo.txt"
expect_error 2 "fifo.txt: is not a regular file" -- timeout 20 "$npuc" tidl-import "$tmp/ti/fifo.txt"
tidl_bad 's|^sampleInData .*|sampleInData = "/dev/zero"|' "sampleInData: /dev/zero: is not a regular file"
# A configuration saved with a UTF-8 byte-order mark reads as without; the plan prints values whole.
{ printf '\xef\xbb\xbf'; cat "$tmp/ti/ok.txt"; } >"$tmp/ti/bom.txt"
"$npuc" tidl-import "$tmp/ti/bom.txt" --dry-run >"$tmp/ti/bom.out" && grep -q "outputNetFile      = $tmp/ti/out/tidl_net_digits.bin " "$tmp/ti/bom.out" &&
  ok "tidl-import: a byte-order mark is skipped, the plan prints whole values" || bad "tidl-import with a BOM: $(cat "$tmp/ti/bom.out")"
# The int8-pow2 keys given for a target of other numerics are said to be ignored.
"$npuc" tidl-import "$tmp/ti/ok.txt" --target generic --dry-run >/dev/null &&
  "$npuc" translate np -onnx "$digits" --target generic --numParamBits 6 --out "$tmp/ti/np" 2>&1 |
  grep -q "numParamBits set, but target 'generic' has fp32 numerics" &&
  ok "translate: int8-pow2 options for a target of other numerics are said to be ignored" || bad "pow2 options on generic not said"
# Raw calibration frames (8-bit codes), as TIDL's sampleInData holds them.
head -c 256 /dev/urandom >"$tmp/ti/frames.raw"
sed -e "s|^sampleInData .*|sampleInData = \"$tmp/ti/frames.raw\"\nnumSampleInData = 4|" "$tmp/ti/ok.txt" >"$tmp/ti/raw.txt"
"$npuc" tidl-import "$tmp/ti/raw.txt" >"$tmp/ti/raw.out" && grep -q '"numerics": "int8-pow2"' "$tmp/ti/out/tidl_net_digits/manifest.json" &&
  ok "tidl-import: raw sampleInData frames calibrate the int8-pow2 package" || bad "tidl-import raw frames: $(cat "$tmp/ti/raw.out")"
# Encoded pictures (rawSampleInData = 0: the guide's default), pre-processed as preProcType says: one picture, or a
# .txt list of them; pictures that break the rule are errors at the preProcType line.
img="$src/tests/data/images/gradient_64x48.png"
# (the pictures pre-processed for this model hold negative values: a signed input, inElementType 1 — with 0,
# translate refuses them rather than clipping half of them: issue 51.1)
sed -e "s|^sampleInData .*|sampleInData = \"$img\"\npreProcType = 0|;s|^rawSampleInData .*|rawSampleInData = 0|;s|^inElementType .*|inElementType = 1|" "$tmp/ti/ok.txt" >"$tmp/ti/pic.txt"
printf '# calibration pictures\n%s\n\n%s\n' "$img" "$src/models/digits/demo/digit.png" >"$tmp/ti/pics.txt"
sed -e "s|^sampleInData .*|sampleInData = \"$tmp/ti/pics.txt\"\nnumSampleInData = 2\npreProcType = 256\ninMean = 128\ninScale = 0.0078125|;s|^rawSampleInData .*|rawSampleInData = 0|;s|^inElementType .*|inElementType = 1|" "$tmp/ti/ok.txt" >"$tmp/ti/pics_cfg.txt"
if "$npuc" tidl-import "$tmp/ti/pic.txt" >"$tmp/ti/pic.out" && grep -q "0: encoded pictures (JPEG, PNG, …), decoded here" "$tmp/ti/pic.out" &&
   grep -q '"numerics": "int8-pow2"' "$tmp/ti/out/tidl_net_digits/manifest.json" &&
   "$npuc" tidl-import "$tmp/ti/pics_cfg.txt" >"$tmp/ti/pics.out"; then
  ok "tidl-import: encoded pictures (one, or a .txt list) pre-processed as preProcType calibrate the package"
else bad "tidl-import with pictures: $(cat "$tmp/ti/pic.out" "$tmp/ti/pics.out")"; fi
sed -e 's|^preProcType .*|preProcType = 256\ninMean = 1 2\ninScale = 1 2|' "$tmp/ti/pic.txt" >"$tmp/ti/pic256.txt"
expect_error 2 "pic256.txt:$(grep -n '^preProcType' "$tmp/ti/pic256.txt" | cut -d: -f1): preProcType: $img: preProcType 256 takes 1 inMean and inScale values (one per channel)" -- "$npuc" tidl-import "$tmp/ti/pic256.txt"
printf 'nowhere.png\n' >"$tmp/ti/missing.txt"
sed -e "s|^sampleInData .*|sampleInData = \"$tmp/ti/missing.txt\"|" "$tmp/ti/pic.txt" >"$tmp/ti/picmiss.txt"
expect_error 2 "picmiss.txt:$(grep -n '^sampleInData' "$tmp/ti/picmiss.txt" | cut -d: -f1): sampleInData: $tmp/ti/nowhere.png" -- "$npuc" tidl-import "$tmp/ti/picmiss.txt"
sed -e 's|^numSampleInData .*|numSampleInData = 3|' "$tmp/ti/pics_cfg.txt" >"$tmp/ti/pics3.txt"
expect_error 2 "sampleInData: \"$tmp/ti/pics.txt\" lists 2 picture(s); numSampleInData is 3" -- "$npuc" tidl-import "$tmp/ti/pics3.txt"
grep -v '^rawSampleInData' "$tmp/ti/ok.txt" | sed -e "s|^sampleInData .*|sampleInData = \"$tmp/ti/frames.raw\"|" >"$tmp/ti/noraw.txt"
expect_error 2 "not a picture npuc can decode" -- "$npuc" tidl-import "$tmp/ti/noraw.txt"
expect_error 2 "set rawSampleInData = 1 for raw frames" -- "$npuc" tidl-import "$tmp/ti/noraw.txt"
# Without calibration samples the tidl target writes reports only, and says so.
"$npuc" translate nc -onnx "$digits" --target tidl --out "$tmp/ti/nc" >"$tmp/ti/nc.out" 2>&1 &&
  grep -q "no object package is written without calibration samples" "$tmp/ti/nc.out" && [ ! -e "$tmp/ti/nc/nc/manifest.json" ] &&
  ok "translate --target tidl without --calib: reports only, said" || bad "tidl without calibration: $(cat "$tmp/ti/nc.out")"

# int8 translations write the quantization table beside the package (csv, xlsx, html), the same bytes on every run.
if "$npuc" translate qt -onnx "$digits" --target generic-int8 --calib input="$src/models/digits/test_x.npy" --out "$tmp/qt1" >/dev/null &&
   "$npuc" translate qt -onnx "$digits" --target generic-int8 --calib input="$src/models/digits/test_x.npy" --out "$tmp/qt2" >/dev/null &&
   grep -q "^name,kind,lo,hi,scale,zero_point,channels,snr_db,saturated,warning" "$tmp/qt1/qt/qt_quant_table.csv" &&
   grep -q "<h1>npuc quantization table</h1>" "$tmp/qt1/qt/qt_quant_table.html" &&
   cmp -s "$tmp/qt1/qt/qt_quant_table.xlsx" "$tmp/qt2/qt/qt_quant_table.xlsx" && cmp -s "$tmp/qt1/qt/manifest.json" "$tmp/qt2/qt/manifest.json"; then
  ok "int8 translate writes the quantization table as csv, xlsx and html, byte-identical across runs"
else bad "quantization table files"; fi

# A model quantized elsewhere translates for kneron only in radix form (zero points 0, power-of-two scales).
"$npuc" quantize "$digits" --calib input="$src/models/digits/test_x.npy" -o "$tmp/qa.onnx" >/dev/null
"$npuc" quantize "$digits" --calib input="$src/models/digits/test_x.npy" --scheme radix -o "$tmp/qr.onnx" >/dev/null
expect_error 2 "is quantized with a scale or zero point that is not in int8-radix form" -- "$npuc" translate qa -onnx "$tmp/qa.onnx" --target kneron --out "$tmp/qk"
if "$npuc" translate qr -onnx "$tmp/qr.onnx" --target kneron --out "$tmp/qk" >/dev/null && grep -q "logits" "$tmp/qk/qr/qr_radix_scale_info.txt"; then
  ok "a radix-form QDQ model (npuc quantize --scheme radix) translates for kneron with its own scales"
else bad "radix QDQ model for kneron"; fi

# custom-op create checks its limits while it reads (64 tensors a side, 256 parameters) and in linear time: a 100,000-
# input definition (3 MB) is refused at once, not after a quadratic scan of every name (issue 46).
cop_yaml() {  # cop_yaml N_INPUTS N_PARAMS
  awk -v n="$1" -v p="$2" 'BEGIN { print "name: Big\nframework: onnx\ninputs:"; for (i = 0; i < n; i++) print "  x" i ":\n    type: VX_TYPE_TENSOR";
    print "outputs:\n  y:\n    type: VX_TYPE_TENSOR"; if (p) print "params:"; for (i = 0; i < p; i++) print "  p" i ":\n    type: VX_TYPE_INT32" }'
}
cop_yaml 65 0 >"$tmp/cop65.yml"
expect_error 2 "field 'inputs': at most 64 tensors" -- "$npuc" custom-op create --config "$tmp/cop65.yml" --op-path "$tmp/cop65"
cop_yaml 1 257 >"$tmp/cop257.yml"
expect_error 2 "field 'params': at most 256 parameters" -- "$npuc" custom-op create --config "$tmp/cop257.yml" --op-path "$tmp/cop257"
cop_yaml 100000 0 >"$tmp/cop_big.yml"
expect_error 2 "field 'inputs': at most 64 tensors" -- timeout 60 "$npuc" custom-op create --config "$tmp/cop_big.yml" --op-path "$tmp/cop_big"
printf 'name: MyOp\nframework: tensorflow\ndomain: com.x\ninputs: {x: {type: VX_TYPE_TENSOR}}\noutputs: {y: {type: VX_TYPE_TENSOR}}\n' >"$tmp/coptf.yml"
expect_error 2 "field 'domain': a TensorFlow op has none" -- "$npuc" custom-op create --config "$tmp/coptf.yml" --op-path "$tmp/coptf"
# The RKNN guide's spelling (§3.1.1): --action / -a create|build is the subcommand.
printf 'name: MyOp\nframework: onnx\ndomain: com.x\ninputs: {x: {type: VX_TYPE_TENSOR}}\noutputs: {y: {type: VX_TYPE_TENSOR}}\n' >"$tmp/copact.yml"
if "$npuc" custom-op --action create --config "$tmp/copact.yml" --op_path "$tmp/copact" >/dev/null &&
   "$npuc" custom-op -a create --config "$tmp/copact.yml" --op_path "$tmp/copact2" >/dev/null &&
   [ -f "$tmp/copact/op.yml" ] && [ -f "$tmp/copact2/op.yml" ]; then ok "custom-op --action create / -a create as the RKNN guide writes them"
else bad "custom-op --action create"; fi
expect_error 2 "custom-op --action deploy: the actions are create and build" -- "$npuc" custom-op --action deploy --config "$tmp/copact.yml"

# custom-op build (issue 47.11): --out-dir made when missing and an error naming it when it cannot be; --toolchain passes
# a CMake toolchain file and skips the load check with a note; --test --param gives the harness parameters, checked
# against op.yml. The example's plugin, copied so nothing is written into the source tree.
if command -v cmake >/dev/null && command -v c++ >/dev/null; then
  cp -r "$src/examples/custom_op/resize_area" "$tmp/cop"
  rm -rf "$tmp/cop/build" "$tmp"/cop/*.so
  printf 'garbage' >"$tmp/cop_file"
  expect_error 2 "--out-dir $tmp/cop_file: exists and is not a folder" -- "$npuc" custom-op build --op-path "$tmp/cop" --out-dir "$tmp/cop_file"
  expect_error 2 "--toolchain $tmp/none.cmake: no such file" -- "$npuc" custom-op build --op-path "$tmp/cop" --toolchain "$tmp/none.cmake"
  expect_error 2 "op ResizeArea has no parameter 'nope'" -- "$npuc" custom-op build --op-path "$tmp/cop" --test --param nope=1
  expect_error 2 "parameter 'size' (VX_TYPE_ARRAY): 'x' is not an integer" -- "$npuc" custom-op build --op-path "$tmp/cop" --test --param size=5,x
  expect_error 2 "parameter 'align_corners' (VX_TYPE_BOOL): 'maybe' is not a bool" -- "$npuc" custom-op build --op-path "$tmp/cop" --test --param align_corners=maybe
  expect_error 2 "--param gives the harness a parameter: add --test" -- "$npuc" custom-op build --op-path "$tmp/cop" --param size=5,7
  expect_error 2 "a library built with --toolchain" -- "$npuc" custom-op build --op-path "$tmp/cop" --test --toolchain "$tmp/cop_file"
  printf 'name: Op8\nframework: onnx\ndomain: t.x\ninputs:\n  x:\n    type: VX_TYPE_TENSOR\noutputs:\n  y:\n    type: VX_TYPE_TENSOR\nparams:\n  k:\n    type: VX_TYPE_INT8\n  s:\n    type: string\n' >"$tmp/op8.yml"
  "$npuc" custom-op create --config "$tmp/op8.yml" --op-path "$tmp/op8" >/dev/null
  expect_error 2 "--param k=300: parameter 'k' (VX_TYPE_INT8): 300 is beyond the type (its range is -128 to 127)" -- "$npuc" custom-op build --op-path "$tmp/op8" --test --param k=300
  expect_error 2 "parameter 's' (string): the harness takes numbers; a string parameter cannot be given" -- "$npuc" custom-op build --op-path "$tmp/op8" --test --param s=abc
  expect_error 2 "parameter 'k' is given twice" -- "$npuc" custom-op build --op-path "$tmp/op8" --test --param k=1 --param k=2
  [ -e "$tmp/cop/build" ] && bad "a refused custom-op build configured anyway" || ok "refused custom-op builds build nothing"
  # A toolchain file that names this machine's compiler: the build works here, and the library is not loaded.
  printf 'set(CMAKE_SYSTEM_NAME Linux)\nset(CMAKE_CXX_COMPILER "%s")\n' "$(command -v c++)" >"$tmp/host.cmake"
  if "$npuc" custom-op build --op-path "$tmp/cop" --build-dir "$tmp/cop_tc" --toolchain "$tmp/host.cmake" --out-dir "$tmp/cop_out/x" >"$tmp/cop_tc.log" 2>&1 &&
     [ -f "$tmp/cop_out/x/libresize_area.so" ] && grep -q "CMAKE_TOOLCHAIN_FILE=.*host.cmake" "$tmp/cop_tc.log" &&
     grep -q "note: .*libresize_area.so was built with the toolchain .*host.cmake for another machine; it is not loaded here" "$tmp/cop_tc.log" &&
     ! grep -q "on engine" "$tmp/cop_tc.log" && grep -q "CMAKE_TOOLCHAIN_FILE:FILEPATH=.*host.cmake" "$tmp/cop_tc/CMakeCache.txt"; then
    ok "custom-op build --toolchain: passed to CMake, the library in the --out-dir it made, the load check skipped with a note"
  else bad "custom-op build --toolchain: $(cat "$tmp/cop_tc.log")"; fi
  # --cross aarch64: the guide's Linaro compiler unpacked into ~/.rknn (here a stand-in wrapping this machine's compiler,
  # in a HOME of the test's own) gives the toolchain file npuc writes; without one, the error says where to put it.
  mkdir -p "$tmp/home/.rknn/gcc-linaro-6.3.1-2017.05-x86_64_aarch64-linux-gnu/bin"
  for t in g++ gcc; do
    host=$(command -v c++); [ "$t" = gcc ] && host=$(command -v cc)
    printf '#!/bin/sh\nexec "%s" "$@"\n' "$host" >"$tmp/home/.rknn/gcc-linaro-6.3.1-2017.05-x86_64_aarch64-linux-gnu/bin/aarch64-linux-gnu-$t"
    chmod +x "$tmp/home/.rknn/gcc-linaro-6.3.1-2017.05-x86_64_aarch64-linux-gnu/bin/aarch64-linux-gnu-$t"
  done
  if HOME="$tmp/home" "$npuc" custom-op build --op-path "$tmp/cop" --build-dir "$tmp/cop_x" --out-dir "$tmp/cop_out/z" --cross aarch64 >"$tmp/cop_x.log" 2>&1 &&
     [ -f "$tmp/cop_out/z/libresize_area.so" ] && grep -q 'CMAKE_CXX_COMPILER ".*/.rknn/gcc-linaro-6.3.1-2017.05-x86_64_aarch64-linux-gnu/bin/aarch64-linux-gnu-g++"' "$tmp/cop_x/toolchain-aarch64.cmake" &&
     grep -q "not loaded here" "$tmp/cop_x.log"; then
    ok "custom-op build --cross aarch64: the compiler unpacked into ~/.rknn, a toolchain file, no load check"
  else bad "custom-op build --cross: $(cat "$tmp/cop_x.log")"; fi
  mkdir -p "$tmp/emptyhome"
  expect_error 2 "--cross armhf: no arm-linux-gnueabihf-g++ in $tmp/emptyhome/.rknn" -- env HOME="$tmp/emptyhome" PATH=/nonexistent "$npuc" custom-op build --op-path "$tmp/cop" --cross armhf
  if "$npuc" custom-op build --op-path "$tmp/cop" --build-dir "$tmp/cop_b" --out-dir "$tmp/cop_out/y" --test --param size=5,7 --param align_corners=true >"$tmp/cop_t.log" 2>&1 &&
     grep -q "test_resize_area' '--param' 'size=5,7' '--param' 'align_corners=1'" "$tmp/cop_t.log" &&
     grep -q "OK: ResizeArea (compute_fast gives compute_ref's bits)" "$tmp/cop_t.log" && grep -q "on engine" "$tmp/cop_t.log"; then
    ok "custom-op build --test --param: the harness runs with the parameters given"
  else bad "custom-op build --test --param: $(cat "$tmp/cop_t.log")"; fi
  # A code error stops the build with the compiler's message (RKNN §3.1.3.2) and leaves no library.
  cp -r "$tmp/op8" "$tmp/op8bad"
  rm -rf "$tmp/op8bad/build"
  printf '\nthis is not C++;\n' >>"$tmp/op8bad/op8_op.cpp"
  "$npuc" custom-op build --op-path "$tmp/op8bad" >"$tmp/op8bad.log" 2>&1; rc=$?
  if [ $rc -ne 0 ] && grep -q "error:" "$tmp/op8bad.log" && grep -q "op8_op.cpp" "$tmp/op8bad.log" &&
     grep -q "building the plugin failed (exit status [0-9]*): the messages above say why" "$tmp/op8bad.log" &&
     ! ls "$tmp"/op8bad/*.so >/dev/null 2>&1; then
    ok "custom-op build of code that does not compile: exit $rc, the compiler's message, no library"
  else bad "custom-op build of broken code: exit $rc, $(tail -c 600 "$tmp/op8bad.log")"; fi
else ok "custom-op build checks skipped (no cmake or c++)"; fi

if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "all CLI checks passed"
