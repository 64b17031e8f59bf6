#include "analysis/analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "base/rank_list.h"
#include "model/relations.h"

namespace ferret {

const char* window_source_name(WindowSource source) {
  switch (source) {
    case WindowSource::kSteps: return "steps";
    case WindowSource::kAnnotation: return "annotation";
    case WindowSource::kTimeRange: return "time";
    case WindowSource::kWholeTrace: return "trace";
  }
  return "trace";
}

namespace {

// First host span or GPU activity .. last end. Metadata and flows carry no time, and profiler
// bookkeeping spans ("PyTorch Profiler (0)", cuda_profiler_range) can stretch far beyond the work.
std::pair<std::int64_t, std::int64_t> trace_span(const TraceModel& model) {
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  std::int64_t last = std::numeric_limits<std::int64_t>::min();
  for (std::size_t i = 0; i < model.size(); ++i) {
    const EventKind k = model.kind[i];
    if (model.phase[i] != 'X' || !(is_host_span(k) || is_gpu_activity(k))) continue;
    first = std::min(first, model.ts_ns[i]);
    last = std::max(last, model.ts_ns[i] + model.dur_ns[i]);
  }
  return first <= last ? std::pair{first, last} : std::pair<std::int64_t, std::int64_t>{0, 0};
}

std::string step_selector_text(const AnalysisOptions& o) {
  if (o.first_step && o.last_step && *o.first_step == *o.last_step) return fmt::format("{}", *o.first_step);
  return fmt::format("{}-{}", o.first_step ? fmt::format("{}", *o.first_step) : "",
                     o.last_step ? fmt::format("{}", *o.last_step) : "");
}

void select_steps(const TraceModel& model, const AnalysisOptions& options, AnalysisContext& ctx) {
  const Relations& rel = model.relations;
  for (const Step& s : rel.steps) {
    if (options.first_step && s.number < *options.first_step) continue;
    if (options.last_step && s.number > *options.last_step) continue;
    ctx.steps.push_back(s);
  }
  // Iterations inferred from a trace without ProfilerStep#N include the cold first one (context
  // creation, handles, lazy kernel loading, the first batch): left out of the steady figures and
  // said, unless the user chose the steps.
  if (rel.step_marker_kind != StepMarker::kProfilerStep && !options.first_step && !options.last_step &&
      ctx.steps.size() >= kInferredIterationsToDropFirst) {
    ctx.cold_first_step = ctx.steps.front();
    ctx.steps.erase(ctx.steps.begin());
  }
  if (!ctx.steps.empty() || (!options.first_step && !options.last_step)) return;
  std::vector<std::int64_t> numbers;
  for (const Step& s : model.relations.steps) numbers.push_back(s.number);
  std::string holds = numbers.empty()
                          ? "the trace has no complete ProfilerStep spans (select with --window or --time)"
                          : fmt::format("the trace's complete steps are ProfilerStep#{}", format_number_list(numbers));
  if (const auto& dropped = model.relations.dropped_step)
    holds += fmt::format("; ProfilerStep#{} was left out as incomplete", dropped->number);
  throw SelectionError(
      fmt::format("{}: --steps {} selects no step: {}", model.info.source, step_selector_text(options), holds));
}

void check_device(const TraceModel& model, int device) {
  std::set<std::int32_t> devices;
  for (const EventIndex e : model.relations.gpu_events)
    if (model.kind[e] != EventKind::kSync) devices.insert(model.pid[e]);
  if (devices.count(device)) return;
  std::string holds = "the trace holds no GPU activity";
  if (!devices.empty()) {
    std::vector<std::string> names;
    for (std::int32_t d : devices) names.push_back(fmt::format("{}", d));
    holds =
        fmt::format("the trace has GPU activity on device{} {}", devices.size() > 1 ? "s" : "", fmt::join(names, ", "));
  }
  throw SelectionError(
      fmt::format("{}: --device {}: no GPU activity on device {}; {}", model.info.source, device, device, holds));
}

// The end of the GPU work launched from [start, end): a window of host work includes the
// kernels it queued, as a step does.
std::int64_t gpu_extended_end(const TraceModel& model, std::int64_t start, std::int64_t end) {
  const Relations& rel = model.relations;
  std::int64_t out = end;
  for (std::size_t i = 0; i < rel.launches.size(); ++i) {
    const std::int64_t t = model.ts_ns[rel.launches[i]];
    if (t < start || t >= end) continue;
    for (std::uint32_t g = rel.launch_gpu_begin[i]; g < rel.launch_gpu_begin[i + 1]; ++g)
      out = std::max(out, model.end_ns(rel.launch_gpu[g]));
  }
  return out;
}

void select_annotation(const TraceModel& model, const AnalysisOptions& options, AnalysisContext& ctx) {
  // The spans named exactly as given; failing that, "NAME#K" is the K-th span named NAME (names
  // themselves may hold '#': "ProfilerStep#5", "enumerate(DataLoader)#_...").
  auto spans_named = [&](std::string_view name) {
    std::vector<EventIndex> found;
    for (std::size_t i = 0; i < model.size(); ++i)
      if (model.phase[i] == 'X' && is_host_span(model.kind[i]) && model.name_of(static_cast<EventIndex>(i)) == name)
        found.push_back(static_cast<EventIndex>(i));
    std::stable_sort(found.begin(), found.end(),
                     [&](EventIndex a, EventIndex b) { return model.ts_ns[a] < model.ts_ns[b]; });
    return found;
  };
  std::string name = options.window_name;
  int occurrence = std::max(1, options.window_occurrence);
  std::vector<EventIndex> spans = spans_named(name);
  const std::size_t hash = name.rfind('#');
  if (spans.empty() && hash != std::string::npos && hash + 1 < name.size() && hash + 10 > name.size() &&
      std::all_of(name.begin() + static_cast<std::ptrdiff_t>(hash) + 1, name.end(),
                  [](char c) { return c >= '0' && c <= '9'; })) {
    occurrence = std::stoi(name.substr(hash + 1));
    name.resize(hash);
    spans = spans_named(name);
  }
  if (spans.empty()) {
    // Name the user annotations the trace does have, most frequent first.
    std::map<std::string_view, std::uint64_t> counts;
    for (std::size_t i = 0; i < model.size(); ++i) {
      if (model.kind[i] != EventKind::kUserAnnotation || model.phase[i] != 'X') continue;
      const std::string_view n = model.name_of(static_cast<EventIndex>(i));
      if (profiler_step_number(n) < 0) ++counts[n];
    }
    std::vector<std::pair<std::uint64_t, std::string_view>> by_count;
    for (const auto& [n, c] : counts) by_count.push_back({c, n});
    std::stable_sort(by_count.begin(), by_count.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<std::string> listed;
    for (std::size_t i = 0; i < by_count.size() && i < 12; ++i)
      listed.push_back(fmt::format("\"{}\" ({}x)", by_count[i].second, by_count[i].first));
    const std::string holds = listed.empty()
                                  ? "the trace has no user annotations (record_function ranges)"
                                  : fmt::format("user annotations in the trace: {}{}", fmt::join(listed, ", "),
                                                by_count.size() > listed.size() ? ", ..." : "");
    throw SelectionError(
        fmt::format("{}: --window {}: no span named \"{}\"; {}", model.info.source, options.window_name, name, holds));
  }
  if (static_cast<std::size_t>(occurrence) > spans.size())
    throw SelectionError(fmt::format("{}: --window {}: \"{}\" occurs {} time{} in the trace", model.info.source,
                                     options.window_name, name, spans.size(), spans.size() > 1 ? "s" : ""));
  const EventIndex span = spans[static_cast<std::size_t>(occurrence) - 1];
  ctx.source = WindowSource::kAnnotation;
  ctx.window_start_ns = model.ts_ns[span];
  ctx.window_end_ns = gpu_extended_end(model, model.ts_ns[span], model.end_ns(span));
  ctx.label = fmt::format("{}#{}", name, occurrence);
}

void select_time_range(const TraceModel& model, const AnalysisOptions& options, AnalysisContext& ctx) {
  const double from = options.time_from_ms.value_or(0.0);
  const double span_ms = static_cast<double>(ctx.window_end_ns - ctx.trace_start_ns) / 1e6;
  const double to = options.time_to_ms.value_or(span_ms);
  if (!(from >= 0) || !(to > from) || !std::isfinite(to))
    throw SelectionError(
        fmt::format("{}: --time {}-{}: expected 0 <= A < B (ms from the trace start)", model.info.source, from, to));
  if (from >= span_ms)
    throw SelectionError(fmt::format("{}: --time {:g}-{:g} ms selects nothing: the trace spans 0-{:.3f} ms",
                                     model.info.source, from, to, span_ms));
  ctx.source = WindowSource::kTimeRange;
  ctx.window_start_ns = ctx.trace_start_ns + static_cast<std::int64_t>(std::llround(from * 1e6));
  ctx.window_end_ns = std::min(
      ctx.window_end_ns, ctx.trace_start_ns + static_cast<std::int64_t>(std::llround(std::min(to, span_ms) * 1e6)));
  ctx.label = fmt::format("{:g}-{:g} ms", from, std::min(to, span_ms));
}

bool is_blocking_call(std::string_view name) {
  auto has = [&](std::string_view s) { return name.find(s) != std::string_view::npos; };
  if (has("Synchronize")) return true;  // cudaDeviceSynchronize, cudaStreamSynchronize, hipEventSynchronize
  return (has("Memcpy") || has("Memset")) && !has("Async") && !has("Peer");  // cudaMemcpy, hipMemcpyWithStream
}

// Blocking calls at least 1 ms long during which the trace's own device work is busy under 10% of
// the time: they wait on work the trace does not hold (queued before profiling began, or another
// process), as the causal timeline reads it (analysis/causal/causality.h). One is at the window's start
// when the device work launched in the window before it is under 10% of its wait, whatever tiny
// launches come first (two launches in the first 0.12 ms defeated a "before the first launch" test
// and a 470 ms wait read as a synchronous copy to fix); at the end when the work launched after it
// is.
void find_edge_waits(const TraceModel& model, AnalysisContext& ctx) {
  const Relations& rel = model.relations;
  std::vector<std::size_t> blocking;
  for (std::size_t i = 0; i < rel.launches.size(); ++i) {
    const EventIndex e = rel.launches[i];
    const std::int64_t t = model.ts_ns[e];
    if (t < ctx.window_start_ns || t >= ctx.window_end_ns) continue;
    if (is_blocking_call(model.name_of(e)) && model.dur_ns[e] >= kEdgeWaitMinNs) blocking.push_back(i);
  }
  for (const std::size_t i : blocking) {
    const EventIndex e = rel.launches[i];
    const std::int64_t start = model.ts_ns[e], end = model.end_ns(e);
    std::int64_t busy = 0, before = 0, after = 0;
    for (std::size_t g = 0; g < rel.gpu_events.size(); ++g) {
      const EventIndex w = rel.gpu_events[g];
      if (!is_device_work(model.kind[w]) || !ctx.counts_gpu_event(model, w)) continue;
      const EventIndex launch = rel.gpu_launcher[g];
      // The call's own copy counts as busy (a long synchronous copy is the copy, not a wait).
      busy += std::max<std::int64_t>(0, std::min(end, model.end_ns(w)) - std::max(start, model.ts_ns[w]));
      if (launch == e || launch == kNoEvent || model.ts_ns[launch] < ctx.window_start_ns ||
          model.ts_ns[launch] >= ctx.window_end_ns)
        continue;
      if (model.ts_ns[launch] < start) before += model.dur_ns[w];
      if (model.ts_ns[launch] >= end) after += model.dur_ns[w];
    }
    if (busy * 10 >= end - start) continue;
    const bool at_start = before * 10 < end - start;
    const bool at_end = !at_start && after * 10 < end - start;
    if (!at_start && !at_end) continue;
    ctx.edge_waits.push_back({e, at_start, end - start, busy});
  }
  std::sort(ctx.edge_waits.begin(), ctx.edge_waits.end(),
            [](const EdgeWait& a, const EdgeWait& b) { return a.event < b.event; });
  // A wait that opens (or closes) the window is cut off it, so that no breakdown, share or rule
  // counts it as this window's time: the window starts when the wait returns.
  for (const EdgeWait& w : ctx.edge_waits) {
    const std::int64_t start = model.ts_ns[w.event], end = model.end_ns(w.event);
    if (w.at_start && start - ctx.window_start_ns <= kEdgeWaitTrimSlackNs && end < ctx.window_end_ns) {
      ctx.edge_trimmed_ns += end - ctx.window_start_ns;
      ctx.window_start_ns = end;
      if (!ctx.steps.empty()) ctx.steps.front().start_ns = std::max(ctx.steps.front().start_ns, end);
    } else if (!w.at_start && ctx.window_end_ns - end <= kEdgeWaitTrimSlackNs && start > ctx.window_start_ns) {
      ctx.edge_trimmed_ns += ctx.window_end_ns - start;
      ctx.window_end_ns = start;
      if (!ctx.steps.empty()) {
        Step& last = ctx.steps.back();
        last.end_ns = std::max(last.start_ns, std::min(last.end_ns, start));
      }
    }
  }
}

}  // namespace

std::string iteration_marker_text(const Relations& rel) {
  switch (rel.step_marker_kind) {
    case StepMarker::kProfilerStep: return "ProfilerStep#N";
    case StepMarker::kOptimizer: return rel.step_marker;
    case StepMarker::kDataLoader: return "DataLoader batches";
    case StepMarker::kRepeatedOps:
      return rel.step_marker_ops == 1
                 ? fmt::format("repeated {}", rel.step_marker)
                 : fmt::format("a repeated sequence of {} top-level ops from {}", rel.step_marker_ops, rel.step_marker);
  }
  return rel.step_marker;
}

AnalysisContext make_analysis_context(const TraceModel& model, const AnalysisOptions& options) {
  AnalysisContext ctx;
  ctx.options = options;
  const bool range_selected = !options.window_name.empty() || options.time_from_ms || options.time_to_ms;
  const bool steps_selected = options.first_step || options.last_step;
  if (steps_selected && range_selected)
    throw SelectionError(
        fmt::format("{}: --steps selects steps; --window and --time select a stretch of time: "
                    "choose one",
                    model.info.source));
  if (!options.window_name.empty() && (options.time_from_ms || options.time_to_ms))
    throw SelectionError(fmt::format("{}: choose one of --window and --time", model.info.source));
  if (options.device) check_device(model, *options.device);

  if (!range_selected) {
    select_steps(model, options, ctx);
    if (!ctx.steps.empty()) {
      ctx.has_steps = true;
      ctx.source = WindowSource::kSteps;
      ctx.window_start_ns = ctx.steps.front().start_ns;
      ctx.window_end_ns = ctx.steps.back().end_ns;
      const std::int64_t first = ctx.steps.front().number, last = ctx.steps.back().number;
      const Relations& rel = model.relations;
      if (rel.step_marker_kind == StepMarker::kProfilerStep)
        ctx.label =
            first == last ? fmt::format("ProfilerStep#{}", first) : fmt::format("ProfilerStep#{}-{}", first, last);
      else
        ctx.label = fmt::format("{} {} (iterations by {})", first == last ? "iteration" : "iterations",
                                first == last ? fmt::format("{}", first) : fmt::format("{}-{}", first, last),
                                iteration_marker_text(rel));
      find_edge_waits(model, ctx);
      return ctx;
    }
  }
  const auto [first, last] = trace_span(model);
  ctx.trace_start_ns = first;
  ctx.window_start_ns = first;
  ctx.window_end_ns = last;
  ctx.label = "whole trace";
  if (!options.window_name.empty())
    select_annotation(model, options, ctx);
  else if (options.time_from_ms || options.time_to_ms)
    select_time_range(model, options, ctx);
  find_edge_waits(model, ctx);
  return ctx;
}

int step_index_at(const std::vector<Step>& steps, std::int64_t t) {
  auto it =
      std::upper_bound(steps.begin(), steps.end(), t, [](std::int64_t x, const Step& s) { return x < s.start_ns; });
  if (it == steps.begin()) return -1;
  --it;
  return t < it->end_ns ? static_cast<int>(it - steps.begin()) : -1;
}

}  // namespace ferret
