# ferret: one-command entry points. Every target works on a fresh Debian 12 machine as root.
SHELL := /bin/bash
BUILD ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Build and test dependencies, all from Debian 12's archive.
DEB_PACKAGES := build-essential cmake ninja-build pkg-config git \
	libsimdjson-dev libcli11-dev libfmt-dev nlohmann-json3-dev \
	libisal-dev zlib1g-dev libzstd-dev zstd gzip \
	libgtest-dev libgmock-dev libbenchmark-dev \
	python3 python3-torch

.PHONY: setup build test demo bench test-asan fuzz clean format

# Each libFuzzer harness runs FUZZ_SECONDS (60 by default) from the seeds in fuzz/seeds; crashes
# land in build-fuzz/crashes/ and become regression tests.
FUZZ_SECONDS ?= 60

setup:
	@if ! dpkg -s $(DEB_PACKAGES) >/dev/null 2>&1; then \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $(DEB_PACKAGES); \
	else echo "setup: all packages present"; fi

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build: $(BUILD)/build.ninja
	cmake --build $(BUILD) --target ferret -j $(JOBS)

test: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

demo: build
	$(BUILD)/ferret analyze examples/traces/cpu-input-bound.json.gz

bench: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)
	bench/run_bench.sh $(BUILD)

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer.
test-asan:
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DFERRET_SANITIZE=ON
	cmake --build build-asan -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -j $(JOBS)

fuzz:
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DFERRET_FUZZ=ON -DFERRET_SANITIZE=ON -DFERRET_BUILD_TESTS=OFF -DFERRET_BUILD_BENCH=OFF
	cmake --build build-fuzz --target ingest_fuzzer analyze_fuzzer -j $(JOBS)
	mkdir -p build-fuzz/crashes build-fuzz/corpus-ingest build-fuzz/corpus-analyze
	for h in ingest analyze; do \
	  build-fuzz/$${h}_fuzzer -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    -artifact_prefix=build-fuzz/crashes/ build-fuzz/corpus-$$h fuzz/seeds || exit 1; \
	done

format:
	clang-format -i $$(git ls-files '*.cpp' '*.h')

clean:
	rm -rf $(BUILD) build-asan
