// The operator layer's roofline: for every group of CPU ops with the same (op, input shapes,
// dtypes) in the window, the FLOPs and bytes per call (analysis/op_cost), the GPU time the ops
// launched, the achieved TFLOP/s and TB/s, and the position against the device's ceilings
// (analysis/device_peaks). docs/ROOFLINE.md describes the model and the thresholds.
//
// Attribution: each kernel / memcpy / memset is counted once, for the innermost op around its
// launch that has a cost model (an aten::linear calling aten::addmm: addmm; aten::to -> _to_copy ->
// copy_: copy_), or for the innermost op around the launch when none has one. Graph replays are
// left out (their launching op only launched the graph).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/device/device_peaks.h"
#include "analysis/operator/op_cost.h"

namespace ferret {

// The bound of a group.
//   compute   arithmetic intensity (FLOPs / bytes) at or above the ridge point of its ceiling
//   memory    below the ridge point (or no FLOPs at all: copies, fills)
//   latency   too little work to fill the device: mean kernel under kLatencyKernelNs, or the
//             largest grid under kLatencyGridFraction of the SM count
//   unknown   the op has no cost model, its shapes were not recorded, or a ceiling is unknown
enum class Bound { kCompute, kMemory, kLatency, kUnknown };
const char* bound_name(Bound b);

// A kernel launch costs a few microseconds of driver and queueing time ("Getting Started with CUDA
// Graphs", NVIDIA developer blog, 2019: launch overheads of a few µs per kernel), so a kernel
// shorter than this is dominated by fixed costs, not by the device's throughput.
inline constexpr std::int64_t kLatencyKernelNs = 5'000;
// A grid should have more blocks than the device has multiprocessors so that every one has work
// (CUDA C++ Best Practices Guide, "Execution Configuration"). Persistent GEMM kernels (cuBLAS
// sm90, stream-K) launch about one block per SM on purpose and loop over tiles, so a grid just
// under the SM count says nothing; under half of it, most of the device idles for the whole kernel.
inline constexpr double kLatencyGridFraction = 0.5;

struct RooflineGroup {
  std::string op;
  EventIndex first_op = kNoEvent;  // its first call: the key (name, dims, types) of every call
  std::string input_dims;          // "Input Dims" JSON text on one line
  std::string input_types;         // "Input type" JSON text on one line
  Dtype dtype = Dtype::kUnknown;
  OpKind kind = OpKind::kNone;
  std::uint64_t calls = 0;  // op calls that launched GPU work in the window
  std::uint64_t kernels = 0;
  std::int64_t kernel_ns = 0;  // summed GPU time the calls launched
  double flops_per_call = -1;  // -1 unknown
  double bytes_per_call = -1;
  double tflops_per_s = -1;  // achieved, over the summed GPU time; -1 unknown
  double tb_per_s = -1;
  bool matrix_units = false;          // most of its GPU time ran in Tensor / Matrix Core kernels
  std::int64_t max_grid_blocks = -1;  // the largest grid among its kernels; -1 not recorded
  // GEMM groups: batch x M x N x K of one call (op_cost), -1 otherwise.
  double gemm_batch = -1, gemm_m = -1, gemm_n = -1, gemm_k = -1;
  // The group's GPU time if every call ran on its roofline: calls x max(FLOPs / compute ceiling,
  // bytes / HBM bandwidth), the least time the device allows for this work at this precision on
  // these units; -1 when a figure or a ceiling is unknown. The operator rules' gains are the
  // time above it.
  double roofline_ns = -1;
  Bound bound = Bound::kUnknown;
  double peak_pct = -1;     // achieved / the bound's ceiling (latency: / the roofline at its intensity)
  std::string peak_source;  // "H100 SXM5 bf16 matrix (datasheet)", "--peaks FILE: hbm", ""
  std::string note;         // why it is unknown, or an assumption of the cost model
};

struct RooflineResult {
  int device = -1;  // the device whose GPU work is placed on the roofline (-1: no GPU work)
  DevicePeaks peaks;
  bool device_known = false;          // some ceiling is known for it
  std::int64_t kernel_ns = 0;         // GPU time launched by ops in the window, on that device
  std::int64_t modelled_ns = 0;       // ... in groups with a known FLOP or byte count
  std::vector<RooflineGroup> groups;  // every group, by kernel time descending
};

RooflineResult analyze_roofline(const TraceModel& model, const AnalysisContext& ctx);

// The least GPU time of an fp32 GEMM / convolution / attention group that runs off the matrix
// units, after the precision step the rules advise: bf16 on the matrix units (fp16 where the
// device has no bf16 figure, e.g. V100), each operand and result at half the bytes: calls x
// max(FLOPs / that peak, bytes / 2 / HBM bandwidth). -1 for other groups or unknown figures.
double precision_step_roofline_ns(const RooflineResult& r, const RooflineGroup& g);

// The GPU activities each of `groups` launched, as analyze_roofline attributed them (ascending per
// group): what a fix of those very calls re-times. One pass over the launches.
std::vector<std::vector<EventIndex>> roofline_groups_gpu_events(const TraceModel& model, const AnalysisContext& ctx,
                                                                const RooflineResult& r,
                                                                const std::vector<const RooflineGroup*>& groups);

}  // namespace ferret
