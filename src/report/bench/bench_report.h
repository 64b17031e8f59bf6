// Renders `ferret bench`: text (80 columns, colour on a terminal), Markdown (paths and user text
// escaped) and JSON (schema ferret.bench/1, docs/BENCH.md). Every number comes computed in
// bench::BenchResult; nothing here computes statistics.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "benchmark/model_runner.h"
#include "report/format.h"

namespace ferret {

// Where --record stored the run.
struct BenchRecorded {
  std::int64_t id = 0;
  std::string label;
  std::string database;
};

std::string bench_text(const bench::BenchResult& result, const std::optional<BenchRecorded>& recorded,
                       const Style& style);
std::string bench_markdown(const bench::BenchResult& result, const std::optional<BenchRecorded>& recorded);
nlohmann::ordered_json bench_json(const bench::BenchResult& result, const std::optional<BenchRecorded>& recorded);

// The noise warning's sentence, "" when the run is not noisy.
std::string bench_noise_warning(const bench::BenchResult& result);

}  // namespace ferret
