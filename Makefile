# npuc — the two commands of the README: `make demo` and `make test`. Everything else is a convenience.
# The build goes to build/ (Release, Ninja); the CLI is build/bin/npuc.

JOBS ?= 2
BUILD ?= build
NPUC := $(BUILD)/bin/npuc
CONFORMANCE_FLAGS ?= --quiet --roundtrip

.PHONY: all deps build demo test conformance unit asan fuzz-smoke bench zoo docs clean

all: build

deps:
	@scripts/install_deps.sh build python browser fashion

build: deps
	@cmake --preset release -DNPUC_TESTS=ON -DNPUC_BENCH=ON >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# The demo needs the CLI only: its packages and its one target, configured without tests and benchmarks (the tests,
# benchmarks and Python module are `make build`'s / `make test`'s, which configure them back on).
demo:
	@scripts/install_deps.sh demo
	@cmake --preset release -DNPUC_TESTS=OFF -DNPUC_BENCH=OFF >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target npuc
	@scripts/demo.sh $(NPUC)

# Conformance (prints the totals; every allowlisted test must pass), then the unit and end-to-end tests.
test: build
	@echo "== ONNX conformance (libonnx-testdata) =="
	@$(NPUC) conformance $(CONFORMANCE_FLAGS) --allowlist tests/conformance/allowlist.txt
	@echo "== unit and end-to-end tests (ctest) =="
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE conformance

conformance: build
	@$(NPUC) conformance

# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/).
asan: deps
	@cmake --preset asan >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS)

# libFuzzer, 60 s per target, with ASan/UBSan (build-fuzz/, clang): the ONNX, Caffe, TensorFlow and TFLite loaders, the package reader +
# simulator, target files + expressions, pre/post YAML, address maps, AIPP configurations + parameter blocks, .npy,
# TIDL import configurations, custom-op definitions, calibration statistics.
FUZZ_SECONDS ?= 60
FUZZERS := onnx_loader:onnx caffe_loader:caffe tflite_loader:tflite tf_loader:tf package_reader:package target_file:target prepost:prepost addrmap:addrmap aipp:aipp npy:npy tidl_config:tidl custom_op_yaml:customop calib_stats:calibstats
fuzz-smoke:
	@scripts/install_deps.sh build fuzz
	@cmake --preset fuzz >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target $(foreach f,$(FUZZERS),fuzz_$(firstword $(subst :, ,$(f))))
	@set -e; for f in $(FUZZERS); do scripts/fuzz_smoke.sh build-fuzz/bin/fuzz_$${f%%:*} $(FUZZ_SECONDS) $${f##*:}; done

# Side-by-side latency against ONNX Runtime (needs python3-torchvision for the models; npm for ORT).
bench: build
	@/usr/bin/python3 tools/export_models.py
	@tools/bench_vs_ort.sh

# The torchvision acceptance zoo (issue 23): export 29 models, translate for generic and drpai, simulate every
# package in --exact and fast mode at 1 and 2 threads against the reference engine; writes docs/zoo-torchvision.md.
# About 30 minutes and 3 GB in ZOO_DIR; not part of `make test` (tests/data/kinds/ holds a model per layer kind).
ZOO_DIR ?= /tmp/npuc_tv
zoo: build
	@scripts/install_deps.sh torch
	@/usr/bin/python3 tools/survey_torchvision.py --npuc $(NPUC) --out $(ZOO_DIR) --doc docs/zoo-torchvision.md

clean:
	rm -rf $(BUILD) build-asan build-fuzz build-debug
