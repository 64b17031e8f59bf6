#include "analysis/operator/hot_spots.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "analysis/operator/tensor_cores.h"
#include "base/text.h"
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
  std::int64_t device_replayed_ns = 0;
  // A graph-replay row (name empty): replays whose capturing op is unknown, per graph id.
  bool replay_row = false;
  // A no-operator row: GPU work named `name` launched with no op around its launch call.
  bool no_operator = false;
  StrId site = kEmptyStr;  // the innermost Python frame of its first launch
  bool hip = false;
  std::int64_t replay_graph = kNoId;
};

std::string replay_row_name(const OpGroup& g) {
  const char* api = g.hip ? "HIP" : "CUDA";
  if (g.replay_graph == kNoId) return fmt::format("{} graph replay (graph id not recorded)", api);
  return fmt::format("{} graph replay (graph {})", api, g.replay_graph);
}

// "Input Dims" is stored as the raw JSON text, pretty-printed over several lines by some torch
// versions; one line without blanks reads better in a table: "[[16,559,1024],[1024]]".
std::string compact_json(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  JsonStringState strings;
  for (char c : raw) {
    if (!strings.feed(c) && (c == ' ' || c == '\n' || c == '\r' || c == '\t')) continue;
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
    n.device_replayed_ns += g.device_replayed_ns;
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
    return std::tie(a.name, a.dims, a.types, a.replay_graph, a.no_operator) <
           std::tie(b.name, b.dims, b.types, b.replay_graph, b.no_operator);  // stable output
  };
  const std::size_t n = std::min(k, groups.size());
  std::partial_sort(groups.begin(), groups.begin() + static_cast<std::ptrdiff_t>(n), groups.end(), better);
  std::vector<OpStat> out;
  for (std::size_t i = 0; i < n; ++i) {
    const OpGroup& g = groups[i];
    OpStat s;
    s.name = g.replay_row ? replay_row_name(g) : std::string(model.strings.view(g.name));
    if (g.no_operator) s.name.insert(0, "no operator: ");
    s.graph_replay = g.replay_row;
    s.no_operator = g.no_operator;
    if (g.no_operator && g.site != kEmptyStr) s.launch_site = std::string(model.strings.view(g.site));
    if (with_shapes && !g.replay_row) {
      s.input_dims = compact_json(model.strings.view(g.dims));
      s.input_types = compact_json(model.strings.view(g.types));
    }
    s.calls = g.calls;
    s.host_total_ns = g.host_total_ns;
    s.host_self_ns = g.host_self_ns;
    s.device_total_ns = g.device_total_ns;
    s.device_self_ns = g.device_self_ns;
    s.kernels = g.kernels;
    s.device_replayed_ns = g.device_replayed_ns;
    out.push_back(std::move(s));
  }
  return out;
}

// The window's op calls and their (name, shapes) groups, filled pass by pass.
struct OpTable {
  explicit OpTable(const TraceModel& model)
      : step_marker(model.strings.size(), 2), shape_groups(model.strings.size()), slot(model.size(), kNoSlot) {}

  // Step markers are no operators (the legacy autograd export records ProfilerStep#N as a plain
  // function); looked up once per distinct name.
  bool is_step_marker(const TraceModel& model, StrId id) {
    if (step_marker[id] == 2) step_marker[id] = profiler_step_number(model.strings.view(id)) >= 0 ? 1 : 0;
    return step_marker[id] == 1;
  }
  std::vector<OpGroup>& groups() { return shape_groups.groups(); }
  bool in_window(EventIndex op) const { return slot[op] != kNoSlot; }
  OpGroup& group_of_call(EventIndex op) { return groups()[calls[slot[op]].group]; }

  std::vector<std::uint8_t> step_marker;  // 2 = not looked up yet
  ShapeGroups shape_groups;
  std::vector<OpCall> calls;
  // A dense event -> call index (4 bytes per event, like relations.parent: lookups below are O(1)
  // instead of binary searches); kNoSlot for events that are no op call of the window.
  std::vector<std::uint32_t> slot;
};

// Pass 1: the ops of the window, in event order, grouped by name and shapes with their host total.
void collect_op_calls(const TraceModel& model, const TimeWindow& window, OpTable& table, HotSpotsResult& r) {
  std::size_t cpu_ops = 0;
  for (std::size_t e = 0; e < model.size(); ++e) cpu_ops += model.kind[e] == EventKind::kCpuOp;
  table.calls.reserve(cpu_ops);
  std::size_t a = 0;  // op args are in event order too: walk them forward
  for (std::size_t e = 0; e < model.size(); ++e) {
    if (model.kind[e] != EventKind::kCpuOp || model.phase[e] != 'X') continue;
    if (!window.contains(model.ts_ns[e]) || table.is_step_marker(model, model.name[e])) continue;
    StrId dims = kEmptyStr, types = kEmptyStr;
    while (a < model.op_args.size() && model.op_args[a].event < e) ++a;
    if (a < model.op_args.size() && model.op_args[a].event == e) {
      dims = model.op_args[a].input_dims;
      types = model.op_args[a].input_types;
      if (dims != kEmptyStr) r.has_shapes = true;
    }
    const std::uint32_t g = table.shape_groups.group_of(model.name[e], dims, types);
    OpGroup& group = table.groups()[g];
    ++group.calls;
    group.host_total_ns += std::max<std::int64_t>(0, model.dur_ns[e]);
    table.slot[e] = static_cast<std::uint32_t>(table.calls.size());
    table.calls.push_back({static_cast<EventIndex>(e), g, 0});
  }
  r.op_calls = table.calls.size();
}

// Pass 2: host self time, each direct child span subtracted, clipped to its parent (a child that
// outlives its parent is nested under it; relations counts those as repairs).
void add_host_self_time(const TraceModel& model, OpTable& table) {
  const Relations& rel = model.relations;
  if (!table.calls.empty() && !rel.parent.empty()) {
    for (std::size_t e = 0; e < model.size(); ++e) {
      const EventIndex p = rel.parent[e];
      if (p == kNoEvent || !table.in_window(p) || model.phase[e] != 'X' || !is_host_span(model.kind[e])) continue;
      const std::int64_t end = std::min(model.end_ns(static_cast<EventIndex>(e)), model.end_ns(p));
      table.calls[table.slot[p]].child_ns += std::max<std::int64_t>(0, end - model.ts_ns[e]);
    }
  }
  for (const OpCall& c : table.calls)
    table.groups()[c.group].host_self_ns +=
        std::max<std::int64_t>(0, std::max<std::int64_t>(0, model.dur_ns[c.event]) - c.child_ns);
}

// Pass 3: the GPU work of each launch is device self time of the launch's innermost op
// (relations.launch_op) and device total time of that op and of each op enclosing it. Walking up
// from each launch (ops nest a few levels deep) needs no ordering of the ops.
void add_launched_device_time(const TraceModel& model, const AnalysisContext& ctx, OpTable& table) {
  const Relations& rel = model.relations;
  const bool has_replays = !rel.graph_replays.empty();
  for (std::size_t li = 0; li < rel.launches.size() && !table.calls.empty(); ++li) {
    const EventIndex op = rel.launch_op[li];
    if (op == kNoEvent || !table.in_window(op)) continue;
    // A graph launch's work is all replays, attributed by attribute_graph_replays.
    if (has_replays && rel.launch_gpu_begin[li] < rel.launch_gpu_begin[li + 1] &&
        rel.replay_of(rel.launch_gpu[rel.launch_gpu_begin[li]]) != nullptr)
      continue;
    std::int64_t gpu_ns = 0;
    std::uint32_t count = 0;
    for (std::uint32_t g = rel.launch_gpu_begin[li]; g < rel.launch_gpu_begin[li + 1]; ++g) {
      const EventIndex gpu = rel.launch_gpu[g];
      if (!is_device_work(model.kind[gpu]) || !ctx.device_selected(model.pid[gpu])) continue;
      gpu_ns += std::max<std::int64_t>(0, model.dur_ns[gpu]);
      ++count;
    }
    if (count == 0) continue;
    table.group_of_call(op).device_self_ns += gpu_ns;
    table.group_of_call(op).kernels += count;
    // An enclosing op outside the window started before it, as do all of its own ancestors: stop.
    for (EventIndex p = op; p != kNoEvent && table.in_window(p);) {
      table.group_of_call(p).device_total_ns += gpu_ns;
      p = rel.parent.empty() ? kNoEvent : rel.parent[p];
      while (p != kNoEvent && model.kind[p] != EventKind::kCpuOp) p = rel.parent[p];
    }
  }
}

// Per captured launch: the group of its op, then those of the ops enclosing it; ops outside the
// window (capture runs once, before it) get groups of their own.
class CaptureChains {
 public:
  CaptureChains(const TraceModel& model, OpTable& table) : model_(model), table_(table) {}

  const std::vector<std::uint32_t>& of(EventIndex captured) {
    const Relations& rel = model_.relations;
    auto [it, fresh] = chains_.try_emplace(captured);
    const EventIndex op = fresh ? rel.op_of_launch(captured) : kNoEvent;
    if (op != kNoEvent && model_.kind[op] == EventKind::kCpuOp)
      for (EventIndex p = op; p != kNoEvent; p = rel.parent[p])
        if (model_.kind[p] == EventKind::kCpuOp && !table_.is_step_marker(model_, model_.name[p]))
          it->second.push_back(group_of_op(p));
    return it->second;
  }

 private:
  std::uint32_t group_of_op(EventIndex op) {
    if (table_.in_window(op)) return table_.calls[table_.slot[op]].group;
    const OpArgs* args = model_.op_args_of(op);
    return table_.shape_groups.group_of(model_.name[op], args ? args->input_dims : kEmptyStr,
                                        args ? args->input_types : kEmptyStr);
  }

  const TraceModel& model_;
  OpTable& table_;
  std::unordered_map<EventIndex, std::vector<std::uint32_t>> chains_;
};

// A graph-replay row of its own, for replays of `graph_id` whose capturing op is unknown.
OpGroup replay_row(const TraceModel& model, const GraphReplay& rp) {
  OpGroup row;
  row.replay_row = true;
  row.replay_graph = rp.graph_id;
  row.hip = rp.graph_launch != kNoEvent ? model.name_of(rp.graph_launch).substr(0, 3) == "hip"
                                        : model.info.platform == Platform::kRocm;
  return row;
}

// Pass 3b: graph replays go to the op that captured the node, else to a row per graph (returned).
std::vector<OpGroup> attribute_graph_replays(const TraceModel& model, const AnalysisContext& ctx,
                                             const TimeWindow& window, OpTable& table, HotSpotsResult& r) {
  const Relations& rel = model.relations;
  std::vector<OpGroup> replay_rows;
  if (rel.graph_replays.empty()) return replay_rows;
  CaptureChains chains(model, table);
  std::map<std::int64_t, std::uint32_t> row_of_graph;
  std::vector<std::pair<std::uint32_t, EventIndex>> row_launches;  // (row, graph launch), for call counts
  for (const GraphReplay& rp : rel.graph_replays) {
    const EventIndex gpu = rp.gpu;
    if (!ctx.device_selected(model.pid[gpu])) continue;
    if (!window.contains(model.ts_ns[rp.graph_launch != kNoEvent ? rp.graph_launch : gpu])) continue;
    const std::int64_t ns = std::max<std::int64_t>(0, model.dur_ns[gpu]);
    r.replayed_device_ns += ns;
    const std::vector<std::uint32_t>* chain = rp.captured_launch != kNoEvent ? &chains.of(rp.captured_launch) : nullptr;
    if (chain != nullptr && !chain->empty()) {
      OpGroup& self = table.groups()[chain->front()];
      self.device_self_ns += ns;
      self.device_replayed_ns += ns;
      ++self.kernels;
      for (std::uint32_t g : *chain) table.groups()[g].device_total_ns += ns;
      continue;
    }
    r.replayed_unattributed_ns += ns;
    auto [it, fresh] = row_of_graph.try_emplace(rp.graph_id, static_cast<std::uint32_t>(replay_rows.size()));
    if (fresh) replay_rows.push_back(replay_row(model, rp));
    OpGroup& row = replay_rows[it->second];
    row.device_self_ns += ns;
    row.device_total_ns += ns;
    row.device_replayed_ns += ns;
    ++row.kernels;
    if (rp.graph_launch != kNoEvent) row_launches.emplace_back(it->second, rp.graph_launch);
  }
  std::sort(row_launches.begin(), row_launches.end());
  row_launches.erase(std::unique(row_launches.begin(), row_launches.end()), row_launches.end());
  for (const auto& [row, launch] : row_launches) ++replay_rows[row].calls;
  return replay_rows;
}

// Pass 3c: GPU work whose launch call (in the window) no op encloses, a row per activity name.
std::vector<OpGroup> no_operator_rows(const TraceModel& model, const AnalysisContext& ctx, const TimeWindow& window,
                                      HotSpotsResult& r) {
  const Relations& rel = model.relations;
  std::vector<OpGroup> rows;
  std::unordered_map<StrId, std::uint32_t> row_of_name;
  const bool has_replays = !rel.graph_replays.empty();
  for (std::size_t li = 0; li < rel.launches.size(); ++li) {
    if (rel.launch_op[li] != kNoEvent || rel.launch_gpu_begin[li] == rel.launch_gpu_begin[li + 1]) continue;
    const EventIndex launch = rel.launches[li];
    if (!window.contains(model.ts_ns[launch])) continue;
    if (has_replays && rel.replay_of(rel.launch_gpu[rel.launch_gpu_begin[li]]) != nullptr) continue;
    for (std::uint32_t g = rel.launch_gpu_begin[li]; g < rel.launch_gpu_begin[li + 1]; ++g) {
      const EventIndex gpu = rel.launch_gpu[g];
      if (!is_device_work(model.kind[gpu]) || !ctx.device_selected(model.pid[gpu])) continue;
      auto [it, fresh] = row_of_name.try_emplace(model.name[gpu], static_cast<std::uint32_t>(rows.size()));
      if (fresh) {
        OpGroup row;
        row.name = model.name[gpu];
        row.no_operator = true;
        for (EventIndex p = rel.parent.empty() ? kNoEvent : rel.parent[launch]; p != kNoEvent; p = rel.parent[p])
          if (model.kind[p] == EventKind::kPythonFunction) {
            row.site = model.name[p];
            break;
          }
        rows.push_back(row);
      }
      OpGroup& row = rows[it->second];
      const std::int64_t ns = std::max<std::int64_t>(0, model.dur_ns[gpu]);
      if (g == rel.launch_gpu_begin[li]) ++row.calls;
      row.device_self_ns += ns;
      row.device_total_ns += ns;
      ++row.kernels;
      r.no_operator_device_ns += ns;
    }
  }
  return rows;
}

// Pass 4: group by name, and by name + input shapes; rank.
void rank_ops(const TraceModel& model, std::size_t top, std::vector<OpGroup> groups,
              const std::vector<OpGroup>& replay_rows, HotSpotsResult& r) {
  std::vector<OpGroup> by_name = groups_by_name(groups, model.strings.size());
  std::vector<OpGroup> by_shape = r.has_shapes ? std::move(groups) : std::vector<OpGroup>{};
  for (const OpGroup& g : by_name) {
    r.attributed_device_ns += g.device_self_ns;
    r.host_op_ns += g.host_self_ns;
  }
  auto device_self = [](const OpGroup& g) { return g.device_self_ns; };
  auto host_self = [](const OpGroup& g) { return g.host_self_ns; };
  if (model.relations.graph_replays.empty()) {
    r.ops_by_host = top_k(by_name, top, host_self, model, false);
  } else {
    // Ops there only for the replays they captured before the window ran no host time in it.
    std::vector<OpGroup> called;
    for (const OpGroup& g : by_name)
      if (g.calls > 0) called.push_back(g);
    r.ops_by_host = top_k(called, top, host_self, model, false);
  }
  for (const OpGroup& row : replay_rows) r.attributed_device_ns += row.device_self_ns;
  by_name.insert(by_name.end(), replay_rows.begin(), replay_rows.end());
  if (r.has_shapes) by_shape.insert(by_shape.end(), replay_rows.begin(), replay_rows.end());
  if (r.attributed_device_ns > 0) {
    r.ops_by_device = top_k(by_name, top, device_self, model, false);
    r.shapes_by_device = top_k(by_shape, top, device_self, model, true);
  } else {
    // No GPU work (a CPU-only trace): shapes ranked by host time still show the costly inputs.
    r.shapes_by_device = top_k(by_shape, top, host_self, model, true);
  }
}

// One GPU activity of the window, with the op and launch call behind it.
struct KernelRecord {
  StrId name;
  StrId op;
  StrId runtime;
  EventKind kind;
  float occupancy;  // -1 when not recorded
  std::int64_t dur;
};

// Pass 5: one record per GPU activity in the window, sorted by (kernel, op, launch call).
std::vector<KernelRecord> collect_kernel_records(const TraceModel& model, const AnalysisContext& ctx,
                                                 const TimeWindow& window, HotSpotsResult& r) {
  const Relations& rel = model.relations;
  std::vector<KernelRecord> recs;
  std::size_t ka = 0;
  std::size_t ri = 0;  // graph replays are in GPU event order too
  for (std::size_t g = 0; g < rel.gpu_events.size(); ++g) {
    const EventIndex e = rel.gpu_events[g];
    const EventKind kind = model.kind[e];
    if (!is_device_work(kind) || !ctx.counts_gpu_event(model, e) || !window.contains(model.ts_ns[e])) continue;
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
    // A replayed kernel's op is the one that captured it; the launch call stays cudaGraphLaunch.
    while (ri < rel.graph_replays.size() && rel.graph_replays[ri].gpu < e) ++ri;
    if (ri < rel.graph_replays.size() && rel.graph_replays[ri].gpu == e &&
        rel.graph_replays[ri].captured_launch != kNoEvent) {
      const EventIndex op = rel.op_of_launch(rel.graph_replays[ri].captured_launch);
      if (op != kNoEvent) k.op = model.name[op];
    }
    recs.push_back(k);
    r.device_ns += k.dur;
  }
  r.gpu_activities = recs.size();
  std::sort(recs.begin(), recs.end(), [](const KernelRecord& a, const KernelRecord& b) {
    return std::tie(a.name, a.op, a.runtime) < std::tie(b.name, b.op, b.runtime);
  });
  return recs;
}

// The records of one kernel name: [begin, end) of the sorted records.
struct KernelGroup {
  std::size_t begin, end;
  std::int64_t total = 0;
};

std::vector<KernelGroup> group_kernel_records(const std::vector<KernelRecord>& recs) {
  std::vector<KernelGroup> kgroups;
  for (std::size_t i = 0; i < recs.size();) {
    std::size_t j = i;
    KernelGroup kg{i, i, 0};
    while (j < recs.size() && recs[j].name == recs[i].name) kg.total += recs[j++].dur;
    kg.end = j;
    kgroups.push_back(kg);
    i = j;
  }
  return kgroups;
}

// One kernel row: duration spread, occupancy and the top launch paths of its records.
KernelStat kernel_stat(const TraceModel& model, const std::vector<KernelRecord>& recs, const KernelGroup& kg,
                       bool tensor_core) {
  KernelStat ks;
  ks.name = std::string(model.strings.view(recs[kg.begin].name));
  ks.kind = recs[kg.begin].kind;
  ks.calls = kg.end - kg.begin;
  ks.total_ns = kg.total;
  ks.min_ns = recs[kg.begin].dur;
  ks.max_ns = recs[kg.begin].dur;
  ks.tensor_core = tensor_core;
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
  return ks;
}

// Pass 6: kernels by name, Tensor Core time over every name, the top rows by total time.
void rank_kernels(const TraceModel& model, std::size_t top, const std::vector<KernelRecord>& recs, HotSpotsResult& r) {
  const std::vector<KernelGroup> kgroups = group_kernel_records(recs);
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
  for (std::size_t oi = 0; oi < kn; ++oi)
    r.kernels.push_back(kernel_stat(model, recs, kgroups[korder[oi]], tensor_core[korder[oi]] != 0));
}

}  // namespace

HotSpotsResult analyze_hot_spots(const TraceModel& model, const AnalysisContext& ctx) {
  HotSpotsResult r;
  const TimeWindow window = ctx.window();
  r.window_ns = ctx.window_ns();
  const std::size_t top = static_cast<std::size_t>(std::max(0, ctx.options.top_k));

  std::vector<OpGroup> groups;
  std::vector<OpGroup> replay_rows;
  {
    OpTable table(model);
    collect_op_calls(model, window, table, r);
    add_host_self_time(model, table);
    add_launched_device_time(model, ctx, table);
    replay_rows = attribute_graph_replays(model, ctx, window, table, r);
    std::vector<OpGroup> no_operator = no_operator_rows(model, ctx, window, r);
    replay_rows.insert(replay_rows.end(), no_operator.begin(), no_operator.end());
    groups = std::move(table.groups());
  }  // the per-event index and the calls go before the kernel pass
  rank_ops(model, top, std::move(groups), replay_rows, r);
  rank_kernels(model, top, collect_kernel_records(model, ctx, window, r), r);
  return r;
}

}  // namespace ferret
