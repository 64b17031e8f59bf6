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

.PHONY: setup build test demo bench test-asan clean format

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

format:
	clang-format -i $$(git ls-files '*.cpp' '*.h')

clean:
	rm -rf $(BUILD) build-asan
