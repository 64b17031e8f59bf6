// Hot spots: where host and device time goes, by operator and by kernel, over the selected window.
//
// Operators (cpu_op spans starting in the window; ProfilerStep markers excluded):
//   host total   the op's wall time;  host self   total minus the time of its direct child spans
//                (child ops, runtime calls, Python frames), as torch.profiler's "Self CPU"
//   device self  GPU time (kernels, memcpys, memsets) launched directly by the op: the op is the
//                innermost cpu_op around the launch call (model.relations.launch_op)
//   device total device self of the op and of every op nested under it
// An op nested under another op with the same name counts in both (as torch.profiler's totals do);
// self times never double count.
// CUDA/HIP graph replays (model/graphs.h, docs/GRAPHS.md), counted when their graph launch call
// starts in the window: device self time of the op that captured the node (even when that op ran
// before the window: capture runs once, replays run every step) and device total of it and its
// enclosing ops; where the node's capture is unknown, a row of their own per graph ("CUDA graph
// replay (graph 7)"), never the op around cudaGraphLaunch, which only launched them.
// Kernels (GPU activity starting in the window): calls, total/mean/min/max, kernel-time-weighted
// mean of CUPTI's "est. achieved occupancy %", Tensor Core use by name (analysis/operator/tensor_cores.h),
// and the operator -> launch call paths that launched them.
// GPU work launched with no cpu_op around the launch call (custom extensions, Triton kernels
// launched directly, cuBLAS called from C++) gets a row of its own per kernel name, marked
// `no_operator`, with the Python frame it was launched from when the trace has one: such a kernel
// holding most of the device's time is the operator the user must look at.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace ferret {

struct OpStat {
  std::string name;
  std::string input_dims;   // raw "Input Dims" JSON text: set in shape groups only (empty when not recorded)
  std::string input_types;  // raw "Input type" JSON text: likewise
  std::uint64_t calls = 0;
  std::int64_t host_total_ns = 0;
  std::int64_t host_self_ns = 0;
  std::int64_t device_total_ns = 0;
  std::int64_t device_self_ns = 0;
  std::uint64_t kernels = 0;            // GPU activities launched directly
  std::int64_t device_replayed_ns = 0;  // the part of device_self_ns replayed by CUDA/HIP graphs
  bool graph_replay = false;            // a row for graph replays whose capturing op is unknown
  // A row for GPU work whose launch no cpu_op encloses (a C++/CUDA extension, a Triton kernel
  // launched directly, a library called from C++), by the name of the work: `name` is the kernel's.
  bool no_operator = false;
  std::string launch_site;  // the innermost Python frame around its launches, "" when not recorded
};

struct KernelLaunchPath {
  std::string op;       // launching cpu_op ("" when the launch has no enclosing op)
  std::string runtime;  // launch call: cudaLaunchKernel, cuLaunchKernel, cudaMemcpyAsync, ...
  std::uint64_t calls = 0;
  std::int64_t total_ns = 0;
};

struct KernelStat {
  std::string name;
  EventKind kind = EventKind::kKernel;  // kernel, memcpy or memset
  std::uint64_t calls = 0;
  std::int64_t total_ns = 0;
  std::int64_t min_ns = 0;
  std::int64_t max_ns = 0;
  double mean_ns = 0;
  double mean_occupancy_pct = -1;  // -1: the trace records no occupancy for it
  bool tensor_core = false;
  std::vector<KernelLaunchPath> launched_by;  // the top paths by time (at most 3)
};

struct HotSpotsResult {
  std::int64_t window_ns = 0;
  std::uint64_t op_calls = 0;              // cpu ops starting in the window
  std::int64_t host_op_ns = 0;             // host self time summed over all ops (= time inside ops)
  std::uint64_t gpu_activities = 0;        // kernels, memcpys, memsets starting in the window
  std::int64_t device_ns = 0;              // their summed durations
  std::int64_t attributed_device_ns = 0;   // the part launched from an op in the window, replayed, or in
                                           // no-operator rows (launched in the window with no op around)
  std::int64_t no_operator_device_ns = 0;  // ... of which in no-operator rows
  // GPU time that operators launched (or captured): a trace whose launches no op encloses at all
  // (a C++ runtime, an export without operator records) has none, and then a no-operator row is
  // not a kernel outside the operators but operators the trace did not record.
  std::int64_t operator_device_ns() const {
    return attributed_device_ns - no_operator_device_ns - replayed_unattributed_ns;
  }
  std::int64_t replayed_device_ns = 0;        // GPU time replayed by graph launches in the window
  std::int64_t replayed_unattributed_ns = 0;  // ... of which in graph-replay rows (capturing op unknown)
  std::int64_t tensor_core_ns = 0;            // kernel time in Tensor Core kernels
  bool has_shapes = false;                    // the trace recorded input shapes (record_shapes=True)

  // Top-K (ctx.options.top_k) rows each.
  std::vector<OpStat> ops_by_device;     // by name (and graph-replay rows), device self time descending
  std::vector<OpStat> ops_by_host;       // by name, host self time descending
  std::vector<OpStat> shapes_by_device;  // by name + input shapes, device self (host self without GPU)
  std::vector<KernelStat> kernels;       // by name, total time descending
};

HotSpotsResult analyze_hot_spots(const TraceModel& model, const AnalysisContext& ctx);

}  // namespace ferret
