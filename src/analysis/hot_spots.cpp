#include "analysis/hot_spots.h"

#include <algorithm>
#include <limits>
#include <tuple>
#include <unordered_map>

#include "analysis/tensor_cores.h"
#include "model/relations.h"

namespace ferret {

namespace {

constexpr std::uint32_t kNoSlot = std::numeric_limits<std::uint32_t>::max();

// One op call of the window: 16 bytes, since a 10 GiB trace holds 16 M of them. Everything
// that sums per group goes straight to the group; only the child time, whose clipping is per
// call, waits here.
struct OpCall {
  EventIndex event = kNoEvent;
  std::uint32_t group = 0;    // its (name, shapes) group
  std::int64_t child_ns = 0;  // time in direct child spans
};

// Sums over the calls of one name (or name + shapes); strings are made for the top rows only.
struct OpGroup {
  StrId name = kEmptyStr;
  StrId dims = kEmptyStr;
  StrId types = kEmptyStr;
  std::uint64_t calls = 0;
  std::int64_t host_total_ns = 0;
  std::int64_t host_self_ns = 0;
  std::int64_t device_total_ns = 0;
  std::int64_t device_self_ns = 0;
  std::uint64_t kernels = 0;
};

struct Window {
  std::int64_t start = 0;
  std::int64_t end = 0;
  bool inclusive_end = false;  // a trace without steps: its window ends at its last event's end
  bool contains(std::int64_t t) const { return t >= start && (t < end || (inclusive_end && t == end)); }
};

bool is_gpu_work(EventKind k) { return k == EventKind::kKernel || k == EventKind::kMemcpy || k == EventKind::kMemset; }

// "Input Dims" is stored as the raw JSON text, pretty-printed over several lines by some torch
// versions; one line without blanks reads better in a table: "[[16,559,1024],[1024]]".
std::string compact_json(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  bool in_string = false, escaped = false;
  for (char c : raw) {
    if (in_string) {
      out.push_back(c);
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    out.push_back(c);
  }
  return out;
}

// Groups calls by (name, dims, types) as they are found: a trace has few distinct keys, and
// calls of one name mostly repeat the shapes of the previous call, so a per-name cache of the
// last group answers most lookups before the hash table.
struct ShapeKey {
  StrId name, dims, types;
  bool operator==(const ShapeKey&) const = default;
};
struct ShapeKeyHash {
  std::size_t operator()(const ShapeKey& k) const noexcept {
    std::uint64_t h = k.name;
    h = h * 0x9E3779B97F4A7C15ull ^ k.dims;
    h = h * 0x9E3779B97F4A7C15ull ^ k.types;
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

class ShapeGroups {
 public:
  explicit ShapeGroups(std::size_t string_count) : last_of_name_(string_count, kNoSlot) {}
  std::uint32_t group_of(StrId name, StrId dims, StrId types) {
    const std::uint32_t last = last_of_name_[name];
    if (last != kNoSlot && groups_[last].dims == dims && groups_[last].types == types) return last;
    auto [it, fresh] = index_.try_emplace(ShapeKey{name, dims, types}, static_cast<std::uint32_t>(groups_.size()));
    if (fresh) groups_.push_back({name, dims, types});
    last_of_name_[name] = it->second;
    return it->second;
  }
  std::vector<OpGroup>& groups() { return groups_; }

 private:
  std::vector<std::uint32_t> last_of_name_;
  std::unordered_map<ShapeKey, std::uint32_t, ShapeKeyHash> index_;
  std::vector<OpGroup> groups_;
};

// The (name, shapes) groups summed by name.
std::vector<OpGroup> groups_by_name(const std::vector<OpGroup>& by_shape, std::size_t string_count) {
  std::vector<OpGroup> out;
  std::vector<std::uint32_t> slot(string_count, kNoSlot);
  for (const OpGroup& g : by_shape) {
    if (slot[g.name] == kNoSlot) {
      slot[g.name] = static_cast<std::uint32_t>(out.size());
      out.push_back({g.name, kEmptyStr, kEmptyStr});
    }
    OpGroup& n = out[slot[g.name]];
    n.calls += g.calls;
    n.host_total_ns += g.host_total_ns;
    n.host_self_ns += g.host_self_ns;
    n.device_total_ns += g.device_total_ns;
    n.device_self_ns += g.device_self_ns;
    n.kernels += g.kernels;
  }
  return out;
}

template <class Metric>
std::vector<OpStat> top_k(std::vector<OpGroup>& groups, std::size_t k, Metric metric, const TraceModel& model,
                          bool with_shapes) {
  auto better = [&](const OpGroup& a, const OpGroup& b) {
    const std::int64_t ma = metric(a), mb = metric(b);
    if (ma != mb) return ma > mb;
    if (a.host_self_ns != b.host_self_ns) return a.host_self_ns > b.host_self_ns;
    return std::tie(a.name, a.dims, a.types) < std::tie(b.name, b.dims, b.types);  // stable output
  };
  const std::size_t n = std::min(k, groups.size());
  std::partial_sort(groups.begin(), groups.begin() + static_cast<std::ptrdiff_t>(n), groups.end(), better);
  std::vector<OpStat> out;
  for (std::size_t i = 0; i < n; ++i) {
    const OpGroup& g = groups[i];
    OpStat s;
    s.name = std::string(model.strings.view(g.name));
    if (with_shapes) {
      s.input_dims = compact_json(model.strings.view(g.dims));
      s.input_types = compact_json(model.strings.view(g.types));
    }
    s.calls = g.calls;
    s.host_total_ns = g.host_total_ns;
    s.host_self_ns = g.host_self_ns;
    s.device_total_ns = g.device_total_ns;
    s.device_self_ns = g.device_self_ns;
    s.kernels = g.kernels;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

HotSpotsResult analyze_hot_spots(const TraceModel& model, const AnalysisContext& ctx) {
  HotSpotsResult r;
  const Relations& rel = model.relations;
  const Window window{ctx.window_start_ns, ctx.window_end_ns, ctx.whole_trace()};
  r.window_ns = ctx.window_ns();
  const std::size_t top = static_cast<std::size_t>(std::max(0, ctx.options.top_k));

  // 1. The ops of the window, in event order, with a dense event -> row index (4 bytes per event,
  //    like relations.parent: lookups below are O(1) instead of binary searches). Step markers are
  //    no operators (the legacy autograd export records ProfilerStep#N as a plain function).
  std::vector<std::uint8_t> step_marker(model.strings.size(), 2);  // 2 = not looked up yet
  auto is_step_marker = [&](StrId id) {
    if (step_marker[id] == 2) step_marker[id] = profiler_step_number(model.strings.view(id)) >= 0 ? 1 : 0;
    return step_marker[id] == 1;
  };
  ShapeGroups shape_groups(model.strings.size());
  std::vector<OpGroup>& groups = shape_groups.groups();
  std::vector<OpCall> calls;
  std::vector<std::uint32_t> slot(model.size(), kNoSlot);
  {
    std::size_t cpu_ops = 0;
    for (std::size_t e = 0; e < model.size(); ++e) cpu_ops += model.kind[e] == EventKind::kCpuOp;
    calls.reserve(cpu_ops);
    std::size_t a = 0;  // op args are in event order too: walk them forward
    for (std::size_t e = 0; e < model.size(); ++e) {
      if (model.kind[e] != EventKind::kCpuOp || model.phase[e] != 'X') continue;
      if (!window.contains(model.ts_ns[e]) || is_step_marker(model.name[e])) continue;
      StrId dims = kEmptyStr, types = kEmptyStr;
      while (a < model.op_args.size() && model.op_args[a].event < e) ++a;
      if (a < model.op_args.size() && model.op_args[a].event == e) {
        dims = model.op_args[a].input_dims;
        types = model.op_args[a].input_types;
        if (dims != kEmptyStr) r.has_shapes = true;
      }
      const std::uint32_t g = shape_groups.group_of(model.name[e], dims, types);
      ++groups[g].calls;
      groups[g].host_total_ns += std::max<std::int64_t>(0, model.dur_ns[e]);
      slot[e] = static_cast<std::uint32_t>(calls.size());
      calls.push_back({static_cast<EventIndex>(e), g, 0});
    }
  }
  r.op_calls = calls.size();

  // 2. Host self time: subtract each direct child span, clipped to its parent (a child that
  //    outlives its parent is nested under it; relations counts those as repairs).
  if (!calls.empty() && !rel.parent.empty()) {
    for (std::size_t e = 0; e < model.size(); ++e) {
      const EventIndex p = rel.parent[e];
      if (p == kNoEvent || slot[p] == kNoSlot || model.phase[e] != 'X' || !is_host_span(model.kind[e])) continue;
      const std::int64_t end = std::min(model.end_ns(static_cast<EventIndex>(e)), model.end_ns(p));
      calls[slot[p]].child_ns += std::max<std::int64_t>(0, end - model.ts_ns[e]);
    }
  }
  for (const OpCall& c : calls)
    groups[c.group].host_self_ns +=
        std::max<std::int64_t>(0, std::max<std::int64_t>(0, model.dur_ns[c.event]) - c.child_ns);

  // 3. Device time: the GPU work of each launch is device self time of the launch's innermost op
  //    (relations.launch_op) and device total time of that op and of each op enclosing it. Walking
  //    up from each launch (ops nest a few levels deep) needs no ordering of the ops.
  for (std::size_t li = 0; li < rel.launches.size() && !calls.empty(); ++li) {
    const EventIndex op = rel.launch_op[li];
    if (op == kNoEvent || slot[op] == kNoSlot) continue;
    std::int64_t gpu_ns = 0;
    std::uint32_t count = 0;
    for (std::uint32_t g = rel.launch_gpu_begin[li]; g < rel.launch_gpu_begin[li + 1]; ++g) {
      const EventIndex gpu = rel.launch_gpu[g];
      if (!is_gpu_work(model.kind[gpu]) || !ctx.device_selected(model.pid[gpu])) continue;
      gpu_ns += std::max<std::int64_t>(0, model.dur_ns[gpu]);
      ++count;
    }
    if (count == 0) continue;
    groups[calls[slot[op]].group].device_self_ns += gpu_ns;
    groups[calls[slot[op]].group].kernels += count;
    // An enclosing op outside the window started before it, as do all of its own ancestors: stop.
    for (EventIndex p = op; p != kNoEvent && slot[p] != kNoSlot;) {
      groups[calls[slot[p]].group].device_total_ns += gpu_ns;
      p = rel.parent.empty() ? kNoEvent : rel.parent[p];
      while (p != kNoEvent && model.kind[p] != EventKind::kCpuOp) p = rel.parent[p];
    }
  }
  std::vector<std::uint32_t>().swap(slot);
  std::vector<OpCall>().swap(calls);

  // 4. Group by name, and by name + input shapes; rank.
  std::vector<OpGroup> by_name = groups_by_name(groups, model.strings.size());
  std::vector<OpGroup> by_shape = r.has_shapes ? std::move(groups) : std::vector<OpGroup>{};
  for (const OpGroup& g : by_name) {
    r.attributed_device_ns += g.device_self_ns;
    r.host_op_ns += g.host_self_ns;
  }
  auto device_self = [](const OpGroup& g) { return g.device_self_ns; };
  auto host_self = [](const OpGroup& g) { return g.host_self_ns; };
  r.ops_by_host = top_k(by_name, top, host_self, model, false);
  if (r.attributed_device_ns > 0) {
    r.ops_by_device = top_k(by_name, top, device_self, model, false);
    r.shapes_by_device = top_k(by_shape, top, device_self, model, true);
  } else {
    // No GPU work (a CPU-only trace): shapes ranked by host time still show the costly inputs.
    r.shapes_by_device = top_k(by_shape, top, host_self, model, true);
  }

  // 5. Kernels: one record per GPU activity in the window, sorted by (kernel, op, launch call).
  struct KernelRecord {
    StrId name;
    StrId op;
    StrId runtime;
    EventKind kind;
    float occupancy;  // -1 when not recorded
    std::int64_t dur;
  };
  std::vector<KernelRecord> recs;
  {
    std::size_t ka = 0;
    for (std::size_t g = 0; g < rel.gpu_events.size(); ++g) {
      const EventIndex e = rel.gpu_events[g];
      const EventKind kind = model.kind[e];
      if (!is_gpu_work(kind) || !ctx.counts_gpu_event(model, e) || !window.contains(model.ts_ns[e])) continue;
      KernelRecord k{model.name[e], kEmptyStr, kEmptyStr, kind, -1.0f, std::max<std::int64_t>(0, model.dur_ns[e])};
      while (ka < model.kernel_args.size() && model.kernel_args[ka].event < e) ++ka;
      if (ka < model.kernel_args.size() && model.kernel_args[ka].event == e)
        k.occupancy = model.kernel_args[ka].est_occupancy_pct;
      const EventIndex launcher = rel.gpu_launcher[g];
      if (launcher != kNoEvent) {
        k.runtime = model.name[launcher];
        const EventIndex op = rel.op_of_launch(launcher);
        if (op != kNoEvent) k.op = model.name[op];
      }
      recs.push_back(k);
      r.device_ns += k.dur;
    }
  }
  r.gpu_activities = recs.size();
  std::sort(recs.begin(), recs.end(), [](const KernelRecord& a, const KernelRecord& b) {
    return std::tie(a.name, a.op, a.runtime) < std::tie(b.name, b.op, b.runtime);
  });
  struct KernelGroup {
    std::size_t begin, end;  // records
    std::int64_t total = 0;
  };
  std::vector<KernelGroup> kgroups;
  for (std::size_t i = 0; i < recs.size();) {
    std::size_t j = i;
    KernelGroup kg{i, i, 0};
    while (j < recs.size() && recs[j].name == recs[i].name) kg.total += recs[j++].dur;
    kg.end = j;
    kgroups.push_back(kg);
    i = j;
  }
  // Tensor Core time over every kernel name, not only the top rows.
  std::vector<std::uint8_t> tensor_core(kgroups.size(), 0);
  for (std::size_t i = 0; i < kgroups.size(); ++i) {
    const KernelRecord& first = recs[kgroups[i].begin];
    tensor_core[i] = first.kind == EventKind::kKernel && is_tensor_core_kernel(model.strings.view(first.name));
    if (tensor_core[i]) r.tensor_core_ns += kgroups[i].total;
  }
  std::vector<std::size_t> korder(kgroups.size());
  for (std::size_t i = 0; i < korder.size(); ++i) korder[i] = i;
  const std::size_t kn = std::min(top, korder.size());
  std::partial_sort(korder.begin(), korder.begin() + static_cast<std::ptrdiff_t>(kn), korder.end(),
                    [&](std::size_t a, std::size_t b) {
                      if (kgroups[a].total != kgroups[b].total) return kgroups[a].total > kgroups[b].total;
                      return recs[kgroups[a].begin].name < recs[kgroups[b].begin].name;
                    });
  for (std::size_t oi = 0; oi < kn; ++oi) {
    const KernelGroup& kg = kgroups[korder[oi]];
    KernelStat ks;
    ks.name = std::string(model.strings.view(recs[kg.begin].name));
    ks.kind = recs[kg.begin].kind;
    ks.calls = kg.end - kg.begin;
    ks.total_ns = kg.total;
    ks.min_ns = recs[kg.begin].dur;
    ks.max_ns = recs[kg.begin].dur;
    ks.tensor_core = tensor_core[korder[oi]] != 0;
    double occ_weighted = 0, occ_time = 0;
    std::vector<KernelLaunchPath> paths;
    for (std::size_t i = kg.begin; i < kg.end; ++i) {
      const KernelRecord& k = recs[i];
      ks.min_ns = std::min(ks.min_ns, k.dur);
      ks.max_ns = std::max(ks.max_ns, k.dur);
      if (k.occupancy >= 0) {
        occ_weighted += static_cast<double>(k.occupancy) * static_cast<double>(k.dur);
        occ_time += static_cast<double>(k.dur);
      }
      if (i == kg.begin || k.op != recs[i - 1].op || k.runtime != recs[i - 1].runtime)
        paths.push_back({std::string(model.strings.view(k.op)), std::string(model.strings.view(k.runtime)), 0, 0});
      ++paths.back().calls;
      paths.back().total_ns += k.dur;
    }
    ks.mean_ns = static_cast<double>(ks.total_ns) / static_cast<double>(ks.calls);
    // Occupancy weighted by kernel time, as the TensorBoard plugin's "est. achieved occupancy".
    if (occ_time > 0) ks.mean_occupancy_pct = occ_weighted / occ_time;
    std::sort(paths.begin(), paths.end(), [](const KernelLaunchPath& a, const KernelLaunchPath& b) {
      if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
      return std::tie(a.op, a.runtime) < std::tie(b.op, b.runtime);
    });
    if (paths.size() > 3) paths.resize(3);
    ks.launched_by = std::move(paths);
    r.kernels.push_back(std::move(ks));
  }
  return r;
}

}  // namespace ferret
