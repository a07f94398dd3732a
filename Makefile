# npuc — the two commands of the README: `make demo` and `make test`. Everything else is a convenience.
# The build goes to build/ (Release, Ninja); the CLI is build/bin/npuc.

JOBS ?= 2
BUILD ?= build
NPUC := $(BUILD)/bin/npuc
CONFORMANCE_FLAGS ?= --quiet --roundtrip

.PHONY: all deps build demo test conformance unit asan fuzz-smoke bench docs clean

all: build

deps:
	@scripts/install_deps.sh build

build: deps
	@cmake --preset release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
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

# libFuzzer on the ONNX loader and on the package reader + simulator, 60 s each, with ASan/UBSan (build-fuzz/, clang).
fuzz-smoke:
	@scripts/install_deps.sh build fuzz
	@cmake --preset fuzz >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target fuzz_onnx_loader fuzz_package_reader
	@scripts/fuzz_smoke.sh build-fuzz/bin/fuzz_onnx_loader 60
	@scripts/fuzz_smoke.sh build-fuzz/bin/fuzz_package_reader 60 package

# Side-by-side latency against ONNX Runtime (needs python3-torchvision for the models; npm for ORT).
bench: build
	@/usr/bin/python3 tools/export_models.py
	@tools/bench_vs_ort.sh

clean:
	rm -rf $(BUILD) build-asan build-fuzz build-debug
