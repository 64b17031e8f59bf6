#include "model/trace_model.h"

#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>

namespace ferret {

const char* format_generation_name(FormatGeneration g) {
  switch (g) {
    case FormatGeneration::kLegacyAutograd: return "legacy-autograd";
    case FormatGeneration::kKineto18: return "kineto-1.8";
    case FormatGeneration::kKineto110: return "kineto-1.10";
    case FormatGeneration::kKineto2: return "kineto-2";
    case FormatGeneration::kKinetoModern: return "kineto-1.10+";
    case FormatGeneration::kUnknown: break;
  }
  return "unknown";
}

const char* platform_name(Platform p) {
  switch (p) {
    case Platform::kCuda: return "cuda";
    case Platform::kRocm: return "rocm";
    case Platform::kMtia: return "mtia";
    case Platform::kCpuOnly: return "cpu";
    case Platform::kUnknown: break;
  }
  return "unknown";
}

const char* step_marker_name(StepMarker m) {
  switch (m) {
    case StepMarker::kProfilerStep: return "profiler_step";
    case StepMarker::kOptimizer: return "optimizer";
    case StepMarker::kDataLoader: return "dataloader";
    case StepMarker::kRepeatedOps: return "repeated_ops";
  }
  return "profiler_step";
}

const char* graph_node_mapping_name(GraphNodeMapping m) {
  switch (m) {
    case GraphNodeMapping::kNodeId: return "node_id";
    case GraphNodeMapping::kLaunchOrder: return "launch_order";
    case GraphNodeMapping::kNone: break;
  }
  return "none";
}

void IngestReport::repair(const std::string& reason, const std::string& where, std::uint64_t n) {
  Issue& issue = repairs[reason];
  if (issue.count == 0) {
    issue.reason = reason;
    issue.first_location = where;
  }
  issue.count += n;
}

void IngestReport::skip(const std::string& reason, const std::string& where, std::uint64_t n) {
  Issue& issue = skips[reason];
  if (issue.count == 0) {
    issue.reason = reason;
    issue.first_location = where;
  }
  issue.count += n;
}

std::vector<std::string> IngestReport::lines(std::string_view note_prefix) const {
  std::vector<std::string> out;
  for (const auto& [reason, issue] : repairs)
    out.push_back("repaired " + std::to_string(issue.count) + " x " + reason + " (first at " + issue.first_location +
                  ")");
  for (const auto& [reason, issue] : skips)
    out.push_back("skipped " + std::to_string(issue.count) + " x " + reason + " (first at " + issue.first_location +
                  ")");
  for (const std::string& note : notes) out.push_back(std::string(note_prefix) + note);
  return out;
}

std::uint64_t IngestReport::repair_count() const {
  std::uint64_t n = 0;
  for (const auto& [_, issue] : repairs) n += issue.count;
  return n;
}

std::uint64_t IngestReport::skip_count() const {
  std::uint64_t n = 0;
  for (const auto& [_, issue] : skips) n += issue.count;
  return n;
}

namespace {
// The row of event `e` in a side table, or rows.size().
template <class Table>
std::size_t find_row_index(const Table& rows, EventIndex e) {
  std::size_t lo = 0, hi = rows.size();
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (rows[mid].event < e)
      lo = mid + 1;
    else
      hi = mid;
  }
  return (lo < rows.size() && rows[lo].event == e) ? lo : rows.size();
}

template <class Table>
auto find_row(const Table& rows, EventIndex e) -> decltype(&rows[0]) {
  const std::size_t i = find_row_index(rows, e);
  return i < rows.size() ? &rows[i] : nullptr;
}

std::size_t find_sorted(const std::vector<EventIndex>& v, EventIndex e) {
  auto it = std::lower_bound(v.begin(), v.end(), e);
  return (it != v.end() && *it == e) ? static_cast<std::size_t>(it - v.begin()) : v.size();
}
}  // namespace

const KernelArgs* TraceModel::kernel_args_of(EventIndex e) const { return find_row(kernel_args, e); }
const CopyArgs* TraceModel::copy_args_of(EventIndex e) const { return find_row(copy_args, e); }
const OpArgs* TraceModel::op_args_of(EventIndex e) const { return find_row(op_args, e); }
const CollectiveArgs* TraceModel::collective_args_of(EventIndex e) const { return find_row(collective_args, e); }
const GraphNodeArgs* TraceModel::graph_node_of(EventIndex e) const { return find_row(graph_nodes, e); }
const InductorKernelArgs* TraceModel::inductor_kernel_of(EventIndex e) const { return find_row(inductor_kernels, e); }
const PythonFrameArgs* TraceModel::python_frame_of(EventIndex e) const { return find_row(python_frames, e); }

EventIndex TraceModel::python_parent_of(EventIndex e) const {
  const std::size_t row = find_row_index(python_frames, e);
  return row < relations.python_parent.size() ? relations.python_parent[row] : kNoEvent;
}

namespace {
template <class SideTable>
void truncate_side_table(SideTable& table, std::size_t events) {
  std::size_t keep = table.size();
  while (keep > 0 && table[keep - 1].event >= events) --keep;
  table.truncate(keep);
}
}  // namespace

void TraceModel::truncate_events(std::size_t n) {
  kind.truncate(n);
  phase.truncate(n);
  category.truncate(n);
  name.truncate(n);
  ts_ns.truncate(n);
  dur_ns.truncate(n);
  pid.truncate(n);
  tid.truncate(n);
  correlation.truncate(n);
  external_id.truncate(n);
  truncate_side_table(kernel_args, n);
  truncate_side_table(copy_args, n);
  truncate_side_table(op_args, n);
  truncate_side_table(collective_args, n);
  truncate_side_table(memory_args, n);
  truncate_side_table(counters, n);
  truncate_side_table(graph_nodes, n);
  truncate_side_table(inductor_kernels, n);
  truncate_side_table(python_frames, n);
}

namespace {
// The first side-table row naming no event, or out of event order, as text.
template <class Table>
std::string side_table_violation(const Table& table, const char* table_name, std::size_t events, bool one_per_event) {
  for (std::size_t r = 0; r < table.size(); ++r) {
    const EventIndex e = table[r].event;
    if (e >= events) return fmt::format("{} row {} names event {}, but the model holds {}", table_name, r, e, events);
    if (r > 0 && (e < table[r - 1].event || (one_per_event && e == table[r - 1].event)))
      return fmt::format("{} row {} (event {}) is out of event order after event {}", table_name, r, e,
                         table[r - 1].event);
  }
  return {};
}

// The first row of `table` with a string field (picked by `fields`) beyond the string table.
template <class Table, class Fields>
std::string string_violation(const Table& table, const char* table_name, std::size_t strings, Fields fields) {
  for (std::size_t r = 0; r < table.size(); ++r)
    for (const StrId id : fields(table[r]))
      if (id >= strings) return fmt::format("{} row {} holds string id {} of {}", table_name, r, id, strings);
  return {};
}
}  // namespace

std::string TraceModel::check_invariants() const {
  const std::size_t n = size();
  const std::pair<const char*, std::size_t> lengths[] = {
      {"phase", phase.size()}, {"category", category.size()},       {"name", name.size()},
      {"ts_ns", ts_ns.size()}, {"dur_ns", dur_ns.size()},           {"pid", pid.size()},
      {"tid", tid.size()},     {"correlation", correlation.size()}, {"external_id", external_id.size()}};
  for (const auto& [column, length] : lengths)
    if (length != n) return fmt::format("column {} holds {} values, kind holds {}", column, length, n);
  for (std::size_t e = 0; e < n; ++e) {
    if (static_cast<int>(kind[e]) >= kEventKindCount)
      return fmt::format("event {} has kind {}, not an EventKind", e, static_cast<int>(kind[e]));
    if (name[e] >= strings.size()) return fmt::format("event {} has name id {} of {}", e, name[e], strings.size());
    if (category[e] >= categories.size())
      return fmt::format("event {} has category id {} of {}", e, category[e], categories.size());
    for (const std::int32_t id : {pid[e], tid[e]})
      if (id < 0 && !id_labels.count(id)) return fmt::format("event {} has synthetic id {} with no label", e, id);
  }
  const std::string side[] = {
      side_table_violation(kernel_args, "kernel_args", n, true),
      side_table_violation(copy_args, "copy_args", n, true),
      side_table_violation(op_args, "op_args", n, true),
      side_table_violation(collective_args, "collective_args", n, true),
      side_table_violation(memory_args, "memory_args", n, true),
      side_table_violation(counters, "counters", n, false),
      side_table_violation(graph_nodes, "graph_nodes", n, true),
      side_table_violation(inductor_kernels, "inductor_kernels", n, true),
      side_table_violation(python_frames, "python_frames", n, true),
      string_violation(kernel_args, "kernel_args", strings.size(),
                       [](const KernelArgs& k) { return std::array{k.limiting_factor}; }),
      string_violation(op_args, "op_args", strings.size(),
                       [](const OpArgs& o) {
                         return std::array{o.input_dims, o.input_types, o.input_strides, o.concrete_inputs};
                       }),
      string_violation(collective_args, "collective_args", strings.size(),
                       [](const CollectiveArgs& c) {
                         return std::array{c.collective_name, c.dtype, c.process_group_name, c.process_group_ranks};
                       }),
      string_violation(counters, "counters", strings.size(),
                       [](const CounterSample& c) { return std::array{c.series}; }),
      string_violation(inductor_kernels, "inductor_kernels", strings.size(),
                       [](const InductorKernelArgs& k) {
                         return std::array{k.backend, k.hash};
                       }),
  };
  for (const std::string& violation : side)
    if (!violation.empty()) return violation;
  if (relations.built) {
    if (relations.parent.size() != n)
      return fmt::format("relations.parent holds {} entries for {} events", relations.parent.size(), n);
    if (relations.python_parent.size() != python_frames.size())
      return fmt::format("relations.python_parent holds {} entries for {} python frames",
                         relations.python_parent.size(), python_frames.size());
  }
  return {};
}

std::size_t TraceModel::memory_bytes() const {
  std::size_t n = kind.memory_bytes() + phase.memory_bytes() + category.memory_bytes() + name.memory_bytes() +
                  ts_ns.memory_bytes() + dur_ns.memory_bytes() + pid.memory_bytes() + tid.memory_bytes() +
                  correlation.memory_bytes() + external_id.memory_bytes();
  n += kernel_args.memory_bytes() + copy_args.memory_bytes() + op_args.memory_bytes() + collective_args.memory_bytes() +
       memory_args.memory_bytes() + counters.memory_bytes() + graph_nodes.memory_bytes() +
       inductor_kernels.memory_bytes() + python_frames.memory_bytes();
  n += strings.memory_bytes() + categories.memory_bytes();
  n += (relations.parent.capacity() + relations.gpu_events.capacity() + relations.gpu_launcher.capacity() +
        relations.launches.capacity() + relations.launch_op.capacity() + relations.launch_gpu_begin.capacity() +
        relations.launch_gpu.capacity() + relations.captured_launches.capacity() + relations.python_parent.capacity()) *
       4;
  n += relations.graph_replays.capacity() * sizeof(GraphReplay) +
       relations.graph_captures.capacity() * sizeof(GraphCapture);
  return n;
}

EventIndex Relations::launcher_of(EventIndex gpu_event) const {
  const std::size_t i = find_sorted(gpu_events, gpu_event);
  return i < gpu_events.size() ? gpu_launcher[i] : kNoEvent;
}

EventIndex Relations::op_of_launch(EventIndex launch) const {
  const std::size_t i = find_sorted(launches, launch);
  return i < launches.size() ? launch_op[i] : kNoEvent;
}

const GraphReplay* Relations::replay_of(EventIndex gpu_event) const {
  auto it = std::lower_bound(graph_replays.begin(), graph_replays.end(), gpu_event,
                             [](const GraphReplay& r, EventIndex e) { return r.gpu < e; });
  return (it != graph_replays.end() && it->gpu == gpu_event) ? &*it : nullptr;
}

std::vector<EventIndex> Relations::gpu_of_launch(EventIndex launch) const {
  const std::size_t i = find_sorted(launches, launch);
  if (i >= launches.size()) return {};
  return std::vector<EventIndex>(launch_gpu.begin() + launch_gpu_begin[i],
                                 launch_gpu.begin() + launch_gpu_begin[i + 1]);
}

}  // namespace ferret
