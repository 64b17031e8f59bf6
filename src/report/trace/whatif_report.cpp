#include "report/trace/whatif_report.h"

#include <fmt/format.h>
#include <cmath>

#include "base/units.h"

namespace ferret {

namespace {

using json = nlohmann::ordered_json;

double us(std::int64_t ns) { return round3(ns_to_us(static_cast<double>(ns))); }

double change_pct(std::int64_t baseline, std::int64_t predicted) {
  return baseline > 0 ? 100.0 * static_cast<double>(predicted - baseline) / static_cast<double>(baseline) : 0.0;
}

std::string ms_text(std::int64_t ns) { return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6); }

// What each change was and how many events it touched, one line each.
std::vector<std::string> change_lines(const WhatIfResult& r) {
  std::vector<std::string> lines;
  const RetimeChanges& c = r.changes;
  const RetimeTouched& t = r.touched;
  auto count = [](std::uint64_t n, std::string what) {
    if (n != 1) what = what.back() == 'y' ? what.substr(0, what.size() - 1) + "ies" : what + "s";
    return fmt::format("{} {}", n, what);
  };
  for (const WhatIfRemoval& removal : whatif_removal_table()) {
    if (!(c.*removal.flag)) continue;
    // Removing every sync removes the synchronous copies too: one line, one count.
    if (removal.flag == &RetimeChanges::remove_sync_copies && c.remove_host_sync) continue;
    lines.push_back(fmt::format("remove {}: {} ({})", removal.name, removal.effect,
                                count(t.*removal.touched, std::string(removal.unit))));
  }
  for (std::size_t i = 0; i < c.speedups.size(); ++i)
    lines.push_back(fmt::format("speedup '{}' x{:g}: matching kernels and CPU ops run {:g} times faster ({})",
                                c.speedups[i].pattern, c.speedups[i].factor, c.speedups[i].factor,
                                count(i < t.speedup_events.size() ? t.speedup_events[i] : 0, "event")));
  return lines;
}

std::uint64_t touched_total(const WhatIfResult& r) {
  std::uint64_t n = r.touched.dataloader_spans + r.touched.host_syncs + r.touched.launch_calls +
                    r.touched.communication + r.touched.device_stalls + r.touched.host_overhead_spans +
                    r.touched.pageable_uploads;
  for (std::uint64_t s : r.touched.speedup_events) n += s;
  return n;
}

}  // namespace

json whatif_json(const TraceModel& model, const AnalysisContext& ctx, const WhatIfResult& r) {
  json speedups = json::array();
  for (std::size_t i = 0; i < r.changes.speedups.size(); ++i)
    speedups.push_back({{"pattern", r.changes.speedups[i].pattern},
                        {"factor", r.changes.speedups[i].factor},
                        {"events", i < r.touched.speedup_events.size() ? r.touched.speedup_events[i] : 0}});
  json steps = json::array();
  for (const WhatIfStep& s : r.steps)
    steps.push_back({{"step", s.number < 0 ? json(nullptr) : json(s.number)},
                     {"baseline_us", us(s.baseline_ns)},
                     {"predicted_us", us(s.predicted_ns)}});
  return {
      {"schema", "ferret.whatif/1"},
      {"source", model.info.source},
      {"window", ctx.label},
      {"changes",
       {{"remove", whatif_removals(r.changes)},
        {"speedup", speedups},
        {"touched",
         {{"dataloader_spans", r.touched.dataloader_spans},
          {"host_syncs", r.touched.host_syncs},
          {"launch_calls", r.touched.launch_calls},
          {"communication", r.touched.communication},
          {"device_stalls", r.touched.device_stalls},
          {"host_overhead_spans", r.touched.host_overhead_spans},
          {"pageable_uploads", r.touched.pageable_uploads}}}}},
      {"steps_count", r.steps.size()},
      {"baseline_step_us", r.steps.empty() ? json(nullptr) : json(us(r.baseline_step_ns))},
      {"predicted_step_us", r.steps.empty() ? json(nullptr) : json(us(r.predicted_step_ns))},
      {"change_pct",
       r.steps.empty() ? json(nullptr) : json(round2(change_pct(r.baseline_step_ns, r.predicted_step_ns)))},
      {"baseline_mean_step_us", r.steps.empty() ? json(nullptr) : json(round2(r.baseline_mean_ns / 1e3))},
      {"predicted_mean_step_us", r.steps.empty() ? json(nullptr) : json(round2(r.predicted_mean_ns / 1e3))},
      {"speedup", r.steps.empty() || r.predicted_mean_ns <= 0 ? json(nullptr)
                                                              : json(round2(r.baseline_mean_ns / r.predicted_mean_ns))},
      {"lower_bound",
       {{"device", r.floor_device < 0 ? json(nullptr) : json(r.floor_device)},
        {"device_work_per_step_us", us(r.device_floor_ns)},
        {"binds", r.floor_binds}}},
      {"steps", steps}};
}

std::string whatif_text(const TraceModel& model, const AnalysisContext& ctx, const WhatIfResult& r,
                        const Style& style) {
  std::string out = fmt::format("{}What if{}: {} ({})\n", style.bold(), style.reset(), model.info.source, ctx.label);
  const std::vector<std::string> lines = change_lines(r);
  if (lines.empty()) out += "  no change asked for: the prediction is the step as recorded\n";
  for (const std::string& l : lines) out += "  " + l + "\n";
  if (r.steps.empty()) return finish_text(out + "\nNo step to re-time: the window holds no work.\n", style);
  if (!lines.empty() && touched_total(r) == 0)
    out += "  (no event in the window matches: the prediction is the step as recorded)\n";
  const char* unit = r.has_steps ? "step" : "window";
  out += fmt::format("\n{}Predicted {} time{} (median of {} {}{}): {} -> {} ({:+.1f}%)\n", style.bold(), unit,
                     style.reset(), r.steps.size(), unit, r.steps.size() == 1 ? "" : "s", ms_text(r.baseline_step_ns),
                     ms_text(r.predicted_step_ns), change_pct(r.baseline_step_ns, r.predicted_step_ns));
  // The mean's ratio is the gain `ferret analyze` quotes for the same cause (its shares are of the
  // mean step); the median above resists one slow step.
  if (r.predicted_mean_ns > 0)
    out += fmt::format("  mean {}: {} -> {}: {:.2f}x\n", unit, ms_text(std::llround(r.baseline_mean_ns)),
                       ms_text(std::llround(r.predicted_mean_ns)), r.baseline_mean_ns / r.predicted_mean_ns);
  if (r.floor_binds)
    out += fmt::format("  bounded below by device {}'s own work: {} per {} (no change to the host can shorten it)\n",
                       r.floor_device, ms_text(r.device_floor_ns), unit);
  if (r.has_steps && r.steps.size() > 1) {
    // Capped as the other tables are: a trace of 100,000 steps printed 100,006 lines.
    constexpr std::size_t kStepRows = 40;
    out += "\n  step        recorded     predicted   change\n";
    for (std::size_t k = 0; k < r.steps.size() && k < kStepRows; ++k) {
      const WhatIfStep& s = r.steps[k];
      out += fmt::format("  {:<8} {:>12} {:>12}  {:+6.1f}%\n", s.number, ms_text(s.baseline_ns),
                         ms_text(s.predicted_ns), change_pct(s.baseline_ns, s.predicted_ns));
    }
    if (r.steps.size() > kStepRows)
      out += fmt::format("  ... {} more steps (--json lists every one)\n", r.steps.size() - kStepRows);
  }
  return finish_text(out, style);
}

}  // namespace ferret
