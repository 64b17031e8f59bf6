#include "diagnosis/diagnose.h"

#include <fmt/format.h>

#include "diagnosis/rules.h"

namespace ferret {

namespace {

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
  rules_attention(analysis, d.findings);
  rules_window(analysis, d.findings);
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
