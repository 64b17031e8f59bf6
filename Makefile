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
	libgtest-dev libgmock-dev libbenchmark-dev libsqlite3-dev libtorch-dev \
	python3 python3-torch python3-dev python3-numpy python3-venv pybind11-dev dpkg-dev chromium \
	clang libclang-rt-14-dev clang-format clang-tidy \
	libopenmpi-dev openmpi-bin \
	time bc

.PHONY: setup venv accuracy build install package test demo bench bench-job test-asan fuzz fuzz-ci fuzz-long reliability clean format format-check tidy

# Each libFuzzer harness runs FUZZ_SECONDS (60 by default) from the seeds in fuzz/seeds; crashes
# land in build-fuzz/crashes/ and become regression tests.
FUZZ_SECONDS ?= 60
# Seed folders per harness: traces for ingest/analyze; NCCL logs (the test logs and hostile ones) for
# nccl; small allocator snapshot and plain-data pickles (and memory text) for snapshot; utilisation
# logs for smi; /proc stat lines for procstat; traces and lenient JSON for annotate's copy; documents
# and DataLoader lists for the Python binding's JSON entry points (html).
FUZZ_HARNESSES := ingest analyze nccl snapshot smi procstat annotate html
fuzz_seeds = $$(ls -d fuzz/seeds-long/$(1) 2>/dev/null) $$(case "$(1)" in nccl) echo fuzz/seeds-nccl tests/data/nccl;; snapshot) echo fuzz/seeds-pickle tests/data/memory;; smi) echo fuzz/seeds-smi tests/data/smi;; procstat) echo fuzz/seeds-procstat;; annotate) echo fuzz/seeds-annotate fuzz/seeds;; html) echo fuzz/seeds-html;; *) echo fuzz/seeds;; esac)

setup:
	@if ! dpkg -s $(DEB_PACKAGES) >/dev/null 2>&1; then \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $(DEB_PACKAGES); \
	else echo "setup: all packages present"; fi
	@$(MAKE) --no-print-directory venv

# The test environment with today's PyTorch: a virtual environment on Debian's /usr/bin/python3
# (the interpreter the ferret module is built for) with the pinned PyPI packages of
# python/requirements-torch2.txt. The tests run the Python suite with it as well as with Debian's
# torch 1.13. Rebuilt when the requirements change (about 1.5 minutes and 5.9 GB: docs/PYTHON.md).
VENV ?= build/venv
venv: $(VENV)/.installed
$(VENV)/.installed: python/requirements-torch2.txt
	rm -rf $(VENV)
	/usr/bin/python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r python/requirements-torch2.txt
	$(VENV)/bin/python -c "import torch; print('venv: torch', torch.__version__, 'in $(VENV)')"
	touch $@

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DFERRET_WERROR=ON

build: $(BUILD)/build.ninja
	cmake --build $(BUILD) --target ferret -j $(JOBS)

# `make install PREFIX=/opt/ferret`: bin/ferret (and ferret-torch, ferret-mpi when built), the
# libraries, include/ferret/, lib/cmake/ferret/ (find_package(ferret) -> ferret::core) and the
# Python package in lib/python3/dist-packages/ferret/ (PYTHONPATH=PREFIX/lib/python3/dist-packages).
PREFIX ?= /usr/local
install: $(BUILD)/build.ninja
	cmake --build $(BUILD) --target ferret ferret_core ferret_gen -j $(JOBS)
	cmake --install $(BUILD) --prefix $(PREFIX)

# `make package`: $(BUILD)/ferret_<version>_<arch>.deb (CPack) with everything `make install` installs,
# under /usr; `apt-get install ./$(BUILD)/ferret_*.deb` installs it with its dependencies.
package: $(BUILD)/build.ninja
	cmake --build $(BUILD) --target ferret ferret_core ferret_gen -j $(JOBS)
	cd $(BUILD) && cpack -G DEB

test: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

demo: build
	$(BUILD)/ferret analyze examples/traces/cpu-input-bound.json.gz

# The peers side by side (docs/PEERS.md): HolisticTraceAnalysis, run live in the test environment,
# and ferret on every sample trace and, when present, the corpus beside the repository.
CORPUS ?= ../shared/corpus
accuracy: build venv
	$(VENV)/bin/python tests/tools/peer_accuracy.py --ferret $(BUILD)/ferret --peers-doc docs/PEERS.md \
	  examples/traces/*.json.gz $$(ls $(CORPUS)/*.json $(CORPUS)/*.json.gz 2>/dev/null)

bench: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)
	bench/run_bench.sh $(BUILD)

# A 64-rank job of 100 MB per rank, analysed on one core, every core, and 1 and 3 MPI processes.
bench-job: $(BUILD)/build.ninja
	cmake --build $(BUILD) --target ferret -j $(JOBS)
	bench/job_bench.sh $(BUILD)

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer. Built with clang and
# libFuzzer's coverage hooks, so the same build also gives the fuzzing harnesses (fuzz, fuzz-ci).
# Line tables only: ASan and UBSan reports still name file and line, and the build - which CI
# runs beside the release one on two cores - takes ~40% less time than with full debug info.
SANITIZE_CONFIG := CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
	-DFERRET_SANITIZE=ON -DFERRET_FUZZ=ON -DFERRET_BUILD_BENCH=OFF -DFERRET_WITH_LIBTORCH=OFF -DFERRET_WITH_MPI=OFF
# Under the sanitizers the suite runs 5-10x slower, so it leaves out what only scales code the rest
# of it covers: the generated multi-rank jobs and scaling runs, the corpus inflated to 4x, the
# container property test's largest sizes (SANITIZER_SKIP); and it runs every 5th hostile input of the
# broken-input suite. The release run (make test) runs them all.
SANITIZER_SKIP := ^(GenJob\.|ScalingCli\.GeneratedRuns|InflateCorpus\.|Sizes/ContainerProperty\..*/(4096|16384|102400)KB)
test-asan:
	$(SANITIZE_CONFIG)
	cmake --build build-asan -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 FERRET_RELIABILITY_STRIDE=5 ctest --test-dir build-asan --output-on-failure -j $(JOBS) \
	  -E '$(SANITIZER_SKIP)'

# Each harness for FUZZ_SECONDS from the seeds (and what earlier runs found); crashes are kept
# in build-asan/crashes/ and become regression tests in tests/data/fuzz/.
fuzz:
	$(SANITIZE_CONFIG)
	cmake --build build-asan --target $(FUZZ_HARNESSES:%=%_fuzzer) -j $(JOBS)
	mkdir -p build-asan/crashes $(FUZZ_HARNESSES:%=build-asan/corpus-%)
	for h in $(FUZZ_HARNESSES); do \
	  build-asan/$${h}_fuzzer -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    -artifact_prefix=build-asan/crashes/ build-asan/corpus-$$h $(call fuzz_seeds,$$h) || exit 1; \
	done

# A long campaign on a developer machine (FUZZ_LONG_SECONDS, an hour by default, per harness, the
# harnesses $(JOBS) at a time): each grows build-asan/corpus-NAME from its seeds, and what it found
# that covers new code, in inputs of at most 1 KiB, is merged back into fuzz/seeds-long/NAME
# (committed: the next run, and CI's short pass, start from it). Each harness's executions and coverage (libFuzzer's cov/ft at the end)
# go to build-asan/fuzz-long.txt for docs/RELIABILITY.md.
FUZZ_LONG_SECONDS ?= 3600
fuzz-long:
	$(SANITIZE_CONFIG)
	cmake --build build-asan --target $(FUZZ_HARNESSES:%=%_fuzzer) -j $(JOBS)
	mkdir -p build-asan/crashes $(FUZZ_HARNESSES:%=build-asan/corpus-%) $(FUZZ_HARNESSES:%=fuzz/seeds-long/%)
	rm -f build-asan/fuzz-long.txt
	$(MAKE) --no-print-directory --output-sync=target -j $(JOBS) $(FUZZ_HARNESSES:%=fuzz-long-%)
	cat build-asan/fuzz-long.txt

fuzz-long-%:
	@echo "$*_fuzzer: $(FUZZ_LONG_SECONDS) s, log in build-asan/fuzz-long-$*.log"
	@build-asan/$*_fuzzer -max_total_time=$(FUZZ_LONG_SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	  -artifact_prefix=build-asan/crashes/ build-asan/corpus-$* $(call fuzz_seeds,$*) \
	  >build-asan/fuzz-long-$*.log 2>&1 || { tail -n 40 build-asan/fuzz-long-$*.log; exit 1; }
	@build-asan/$*_fuzzer -merge=1 -max_len=1024 fuzz/seeds-long/$* build-asan/corpus-$* >/dev/null 2>&1
	@{ printf '%s: ' $*; grep -a -h -E '^stat::number_of_executed_units' build-asan/fuzz-long-$*.log | awk '{printf "%s executions, ", $$2}'; \
	  grep -a -h -E '^#[0-9]+.*(DONE|cov:)' build-asan/fuzz-long-$*.log | tail -n 1 | grep -o -E 'cov: [0-9]+ ft: [0-9]+' ; \
	  printf 'seeds kept: %s\n' "$$(ls fuzz/seeds-long/$* | wc -l)"; } >> build-asan/fuzz-long.txt

# CI's short pass: a fixed seed and a fixed number of runs from the seeds only, so a failure
# reproduces with the same command on the same build; the harnesses run $(JOBS) at a time, each
# logging to build-asan/fuzz-ci-NAME.log. A failure prints the log's end and the input in base64
# (a build elsewhere mutates differently, so CI's input may not come back from a local run).
FUZZ_CI_RUNS ?= 4000
fuzz-ci:
	$(SANITIZE_CONFIG)
	cmake --build build-asan --target $(FUZZ_HARNESSES:%=%_fuzzer) -j $(JOBS)
	mkdir -p build-asan/crashes
	$(MAKE) --no-print-directory --output-sync=target -j $(JOBS) $(FUZZ_HARNESSES:%=fuzz-ci-%)

fuzz-ci-%:
	@rm -rf build-asan/corpus-ci-$* build-asan/crashes-$* && mkdir -p build-asan/corpus-ci-$* build-asan/crashes-$*
	@echo "$*_fuzzer: $(FUZZ_CI_RUNS) runs, seed 1, log in build-asan/fuzz-ci-$*.log"
	@build-asan/$*_fuzzer -seed=1 -runs=$(FUZZ_CI_RUNS) -timeout=10 -rss_limit_mb=2048 \
	  -artifact_prefix=build-asan/crashes-$*/ build-asan/corpus-ci-$* $(call fuzz_seeds,$*) \
	  >build-asan/fuzz-ci-$*.log 2>&1 || { \
	  grep -a -m5 -E 'ERROR|runtime error|raw control|deadly' build-asan/fuzz-ci-$*.log; \
	  tail -n 40 build-asan/fuzz-ci-$*.log; \
	  for f in build-asan/crashes-$*/*; do [ -f "$$f" ] || continue; echo "$*_fuzzer input $$f in base64:"; head -c 65536 "$$f" | base64 -w 0; echo; done; \
	  cp build-asan/crashes-$*/* build-asan/crashes/ 2>/dev/null; exit 1; }
	@grep -a -h '^Done' build-asan/fuzz-ci-$*.log | sed 's/^/$*_fuzzer: /'

# Runs the broken-input suite and rewrites the table in docs/RELIABILITY.md.
reliability: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)
	ctest --test-dir $(BUILD) -R '^BrokenInputs\.' -j $(JOBS) --output-on-failure
	python3 tests/tools/reliability_table.py --results $(BUILD)/reliability --write docs/RELIABILITY.md

format:
	clang-format -i $$(git ls-files '*.cpp' '*.h')

# Fails, naming the lines, when a source file is not as .clang-format writes it (CI runs it).
format-check:
	clang-format --dry-run -Werror $$(git ls-files '*.cpp' '*.h')

# The agreed clang-tidy checks (.clang-tidy) over src/, file by file (build-tidy is configured
# without the unity build, so a file that leans on another's includes fails here too); any
# finding fails. Configure only: clang-tidy parses, nothing is compiled.
tidy:
	cmake -S . -B build-tidy -G Ninja -DCMAKE_BUILD_TYPE=Release -DFERRET_UNITY_BUILD=OFF \
	  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DFERRET_BUILD_BENCH=OFF -DFERRET_WITH_LIBTORCH=OFF -DFERRET_WITH_MPI=OFF >/dev/null
	run-clang-tidy -p build-tidy -j $(JOBS) -quiet "$$PWD/src/" > build-tidy/tidy.log 2>&1 || \
	  { grep -E "(warning|error):" build-tidy/tidy.log; echo "tidy: findings above (full log: build-tidy/tidy.log)"; exit 1; }
	@echo "tidy: no finding in src/"

clean:
	rm -rf $(BUILD) build-asan build-tidy
