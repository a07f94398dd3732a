#!/usr/bin/env bash
# The custom-op example end to end (docs/custom-ops.md), as `make test` runs it:
#   define (resize_area.yml) -> generate (npuc custom-op create; the skeleton builds and fails loudly) -> the written
#   plugin (resize_area/) built -> registered -> checked and translated for generic and drpai -> run on the engine and
#   simulated -> compared with the numpy reference (reference.py); and the plugin's failure modes at the CLI. Then the
#   RKNN guide's own flow: the network as a TensorFlow graph with TensorFlow's ResizeArea (tensorflow/), its plugin
#   written for NHWC, giving the ONNX flow's bits.
# usage: run_example.sh NPUC [WORK_DIR]
set -euo pipefail
npuc=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=${2:-$(mktemp -d)}
mkdir -p "$work"
cd "$work"
py=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
# What the example needs besides npuc (make deps installs it): a C++ toolchain and CMake to build the plugin, numpy
# and onnx for the reference. Without them the example is skipped (status 77), not failed.
for tool in cmake c++; do command -v $tool > /dev/null || { echo "SKIP: no $tool"; exit 77; }; done
$py -c "import numpy, onnx" 2> /dev/null || { echo "SKIP: no numpy / onnx for $py"; exit 77; }

echo "== create: a skeleton from the guide's definition"
rm -rf gen
"$npuc" custom-op create --config "$here/resize_area.yml" --op-path gen > create.log
grep -q "read as a parameter" create.log || fail "the guide's top-level align_corners was not read as a parameter"
for f in op.yml resize_area_op.cpp CMakeLists.txt test_resize_area.cpp; do [ -f "gen/$f" ] || fail "no gen/$f"; done
grep -q "align_corners" gen/op.yml || fail "op.yml lacks align_corners"
if "$npuc" custom-op create --config "$here/resize_area.yml" --op-path gen > /dev/null 2>&1; then fail "create overwrote code"; fi
"$npuc" custom-op build --op-path gen --build-dir gen/build > gen_build.log 2>&1 || { cat gen_build.log; fail "the skeleton does not build"; }
if gen/build/test_resize_area --param size=5,5 > gen_test.log 2>&1; then fail "the stubbed skeleton ran"; fi
grep -q "infer is not written yet" gen_test.log || fail "the stub does not say what is missing"

echo "== build: the written plugin"
"$npuc" custom-op build --op-path "$here/resize_area" --build-dir build --out-dir . > build.log 2>&1 || { cat build.log; fail "build"; }
lib=$work/libresize_area.so
build/test_resize_area --param size=5,7 --shape 2,3,13,17 | grep -q "compute_fast gives compute_ref's bits" || fail "harness"
build/test_resize_area --param size=10,10 --param align_corners=1 --shape 1,4,24,24 > /dev/null || fail "harness (align_corners)"

echo "== check, run, translate, simulate, compare"
model=$here/resize_area_model.onnx
$py -c "import numpy as np; np.random.seed(1); np.save('image.npy', np.random.rand(1, 3, 24, 24).astype(np.float32))"
if "$npuc" check "$model" --no-report > nocheck.log 2>&1; then fail "check passed without the plugin"; fi
grep -q "unknown op 'com.example.ResizeArea'" nocheck.log || fail "the unknown op is not named"
for t in generic drpai; do
  "$npuc" check --custom-op "$lib" "$model" --target $t --no-report | grep -q "every node is supported" || fail "check $t"
done
"$npuc" run --custom-op "$lib" "$model" --input image=image.npy -o run > /dev/null
for t in generic drpai; do
  rm -rf out out2
  "$npuc" translate ra -onnx "$model" --target $t --out out --custom-op "$lib" > translate_$t.log
  "$npuc" translate ra -onnx "$model" --target $t --out out2 --register-op "$lib" > /dev/null
  diff -r out/ra out2/ra > /dev/null || fail "two translations for $t differ"
  grep -q '"kind": "custom"' out/ra/manifest.json || fail "$t: no custom layer"
  grep -q '"library": "libresize_area.so"' out/ra/manifest.json || fail "$t: the manifest does not name the plugin"
  "$npuc" simulate out/ra --custom-op "$lib" --input image=image.npy -o sim_$t > /dev/null
  "$npuc" simulate out/ra --custom-op "$lib" --input image=image.npy -o sim_exact_$t --exact > /dev/null
  cmp sim_$t/scores.npy sim_exact_$t/scores.npy || fail "$t: --exact (compute_ref) and fast (compute_fast) differ"
  "$npuc" compare "$model" out/ra --custom-op "$lib" --input image=image.npy --out compare_$t > compare_$t.log
  grep -q "3 of 3 layers matched" compare_$t.log || { cat compare_$t.log; fail "compare $t"; }
  if "$npuc" simulate out/ra --input image=image.npy -o none > missing.log 2>&1; then fail "simulate ran without the plugin"; fi
  grep -q "its plugin is missing: register libresize_area.so" missing.log || fail "the missing plugin is not named"
  if "$npuc" simulate out/ra --custom-op gen/libresize_area.so --input image=image.npy -o none > other.log 2>&1; then
    fail "simulate ran with another plugin"
  fi
  grep -q "but the package was translated with" other.log || fail "another plugin's hash is not named"
  cp -r out/ra pkg_$t
done

echo "== numpy reference"
# fp32: float32 against float64 (a few ulps of the largest value); fp16 (drpai): four float16 roundings, 4 x 2^-11.
$py "$here/reference.py" "$model" image.npy run/scores.npy 1e-6 sim_generic/scores.npy 1e-6 sim_exact_generic/scores.npy 1e-6 \
  sim_drpai/scores.npy 2e-3
echo "== TensorFlow: the RKNN guide's own flow (framework: tensorflow, tensorflow/)"
# The same network as a frozen TensorFlow graph holding TensorFlow's ResizeArea op (NHWC; size its constant input 1),
# and the op's plugin from the guide's definition (its feature map passed NCHW, as the guide's kernels see it: the
# ONNX example's code): generated, built, registered; drpai takes it too (no Transpose inside the model).
tf=$here/tensorflow
rm -rf tfgen
"$npuc" custom-op create --config "$tf/resize_area.yml" --op-path tfgen > /dev/null
grep -q "framework: tensorflow" tfgen/op.yml || fail "op.yml does not keep framework: tensorflow"
grep -q "a TensorFlow graph's NHWC feature maps as well" tfgen/resize_area_op.cpp || fail "the TensorFlow skeleton does not say its layout"
"$npuc" custom-op build --op-path "$tf/resize_area" --build-dir tfbuild --out-dir tflib > tfbuild.log 2>&1 || { cat tfbuild.log; fail "build (tensorflow)"; }
tfbuild/test_resize_area --param size=5,7 --shape 2,3,13,17 | grep -q "compute_fast gives compute_ref's bits" || fail "harness (tensorflow)"
tflib=$work/tflib/libresize_area.so
tfmodel=$tf/resize_area_model.pb
$py -c "import numpy as np; np.save('image_nhwc.npy', np.load('image.npy').transpose(0, 2, 3, 1).copy())"
if "$npuc" check "$tfmodel" --no-report > tfnocheck.log 2>&1; then fail "check passed without the plugin (tensorflow)"; fi
grep -q "op 'ResizeArea' is not one npuc imports" tfnocheck.log || fail "the unknown TensorFlow op is not named"
# The ONNX flow's plugin (domain com.example, NCHW) is never handed the TensorFlow graph's NHWC tensors.
if "$npuc" check --custom-op "$lib" "$tfmodel" --no-report > tfonnxlib.log 2>&1; then fail "an ONNX-domain plugin took a TensorFlow node"; fi
grep -q "op 'ResizeArea' is not one npuc imports" tfonnxlib.log || fail "the ONNX-domain plugin's refusal is not said"
"$npuc" check --custom-op "$tflib" "$tfmodel" --target generic --no-report | grep -q "every node is supported" || fail "check (tensorflow)"
"$npuc" run --custom-op "$tflib" "$tfmodel" --input image=image_nhwc.npy -o tfrun > /dev/null
rm -rf tfout
"$npuc" translate ra -tf "$tfmodel" --target generic --out tfout --custom-op "$tflib" > tftranslate.log
grep -q '"kind": "custom"' tfout/ra/manifest.json || fail "tensorflow: no custom layer"
"$npuc" simulate tfout/ra --custom-op "$tflib" --input image=image_nhwc.npy -o tfsim > /dev/null
"$npuc" simulate tfout/ra --custom-op "$tflib" --input image=image_nhwc.npy -o tfsim_exact --exact > /dev/null
cmp tfsim/scores.npy tfrun/scores.npy || fail "tensorflow: the package differs from run"
cmp tfsim/scores.npy tfsim_exact/scores.npy || fail "tensorflow: --exact and fast differ"
"$npuc" check --custom-op "$tflib" "$tfmodel" --target drpai --no-report | grep -q "every node is supported" || fail "check drpai (tensorflow)"
# The TensorFlow flow and the ONNX flow compute one network: the same bits, NHWC against NCHW.
$py -c "
import numpy as np, sys
a, b = np.load('tfsim/scores.npy').transpose(0, 3, 1, 2), np.load('sim_generic/scores.npy')
sys.exit(0 if a.shape == b.shape and a.tobytes() == b.tobytes() else 1)" || fail "the TensorFlow and ONNX flows differ"
echo "custom-op example: OK"
