#include "model/trace_model.h"

#include <algorithm>

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
