#include "diagnosis/diagnose.h"

#include <algorithm>

#include <fmt/format.h>

#include "diagnosis/rules.h"

namespace ferret {

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

  const Finding* top = rank_and_lead_with_verdict(d.findings);
  if (top == nullptr) {
    d.verdict.bottleneck_found = false;
    d.verdict.headline = fmt::format("No bottleneck found over {}: no rule crossed its threshold{}.",
                                     describe_window(analysis), d.findings.empty() ? "" : " (minor findings below)");
    return d;
  }
  d.verdict = verdict_of(*top);
  // A window finding says the window is not a steady state: no gain is bounded there.
  if (d.verdict.bottleneck_found && top->max_speedup > 1.005)
    d.verdict.headline = fmt::format("{}; removing it makes steps up to {:.2f}x faster.", top->title, top->max_speedup);
  else
    d.verdict.headline = top->title + ".";
  return d;
}

}  // namespace ferret
