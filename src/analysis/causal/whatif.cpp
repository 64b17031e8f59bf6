#include "analysis/causal/whatif.h"

#include <array>
#include <charconv>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "analysis/classify.h"
#include "analysis/intervals.h"
#include "base/statistics.h"

namespace ferret {

WhatIfResult analyze_whatif(const TraceModel& model, const AnalysisContext& ctx, const RetimeChanges& changes) {
  // The baseline is the same graph re-timed with no change, so that a prediction differs from it
  // by the change alone.
  std::vector<std::int64_t> baseline;
  for (const RetimedStep& s : retime_steps(model, ctx).steps) baseline.push_back(s.duration_ns());
  return analyze_whatif(model, ctx, changes, baseline);
}

namespace {

// The busiest device's own work in the window (union of its kernels, copies and fills): what no
// change to the host can take out of the steps.
// Without communication when the change removes its exposed part (that time is what it takes out).
std::pair<std::int32_t, std::int64_t> busiest_device_work(const TraceModel& model, const AnalysisContext& ctx,
                                                          bool without_communication) {
  std::map<std::int32_t, std::vector<Interval>> busy;
  std::vector<std::int8_t> communication(without_communication ? model.strings.size() : 0, -1);  // by name
  for (const EventIndex e : model.relations.gpu_events) {
    if (!is_device_work(model.kind[e]) || !ctx.device_selected(model.pid[e])) continue;
    if (without_communication && model.kind[e] == EventKind::kKernel) {
      std::int8_t& c = communication[model.name[e]];
      if (c < 0) c = is_communication_kernel(model.name_of(e)) ? 1 : 0;
      if (c == 1) continue;
    }
    const std::int64_t start = std::max(model.ts_ns[e], ctx.window_start_ns);
    const std::int64_t end = std::min(model.end_ns(e), ctx.window_end_ns);
    if (end > start) busy[model.pid[e]].push_back({start, end});
  }
  std::pair<std::int32_t, std::int64_t> best{-1, 0};
  for (auto& [device, intervals] : busy)
    if (const std::int64_t n = union_length(std::move(intervals)); n > best.second) best = {device, n};
  return best;
}

}  // namespace

void fill_device_work_floor(const TraceModel& model, const AnalysisContext& ctx, bool without_communication,
                            DeviceWorkFloors& floors) {
  const int k = without_communication ? 1 : 0;
  if (floors.computed[k]) return;
  floors.value[k] = busiest_device_work(model, ctx, without_communication);
  floors.computed[k] = true;
}

WhatIfResult analyze_whatif(const TraceModel& model, const AnalysisContext& ctx, const RetimeChanges& changes,
                            const std::vector<std::int64_t>& baseline_step_ns, const StepGraphOrder* order,
                            DeviceWorkFloors* floors) {
  WhatIfResult result;
  result.changes = changes;
  result.has_steps = ctx.has_steps;
  const RetimeResult changed = retime_steps(model, ctx, changes, order);
  result.touched = changed.touched;
  std::vector<std::int64_t> base, predicted;
  const std::size_t count = std::min(baseline_step_ns.size(), changed.steps.size());
  if (changes.speedups.empty() && count > 0) {
    DeviceWorkFloors local;
    DeviceWorkFloors& f = floors != nullptr ? *floors : local;
    fill_device_work_floor(model, ctx, changes.remove_exposed_communication, f);
    const auto [device, work] = f.value[changes.remove_exposed_communication ? 1 : 0];
    result.floor_device = device;
    result.device_floor_ns = work / static_cast<std::int64_t>(count);
  }
  for (std::size_t s = 0; s < count; ++s) {
    WhatIfStep step;
    step.number = changed.steps[s].number;
    step.baseline_ns = baseline_step_ns[s];
    step.predicted_ns = changed.steps[s].duration_ns();
    // Never below the device's own work per step, nor above the step as it was (a removal adds
    // no work): a step the device kept busy cannot shrink by what the host does.
    if (step.predicted_ns < result.device_floor_ns) {
      step.predicted_ns = std::min(result.device_floor_ns, step.baseline_ns);
      result.floor_binds = result.floor_binds || step.predicted_ns == result.device_floor_ns;
    }
    result.steps.push_back(step);
    base.push_back(step.baseline_ns);
    predicted.push_back(step.predicted_ns);
  }
  if (!base.empty()) {
    result.baseline_step_ns = stats::median_ns(base);
    result.predicted_step_ns = stats::median_ns(predicted);
    double base_sum = 0, predicted_sum = 0;
    for (std::size_t s = 0; s < base.size(); ++s) {
      base_sum += static_cast<double>(base[s]);
      predicted_sum += static_cast<double>(predicted[s]);
    }
    result.baseline_mean_ns = base_sum / static_cast<double>(base.size());
    result.predicted_mean_ns = predicted_sum / static_cast<double>(base.size());
  }
  return result;
}

namespace {

constexpr std::array<WhatIfRemoval, 8> kRemovals = {{
    {"dataloader", &RetimeChanges::remove_dataloader, &RetimeTouched::dataloader_spans, "span",
     "DataLoader waits take no time"},
    {"host-sync", &RetimeChanges::remove_host_sync, &RetimeTouched::host_syncs, "call",
     "synchronising calls take no time"},
    {"sync-copy", &RetimeChanges::remove_sync_copies, &RetimeTouched::host_syncs, "call",
     "synchronous and blocking copies no longer block the host"},
    {"launch-overhead", &RetimeChanges::remove_launch_overhead, &RetimeTouched::launch_calls, "call",
     "launch calls take no host time"},
    {"exposed-communication", &RetimeChanges::remove_exposed_communication, &RetimeTouched::communication, "event",
     "communication keeps only its overlap with compute"},
    {"device-stalls", &RetimeChanges::remove_device_stalls, &RetimeTouched::device_stalls, "activity",
     "the device no longer idles with its next work launched and nothing traced ahead of it"},
    {"host-overhead", &RetimeChanges::remove_host_overhead, &RetimeTouched::host_overhead_spans, "span",
     "the host issues its work at no cost, as a captured graph replays it; syncs, DataLoader waits, host "
     "collectives and CPU-only operators keep their time"},
    {"pageable-uploads", &RetimeChanges::pin_pageable_uploads, &RetimeTouched::pageable_uploads, "call",
     "host-to-device copies from pageable memory are pinned and non_blocking: their calls return once issued and "
     "the stream syncs after them go"},
}};

}  // namespace

std::span<const WhatIfRemoval> whatif_removal_table() { return kRemovals; }

std::string whatif_removal_names() {
  std::string out;
  for (const WhatIfRemoval& r : kRemovals) out += (out.empty() ? "" : ", ") + std::string(r.name);
  return out;
}

bool whatif_changes_anything(const RetimeChanges& changes) {
  for (const WhatIfRemoval& r : kRemovals)
    if (changes.*r.flag) return true;
  return !changes.speedups.empty();
}

void merge_whatif_changes(RetimeChanges& into, const RetimeChanges& from) {
  for (const WhatIfRemoval& r : kRemovals) into.*r.flag = into.*r.flag || from.*r.flag;
  into.speedups.insert(into.speedups.end(), from.speedups.begin(), from.speedups.end());
}

void parse_whatif_removal(const std::string& text, RetimeChanges& changes) {
  for (const WhatIfRemoval& r : kRemovals)
    if (text == r.name) {
      changes.*r.flag = true;
      return;
    }
  throw OptionError(
      fmt::format("--remove: '{}' is not a cause ferret can remove; use {}", text, whatif_removal_names()));
}

constexpr double kMinSpeedup = 0.001, kMaxSpeedup = 1000;

void parse_whatif_speedup(const std::string& text, RetimeChanges& changes) {
  const std::size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0)
    throw OptionError(fmt::format("--speedup: '{}' is not PATTERN=K (e.g. aten::mm=2 or sm90_xmma=1.5)", text));
  const std::string factor_text = text.substr(eq + 1);
  double factor = 0;
  const char* first = factor_text.data();
  const char* last = first + factor_text.size();
  const auto [end, ec] = std::from_chars(first, last, factor);
  // 1/1000 to 1000: beyond, no change of kernel or library is meant, and tiny factors overflow the
  // retimed durations (1e-308 made a step "faster" by -0.1%).
  if (factor_text.empty() || ec != std::errc() || end != last || !std::isfinite(factor) || factor < kMinSpeedup ||
      factor > kMaxSpeedup)
    throw OptionError(fmt::format(
        "--speedup: the factor in '{}' must be a number from {} to {} (2 = twice as fast, 0.5 = twice as slow)", text,
        kMinSpeedup, kMaxSpeedup));
  RetimeChanges::Speedup speedup;
  speedup.pattern = text.substr(0, eq);
  speedup.factor = factor;
  changes.speedups.push_back(std::move(speedup));
}

std::vector<std::string> whatif_removals(const RetimeChanges& changes) {
  std::vector<std::string> out;
  for (const WhatIfRemoval& r : kRemovals)
    if (changes.*r.flag) out.emplace_back(r.name);
  return out;
}

}  // namespace ferret
