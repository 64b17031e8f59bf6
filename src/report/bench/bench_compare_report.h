// Renders `ferret history` and `ferret compare` as text (80 columns, colour on a terminal),
// Markdown (user text escaped) and JSON (schemas ferret.history/1 and ferret.compare/1,
// docs/HISTORY.md). Every number is computed in bench/run_record.h; nothing here computes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "benchmark/run_record.h"
#include "report/format.h"

namespace ferret {

struct HistoryReport {
  std::string database;
  std::string label;            // the --label filter, "" for all
  std::vector<RunRecord> runs;  // newest first (samples are not used here)
  std::vector<RunStats> stats;  // one per run, same order
  std::vector<LabelTrend> trends;
  double alpha = stats::kDefaultAlpha;
};

std::string history_text(const HistoryReport& report, const Style& style);
std::string history_markdown(const HistoryReport& report);
nlohmann::ordered_json history_json(const HistoryReport& report);

struct CompareReport {
  std::string database;
  RunRecord a, b;  // a is the baseline; samples are not used here
  RunComparison comparison;
  std::optional<double> fail_if_slower_pct;  // --fail-if-slower
  bool gate_failed = false;                  // fails_slowdown_gate
};

// The one-sentence verdict: "B is 12.3% slower (95% CI 10.1–14.2%), significant at α=0.05", or
// "no significant difference (...)".
std::string compare_verdict(const CompareReport& report);
// The warnings: environments that differ, a different setup, noisy runs, few samples.
std::vector<std::string> compare_warnings(const CompareReport& report);

std::string compare_text(const CompareReport& report, const Style& style);
std::string compare_markdown(const CompareReport& report);
nlohmann::ordered_json compare_json(const CompareReport& report);

}  // namespace ferret
