#include "diagnosis/diagnose.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "analysis/causal/whatif.h"
#include "diagnosis/device_fixes.h"
#include "diagnosis/rule_registry.h"
#include "diagnosis/rules.h"
#include "diagnosis/verdict.h"

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

void predict_gains(const TraceAnalysis& a, std::vector<Finding>& findings) {
  if (a.model == nullptr) return;
  // Without GPU work a sync waits for nothing and a launch launches nothing: removing them would
  // only delete the calls' own host work, which no fix removes.
  const bool gpu_work = a.hot_spots.gpu_activities > 0;
  std::vector<std::int64_t> baseline;  // the critical path re-timed the unchanged steps already
  for (const CriticalPathStep& s : a.critical_path.steps) baseline.push_back(s.duration_ns);
  std::vector<std::pair<Finding*, RetimeChanges>> work;
  for (Finding& f : findings) {
    RetimeChanges changes = fix_change_of(f);
    if (!whatif_changes_anything(changes)) continue;
    if (!gpu_work && (changes.remove_host_sync || changes.remove_sync_copies || changes.remove_launch_overhead))
      continue;
    work.emplace_back(&f, std::move(changes));
  }
  if (work.empty()) return;
  // One pass over the device's work for all the what-ifs (both floors), before any thread reads them.
  DeviceWorkFloors floors;
  for (const auto& [finding, changes] : work)
    if (changes.speedups.empty())
      fill_device_work_floor(*a.model, a.context, changes.remove_exposed_communication, floors);
  auto predict = [&](std::size_t i) {
    Finding& f = *work[i].first;
    const WhatIfResult w = analyze_whatif(*a.model, a.context, work[i].second, baseline, &a.step_order, &floors);
    // Means, as the rules' shares: "81% of each step" and "predicted 5.2x" then speak of one step.
    if (w.baseline_mean_ns <= 0 || w.predicted_mean_ns <= 0) return;
    f.predicted_speedup = w.baseline_mean_ns / w.predicted_mean_ns;
    // A bound below what the re-timed step shows was not a bound: a rule's share counts the idle
    // time its cause creates, while the step graph also lets the host run ahead once the cause is
    // gone (no sync: launching overlaps the GPU's work). The bound is raised to the prediction.
    if (f.predicted_speedup > f.max_speedup) {
      f.max_speedup = f.predicted_speedup;
      f.time_share = 1.0 - 1.0 / f.predicted_speedup;
    }
  };
  // Each re-timing reads the model and writes its own finding: on a large trace, two at a time (as
  // the analyses themselves, AnalysisOptions::concurrent).
  const AnalysisOptions& o = a.context.options;
  if (work.size() > 1 && o.concurrent && a.model->size() >= o.concurrent_min_events &&
      std::thread::hardware_concurrency() > 1) {
    std::thread second([&] {
      for (std::size_t i = 1; i < work.size(); i += 2) predict(i);
    });
    for (std::size_t i = 0; i < work.size(); i += 2) predict(i);
    second.join();
  } else {
    for (std::size_t i = 0; i < work.size(); ++i) predict(i);
  }
}

}  // namespace

RetimeChanges fix_change_of(const Finding& f) {
  RetimeChanges changes = f.fix;
  if (const RuleInfo* rule = find_rule(f.id); rule != nullptr && rule->removal != nullptr)
    changes.*rule->removal = true;
  return changes;
}

Diagnosis diagnose(const TraceAnalysis& analysis) {
  Diagnosis d;
  run_rule_families(analysis, d.findings);
  if (analysis.model != nullptr) fit_fixes_to_device(d.findings, device_features(*analysis.model));
  fit_fixes_to_work_done(d.findings, work_done(analysis));
  fit_fixes_to_workload(d.findings, analysis.workload.kind, analysis.workload.evidence);
  if (analysis.model != nullptr) fit_fixes_to_platform(d.findings, analysis.model->info.platform);
  predict_gains(analysis, d.findings);
  const Finding* top = rank_and_lead_with_verdict(d.findings);
  say_python_frames(analysis, d.findings);
  say_fixes_left_out(d.findings);
  // After folding (which adds what to record next) and before the headline quotes a title.
  if (analysis.model != nullptr) fit_vocabulary_to_platform(d.findings, analysis.model->info.platform);
  if (top == nullptr) {
    // No rule crossed its threshold: that is not "healthy". The largest cost is named anyway, as
    // an informational finding ranked among the minor ones (docs/RULES.md, "The verdict").
    const bool minor_findings = !d.findings.empty();
    const std::size_t before = d.findings.size();
    run_rule_families(analysis, d.findings, RulePhase::kNoVerdict);
    std::string largest;
    if (d.findings.size() > before) {
      largest = "; " + d.findings[before].title;
      largest[2] = static_cast<char>(std::tolower(static_cast<unsigned char>(largest[2])));  // "; the largest ..."
    }
    rank_findings(d.findings);
    d.verdict.bottleneck_found = false;
    d.verdict.headline = fmt::format("No rule crossed its threshold over {}{}{}.", describe_window(analysis), largest,
                                     minor_findings ? " (minor findings below)" : "");
    return d;
  }
  d.verdict = verdict_of(*top);
  d.verdict.headline = headline_of(*top, d.verdict);
  return d;
}

}  // namespace ferret
