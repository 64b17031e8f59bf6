// Micro-benchmarks (Google Benchmark) of ingestion's hot paths: the exact decimal time parser, the
// event-boundary scanner and the batch parser, each on generated in-memory input; and of
// `ferret compare`'s statistics on two large runs.
// Throughput is bytes of JSON per second; run: build/bench/micro_bench
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/statistics.h"
#include "ingest/byte_source.h"
#include "ingest/kineto/decimal.h"
#include "ingest/kineto/event_parser.h"
#include "ingest/kineto/json_scanner.h"

namespace {

// A Kineto-2.x-shaped event array: kernels, runtime calls and cpu ops in turn.
std::string make_trace(int events) {
  std::string out = "{\"schemaVersion\": 1, \"traceEvents\": [\n";
  for (int i = 0; i < events; ++i) {
    if (i) out += ",\n";
    const long long ts = 1712195495505582000LL + i * 1000LL;
    switch (i % 3) {
      case 0:
        out += fmt::format(
            R"({{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 11, "tid": 11, "ts": {}.{:03}, "dur": 12.345, "args": {{"External id": {}, "Input Dims": [[64, 128], [128, 256]], "Input type": ["float", "float"], "Sequence number": {}}}}})",
            ts / 1000, ts % 1000, i, i);
        break;
      case 1:
        out += fmt::format(
            R"({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 11, "tid": 11, "ts": {}.{:03}, "dur": 4.5, "args": {{"External id": {}, "cbid": 211, "correlation": {}}}}})",
            ts / 1000, ts % 1000, i, i);
        break;
      default:
        out += fmt::format(
            R"({{"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": {}.{:03}, "dur": 30.1, "args": {{"External id": {}, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": {}, "registers per thread": 128, "shared memory": 16384, "blocks per SM": 1.5, "warps per SM": 6.0, "grid": [128, 2, 1], "block": [256, 1, 1], "est. achieved occupancy %": 25}}}})",
            ts / 1000, ts % 1000, i, i - 1);
    }
  }
  out += "\n]}\n";
  return out;
}

void BM_ParseMicrosToNanos(benchmark::State& state) {
  const std::string values[] = {"1712195495505582.988", "4.928", "1623142623460121", "0.5"};
  std::int64_t sink = 0;
  std::size_t bytes = 0;
  for (auto _ : state) {
    for (const std::string& v : values) {
      std::int64_t ns = 0;
      ferret::parse_micros_to_nanos(v, ns);
      sink += ns;
      bytes += v.size();
    }
  }
  benchmark::DoNotOptimize(sink);
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
}
BENCHMARK(BM_ParseMicrosToNanos);

void BM_ScanEventBoundaries(benchmark::State& state) {
  const std::string trace = make_trace(20000);
  for (auto _ : state) {
    auto source = ferret::make_memory_source(trace);
    ferret::EventScanner scanner(*source, "bench");
    ferret::RawBatch batch;
    std::size_t events = 0;
    while (scanner.next(batch)) events += batch.event_begin.size();
    benchmark::DoNotOptimize(events);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * trace.size()));
}
BENCHMARK(BM_ScanEventBoundaries);

void BM_ScanAndParseBatches(benchmark::State& state) {
  const std::string trace = make_trace(20000);
  ferret::EventParser parser;
  ferret::ParsedBatch parsed;
  for (auto _ : state) {
    auto source = ferret::make_memory_source(trace);
    ferret::EventScanner scanner(*source, "bench");
    ferret::RawBatch batch;
    std::size_t events = 0;
    while (scanner.next(batch)) {
      parser.parse(batch, parsed);
      events += parsed.size();
    }
    benchmark::DoNotOptimize(events);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * trace.size()));
}
BENCHMARK(BM_ScanAndParseBatches);

}  // namespace

// compare_samples on two runs of state.range(0) uniform samples each, the second 1% slower: the
// work of `ferret compare` after loading (the bootstrap, Mann-Whitney U, Hodges-Lehmann).
void BM_CompareSamples(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::mt19937_64 rng(1);
  std::vector<double> a(n), b(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = 1.0 + static_cast<double>(rng() >> 11) * 0x1p-53;
    b[i] = 1.01 + static_cast<double>(rng() >> 11) * 0x1p-53;
  }
  for (auto _ : state) benchmark::DoNotOptimize(ferret::stats::compare_samples(a, b));
}
BENCHMARK(BM_CompareSamples)->Arg(10000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
