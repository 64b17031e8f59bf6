// Renders `ferret watch` (docs/WATCH.md): the CPU use of the command's process tree by role, the
// busiest processes, each GPU's utilisation and memory, and the findings, as text (fits the
// layout width), Markdown (names escaped) and JSON (schema ferret.watch/1).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/watch/watch_summary.h"
#include "diagnosis/finding.h"
#include "model/watch_series.h"
#include "report/format.h"

namespace ferret {

struct WatchReportInput {
  std::vector<std::string> command;
  double interval_s = 0;
  WatchSummary summary;
  std::vector<Finding> findings;
};

std::string watch_text(const WatchReportInput& in, const Style& style);
std::string watch_markdown(const WatchReportInput& in);
nlohmann::ordered_json watch_json(const WatchReportInput& in);
// The raw series as CSV (--samples-out): one row per sample, t_s, interval_s, cores by role and in
// all, processes and workers alive, then per GPU its utilisation, memory utilisation and memory
// used (empty where the device did not answer).
std::string watch_samples_csv(const WatchSeries& series);

}  // namespace ferret
