#include "analysis/causal/host_blockers.h"

#include "base/statistics.h"
#include "base/text.h"

#include <algorithm>
#include <array>
#include <map>
#include <tuple>

#include "analysis/causal/python_frames.h"
#include "analysis/classify.h"
#include "analysis/intervals.h"
#include "model/relations.h"

namespace ferret {

namespace {

// Name classes, looked up once per distinct string.
enum NameFlag : std::uint8_t {
  kSyncCall = 1,
  kSyncOp = 2,
  kAllocator = 4,
  kSyncCopy = 8,
  kLaunch = 16,
  kDataLoader = 32,
  kStepMarker = 64,
  kPreprocessing = 128,  // a python_function frame of host preprocessing (python_frames.h)
};

class NameFlags {
 public:
  explicit NameFlags(const TraceModel& model) : model_(model), flags_(model.strings.size(), 0xFF) {}
  std::uint8_t of(StrId id) {
    if (flags_[id] == 0xFF) {
      const std::string_view n = model_.strings.view(id);
      std::uint8_t f = 0;
      if (is_host_sync_call(n)) f |= kSyncCall;
      if (is_host_sync_op(n)) f |= kSyncOp;
      if (is_allocator_call(n)) f |= kAllocator;
      if (is_sync_copy_call(n)) f |= kSyncCopy;
      if (is_launch_call(n)) f |= kLaunch;
      if (is_dataloader_span(n)) f |= kDataLoader;
      if (profiler_step_number(n) >= 0) f |= kStepMarker;
      if (preprocessing_kind(n) != nullptr) f |= kPreprocessing;
      flags_[id] = f;
    }
    return flags_[id];
  }

 private:
  const TraceModel& model_;
  std::vector<std::uint8_t> flags_;
};

// A host span is a sync when it is a *Synchronize API call, a host-read op, or a copy call found
// to be a sync (`copy_syncs`, sorted).
bool is_sync_span(const TraceModel& m, NameFlags& flags, const std::vector<EventIndex>& copy_syncs, EventIndex e) {
  const EventKind k = m.kind[e];
  const std::uint8_t f = flags.of(m.name[e]);
  if (is_launch_api(k)) return (f & kSyncCall) != 0 || std::binary_search(copy_syncs.begin(), copy_syncs.end(), e);
  return k == EventKind::kCpuOp && (f & kSyncOp) != 0;
}

// (name, duration) pairs -> per-name count and time, time descending, at most `limit` rows.
std::vector<NamedTime> aggregate(const TraceModel& m, std::vector<std::pair<StrId, std::int64_t>> items,
                                 std::size_t limit) {
  std::sort(items.begin(), items.end());
  std::vector<std::pair<StrId, NamedTime>> groups;
  for (const auto& [id, ns] : items) {
    if (groups.empty() || groups.back().first != id) groups.push_back({id, NamedTime{}});
    ++groups.back().second.count;
    groups.back().second.total_ns += ns;
  }
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
    if (a.second.total_ns != b.second.total_ns) return a.second.total_ns > b.second.total_ns;
    return a.first < b.first;
  });
  std::vector<NamedTime> out;
  for (std::size_t i = 0; i < groups.size() && i < limit; ++i) {
    NamedTime t = groups[i].second;
    t.name = groups[i].first == kEmptyStr ? "(top level)" : std::string(m.strings.view(groups[i].first));
    out.push_back(std::move(t));
  }
  return out;
}

std::int64_t clipped_end(const TraceModel& m, EventIndex e) {
  return m.ts_ns[e] + std::max<std::int64_t>(0, m.dur_ns[e]);
}

}  // namespace

const char* host_regime_name(HostRegime r) {
  switch (r) {
    case HostRegime::kNoGpu: return "no_gpu";
    case HostRegime::kTooFew: return "too_few_kernels";
    case HostRegime::kGpuBound: return "gpu_bound";
    case HostRegime::kLaunchBound: return "launch_bound";
    case HostRegime::kCpuBound: return "cpu_bound";
    case HostRegime::kOther: return "other";
  }
  return "other";
}

bool is_host_sync_call(std::string_view name) {
  // cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize, cudaThreadSynchronize,
  // hip*Synchronize, cuStreamSynchronize, cuCtxSynchronize, cuEventSynchronize.
  return name.ends_with("Synchronize") &&
         (name.starts_with("cuda") || name.starts_with("hip") || name.starts_with("cu"));
}

bool is_host_sync_op(std::string_view name) { return name == "aten::item" || name == "aten::_local_scalar_dense"; }

bool is_host_read_op(std::string_view name) {
  return is_host_sync_op(name) || name == "aten::copy_" || name == "aten::_to_copy" || name == "aten::to" ||
         name == "aten::is_nonzero" || name == "aten::equal" || name == "aten::allclose" || name == "aten::tolist";
}

bool is_data_dependent_shape_op(std::string_view name) {
  static constexpr std::string_view kOps[] = {"aten::nonzero",
                                              "aten::nonzero_numpy",
                                              "aten::argwhere",
                                              "aten::masked_select",
                                              "aten::unique",
                                              "aten::_unique",
                                              "aten::_unique2",
                                              "aten::unique_dim",
                                              "aten::unique_consecutive",
                                              "aten::repeat_interleave",
                                              "aten::masked_scatter",
                                              "aten::index",
                                              "aten::index_put_",
                                              "aten::bincount",
                                              "aten::histc",
                                              "aten::where"};
  for (std::string_view op : kOps)
    if (name == op) return true;
  return false;
}

bool is_allocator_call(std::string_view name) {
  // The stream-ordered allocator (cudaMallocAsync / cudaFreeAsync) is cheap and never syncs.
  if (contains(name, "Async")) return false;
  static constexpr std::string_view kPrefixes[] = {
      "cudaMalloc",   "cudaFree",   "cudaHostAlloc", "hipMalloc",   "hipFree",      "hipHostMalloc", "hipHostFree",
      "hipExtMalloc", "cuMemAlloc", "cuMemFree",     "cuMemCreate", "cuMemRelease", "cuMemHostAlloc"};
  for (std::string_view p : kPrefixes)
    if (name.starts_with(p)) return true;
  return false;
}

bool is_sync_copy_call(std::string_view name) {
  if (contains(name, "Async")) return false;
  const bool api = name.starts_with("cuda") || name.starts_with("hip") || name.starts_with("cu");
  return api && (contains(name, "Memcpy") || contains(name, "Memset"));
}

bool is_launch_call(std::string_view name) {
  if (contains(name, "LaunchKernel") || contains(name, "LaunchCooperativeKernel") || contains(name, "GraphLaunch"))
    return true;
  return (contains(name, "Memcpy") || contains(name, "Memset")) && contains(name, "Async");
}

namespace {

// What the GPU pass hands on: the merged busy intervals, the pageable copies' launch calls, and the
// copy calls that are syncs.
struct GpuSide {
  std::vector<Interval> busy;
  std::vector<std::pair<EventIndex, bool>> pageable_launchers;  // (launch call, device-to-host), unique
  std::vector<EventIndex> copy_syncs;                           // sorted, unique
};

// A device-to-host copy whose call held the host far longer than the transfer: a sync.
void note_copy_sync(const TraceModel& model, std::size_t g, std::int64_t dur, GpuSide& side, HostBlockersResult& r) {
  const Relations& rel = model.relations;
  const EventIndex e = rel.gpu_events[g], launcher = rel.gpu_launcher[g];
  if (launcher == kNoEvent || !contains(model.name_of(e), "DtoH") || !contains(model.name_of(launcher), "Memcpy"))
    return;
  const CopyArgs* args = model.copy_args_of(e);
  const std::int64_t bytes = args != nullptr ? args->bytes : -1;
  const std::int64_t transfer =
      dur > 0 ? dur
              : static_cast<std::int64_t>(static_cast<double>(std::max<std::int64_t>(0, bytes)) / kCopyBytesPerNs);
  const std::int64_t host = std::max<std::int64_t>(0, model.dur_ns[launcher]);
  if (host - transfer < kSyncCopyMinWaitNs ||
      static_cast<double>(host) < kSyncCopyFactor * static_cast<double>(transfer))
    return;
  if (!side.copy_syncs.empty() && side.copy_syncs.back() == launcher) return;  // one call, several copies
  side.copy_syncs.push_back(launcher);
  HostSyncs& sy = r.syncs;
  ++sy.copy_syncs;
  if (bytes > 0) sy.copy_sync_bytes += bytes;
  sy.copy_sync_host_ns += host;
  sy.copy_sync_transfer_ns += transfer;
}

// A pageable copy: its bytes, and its launch call for the cost pass.
void count_pageable_copy(const TraceModel& model, std::size_t g, std::int64_t dur, std::size_t& copy_row,
                         std::vector<std::pair<StrId, std::int64_t>>& pageable, GpuSide& side, HostBlockersResult& r) {
  const Relations& rel = model.relations;
  const EventIndex e = rel.gpu_events[g];
  pageable.push_back({model.name[e], dur});
  ++r.copies.pageable_copies;
  r.copies.pageable_ns += dur;
  if (rel.gpu_launcher[g] != kNoEvent) {
    const std::string_view n = model.name_of(e);
    const bool to_host = contains(n, "DtoH") || contains(n, "-> Pageable");
    side.pageable_launchers.push_back({rel.gpu_launcher[g], to_host});
  }
  // Copy args are in event order, as GPU events are: walk them forward.
  while (copy_row < model.copy_args.size() && model.copy_args[copy_row].event < e) ++copy_row;
  if (copy_row < model.copy_args.size() && model.copy_args[copy_row].event == e && model.copy_args[copy_row].bytes > 0)
    r.copies.pageable_bytes += model.copy_args[copy_row].bytes;
}

// Pass 1, GPU side: kernels (durations for the median, short kernels), busy time, copies.
GpuSide scan_gpu_side(const TraceModel& model, const AnalysisContext& ctx, const TimeWindow& window, std::size_t top,
                      HostBlockersResult& r) {
  const Relations& rel = model.relations;
  GpuSide side;
  std::vector<std::int64_t> kernel_durations;
  std::vector<std::pair<StrId, std::int64_t>> pageable;
  std::size_t copy_row = 0;
  for (std::size_t g = 0; g < rel.gpu_events.size(); ++g) {
    const EventIndex e = rel.gpu_events[g];
    const EventKind k = model.kind[e];
    if (!ctx.counts_gpu_event(model, e) || !window.contains(model.ts_ns[e])) continue;
    if (k == EventKind::kSync) {
      ++r.syncs.gpu_side_waits;
      continue;
    }
    if (k != EventKind::kKernel && k != EventKind::kMemcpy && k != EventKind::kMemset) continue;
    const std::int64_t dur = std::max<std::int64_t>(0, model.dur_ns[e]);
    side.busy.push_back({std::max(model.ts_ns[e], window.start), std::min(model.ts_ns[e] + dur, window.end)});
    if (k == EventKind::kKernel) {
      kernel_durations.push_back(dur);
      const EventIndex launcher = rel.gpu_launcher[g];
      if (launcher != kNoEvent && dur < model.dur_ns[launcher]) ++r.launch.short_kernels;
    } else if (k == EventKind::kMemset) {
      ++r.copies.memsets;
      r.copies.memset_ns += dur;
    } else {
      if (contains(model.name_of(e), "Pageable")) count_pageable_copy(model, g, dur, copy_row, pageable, side, r);
      note_copy_sync(model, g, dur, side, r);
    }
  }
  std::sort(side.copy_syncs.begin(), side.copy_syncs.end());
  side.copy_syncs.erase(std::unique(side.copy_syncs.begin(), side.copy_syncs.end()), side.copy_syncs.end());
  merge_intervals(side.busy);
  r.has_gpu = !side.busy.empty() || !kernel_durations.empty();
  r.copies.pageable_by_name = aggregate(model, std::move(pageable), top);
  auto& launchers = side.pageable_launchers;
  std::sort(launchers.begin(), launchers.end());
  launchers.erase(
      std::unique(launchers.begin(), launchers.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
      launchers.end());
  LaunchRegime& lr = r.launch;
  lr.kernels = kernel_durations.size();
  lr.median_kernel_ns = stats::median_ns_in_place(kernel_durations);
  lr.gpu_busy_ns = total_length(side.busy);
  if (r.window_ns > 0) lr.gpu_busy_share = static_cast<double>(lr.gpu_busy_ns) / static_cast<double>(r.window_ns);
  return side;
}

using ThreadKey = std::pair<std::int32_t, std::int32_t>;  // (pid, tid)

// What the host pass hands on: sync spans to sort out, and per thread its launches and op time.
struct HostSide {
  std::vector<EventIndex> sync_candidates;
  std::map<ThreadKey, std::pair<std::uint64_t, std::int64_t>> per_thread;  // launches, top-level op time
};

// The allocator's steady state: every selected step but the trace's first.
void count_steady_steps(const TraceModel& model, const AnalysisContext& ctx, AllocatorCalls& al) {
  const std::vector<Step>& trace_steps = model.relations.steps;
  const std::int64_t first_trace_step = trace_steps.empty() ? -1 : trace_steps.front().number;
  for (const Step& s : ctx.steps)
    if (s.number != first_trace_step) {
      al.steady_state_known = true;
      ++al.steady_steps;
      al.steady_window_ns += s.end_ns - s.start_ns;
    }
}

// Pass 2, host side: one pass over the ops and runtime calls of the window.
HostSide scan_host_side(const TraceModel& model, const AnalysisContext& ctx, const TimeWindow& window, std::size_t top,
                        NameFlags& flags, const std::vector<EventIndex>& copy_syncs, HostBlockersResult& r) {
  const Relations& rel = model.relations;
  HostSide side;
  std::vector<std::pair<StrId, std::int64_t>> allocs, steady_allocs, sync_copies;
  const std::int64_t first_trace_step = rel.steps.empty() ? -1 : rel.steps.front().number;
  LaunchRegime& lr = r.launch;
  AllocatorCalls& al = r.allocator;
  count_steady_steps(model, ctx, al);
  for (std::size_t i = 0; i < model.size(); ++i) {
    const EventIndex e = static_cast<EventIndex>(i);
    const EventKind k = model.kind[e];
    if (model.phase[e] != 'X' || !(k == EventKind::kCpuOp || is_launch_api(k))) continue;
    const std::int64_t ts = model.ts_ns[e];
    if (!window.contains(ts)) continue;
    if (ctx.is_edge_wait(e)) continue;  // waits on work from outside the window: not this window's cost
    const std::int64_t dur = std::max<std::int64_t>(0, model.dur_ns[e]);
    const std::uint8_t f = flags.of(model.name[e]);
    const bool copy_sync = std::binary_search(copy_syncs.begin(), copy_syncs.end(), e);
    if (is_sync_span(model, flags, copy_syncs, e)) side.sync_candidates.push_back(e);
    if (k == EventKind::kCpuOp) {
      if (!(f & (kStepMarker | kDataLoader)) && rel.parent.size() > e &&
          (rel.parent[e] == kNoEvent || model.kind[rel.parent[e]] != EventKind::kCpuOp))
        side.per_thread[{model.pid[e], model.tid[e]}].second += dur;  // top-level op time per thread
      continue;
    }
    if ((f & kLaunch) && !copy_sync) {  // a copy that waited for the GPU is a sync, not launch overhead
      ++lr.launch_calls;
      lr.launch_call_ns += dur;
      ++side.per_thread[{model.pid[e], model.tid[e]}].first;
    }
    if (f & kAllocator) {
      allocs.push_back({model.name[e], dur});
      ++al.count;
      al.total_ns += dur;
      const int s = step_index_at(ctx.steps, ts);
      if (s >= 0 && ctx.steps[static_cast<std::size_t>(s)].number != first_trace_step) {
        ++al.steady_count;
        al.steady_ns += dur;
        steady_allocs.push_back({model.name[e], dur});
      }
    }
    if ((f & kSyncCopy) && copy_sync) {
      ++r.copies.sync_copy_waits;  // reported as the sync it is
    } else if (f & kSyncCopy) {
      sync_copies.push_back({model.name[e], dur});
      ++r.copies.sync_copy_calls;
      r.copies.sync_copy_ns += dur;
    }
  }
  al.by_name = aggregate(model, al.steady_state_known ? std::move(steady_allocs) : std::move(allocs), top);
  r.copies.sync_copy_by_name = aggregate(model, std::move(sync_copies), top);
  if (r.window_ns > 0)
    lr.launch_overhead_share = static_cast<double>(lr.launch_call_ns) / static_cast<double>(r.window_ns);
  return side;
}

// What a blocking call costs the GPU: the bubble from its return to the next GPU activity (zero
// while another stream keeps the GPU busy; never past the end of its step or the window), at most
// the call's own duration (the head start the host would have had without it).
std::int64_t stall_after(const TraceModel& model, const AnalysisContext& ctx, const TimeWindow& window,
                         const std::vector<Interval>& busy, EventIndex e) {
  const std::int64_t t = clipped_end(model, e);
  const int s = step_index_at(ctx.steps, model.ts_ns[e]);
  const std::int64_t cap = s >= 0 ? ctx.steps[static_cast<std::size_t>(s)].end_ns : window.end;
  auto it = std::lower_bound(busy.begin(), busy.end(), t, [](const Interval& i, std::int64_t x) { return i.end <= x; });
  std::int64_t bubble = 0;
  if (it != busy.end() && it->start > t)
    bubble = std::min(it->start, cap) - t;
  else if (it == busy.end() && !busy.empty())
    bubble = cap - t;
  return std::clamp<std::int64_t>(bubble, 0, std::max<std::int64_t>(0, model.dur_ns[e]));
}

// Sync candidates not nested in another sync by the nesting relations, each with its caller (the
// innermost op, annotation or Python frame around it that is no step marker), sorted by thread
// and time, the outer one first.
std::vector<std::pair<EventIndex, StrId>> unnested_syncs(const TraceModel& model, NameFlags& flags,
                                                         const std::vector<EventIndex>& copy_syncs,
                                                         const std::vector<EventIndex>& sync_candidates) {
  const Relations& rel = model.relations;
  std::vector<std::pair<EventIndex, StrId>> outer;  // (sync, caller)
  for (EventIndex e : sync_candidates) {
    bool nested = false;
    StrId caller = kEmptyStr;
    for (EventIndex p = rel.parent.empty() ? kNoEvent : rel.parent[e]; p != kNoEvent; p = rel.parent[p]) {
      if (is_sync_span(model, flags, copy_syncs, p)) {
        nested = true;
        break;
      }
      const EventKind pk = model.kind[p];
      // A built-in's frame ("<built-in method item of Tensor object at 0x...>") is the call
      // itself, not its caller: the Python frame around it is.
      const bool builtin = pk == EventKind::kPythonFunction && model.name_of(p).starts_with("<built-in");
      if (caller == kEmptyStr && !builtin && !(flags.of(model.name[p]) & kStepMarker) &&
          (pk == EventKind::kCpuOp || pk == EventKind::kUserAnnotation || pk == EventKind::kPythonFunction))
        caller = model.name[p];
    }
    if (!nested) outer.push_back({e, caller});
  }
  std::sort(outer.begin(), outer.end(), [&](const auto& a, const auto& b) {
    const EventIndex x = a.first, y = b.first;
    return std::make_tuple(model.pid[x], model.tid[x], model.ts_ns[x], -model.dur_ns[x], x) <
           std::make_tuple(model.pid[y], model.tid[y], model.ts_ns[y], -model.dur_ns[y], y);
  });
  return outer;
}

// Pass 3, syncs: the outermost ones, their callers, steps, and the GPU bubble after each. Returns
// the outermost syncs.
//
// Outermost first by the nesting relations; then by closed containment on the same thread, because
// integer-microsecond traces (the legacy export) record aten::item and the _local_scalar_dense
// inside it with equal or touching zero-length spans that nesting, on half-open intervals, cannot
// put one inside the other.
std::vector<EventIndex> count_outer_syncs(const TraceModel& model, const AnalysisContext& ctx, std::size_t top,
                                          NameFlags& flags, const std::vector<EventIndex>& copy_syncs,
                                          const std::vector<EventIndex>& sync_candidates, HostBlockersResult& r) {
  HostSyncs& sy = r.syncs;
  std::vector<std::pair<StrId, std::int64_t>> sync_names, sync_callers;
  std::array<std::vector<std::pair<StrId, std::int64_t>>, 4> kind_where;  // reads, data-dependent, in ops, explicit
  std::array<HostSyncs::Kind*, 4> kinds = {&sy.reads, &sy.data_dependent, &sy.inside_ops, &sy.explicit_calls};
  std::vector<EventIndex> outer_syncs;
  if (!ctx.steps.empty()) {
    sy.per_step.resize(ctx.steps.size());
    for (std::size_t i = 0; i < ctx.steps.size(); ++i) sy.per_step[i].step = ctx.steps[i].number;
  }
  EventIndex kept = kNoEvent;
  LongestIntervals sites;
  for (const auto& [e, caller] : unnested_syncs(model, flags, copy_syncs, sync_candidates)) {
    if (kept != kNoEvent && model.pid[e] == model.pid[kept] && model.tid[e] == model.tid[kept]) {
      // Whole-microsecond timestamps are truncated: the inner call can appear to start up to 1 us
      // after the outer one "ended" (aten::item at 5399 us for 0 us, _local_scalar_dense at 5400).
      const bool whole_us = model.ts_ns[kept] % 1000 == 0 && model.dur_ns[kept] % 1000 == 0;
      const std::int64_t slack = whole_us && model.name[e] != model.name[kept] ? 1000 : 0;
      const std::int64_t kept_end = clipped_end(model, kept) + slack;
      if (model.ts_ns[e] <= kept_end && clipped_end(model, e) <= kept_end) continue;
    }
    kept = e;
    outer_syncs.push_back(e);
    const std::int64_t dur = std::max<std::int64_t>(0, model.dur_ns[e]);
    ++sy.count;
    sy.total_ns += dur;
    sites.offer({model.ts_ns[e], model.ts_ns[e] + dur});
    sync_names.push_back({model.name[e], dur});
    sync_callers.push_back({caller, dur});
    const std::string_view sync_name = model.name_of(e);
    const std::string_view caller_name = model.strings.view(caller);
    const bool caller_is_op = caller != kEmptyStr && caller_name.find("::") != std::string_view::npos &&
                              caller_name.find(".py(") == std::string_view::npos;
    // item, a blocking copy, or a stream sync inside a copy to the host or a truth test.
    const bool read = is_host_sync_op(sync_name) || !sync_name.ends_with("Synchronize") ||
                      (caller_is_op && is_host_read_op(caller_name));
    const std::size_t kind = read                                                      ? 0
                             : caller_is_op && is_data_dependent_shape_op(caller_name) ? 1
                             : caller_is_op                                            ? 2
                                                                                       : 3;
    ++kinds[kind]->count;
    kinds[kind]->total_ns += dur;
    kind_where[kind].push_back({kind == 3 && caller == kEmptyStr ? model.name[e] : caller, dur});
    const int s = step_index_at(ctx.steps, model.ts_ns[e]);
    if (s >= 0) {
      ++sy.per_step[static_cast<std::size_t>(s)].count;
      sy.per_step[static_cast<std::size_t>(s)].total_ns += dur;
    }
  }
  for (const StepCount& sc : sy.per_step)
    if (sc.count > 0) ++sy.steps_with_syncs;
  sy.sites = sites.take();
  sy.by_name = aggregate(model, std::move(sync_names), top);
  sy.callers = aggregate(model, std::move(sync_callers), top);
  for (std::size_t k = 0; k < kinds.size(); ++k) kinds[k]->where = aggregate(model, std::move(kind_where[k]), 3);
  return outer_syncs;
}

// Pass 4, pageable copies: host-to-device ones cost the host the staging (the call's duration); a
// device-to-host one waits for the GPU like a sync, so it costs the bubble after it. Copies inside
// a sync span (aten::item reads its scalar with one) belong to that sync.
void cost_pageable_copies(const TraceModel& model, const AnalysisContext& ctx, const TimeWindow& window,
                          NameFlags& flags, const GpuSide& gpu, HostBlockersResult& r) {
  const Relations& rel = model.relations;
  for (const auto& [launcher, to_host] : gpu.pageable_launchers) {
    const std::int64_t dur = std::max<std::int64_t>(0, model.dur_ns[launcher]);
    r.copies.pageable_host_ns += dur;
    bool in_sync = false;
    in_sync = std::binary_search(gpu.copy_syncs.begin(), gpu.copy_syncs.end(), launcher);
    for (EventIndex p = rel.parent.empty() ? kNoEvent : rel.parent[launcher]; p != kNoEvent && !in_sync;
         p = rel.parent[p])
      in_sync = is_sync_span(model, flags, gpu.copy_syncs, p);
    if (in_sync) {
      ++r.copies.pageable_in_syncs;
      continue;
    }
    r.copies.pageable_cost_ns += to_host ? stall_after(model, ctx, window, gpu.busy, launcher) : dur;
  }
}

// The thread that launches the most (then runs the most top-level op time); without a GPU, the
// one with the most op time.
ThreadKey main_thread_of(const HostSide& host, bool has_gpu) {
  ThreadKey main_thread{0, 0};
  std::uint64_t best_launches = 0;
  std::int64_t best_op_ns = -1;
  for (const auto& [thread, counts] : host.per_thread) {
    const bool better = has_gpu ? std::tie(counts.first, counts.second) > std::tie(best_launches, best_op_ns)
                                : counts.second > best_op_ns;
    if (better) {
      best_launches = counts.first;
      best_op_ns = counts.second;
      main_thread = thread;
    }
  }
  return main_thread;
}

// The main thread's spans by class, clipped to the window and merged.
struct MainThreadSpans {
  std::vector<Interval> ops, launches, blocking, loading, syncs, preprocessing;
  std::int64_t launch_ns = 0;  // in launch calls, before merging
};

MainThreadSpans main_thread_spans(const TraceModel& model, const TimeWindow& window, NameFlags& flags, ThreadKey thread,
                                  const std::vector<EventIndex>& copy_syncs,
                                  const std::vector<EventIndex>& outer_syncs) {
  MainThreadSpans m;
  for (std::size_t i = 0; i < model.size(); ++i) {
    const EventIndex e = static_cast<EventIndex>(i);
    if (model.phase[e] != 'X' || model.pid[e] != thread.first || model.tid[e] != thread.second) continue;
    const EventKind k = model.kind[e];
    if (!is_host_span(k)) continue;
    const std::int64_t s = std::max(model.ts_ns[e], window.start), end = std::min(clipped_end(model, e), window.end);
    if (s >= end) continue;
    const std::uint8_t f = flags.of(model.name[e]);
    // Python frames and user annotations are left out: the outermost ones ("<module>", a
    // "train_step" range) enclose everything and would make any thread look busy. Frames of host
    // preprocessing (tokenisers, decoding, resizing) are a state of their own.
    if (f & kDataLoader) {
      m.loading.push_back({s, end});
    } else if (k == EventKind::kPythonFunction) {
      if (f & kPreprocessing) m.preprocessing.push_back({s, end});
    } else if (is_launch_api(k)) {
      if (std::binary_search(copy_syncs.begin(), copy_syncs.end(), e)) {
        // a copy that waited for the GPU: among the syncs below
      } else if (f & (kAllocator | kSyncCopy)) {
        m.blocking.push_back({s, end});
      } else if (f & kLaunch) {
        m.launches.push_back({s, end});
        m.launch_ns += end - s;
      } else {
        m.ops.push_back({s, end});
      }
    } else if (k == EventKind::kCpuOp && !(f & kStepMarker)) {
      m.ops.push_back({s, end});
    }
  }
  for (EventIndex e : outer_syncs)
    if (model.pid[e] == thread.first && model.tid[e] == thread.second)
      m.syncs.push_back({std::max(model.ts_ns[e], window.start), std::min(clipped_end(model, e), window.end)});
  for (auto* v : {&m.ops, &m.launches, &m.blocking, &m.loading, &m.syncs, &m.preprocessing}) merge_intervals(*v);
  return m;
}

// What the syncs cost the GPU (HostSyncs::gpu_stall_ns): after each sync returns, as long again as
// it lasted, not past the window nor past the start of the window's last GPU work - idle after
// which nothing is launched is not the sync's doing - less the time the launching thread loads
// data; merged.
std::vector<Interval> after_syncs(const TraceModel& model, const TimeWindow& window, const std::vector<Interval>& busy,
                                  const std::vector<EventIndex>& outer_syncs, const std::vector<Interval>& loading) {
  std::vector<Interval> after;
  if (busy.empty()) return after;
  for (EventIndex e : outer_syncs) {
    const std::int64_t end = std::max(clipped_end(model, e), window.start);
    const std::int64_t horizon =
        std::min({end + std::max<std::int64_t>(0, model.dur_ns[e]), window.end, busy.back().start});
    if (horizon > end) after.push_back({end, horizon});
  }
  merge_intervals(after);
  return subtract(after, loading);
}

// The op stack above each copy that is a sync ("aten::to > aten::_to_copy > aten::copy_ >
// cudaMemcpyAsync"), by host time, at most `top` rows.
std::vector<NamedTime> copy_sync_stacks(const TraceModel& model, NameFlags& flags,
                                        const std::vector<EventIndex>& copy_syncs, std::size_t top) {
  const Relations& rel = model.relations;
  std::map<std::string, NamedTime> by_stack;
  for (EventIndex e : copy_syncs) {
    std::string stack(model.name_of(e));
    for (EventIndex p = rel.parent.empty() ? kNoEvent : rel.parent[e]; p != kNoEvent; p = rel.parent[p])
      if (model.kind[p] == EventKind::kCpuOp && !(flags.of(model.name[p]) & kStepMarker))
        stack = std::string(model.name_of(p)) + " > " + stack;
    NamedTime& t = by_stack[stack];
    t.name = stack;
    ++t.count;
    t.total_ns += std::max<std::int64_t>(0, model.dur_ns[e]);
  }
  std::vector<NamedTime> rows;
  for (auto& [stack, t] : by_stack) rows.push_back(std::move(t));
  std::stable_sort(rows.begin(), rows.end(),
                   [](const NamedTime& a, const NamedTime& b) { return a.total_ns > b.total_ns; });
  if (rows.size() > top) rows.resize(top);
  return rows;
}

// Pass 5: the main thread's busy share outside data loading and syncs, and the GPU's idle time
// peeled off state by state, in priority order.
void measure_main_thread(const TraceModel& model, const TimeWindow& window, NameFlags& flags, const HostSide& host,
                         const GpuSide& gpu, const std::vector<EventIndex>& outer_syncs, HostBlockersResult& r) {
  LaunchRegime& lr = r.launch;
  const ThreadKey main_thread = main_thread_of(host, r.has_gpu);
  lr.main_pid = main_thread.first;
  lr.main_tid = main_thread.second;
  if (r.window_ns <= 0) return;
  const MainThreadSpans m = main_thread_spans(model, window, flags, main_thread, gpu.copy_syncs, outer_syncs);
  std::vector<Interval> idle = subtract({{window.start, window.end}}, gpu.busy);
  const std::vector<Interval> stalls = after_syncs(model, window, gpu.busy, outer_syncs, m.loading);
  if (r.has_gpu) r.syncs.gpu_stall_ns = total_length(intersect(stalls, idle));
  if (host.per_thread.empty()) return;

  std::vector<Interval> not_issuing = m.syncs;
  not_issuing.insert(not_issuing.end(), m.loading.begin(), m.loading.end());
  not_issuing.insert(not_issuing.end(), m.preprocessing.begin(), m.preprocessing.end());
  not_issuing.insert(not_issuing.end(), m.blocking.begin(), m.blocking.end());
  merge_intervals(not_issuing);
  std::vector<Interval> issuing = m.launches;
  issuing.insert(issuing.end(), m.ops.begin(), m.ops.end());
  merge_intervals(issuing);
  const std::int64_t busy_ns = total_length(subtract(issuing, not_issuing));
  lr.host_busy_share = static_cast<double>(busy_ns) / static_cast<double>(r.window_ns);
  if (busy_ns > 0) lr.launch_share_of_host = static_cast<double>(m.launch_ns) / static_cast<double>(busy_ns);
  if (!r.has_gpu) return;

  IdleAttribution& at = lr.idle;
  at.gpu_idle_ns = total_length(idle);
  std::vector<Interval> syncing = m.syncs;  // the syncs and the GPU idle they cause
  syncing.insert(syncing.end(), stalls.begin(), stalls.end());
  merge_intervals(syncing);
  std::int64_t* shares[] = {&at.sync_ns,         &at.dataloader_ns, &at.preprocessing_ns,
                            &at.blocking_api_ns, &at.launch_ns,     &at.op_ns};
  const std::vector<Interval>* states[] = {&syncing, &m.loading, &m.preprocessing, &m.blocking, &m.launches, &m.ops};
  for (int i = 0; i < 6; ++i) {
    *shares[i] = total_length(intersect(idle, *states[i]));
    idle = subtract(idle, *states[i]);
  }
  at.other_ns = total_length(idle);
}

// The regime. A busy GPU needs nothing from the host; a starved one is launch- or CPU-bound only
// when the host was issuing work through most of the GPU's idle time.
HostRegime classify_regime(const HostBlockersResult& r) {
  const LaunchRegime& lr = r.launch;
  const IdleAttribution& at = lr.idle;
  const bool host_issuing = at.gpu_idle_ns > 0 && static_cast<double>(at.issuing_ns()) >=
                                                      kHostIssueIdleShare * static_cast<double>(at.gpu_idle_ns);
  if (!r.has_gpu) return HostRegime::kNoGpu;
  if (lr.kernels < kRegimeMinKernels) return HostRegime::kTooFew;
  if (lr.gpu_busy_share >= kGpuStarvedBusyShare) return HostRegime::kGpuBound;
  if (!host_issuing) return HostRegime::kOther;
  if (lr.median_kernel_ns < kLaunchBoundMedianKernelNs && lr.launch_overhead_share >= kLaunchOverheadModerate)
    return HostRegime::kLaunchBound;
  return HostRegime::kCpuBound;
}

}  // namespace

HostBlockersResult analyze_host_blockers(const TraceModel& model, const AnalysisContext& ctx) {
  HostBlockersResult r;
  const TimeWindow window = ctx.window();
  r.window_ns = ctx.window_ns();
  const std::size_t top = static_cast<std::size_t>(std::max(0, ctx.options.top_k));
  NameFlags flags(model);

  const GpuSide gpu = scan_gpu_side(model, ctx, window, top, r);
  const HostSide host = scan_host_side(model, ctx, window, top, flags, gpu.copy_syncs, r);
  const std::vector<EventIndex> outer_syncs =
      count_outer_syncs(model, ctx, top, flags, gpu.copy_syncs, host.sync_candidates, r);
  r.syncs.copy_sync_stacks = copy_sync_stacks(model, flags, gpu.copy_syncs, top);
  cost_pageable_copies(model, ctx, window, flags, gpu, r);
  measure_main_thread(model, window, flags, host, gpu, outer_syncs, r);
  r.launch.regime = classify_regime(r);
  return r;
}

}  // namespace ferret
