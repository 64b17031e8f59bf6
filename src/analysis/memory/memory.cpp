#include "analysis/memory/memory.h"

#include <algorithm>
#include <tuple>

#include "model/gpu_specs.h"

namespace ferret {

namespace {

constexpr int kDeviceTypeCpu = 0;
constexpr int kDeviceTypeCuda = 1;

struct MemRow {
  std::int8_t device_type;
  std::int16_t device_id;
  std::int64_t ts;
  EventIndex event;
  std::int64_t bytes;
  std::int64_t total_allocated;
  std::int64_t total_reserved;
};

// Accelerator memory: c10::DeviceType 1 (CUDA; most ROCm builds too), 6 (HIP, as some ROCm builds
// report it), and any other non-CPU type.
bool is_device_memory(int device_type) { return device_type > kDeviceTypeCpu; }

// Ops whose whole job is to allocate: an allocation inside them belongs to the op that called
// them (aten::empty inside aten::mm is aten::mm's output), so attribution looks one level out.
bool is_allocation_primitive(std::string_view name) {
  return name == "aten::empty" || name == "aten::empty_strided" || name == "aten::empty_like" ||
         name == "aten::new_empty" || name == "aten::new_empty_strided" || name == "aten::resize_";
}

// Allocator runtime calls: 1 cudaMalloc-like, 2 cudaFree-like (synchronizes the device), 0 other.
int allocator_call_kind(std::string_view name) {
  if (name == "cudaMalloc" || name == "hipMalloc" || name == "cuMemAlloc_v2" || name == "cuMemAlloc") return 1;
  if (name == "cudaFree" || name == "hipFree" || name == "cuMemFree_v2" || name == "cuMemFree") return 2;
  return 0;
}

// Peak-preserving downsampling of the totals of rows [begin, end) (one device, in time order).
MemoryCurve memory_curve(const std::vector<MemRow>& rows, std::size_t begin, std::size_t end, int most_buckets) {
  MemoryCurve c;
  std::size_t first = end, last = begin;
  for (std::size_t i = begin; i < end; ++i)
    if (rows[i].total_allocated >= 0 && rows[i].total_reserved >= 0) first = std::min(first, i), last = i;
  if (first == end) return c;
  const std::int64_t t0 = rows[first].ts, t1 = rows[last].ts;
  const int buckets = t1 > t0 ? most_buckets : 1;
  c.start_ns = t0;
  c.bucket_ns = std::max<std::int64_t>(1, (t1 - t0 + buckets) / buckets);
  c.allocated.assign(static_cast<std::size_t>(buckets), -1);
  c.reserved.assign(static_cast<std::size_t>(buckets), -1);
  std::int64_t carried_allocated = -1, carried_reserved = -1;
  int filled = -1;  // the last bucket written
  for (std::size_t i = first; i <= last; ++i) {
    const MemRow& r = rows[i];
    if (r.total_allocated < 0 || r.total_reserved < 0) continue;
    const int k = std::min(buckets - 1, static_cast<int>((r.ts - t0) / c.bucket_ns));
    for (int g = filled + 1; g < k; ++g) {  // buckets without events keep the state before them
      c.allocated[static_cast<std::size_t>(g)] = carried_allocated;
      c.reserved[static_cast<std::size_t>(g)] = carried_reserved;
    }
    if (k > filled) {
      c.allocated[static_cast<std::size_t>(k)] = carried_allocated;  // the state entering the bucket
      c.reserved[static_cast<std::size_t>(k)] = carried_reserved;
    }
    std::int64_t& a = c.allocated[static_cast<std::size_t>(k)];
    std::int64_t& rs = c.reserved[static_cast<std::size_t>(k)];
    a = std::max(a, r.total_allocated);
    rs = std::max(rs, r.total_reserved);
    filled = std::max(filled, k);
    carried_allocated = r.total_allocated;
    carried_reserved = r.total_reserved;
  }
  return c;
}

void measure_device(const std::vector<MemRow>& rows, std::size_t begin, std::size_t end, const DeviceIndex& properties,
                    const AnalysisContext& ctx, MemoryResult& result) {
  MemoryDevice d;
  d.device_type = rows[begin].device_type;
  d.device_id = rows[begin].device_id;
  if (is_device_memory(d.device_type)) {
    if (const DeviceProperties* p = properties.find(d.device_id)) {
      d.device_name = p->name;
      d.capacity_bytes = p->total_global_mem > 0 ? p->total_global_mem : -1;
    }
  }
  std::int64_t running = 0;
  double weighted_frag = 0, frag_weight = 0, frag_sum = 0;
  std::uint64_t frag_count = 0;
  for (std::size_t i = begin; i < end; ++i) {
    const MemRow& r = rows[i];
    ++d.events;
    if (r.bytes > 0) {
      ++d.allocations;
      d.allocated_bytes += r.bytes;
    } else if (r.bytes < 0) {
      ++d.frees;
      d.freed_bytes -= r.bytes;
    }
    running += r.bytes;
    d.peak_net_bytes = std::max(d.peak_net_bytes, running);
    const int step = step_index_at(ctx.steps, r.ts);
    MemoryStepChurn* churn = step >= 0 ? &result.steps[static_cast<std::size_t>(step)] : nullptr;
    if (churn != nullptr) {
      if (is_device_memory(d.device_type)) {
        if (r.bytes > 0) ++churn->allocations, churn->allocated_bytes += r.bytes;
        if (r.bytes < 0) ++churn->frees, churn->freed_bytes -= r.bytes;
      } else if (d.device_type == kDeviceTypeCpu && r.bytes > 0) {
        ++churn->cpu_allocations;
        churn->cpu_allocated_bytes += r.bytes;
      }
    }
    if (r.total_allocated < 0 || r.total_reserved < 0) continue;
    d.has_totals = true;
    if (r.total_allocated > d.peak_allocated) {
      d.peak_allocated = r.total_allocated;
      d.peak_allocated_ns = r.ts;
    }
    if (r.total_reserved > d.peak_reserved) {
      d.peak_reserved = r.total_reserved;
      d.peak_reserved_ns = r.ts;
      d.allocated_at_peak_reserved = r.total_allocated;
    } else if (r.total_reserved == d.peak_reserved) {
      d.allocated_at_peak_reserved = std::max(d.allocated_at_peak_reserved, r.total_allocated);
    }
    if (i > begin && rows[i - 1].total_reserved >= 0 && r.total_reserved != rows[i - 1].total_reserved) {
      const bool grow = r.total_reserved > rows[i - 1].total_reserved;
      ++(grow ? d.reserved_grows : d.reserved_shrinks);
      if (churn != nullptr && is_device_memory(d.device_type))
        ++(grow ? churn->reserved_grows : churn->reserved_shrinks);
    }
    if (r.total_reserved > 0) {
      const double frag = static_cast<double>(std::max<std::int64_t>(0, r.total_reserved - r.total_allocated)) /
                          static_cast<double>(r.total_reserved);
      d.fragmentation_max = std::max(d.fragmentation_max, frag);
      frag_sum += frag;
      ++frag_count;
      // The state after this event holds until the device's next event.
      if (i + 1 < end) {
        const double w = static_cast<double>(rows[i + 1].ts - r.ts);
        weighted_frag += frag * w;
        frag_weight += w;
      }
    }
  }
  const int curve_buckets = ctx.options.series_buckets > 0 ? ctx.options.series_buckets : kMemoryCurveBuckets;
  if (d.has_totals) d.curve = memory_curve(rows, begin, end, curve_buckets);
  if (frag_weight > 0)
    d.fragmentation_mean = weighted_frag / frag_weight;
  else if (frag_count > 0)
    d.fragmentation_mean = frag_sum / static_cast<double>(frag_count);
  if (d.peak_reserved > 0)
    d.fragmentation_at_peak =
        static_cast<double>(std::max<std::int64_t>(0, d.peak_reserved - d.allocated_at_peak_reserved)) /
        static_cast<double>(d.peak_reserved);
  if (d.capacity_bytes > 0) {
    if (d.peak_allocated >= 0)
      d.peak_allocated_share = static_cast<double>(d.peak_allocated) / static_cast<double>(d.capacity_bytes);
    if (d.peak_reserved >= 0)
      d.peak_reserved_share = static_cast<double>(d.peak_reserved) / static_cast<double>(d.capacity_bytes);
  }
  result.devices.push_back(std::move(d));
}

// Which operator allocates: the innermost cpu_op on the allocating thread whose span contains
// the [memory] instant (instants have no place in the span nesting, so it is found here). Ops
// and allocations are each sorted once by (thread, time) and swept together with a stack of
// open ops, so the cost is two sorts, not a search per allocation. Only threads that allocate
// contribute ops, counted first so the array is allocated once at its final size.
void attribute_to_ops(const TraceModel& model, const std::vector<MemRow>& rows, const AnalysisContext& ctx,
                      MemoryResult& result) {
  using Thread = std::pair<std::int32_t, std::int32_t>;
  std::vector<Thread> threads;
  for (const MemRow& r : rows)
    if (is_device_memory(r.device_type) && r.bytes > 0) threads.emplace_back(model.pid[r.event], model.tid[r.event]);
  if (threads.empty()) return;
  std::sort(threads.begin(), threads.end());
  threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
  auto thread_index = [&](Thread t) -> std::uint32_t {
    const auto it = std::lower_bound(threads.begin(), threads.end(), t);
    return (it != threads.end() && *it == t) ? static_cast<std::uint32_t>(it - threads.begin()) : UINT32_MAX;
  };

  struct Probe {
    std::uint32_t thread;
    std::int64_t ts;
    std::int64_t bytes;
  };
  std::vector<Probe> probes;
  for (const MemRow& r : rows)
    if (is_device_memory(r.device_type) && r.bytes > 0)
      probes.push_back({thread_index({model.pid[r.event], model.tid[r.event]}), r.ts, r.bytes});
  auto probe_less = [](const Probe& a, const Probe& b) { return std::tie(a.thread, a.ts) < std::tie(b.thread, b.ts); };
  if (!std::is_sorted(probes.begin(), probes.end(), probe_less)) std::sort(probes.begin(), probes.end(), probe_less);

  struct Op {
    std::uint32_t thread;
    StrId name;
    std::int64_t ts, end;
  };
  // Per event, the thread's index (UINT32_MAX: not wanted); threads change rarely between
  // consecutive cpu ops, so the search runs on changes only.
  std::size_t wanted_ops = 0;
  std::vector<Op> ops;
  for (int pass = 0; pass < 2; ++pass) {
    Thread last{0, 0};
    std::uint32_t last_index = UINT32_MAX;
    bool have_last = false;
    for (std::size_t e = 0; e < model.size(); ++e) {
      if (model.kind[e] != EventKind::kCpuOp || model.phase[e] != 'X') continue;
      const Thread thread{model.pid[e], model.tid[e]};
      if (!have_last || thread != last) {
        last_index = thread_index(thread);
        last = thread;
        have_last = true;
      }
      if (last_index == UINT32_MAX) continue;
      if (pass == 0) {
        ++wanted_ops;
        continue;
      }
      const std::int64_t ts = model.ts_ns[e];
      ops.push_back({last_index, model.name[e], ts, ts + model.dur_ns[e]});
    }
    if (pass == 0) ops.reserve(wanted_ops);
  }
  // Longer first on equal start: the enclosing op is pushed before its child.
  auto op_less = [](const Op& a, const Op& b) {
    return std::tie(a.thread, a.ts, b.end) < std::tie(b.thread, b.ts, a.end);
  };
  if (!std::is_sorted(ops.begin(), ops.end(), op_less)) std::sort(ops.begin(), ops.end(), op_less);

  std::vector<std::pair<StrId, std::int64_t>> owned;  // (op name, bytes) per attributed allocation
  owned.reserve(probes.size());
  std::vector<std::size_t> stack;
  std::size_t next_op = 0;
  std::uint32_t current = UINT32_MAX;
  for (const Probe& p : probes) {
    if (p.thread != current) {
      stack.clear();
      current = p.thread;
      while (next_op < ops.size() && ops[next_op].thread < current) ++next_op;
    }
    while (next_op < ops.size() && ops[next_op].thread == current && ops[next_op].ts <= p.ts) {
      while (!stack.empty() && ops[stack.back()].end <= ops[next_op].ts) stack.pop_back();
      stack.push_back(next_op++);
    }
    while (!stack.empty() && ops[stack.back()].end <= p.ts) stack.pop_back();
    if (stack.empty()) {
      ++result.allocations_without_op;
      continue;
    }
    // Innermost op that is not a bare allocation primitive; the primitive itself if that is all.
    std::size_t chosen = stack.back();
    for (std::size_t k = stack.size(); k-- > 0;) {
      const Op& o = ops[stack[k]];
      if (o.end <= p.ts) continue;  // an ancestor that ended before a late child: not containing
      if (!is_allocation_primitive(model.strings.view(o.name))) {
        chosen = stack[k];
        break;
      }
    }
    owned.emplace_back(ops[chosen].name, p.bytes);
  }
  std::sort(owned.begin(), owned.end());
  std::vector<MemoryOp> by_op;
  for (std::size_t i = 0; i < owned.size();) {
    MemoryOp row;
    row.name = std::string(model.strings.view(owned[i].first));
    std::size_t j = i;
    for (; j < owned.size() && owned[j].first == owned[i].first; ++j) {
      ++row.allocations;
      row.bytes += owned[j].second;
      row.largest = std::max(row.largest, owned[j].second);
    }
    by_op.push_back(std::move(row));
    i = j;
  }
  std::sort(by_op.begin(), by_op.end(), [](const MemoryOp& a, const MemoryOp& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.name < b.name;
  });
  const auto keep = static_cast<std::size_t>(std::max(0, ctx.options.top_k));
  if (by_op.size() > keep) by_op.resize(keep);
  result.top_ops = std::move(by_op);
}

void measure_allocator_calls(const TraceModel& model, const AnalysisContext& ctx, MemoryResult& result) {
  // Classify each distinct name once (names are interned), not each event.
  std::vector<std::int8_t> kind_of_name(model.strings.size(), -1);
  for (std::size_t e = 0; e < model.size(); ++e) {
    const EventKind k = model.kind[e];
    if (k != EventKind::kCudaRuntime && k != EventKind::kCudaDriver) continue;
    const StrId name = model.name[e];
    if (kind_of_name[name] < 0)
      kind_of_name[name] = static_cast<std::int8_t>(allocator_call_kind(model.strings.view(name)));
    if (kind_of_name[name] == 0) continue;
    const std::int64_t ts = model.ts_ns[e];
    if (ts < ctx.window_start_ns || ts >= ctx.window_end_ns) continue;
    ++result.allocator_calls;
    result.allocator_call_ns += model.dur_ns[e];
    if (kind_of_name[name] == 2) ++result.allocator_free_calls;
  }
}

}  // namespace

MemoryResult analyze_memory(const TraceModel& model, const AnalysisContext& ctx) {
  MemoryResult result;
  result.window_ns = ctx.window_ns();
  // A peak is a peak whenever it happened in the profiled range; only an explicit selection
  // (--steps, --window, --time) narrows peaks to the selected window.
  result.whole_trace = !ctx.options.first_step && !ctx.options.last_step && ctx.options.window_name.empty() &&
                       !ctx.options.time_from_ms && !ctx.options.time_to_ms;
  for (const Step& s : ctx.steps) {
    MemoryStepChurn churn;
    churn.step = s.number;
    churn.duration_ns = s.end_ns - s.start_ns;
    result.steps.push_back(churn);
  }

  std::vector<MemRow> rows;
  rows.reserve(model.memory_args.size());
  for (const MemoryArgs& m : model.memory_args) {
    const std::int64_t ts = model.ts_ns[m.event];
    if (!result.whole_trace && (ts < ctx.window_start_ns || ts >= ctx.window_end_ns)) continue;
    if (is_device_memory(m.device_type) && !ctx.device_selected(m.device_id)) continue;
    rows.push_back({m.device_type, m.device_id, ts, m.event, m.bytes, m.total_allocated, m.total_reserved});
  }
  measure_allocator_calls(model, ctx, result);
  if (rows.empty()) return result;
  result.present = true;

  // CUDA devices first, then other accelerators, then CPU; each device's events in time order
  // (file order breaks ties, since the allocator's running totals were written in that order).
  // Devices are few: bucket the rows by device keeping file order (a counting sort), then sort a
  // device's rows only if they are not already in time order, which they usually are.
  auto type_rank = [](int t) { return t == kDeviceTypeCuda ? 0 : (t == kDeviceTypeCpu ? 2 : 1); };
  using DeviceKey = std::tuple<int, int, int>;  // (rank, type, id)
  auto key_of = [&](const MemRow& r) { return DeviceKey{type_rank(r.device_type), r.device_type, r.device_id}; };
  // The distinct keys by sort and unique over runs of equal keys (a scan of the keys for each row
  // would cost devices x rows).
  std::vector<DeviceKey> keys;
  for (const MemRow& r : rows) {
    const DeviceKey k = key_of(r);
    if (keys.empty() || keys.back() != k) keys.push_back(k);
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  if (keys.size() > 1) {
    std::vector<std::size_t> begin(keys.size() + 1, 0);
    std::vector<std::uint32_t> bucket(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      bucket[i] =
          static_cast<std::uint32_t>(std::lower_bound(keys.begin(), keys.end(), key_of(rows[i])) - keys.begin());
      ++begin[bucket[i] + 1];
    }
    for (std::size_t k = 0; k < keys.size(); ++k) begin[k + 1] += begin[k];
    std::vector<MemRow> sorted(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) sorted[begin[bucket[i]]++] = rows[i];
    rows.swap(sorted);
  }
  auto time_less = [](const MemRow& a, const MemRow& b) { return std::tie(a.ts, a.event) < std::tie(b.ts, b.event); };
  const DeviceIndex properties(model.info);
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t j = i;
    while (j < rows.size() && rows[j].device_type == rows[i].device_type && rows[j].device_id == rows[i].device_id) ++j;
    if (!std::is_sorted(rows.begin() + static_cast<std::ptrdiff_t>(i), rows.begin() + static_cast<std::ptrdiff_t>(j),
                        time_less))
      std::sort(rows.begin() + static_cast<std::ptrdiff_t>(i), rows.begin() + static_cast<std::ptrdiff_t>(j),
                time_less);
    measure_device(rows, i, j, properties, ctx, result);
    i = j;
  }

  if (!result.steps.empty()) {
    const std::size_t first = result.steps.size() >= 2 ? 1 : 0;
    double allocs = 0, bytes = 0, changes = 0;
    for (std::size_t s = first; s < result.steps.size(); ++s) {
      allocs += static_cast<double>(result.steps[s].allocations);
      bytes += static_cast<double>(result.steps[s].allocated_bytes);
      changes += static_cast<double>(result.steps[s].reserved_grows + result.steps[s].reserved_shrinks);
    }
    result.steady_steps = result.steps.size() - first;
    const double n = static_cast<double>(result.steady_steps);
    result.allocations_per_step = allocs / n;
    result.allocated_bytes_per_step = bytes / n;
    result.reserved_changes_per_step = changes / n;
  }
  attribute_to_ops(model, rows, ctx, result);
  return result;
}

}  // namespace ferret
