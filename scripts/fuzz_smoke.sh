#!/usr/bin/env bash
# Runs a libFuzzer binary for N seconds over a seed corpus of small real models; fails on any crash.
#   scripts/fuzz_smoke.sh build-fuzz/bin/fuzz_onnx_loader 60
#   scripts/fuzz_smoke.sh build-fuzz/bin/fuzz_package_reader 60 package   (seeds: the target writes them)
set -euo pipefail
bin=$1
seconds=${2:-60}
mode=${3:-onnx}
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
if [ "$mode" = package ]; then
  NPUC_FUZZ_SEED_DIR="$corpus" "$bin" -runs=0 >/dev/null 2>&1
else
  cp models/digits/digits_cnn.onnx tests/data/bad/*.onnx "$corpus/"
  n=0
  for m in /usr/share/libonnx-testdata/data/node/*/model.onnx; do
    cp "$m" "$corpus/seed_$n.onnx"
    n=$((n + 1))
    [ $n -ge 200 ] && break
  done
fi
mkdir -p build-fuzz/artifacts
echo "fuzzing $bin for ${seconds}s over $(ls "$corpus" | wc -l) seeds"
ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
  "$bin" "$corpus" -max_total_time="$seconds" -rss_limit_mb=4096 -max_len=131072 -timeout=20 \
  -artifact_prefix=build-fuzz/artifacts/ -print_final_stats=1
