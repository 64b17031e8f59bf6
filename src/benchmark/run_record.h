// One benchmark run as the baseline store keeps it: the samples, how they were taken, and on
// what machine. Written by `ferret bench --record`, read by `ferret history` and `ferret compare`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/statistics.h"
#include "benchmark/environment.h"

namespace ferret {

struct RunRecord {
  std::int64_t id = 0;                                  // assigned by the store
  std::string label;                                    // --label
  std::string created_at;                               // ISO 8601 UTC, e.g. 2026-12-02T15:40:00Z
  std::string kind = "bench";                           // what produced it
  std::string subject;                                  // the model file (or trace) measured
  std::string unit = "s";                               // unit of the samples: seconds per timed call
  std::vector<double> samples;                          // one per timed call, after warm-up, in order
  std::size_t warmup = 0;                               // calls discarded as warm-up
  double batch_size = 1;                                // items per call, for throughput
  Fields settings;                                      // device, threads, inputs, ...
  std::vector<std::pair<std::string, double>> metrics;  // peak_rss_bytes, cuda_peak_allocated_bytes, ...
  Environment environment;
};

// ---- What `ferret history` and `ferret compare` show -------------------------------------------
// Computed here from the stored samples (src/base/statistics.h); src/report only renders.

// Seconds per sample unit: "s" 1, "ms" 1e-3, "us" 1e-6, "ns" 1e-9; NaN for any other unit.
double seconds_per_unit(const std::string& unit);

struct RunStats {
  stats::Summary summary;             // of run.samples
  double relative_iqr = stats::kNaN;  // IQR / |median|
  bool noisy = false;                 // stats::is_noisy: IQR/median > 10%
  double throughput = stats::kNaN;    // batch_size / median in items per second; NaN unless unit is a time
};
RunStats summarize_run(const RunRecord& run);

// Fewer samples than this earn a warning: the rank test has little power. The smallest exact
// two-sided p-value is 2 / C(n_a + n_b, n_a): 2/252 = 0.008 for 5 + 5, 2/20 = 0.1 for 3 + 3.
inline constexpr std::size_t kFewSamples = 10;

struct RunComparison {
  RunStats a, b;
  stats::Comparison change;  // stats::compare_samples(a.samples, b.samples, alpha): a is the baseline
  std::vector<std::string> environment_differences;  // environment_differences(a, b)
  std::vector<std::string> setup_differences;        // kind, subject, unit, batch size, settings: "key: A -> B"
};
RunComparison compare_runs(const RunRecord& a, const RunRecord& b, double alpha = stats::kDefaultAlpha);

// `--fail-if-slower PCT`: true only for a significant slowdown (Mann-Whitney p < alpha) whose
// median change is more than `pct` percent.
bool fails_slowdown_gate(const RunComparison& c, double pct);

// The medians of one label's runs in time order, each compared with the run before it.
struct TrendPoint {
  std::int64_t id = 0;
  std::string created_at;
  double median = stats::kNaN;
  double relative_change = stats::kNaN;  // against the previous point; NaN for the first
  double p_value = stats::kNaN;          // Mann-Whitney, previous point's samples against these
  bool step = false;                     // significant change from the previous point
};
struct LabelTrend {
  std::string label;
  std::vector<TrendPoint> points;  // oldest first
};
// One trend per label, labels in order of their newest run; runs given newest first, with samples.
std::vector<LabelTrend> label_trends(const std::vector<RunRecord>& runs_newest_first,
                                     double alpha = stats::kDefaultAlpha);

}  // namespace ferret
