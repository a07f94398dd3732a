#!/usr/bin/env bash
# Runs a libFuzzer binary for N seconds over a seed corpus of real inputs; fails on any crash.
#   scripts/fuzz_smoke.sh build-fuzz/bin/fuzz_onnx_loader 60             (seeds: small real models)
#   scripts/fuzz_smoke.sh build-fuzz/bin/fuzz_caffe_loader 60 caffe       (the Caffe test models: length, .prototxt, .caffemodel)
#   scripts/fuzz_smoke.sh build-fuzz/bin/fuzz_tf_loader 60 tf             (the TensorFlow test graphs)
#   scripts/fuzz_smoke.sh build-fuzz/bin/fuzz_tflite_loader 60 tflite     (the TFLite test models and bad files)
#   scripts/fuzz_smoke.sh build-fuzz/bin/fuzz_package_reader 60 package  (seeds: the target writes them)
#   scripts/fuzz_smoke.sh build-fuzz/bin/fuzz_target_file 60 target     (targets/*.yaml, expressions of their rules)
#   scripts/fuzz_smoke.sh build-fuzz/bin/fuzz_prepost 60 prepost         (the pre/post examples and the demo's)
#   scripts/fuzz_smoke.sh build-fuzz/bin/fuzz_addrmap 60 addrmap         (the demo's address map)
#   scripts/fuzz_smoke.sh build-fuzz/bin/fuzz_aipp 60 aipp               (configurations, parameter YAML and blocks)
#   scripts/fuzz_smoke.sh build-fuzz/bin/fuzz_npy 60 npy                 (.npy files)
#   scripts/fuzz_smoke.sh build-fuzz/bin/fuzz_tidl_config 60 tidl        (the TIDL guide's sample configurations)
#   scripts/fuzz_smoke.sh build-fuzz/bin/fuzz_custom_op_yaml 60 customop (the custom-op examples' definitions)
#   scripts/fuzz_smoke.sh build-fuzz/bin/fuzz_calib_stats 60 calibstats  (calibration statistics files, made here)
# Seeds of the targets whose first byte picks a variant get that byte in front of the file (seed VARIANT FILE).
set -euo pipefail
bin=$1
seconds=${2:-60}
mode=${3:-onnx}
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
n=0
seed() {  # seed VARIANT_BYTE FILE...
  local v=$1; shift
  for f in "$@"; do
    { printf "\\x$(printf %02x "$v")"; cat "$f"; } >"$corpus/seed_$n"
    n=$((n + 1))
  done
}
case "$mode" in
  package) NPUC_FUZZ_SEED_DIR="$corpus" "$bin" -runs=0 >/dev/null 2>&1 ;;
  caffe)
    for d in tests/data/caffe/*/; do
      len=$(stat -c %s "$d/model.prototxt")
      { printf "\\x$(printf %02x $((len & 255)))\\x$(printf %02x $((len >> 8 & 255)))\\x00\\x00"
        cat "$d/model.prototxt" "$d/model.caffemodel"; } >"$corpus/seed_$n"
      n=$((n + 1))
    done ;;
  tf) for d in tests/data/tf/*/; do cp "$d/model.pb" "$corpus/seed_$n.pb"; n=$((n + 1)); done ;;
  tflite) for f in tests/data/tflite/*/model.tflite tests/data/tflite/bad/*.tflite; do cp "$f" "$corpus/seed_$n"; n=$((n + 1)); done ;;
  onnx)
    cp models/digits/digits_cnn.onnx tests/data/bad/*.onnx "$corpus/"
    for m in /usr/share/libonnx-testdata/data/node/*/model.onnx; do
      cp "$m" "$corpus/seed_$n.onnx"
      n=$((n + 1))
      [ $n -ge 200 ] && break
    done ;;
  target)
    seed 0 targets/*.yaml
    # Each rule's expressions alone (odd first byte: the expression parser).
    while IFS= read -r e; do
      printf '%s' "$e" >"$corpus/expr.txt"
      seed 1 "$corpus/expr.txt"
    done < <(grep -hoE "(require|when): *['\"].*['\"]" targets/*.yaml | sed -E "s/^(require|when): *['\"]//; s/['\"]$//" | head -300)
    rm -f "$corpus/expr.txt" ;;
  prepost) seed 0 tests/data/prepost/*.yaml tests/data/prepost/examples/*.yaml models/digits/demo/*.yaml ;;
  addrmap) seed 0 models/digits/demo/addrmap.yaml ;;
  aipp)
    tmp=$(mktemp -d)
    printf 'aipp_op {\n aipp_mode: static\n input_format: YUV420SP_U8\n src_image_size_w: 48\n src_image_size_h: 40\n crop: true\n load_start_pos_w: 2\n load_start_pos_h: 4\n crop_size_w: 40\n crop_size_h: 36\n resize: true\n csc_switch: true\n padding: true\n top_padding_size: 1\n var_reci_chn_0: 0.0039\n}\n' >"$tmp/static.cfg"
    printf 'aipp_op {\n aipp_mode: dynamic\n max_src_image_size: 4096\n}\n' >"$tmp/dynamic.cfg"
    printf 'inputFormat: 1\nsrcImageSizeW: 32\nsrcImageSizeH: 32\nscfSwitch: 0\ncscSwitch: 0\n' >"$tmp/params.yaml"
    head -c 160 /dev/zero >"$tmp/block.bin"
    seed 0 "$tmp"/*.cfg
    seed 1 "$tmp/params.yaml"
    seed 2 "$tmp/block.bin"
    rm -rf "$tmp" ;;
  npy) seed 0 models/digits/test_y.npy tests/data/*/*.npy 2>/dev/null || seed 0 models/digits/test_y.npy ;;
  tidl) for f in tests/data/tidl/*.txt; do cp "$f" "$corpus/seed_$n"; n=$((n + 1)); done ;;
  customop) for f in examples/custom_op/*.yml examples/custom_op/*/op.yml examples/custom_op/tensorflow/*.yml; do
      cp "$f" "$corpus/seed_$n"; n=$((n + 1)); done ;;
  calibstats)  # statistics files (the NPUCSTAT layout of src/quant/range.cpp) of 8 and 16 bins, one and two tensors
    /usr/bin/python3 - "$corpus" <<'PY'
import struct, sys
def tensor(name, bins, lo, hi, hist, zeros):
    b = name.encode()
    count = sum(hist) + zeros
    return (struct.pack("<I", len(b)) + b + struct.pack("<I", bins) + struct.pack("<dd", lo, hi) +
            struct.pack("<5q", count, 0, count, zeros, count // 3) + struct.pack("<%dq" % bins, *hist))
def stats(tensors):
    return b"NPUCSTAT" + struct.pack("<II", 1, 4) + b"k3y!" + struct.pack("<Q", len(tensors)) + b"".join(tensors)
open(sys.argv[1] + "/one", "wb").write(stats([tensor("x", 8, -1.5, 2.0, [3, 1, 0, 4, 0, 0, 2, 1], 5)]))
open(sys.argv[1] + "/two", "wb").write(stats([tensor("a", 16, 0.0, 6.0, [1] * 16, 0), tensor("b", 8, -0.25, 0.25, [0] * 7 + [9], 2)]))
PY
    ;;
  *) echo "fuzz_smoke.sh: unknown mode '$mode'" >&2; exit 2 ;;
esac
mkdir -p build-fuzz/artifacts
echo "fuzzing $bin for ${seconds}s over $(ls "$corpus" | wc -l) seeds"
ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
  "$bin" "$corpus" -max_total_time="$seconds" -rss_limit_mb=4096 -max_len=131072 -timeout=20 \
  -artifact_prefix=build-fuzz/artifacts/ -print_final_stats=1
