#!/usr/bin/env bash
# The content of every package a fixed corpus translates to, as SHA-256 digests: the check that a refactoring of the
# translator changed no byte of what it writes (issue 48's "behaviour unchanged"). Run it before and after a change
# and diff the two outputs.
#
# Corpus: models/fashion/*.onnx, models/digits/digits_cnn.onnx, the test models of tests/data/kinds, and the zoo of
# tools/export_models.py where it exists (models/zoo, needs python3-torch); each translated for every numerics
# family: generic (fp32), drpai (fp16), drpai with --calib (fp16 bias correction), generic-int8 (int8-affine),
# kneron (int8-radix) and tidl (int8-pow2), the last three calibrated on 4 seeded samples; plus the demo's pre/post
# definition, an AIPP configuration and batch gears on the digits model. A translation that fails prints its exit
# status instead of a digest (that must not change either).
#   tools/package_hashes.sh [build/bin/npuc] > hashes.txt
# Output: one line per package, "model config digest", the digest over every file of the output folder (name and
# SHA-256 of each, sorted); with NPUC_HASHES_DETAIL=1 every file's digest as well.
set -uo pipefail
npuc=$(realpath "${1:-build/bin/npuc}")
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root" || exit 2  # (models by relative paths: error reports name the model file, the same in every checkout)

models=(models/fashion/*.onnx models/digits/digits_cnn.onnx)
for m in tests/data/kinds/*.onnx models/zoo/*.onnx; do [ -e "$m" ] && models+=("$m"); done

# Seeded calibration samples (4, standard normal) for each input of a model: prints the --calib options.
calib() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import sys, onnx, numpy as np
m = onnx.load(sys.argv[1])
inits = {i.name for i in m.graph.initializer}
rng = np.random.default_rng(7)
opts = []
for k, i in enumerate(x for x in m.graph.input if x.name not in inits):
    t = i.type.tensor_type
    if t.elem_type != 1:
        sys.exit(0)  # integer inputs: no calibration samples
    dims = [d.dim_value if d.dim_value > 0 else 1 for d in t.shape.dim]
    path = f"{sys.argv[2]}_{k}.npy"
    np.save(path, rng.standard_normal([4 * dims[0]] + dims[1:]).astype(np.float32))
    opts.append(f"--calib\n{i.name}={path}")
print("\n".join(opts))
PY
}

digest() {  # the digest of a folder's files (names and contents)
  (cd "$1" && find . -type f ! -name '.npuc-output' -print0 | sort -z | xargs -0 -r sha256sum) > "$tmp/files.txt"
  [ "${NPUC_HASHES_DETAIL:-0}" = 1 ] && sed 's/^/    /' "$tmp/files.txt"
  sha256sum < "$tmp/files.txt" | cut -c1-16
}

one() {  # one() NAME CONFIG ARGS...: translate and print the line
  local name=$1 config=$2
  shift 2
  rm -rf "$tmp/out"
  "$npuc" translate "$name" --out "$tmp/out" "$@" >/dev/null 2>"$tmp/err.txt"
  local rc=$?
  if [ -d "$tmp/out/$name" ]; then
    local d
    d=$(digest "$tmp/out/$name")
    printf '%s %s exit=%d %s\n' "$name" "$config" "$rc" "$d"
  else
    printf '%s %s exit=%d (no folder) %s\n' "$name" "$config" "$rc" "$(head -c 120 "$tmp/err.txt" | tr '\n' ' ')"
  fi
}

for onnx in "${models[@]}"; do
  m=$(basename "$onnx" .onnx)
  mapfile -t cal < <(calib "$onnx" "$tmp/cal_$m")
  one "$m" generic -onnx "$onnx" --target generic
  one "$m" drpai -onnx "$onnx" --target drpai
  if [ ${#cal[@]} -gt 0 ]; then
    one "$m" drpai_calib -onnx "$onnx" --target drpai "${cal[@]}"
    one "$m" int8_affine -onnx "$onnx" --target generic-int8 "${cal[@]}"
    one "$m" int8_radix -onnx "$onnx" --target kneron "${cal[@]}"
    one "$m" int8_pow2 -onnx "$onnx" --target tidl "${cal[@]}"
  fi
done

digits=models/digits/digits_cnn.onnx
mapfile -t cal < <(calib "$digits" "$tmp/cal_digits")
one digits_cnn prepost -onnx "$digits" --target drpai -prepost models/digits/demo/prepost_yuy2.yaml
cat > "$tmp/static.cfg" <<'CFG'
aipp_op {
  aipp_mode: static
  input_format: YUV420SP_U8
  src_image_size_w: 48
  src_image_size_h: 40
  crop: true
  load_start_pos_w: 8
  load_start_pos_h: 4
  crop_size_w: 32
  crop_size_h: 32
  csc_switch: true
  mean_chn_0: 10
  var_reci_chn_0: 0.5
}
CFG
cat > "$tmp/dynamic.cfg" <<'CFG'
aipp_op {
  aipp_mode: dynamic
  max_src_image_size: 4608
}
CFG
one aipp_net aipp_static -onnx tests/data/aipp/aipp_net.onnx --target generic --aipp "$tmp/static.cfg"
one aipp_net aipp_dynamic -onnx tests/data/aipp/aipp_net.onnx --target drpai --aipp "$tmp/dynamic.cfg"
one digits_cnn gears_batch -onnx "$digits" --target generic --input_shape "input:-1,1,28,28" --dynamic_batch_size "1,2,4"
one digits_cnn int8_affine_qdq -onnx "$digits" --target generic-int8 -SaveQdqOnnx "${cal[@]}"
one digits_cnn int8_affine_bias -onnx "$digits" --target generic-int8 --bias-correction "${cal[@]}"
one digits_cnn int8_pow2_static -onnx "$digits" --target tidl --static-quant --numParamBits 12 "${cal[@]}"
one digits_cnn drpai_reuse -onnx "$digits" --target drpai --reuse-memory --concat-copies
