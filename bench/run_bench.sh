#!/usr/bin/env bash
# make bench: generate a 1 GiB trace (plain and gzip) with `ferret gen`, then measure ingestion
# against Python's json.load on the same file, then the peak memory of hostile inputs
# (bench/resource_bench.sh) and the speed of the readers of evidence beyond the trace
# (bench/evidence_bench.sh). Generated files live in bench/out/ (ignored by git).
set -euo pipefail
build=${1:-build}
size=${FERRET_BENCH_SIZE:-1GiB}
out=bench/out
mkdir -p "$out"
seed=../shared/corpus/resnet-ddp-v100-2024-ns.pt.trace.json.gz
if [ ! -f "$seed" ]; then
  echo "bench: ../shared/corpus absent; inflating a synthetic scenario trace instead" >&2
  "$build/ferret" gen scenario communication-heavy --steps 20 -o "$out/seed.json"
  seed="$out/seed.json"
fi
if [ ! -f "$out/trace-$size.json" ]; then
  "$build/ferret" gen inflate --from "$seed" --size "$size" -o "$out/trace-$size.json"
fi
if [ ! -f "$out/trace-$size.json.gz" ]; then
  "$build/ferret" gen inflate --from "$seed" --size "$size" -o "$out/trace-$size.json.gz"
fi
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/{print $2}') GiB RAM; $(date -u +%F)"
ls -l "$out"/trace-"$size".json*
python=$(command -v python3 || true)
"$build/bench/ingest_bench" --runs "${FERRET_BENCH_RUNS:-3}" --analyze "$build/ferret" ${python:+--python "$python"} \
  "$out/trace-$size.json" "$out/trace-$size.json.gz"
# Hot paths in isolation (Google Benchmark).
if [ -x "$build/bench/micro_bench" ]; then "$build/bench/micro_bench" --benchmark_min_time=0.2; fi
# Small input, large resource: peak memory of the hostile inputs of issue 19 against baselines.
bench/resource_bench.sh "$build"
# GPU utilisation logs, memory_summary() logs and allocator snapshots against wc -l.
bench/evidence_bench.sh "$build"
