#include "report/job/scaling_report.h"

#include <cmath>

#include <fmt/format.h>

#include "report/format.h"

namespace ferret {

namespace {

using json = nlohmann::ordered_json;

const char* model_text() {
  return "weak scaling (per-rank batch fixed); transfer(n) = c + beta * 2(n-1)/n + alpha * 2(n-1), the ring "
         "all-reduce model, fitted on the runs with the largest run's link; a projected step is the largest run's "
         "step plus the extra transfer, all of it exposed";
}

std::string fit_line(const ScalingFit& f) {
  if (!f.fitted) return "No model: " + f.why_not + ".";
  return fmt::format(
      "Fit on {} runs: c = {:.3f} ms, beta = {:.3f} ms (bytes / bus bandwidth), alpha = {:.1f} us per "
      "ring hop; largest misfit {:.1f}%.",
      f.runs_used, f.c_ns / 1e6, f.beta_ns / 1e6, f.alpha_ns / 1e3, f.max_error_pct);
}

}  // namespace

std::string scaling_text(const ScalingAnalysis& r) {
  constexpr std::size_t kWidth = 80;
  std::string out = fmt::format("Scaling: {} run{}\n\n", r.runs.size(), r.runs.size() == 1 ? "" : "s");
  out += " ranks   step ms  compute ms  comm ms  exposed ms  transfer ms  efficiency  hosts\n";
  for (const ScalingRun& run : r.runs)
    out += fmt::format("{:>6} {:>9.2f} {:>11.2f} {:>8.2f} {:>11.2f} {:>12.2f} {:>10.1f}%  {}\n", run.world_size,
                       ns_to_ms(run.step_ns), ns_to_ms(run.compute_ns), ns_to_ms(run.comm_ns), ns_to_ms(run.exposed_ns),
                       ns_to_ms(run.transfer_ns), 100 * run.efficiency, run.spans_hosts ? "several" : "one");
  out += '\n';
  out += wrap(fmt::format("Model: {}.", model_text()), kWidth, "");
  out += wrap(fit_line(r.fit), kWidth, "");
  if (!r.projections.empty()) {
    out += "\nProjected\n ranks  transfer ms   step ms  efficiency\n";
    for (const ScalingProjection& p : r.projections)
      out += fmt::format("{:>6} {:>12.2f} {:>9.2f} {:>10.1f}%\n", p.world_size, ns_to_ms(p.transfer_ns),
                         ns_to_ms(p.step_ns), 100 * p.efficiency);
  }
  for (const std::string& w : r.warnings) out += wrap("warning: " + w, kWidth, "");
  return finish_text(out);
}

json scaling_json(const ScalingAnalysis& r) {
  json runs = json::array();
  for (const ScalingRun& run : r.runs)
    runs.push_back({{"source", run.source},
                    {"world_size", run.world_size},
                    {"ranks", run.ranks},
                    {"spans_hosts", run.spans_hosts},
                    {"step_us", ns_to_us(std::round(static_cast<double>(run.step_ns)))},
                    {"compute_us", ns_to_us(std::round(static_cast<double>(run.compute_ns)))},
                    {"communication_us", ns_to_us(std::round(static_cast<double>(run.comm_ns)))},
                    {"exposed_communication_us", ns_to_us(std::round(static_cast<double>(run.exposed_ns)))},
                    {"transfer_us", ns_to_us(std::round(static_cast<double>(run.transfer_ns)))},
                    {"efficiency", std::round(run.efficiency * 1e4) / 1e4}});
  json fit = {{"fitted", r.fit.fitted}, {"runs_used", r.fit.runs_used}};
  if (r.fit.fitted) {
    fit["c_us"] = ns_to_us(std::round(r.fit.c_ns));
    fit["beta_us"] = ns_to_us(std::round(r.fit.beta_ns));
    fit["alpha_us"] = ns_to_us(std::round(r.fit.alpha_ns));
    fit["max_error_pct"] = std::round(r.fit.max_error_pct * 1000) / 1000;
  } else {
    fit["why_not"] = r.fit.why_not;
  }
  json projections = json::array();
  for (const ScalingProjection& p : r.projections)
    projections.push_back({{"world_size", p.world_size},
                           {"transfer_us", ns_to_us(std::round(static_cast<double>(p.transfer_ns)))},
                           {"step_us", ns_to_us(std::round(static_cast<double>(p.step_ns)))},
                           {"efficiency", std::round(p.efficiency * 1e4) / 1e4}});
  return {{"schema", "ferret.scaling/1"}, {"model", model_text()}, {"runs", runs}, {"fit", fit},
          {"projections", projections},   {"warnings", r.warnings}};
}

std::string scaling_markdown(const ScalingAnalysis& r) {
  std::string out =
      "### ferret scaling\n\n| ranks | step ms | compute ms | comm ms | exposed ms | transfer ms | efficiency |\n"
      "|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const ScalingRun& run : r.runs)
    out += fmt::format("| {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.1f}% |\n", run.world_size,
                       ns_to_ms(run.step_ns), ns_to_ms(run.compute_ns), ns_to_ms(run.comm_ns), ns_to_ms(run.exposed_ns),
                       ns_to_ms(run.transfer_ns), 100 * run.efficiency);
  out += fmt::format("\n{}\n", escape_markdown(fmt::format("Model: {}. {}", model_text(), fit_line(r.fit))));
  if (!r.projections.empty()) {
    out += "\n| projected ranks | transfer ms | step ms | efficiency |\n|---:|---:|---:|---:|\n";
    for (const ScalingProjection& p : r.projections)
      out += fmt::format("| {} | {:.2f} | {:.2f} | {:.1f}% |\n", p.world_size, ns_to_ms(p.transfer_ns),
                         ns_to_ms(p.step_ns), 100 * p.efficiency);
  }
  for (const std::string& w : r.warnings) out += fmt::format("\n> {}\n", escape_markdown(w));
  return finish_text(out);
}

}  // namespace ferret
