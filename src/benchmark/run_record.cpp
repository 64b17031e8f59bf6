#include "benchmark/run_record.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace ferret {

double seconds_per_unit(const std::string& unit) {
  if (unit == "s") return 1.0;
  if (unit == "ms") return 1e-3;
  if (unit == "us") return 1e-6;
  if (unit == "ns") return 1e-9;
  return stats::kNaN;
}

RunStats summarize_run(const RunRecord& run) {
  RunStats s;
  s.summary = stats::summarize(run.samples);
  s.relative_iqr = stats::relative_iqr(s.summary);
  s.noisy = stats::is_noisy(s.summary);
  const double seconds = s.summary.median * seconds_per_unit(run.unit);
  if (seconds > 0 && std::isfinite(seconds)) s.throughput = run.batch_size / seconds;
  return s;
}

namespace {

std::string number_text(double v) { return fmt::format("{:g}", v); }

// "key: A -> B" for every settings key whose value differs ("(unset)" when one run lacks it).
void settings_differences(const Fields& a, const Fields& b, std::vector<std::string>& out) {
  auto lookup = [](const Fields& fields, const std::string& key) -> const std::string* {
    for (const auto& [k, v] : fields)
      if (k == key) return &v;
    return nullptr;
  };
  std::vector<std::string> keys;
  for (const auto& [k, v] : a) keys.push_back(k);
  for (const auto& [k, v] : b)
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  for (const std::string& key : keys) {
    const std::string* va = lookup(a, key);
    const std::string* vb = lookup(b, key);
    if (va && vb && *va == *vb) continue;
    out.push_back(fmt::format("{}: {} -> {}", key, va ? *va : "(unset)", vb ? *vb : "(unset)"));
  }
}

}  // namespace

RunComparison compare_runs(const RunRecord& a, const RunRecord& b, double alpha) {
  RunComparison c;
  c.a = summarize_run(a);
  c.b = summarize_run(b);
  c.change = stats::compare_samples(a.samples, b.samples, alpha);
  c.environment_differences = environment_differences(a.environment, b.environment);
  if (a.kind != b.kind) c.setup_differences.push_back(fmt::format("kind: {} -> {}", a.kind, b.kind));
  if (a.subject != b.subject) c.setup_differences.push_back(fmt::format("subject: {} -> {}", a.subject, b.subject));
  if (a.unit != b.unit) c.setup_differences.push_back(fmt::format("unit: {} -> {}", a.unit, b.unit));
  if (a.batch_size != b.batch_size)
    c.setup_differences.push_back(
        fmt::format("batch size: {} -> {}", number_text(a.batch_size), number_text(b.batch_size)));
  settings_differences(a.settings, b.settings, c.setup_differences);
  return c;
}

bool fails_slowdown_gate(const RunComparison& c, double pct) {
  return c.change.significant && c.change.relative_change * 100.0 > pct;
}

std::vector<LabelTrend> label_trends(const std::vector<RunRecord>& runs_newest_first, double alpha) {
  // Labels in order of their newest run; each trend's runs oldest first.
  std::vector<LabelTrend> trends;
  std::vector<std::vector<const RunRecord*>> members;
  for (const RunRecord& run : runs_newest_first) {
    auto found = std::find_if(trends.begin(), trends.end(), [&](const LabelTrend& t) { return t.label == run.label; });
    if (found == trends.end()) {
      trends.push_back(LabelTrend{run.label, {}});
      members.emplace_back();
      found = trends.end() - 1;
    }
    members[static_cast<std::size_t>(found - trends.begin())].push_back(&run);
  }
  for (auto& runs : members) std::reverse(runs.begin(), runs.end());
  for (std::size_t t = 0; t < trends.size(); ++t) {
    const std::vector<const RunRecord*>& runs = members[t];
    for (std::size_t i = 0; i < runs.size(); ++i) {
      TrendPoint p;
      p.id = runs[i]->id;
      p.created_at = runs[i]->created_at;
      p.median = stats::summarize(runs[i]->samples).median;
      if (i > 0) {
        // No bootstrap (resamples = 0): the trend needs the test and the medians, not an interval,
        // and 10,000 resamples per pair of 10,000-sample runs would take seconds each.
        const stats::Comparison c = stats::compare_samples(runs[i - 1]->samples, runs[i]->samples, alpha,
                                                           stats::kDefaultConfidence, /*resamples=*/0);
        p.relative_change = c.relative_change;
        p.p_value = c.mann_whitney.p_value;
        p.step = c.significant;
      }
      trends[t].points.push_back(std::move(p));
    }
  }
  return trends;
}

}  // namespace ferret
