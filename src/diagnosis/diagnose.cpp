#include "diagnosis/diagnose.h"

#include <algorithm>

#include <fmt/format.h>

#include "diagnosis/rules.h"

namespace ferret {

void rank_findings(std::vector<Finding>& findings) {
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (a.max_speedup != b.max_speedup) return a.max_speedup > b.max_speedup;
    if (a.severity != b.severity) return static_cast<int>(a.severity) > static_cast<int>(b.severity);
    return a.id < b.id;
  });
}

namespace {

// One finding per cause: later (lower-ranked) findings of the same cause lend their evidence and
// fixes to the first and are dropped, so a report never says the same thing twice.
void merge_same_cause(std::vector<Finding>& findings) {
  std::vector<Finding> kept;
  for (Finding& f : findings) {
    const std::string& cause = f.cause.empty() ? f.id : f.cause;
    auto same = std::find_if(kept.begin(), kept.end(),
                             [&](const Finding& k) { return (k.cause.empty() ? k.id : k.cause) == cause; });
    if (same == kept.end()) {
      kept.push_back(std::move(f));
      continue;
    }
    for (const Evidence& e : f.evidence)
      if (std::none_of(same->evidence.begin(), same->evidence.end(),
                       [&](const Evidence& x) { return x.name == e.name; }))
        same->evidence.push_back(e);
    for (const std::string& fix : f.fixes)
      if (std::find(same->fixes.begin(), same->fixes.end(), fix) == same->fixes.end()) same->fixes.push_back(fix);
  }
  findings = std::move(kept);
}

// Symptoms say that the GPU waits, not why: a cause that also fired makes the better verdict.
bool is_symptom(const Finding& f) { return f.id == "low-gpu-utilization" || f.id == "cpu-bound"; }

std::string describe_window(const TraceAnalysis& a) {
  const AnalysisContext& ctx = a.context;
  if (ctx.has_steps)
    return fmt::format("{} step{} averaging {:.1f} ms", ctx.steps.size(), ctx.steps.size() == 1 ? "" : "s",
                       static_cast<double>(ctx.window_ns()) / 1e6 / static_cast<double>(ctx.steps.size()));
  if (!ctx.whole_trace())
    return fmt::format("the {:.1f} ms window {}", static_cast<double>(ctx.window_ns()) / 1e6, ctx.label);
  return fmt::format("{:.1f} ms of trace (no ProfilerStep spans)", static_cast<double>(ctx.window_ns()) / 1e6);
}

}  // namespace

Diagnosis diagnose(const TraceAnalysis& analysis) {
  Diagnosis d;
  rules_step_time(analysis, d.findings);
  rules_data_pipeline(analysis, d.findings);
  rules_gpu_efficiency(analysis, d.findings);
  rules_host(analysis, d.findings);
  rules_memory(analysis, d.findings);
  rules_distributed(analysis, d.findings);
  rules_hardware(analysis, d.findings);
  rules_cpu(analysis, d.findings);
  rules_window(analysis, d.findings);
  rank_findings(d.findings);
  merge_same_cause(d.findings);

  // A capture or initialisation window is not a steady state: saying so leads the report and is
  // the verdict, so that no finding below is read as a description of the steady state.
  if (auto window = std::find_if(d.findings.begin(), d.findings.end(), is_window_finding); window != d.findings.end()) {
    std::rotate(d.findings.begin(), window, window + 1);
    const Finding& top = d.findings.front();
    d.verdict.bottleneck_found = false;
    d.verdict.dimension = top.dimension;
    d.verdict.finding_id = top.id;
    d.verdict.max_speedup = 1.0;
    d.verdict.headline = top.title + ".";
    return d;
  }

  // The verdict is the highest-gain finding that is more than informational. Low GPU
  // utilization and CPU-bound are symptoms: when a cause that explains them (launch-bound,
  // input-bound, host-sync, ...) also fired, the cause is the verdict.
  auto significant = [](const Finding& f) { return f.severity >= Severity::kMedium; };
  auto top = std::find_if(d.findings.begin(), d.findings.end(),
                          [&](const Finding& f) { return significant(f) && !is_symptom(f); });
  if (top == d.findings.end()) top = std::find_if(d.findings.begin(), d.findings.end(), significant);
  if (top == d.findings.end()) {
    d.verdict.bottleneck_found = false;
    d.verdict.headline = fmt::format("No bottleneck found over {}: no rule crossed its threshold{}.",
                                     describe_window(analysis), d.findings.empty() ? "" : " (minor findings below)");
    return d;
  }
  d.verdict.bottleneck_found = true;
  d.verdict.dimension = top->dimension;
  d.verdict.finding_id = top->id;
  d.verdict.max_speedup = top->max_speedup;
  if (top->max_speedup > 1.005)
    d.verdict.headline = fmt::format("{}; removing it makes steps up to {:.2f}x faster.", top->title, top->max_speedup);
  else
    d.verdict.headline = top->title + ".";
  return d;
}

}  // namespace ferret
