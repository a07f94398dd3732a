#!/usr/bin/env bash
# Installs the Debian 12 packages npuc needs, idempotently: nothing is downloaded when everything is present,
# and `apt-get update` runs only when something is missing.
#   scripts/install_deps.sh [demo] [build] [fuzz] [python] [torch] [fashion] [browser] [caffe] [tflite] [tf]
set -euo pipefail

build_pkgs=(cmake ninja-build g++ pkg-config
  libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler
  libfmt-dev libcli11-dev libyaml-cpp-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev libxlsxwriter-dev libstb-dev
  flatbuffers-compiler libflatbuffers-dev  # (flatc: the TFLite importer's schema, src/frontend/tflite/tflite.fbs)
  libopencv-videoio-dev)  # (video clips for tidl-classify, decoded by OpenCV; optional: the CLI refuses videos without it)
# make demo builds the CLI alone (configured without tests and benchmarks): the build group less the test data, GoogleTest
# and Google Benchmark.
demo_pkgs=(cmake ninja-build g++ pkg-config libonnx-dev libprotobuf-dev protobuf-compiler libfmt-dev libcli11-dev
  libyaml-cpp-dev nlohmann-json3-dev libxlsxwriter-dev libstb-dev flatbuffers-compiler libflatbuffers-dev)
fuzz_pkgs=(clang llvm libclang-rt-14-dev)
python_pkgs=(python3 python3-numpy python3-onnx python3-dev pybind11-dev python3-pytest python3-distributed python3-tqdm
  python3-pil python3-matplotlib)  # the Python package (python/), its tests (pytest, Dask), examples (Pillow), npuc tune's plots
torch_pkgs=(python3 python3-numpy python3-onnx python3-torch python3-torchvision)  # exporting test models only
fashion_pkgs=(dataset-fashion-mnist)  # the accuracy checks' data (models/fashion/train.py), the YOLO example's scenes (make test)
browser_pkgs=(chromium)  # the test that opens npuc view's page headless
# Regenerating the Caffe test models and their expected outputs only (tests/data/caffe/generate.py: protobuf classes
# from npuc's caffe.proto, OpenCV's dnn module as the oracle); the tests read the stored files.
caffe_pkgs=(python3 python3-numpy python3-protobuf python3-opencv protobuf-compiler)
# Regenerating the TensorFlow test graphs and their expected outputs only (tests/data/tf/generate.py: protobuf classes
# from npuc's tf_graph.proto, OpenCV's dnn module and numpy as the oracles); the tests read the stored files.
tf_pkgs=(python3 python3-numpy python3-protobuf python3-opencv protobuf-compiler)
# Regenerating the TFLite test models and their expected outputs only (tests/data/tflite/generate.py: FlatBuffers
# classes from npuc's tflite.fbs, Arm NN's TfLiteParser on its CpuRef backend as the oracle).
tflite_pkgs=(python3 python3-numpy python3-flatbuffers flatbuffers-compiler python3-pyarmnn libarmnn-cpuref-backend22)

want=()
for group in "${@:-build}"; do
  case "$group" in
    demo) want+=("${demo_pkgs[@]}") ;;
    build) want+=("${build_pkgs[@]}") ;;
    fuzz) want+=("${fuzz_pkgs[@]}") ;;
    python) want+=("${python_pkgs[@]}") ;;
    torch) want+=("${torch_pkgs[@]}") ;;
    fashion) want+=("${fashion_pkgs[@]}") ;;
    browser) want+=("${browser_pkgs[@]}") ;;
    caffe) want+=("${caffe_pkgs[@]}") ;;
    tf) want+=("${tf_pkgs[@]}") ;;
    tflite) want+=("${tflite_pkgs[@]}") ;;
    *) echo "install_deps.sh: unknown group '$group' (demo, build, fuzz, python, torch, fashion, browser, caffe, tflite, tf)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "npuc: installing Debian packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
