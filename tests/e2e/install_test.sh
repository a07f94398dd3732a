#!/usr/bin/env bash
# Install test: `cmake --install` of a build into a temporary prefix, then examples/run_package configured and built
# against the installed package (find_package(npuc)) with the build's generator and compilers, and run on a package
# that the installed `npuc` makes. The example must also fail cleanly (status 1, npuc_last_error text) on a folder
# that is not a package.
#   install_test.sh BUILD_DIR SOURCE_DIR GENERATOR C_COMPILER CXX_COMPILER
set -uo pipefail
build=$1 src=$2 gen=$3 cc=$4 cxx=$5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; fails=$((fails + 1)); }
run() {  # run LOG command...: fails the test (and shows LOG) when the command fails
  local log=$1; shift
  if ! "$@" >"$log" 2>&1; then bad "$* (log follows)"; cat "$log"; echo "$fails failure(s)"; exit 1; fi
}

run "$tmp/install.log" cmake --install "$build" --prefix "$prefix"
for f in bin/npuc include/npuc/npuc.h include/npuc/runtime.hpp include/npuc/tensor.hpp include/npuc/dtype.hpp \
         include/npuc/error.hpp include/npuc/custom_op.h include/npuc/openvx_compat.h lib/libnpuc.so lib/cmake/npuc/npucConfig.cmake lib/cmake/npuc/npucConfigVersion.cmake \
         lib/cmake/npuc/npucTargets.cmake share/npuc/targets/generic.yaml; do
  [ -e "$prefix/$f" ] && ok "installed $f" || bad "missing $prefix/$f"
done
# The library exports the C API and namespace npuc, nothing of fmt, nlohmann or std.
syms=$(nm -D --defined-only "$prefix/lib/libnpuc.so" | awk '{print $3}' | sed 's/@.*//')
grep -qx 'npuc_runtime_open' <<< "$syms" && ok "libnpuc.so exports npuc_runtime_open" || bad "npuc_runtime_open not exported"  # (not echo | grep -q: with pipefail, grep's early exit fails the echo)
leaked=$(echo "$syms" | grep -v '^npuc_' | c++filt | grep -v 'npuc::' | grep -v '^NPUC_0$' | head -5)
[ -z "$leaked" ] && ok "no foreign symbols exported" || bad "libnpuc.so exports foreign symbols: $leaked"

run "$tmp/configure.log" cmake -S "$src/examples/run_package" -B "$tmp/example" -G "$gen" \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
run "$tmp/build.log" cmake --build "$tmp/example"
ok "examples/run_package builds against the installed npuc"

# A package made by the installed compiler, with the installed target files.
export NPUC_TARGETS_DIR=$prefix/share/npuc/targets
run "$tmp/translate.log" "$prefix/bin/npuc" translate digits -onnx "$src/models/digits/digits_cnn.onnx" \
  --target drpai --out "$tmp/out"
pkg=$tmp/out/digits
[ -f "$pkg/manifest.json" ] && ok "installed npuc wrote a package" || bad "no package in $pkg"

run "$tmp/run.log" "$tmp/example/run_package" "$pkg" --fill 0.25 --layers
cat "$tmp/run.log"
grep -q '^output logits: float16 \[1,10\]: ' "$tmp/run.log" && ok "run_package prints the output" || bad "run_package output"
grep -q 'layer   0 ' "$tmp/run.log" && ok "run_package --layers" || bad "no layer lines"

# A raw float32 input file gives the same output as the same constant.
python3 -c "import struct,sys; sys.stdout.buffer.write(struct.pack('<64f', *([0.25]*64)))" >"$tmp/x.bin"
run "$tmp/run_file.log" "$tmp/example/run_package" "$pkg" --input "input=$tmp/x.bin"
[ "$(grep '^output' "$tmp/run.log")" = "$(grep '^output' "$tmp/run_file.log")" ] && ok "--input FILE.bin" ||
  bad "--input gives other outputs: $(cat "$tmp/run_file.log")"

if [ -x "$tmp/example/run_package_cpp" ]; then
  run "$tmp/run_cpp.log" "$tmp/example/run_package_cpp" "$pkg" 0.25
  cat "$tmp/run_cpp.log"
  c_vals=$(grep '^output' "$tmp/run.log" | sed 's/.*\]://')
  cpp_vals=$(grep '^output' "$tmp/run_cpp.log" | sed 's/.*\]://')
  [ -n "$c_vals" ] && [ "$c_vals" = "$cpp_vals" ] &&
    ok "run_package_cpp (C++ API through libnpuc.so)" || bad "C and C++ examples differ: '$c_vals' vs '$cpp_vals'"
else
  bad "run_package_cpp was not built"
fi

# The Python package: installed where Debian's python3 looks for a prefix (PREFIX/lib/python3.X/dist-packages;
# /usr/lib/python3/dist-packages for /usr), importable from there with no build tree, running the package.
pyver=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
pydir=$prefix/lib/python$pyver/dist-packages
if ls "$pydir"/npuc/_npuc*.so >/dev/null 2>&1; then
  if (cd "$tmp" && PYTHONPATH=$pydir /usr/bin/python3 -c "
import numpy as np, npuc, sys
assert npuc.__file__.startswith('$pydir'), npuc.__file__
y = npuc.Runtime('$pkg').run(np.full((1, 1, 8, 8), 0.25, np.float32))['logits']
print('python logits', y.shape)" >"$tmp/py.log" 2>&1); then
    ok "the installed Python package imports from $pydir and runs the package"
  else
    bad "installed Python package: $(cat "$tmp/py.log")"
  fi
  /usr/bin/python3 -c "import sys; sys.exit(0 if '/usr/local/lib/python$pyver/dist-packages' in sys.path else 1)" &&
    ok "Debian's python3 reads /usr/local/lib/python$pyver/dist-packages (the default prefix's place)" ||
    bad "/usr/local/lib/python$pyver/dist-packages is not on Debian's python3 path"
else
  echo "note: the Python package was not built (no pybind11-dev / python3-dev): not checked"
fi

# A custom-op plugin built by the installed npuc against the installed header alone, then a package with its op run
# through the C API's registration (npuc_register_custom_op, by the example's --custom-op).
run "$tmp/plugin.log" "$prefix/bin/npuc" custom-op build --op-path "$src/examples/custom_op/resize_area" \
  --build-dir "$tmp/plugin" --out-dir "$tmp"
grep -q "NPUC_INCLUDE_DIR='$prefix/include'" "$tmp/plugin.log" && ok "custom-op build uses the installed include/" ||
  bad "custom-op build did not use $prefix/include: $(grep NPUC_INCLUDE_DIR "$tmp/plugin.log")"
run "$tmp/translate_custom.log" "$prefix/bin/npuc" translate ra -onnx "$src/examples/custom_op/resize_area_model.onnx" \
  --target generic --out "$tmp/out" --custom-op "$tmp/libresize_area.so"
if "$tmp/example/run_package" "$tmp/out/ra" >"$tmp/nocustom.out" 2>"$tmp/nocustom.err"; then
  bad "run_package ran a package with a custom layer without its plugin"
else
  grep -q "its plugin is missing" "$tmp/nocustom.err" && ok "without its plugin: $(cat "$tmp/nocustom.err")" ||
    bad "no plugin: $(cat "$tmp/nocustom.err")"
fi
run "$tmp/run_custom.log" "$tmp/example/run_package" "$tmp/out/ra" --custom-op "$tmp/libresize_area.so" --fill 0.5
grep -q '^output scores: float32 \[1,2,10,10\]: ' "$tmp/run_custom.log" && ok "run_package --custom-op runs the custom layer" ||
  bad "run_package --custom-op: $(cat "$tmp/run_custom.log")"

# Failure: not a package -> status 1 and the last error.
"$tmp/example/run_package" "$tmp" >"$tmp/fail.out" 2>"$tmp/fail.err"
rc=$?
if [ $rc -eq 1 ] && grep -q 'npuc_runtime_open failed (io): npuc_runtime_open: .*manifest.json' "$tmp/fail.err"; then
  ok "not a package -> 1: $(cat "$tmp/fail.err")"
else
  bad "not a package: rc=$rc, stderr: $(cat "$tmp/fail.err")"
fi

[ $fails -eq 0 ] && echo "all install checks passed" || echo "$fails failure(s)"
exit $((fails > 0))
