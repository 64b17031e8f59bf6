// GPU metrics per device, as the TensorBoard profiler plugin defines them (kineto tb_plugin, docs/RULES.md),
// over the analysis window (the selected steps, or the whole trace when it has none):
//   utilization      |union of kernel intervals within the window| / window
//   SM efficiency    integral over time of min(1, sum of running kernels' blocks per SM) / window,
//                    blocks per SM = grid blocks / the device's SM count (CUPTI's "blocks per SM")
//   occupancy        kernel-time-weighted mean of CUPTI's "est. achieved occupancy %"
//   Tensor Cores     share of kernel time in kernels whose names show Tensor Core use
//                    (analysis/operator/tensor_cores.h)
// and, when the trace holds CUPTI PM sampling (`hardware_counters` counter events, Kineto 2025+),
// the measured SM-active and Tensor-active percentages: time-weighted means over the window, each
// sample holding its value until the next sample of its series (the last one marks the end).
// plus what the plugin's mixed-precision advice reads: the share of kernel time launched by
// Tensor-Core-eligible operators (conv, mm, bmm, addmm, linear, matmul and their backwards),
// and of that, the part that ran without Tensor Cores (a graph-replayed kernel counts for the op
// that captured it, when known: model/graphs.h). Kernel time is each kernel's duration
// clipped to the window (a sum, not a union), as in the plugin's Tensor Core ratio.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace ferret {

struct DeviceMetrics {
  int device = -1;         // GPU index (the pid of its events)
  std::string name;        // from deviceProperties, "" when the trace does not say
  int compute_major = -1;  // -1 when unknown
  int compute_minor = -1;
  int num_sms = -1;
  bool rocm = false;          // the trace was recorded on ROCm (AMD), whatever the name says (it may be empty)
  std::string identified_by;  // how its model was found (model/gpu_specs.h identified_by)

  std::int64_t window_ns = 0;          // the analysed window
  std::int64_t kernel_busy_ns = 0;     // union of kernels within the window
  std::int64_t kernel_ns = 0;          // sum of kernel durations within the window
  std::int64_t compute_kernel_ns = 0;  // the same without NCCL/RCCL kernels
  std::uint64_t kernels = 0;           // kernels that ran (partly) in the window

  double utilization_pct = 0;
  double sm_efficiency_pct = -1;       // -1: no kernel said its blocks per SM or grid (and no SM count)
  double achieved_occupancy_pct = -1;  // -1: no kernel carried an occupancy estimate
  // The same over kernels that are neither GEMM/convolution/attention nor communication: the
  // element-wise, reduction and copy kernels whose speed depends on hiding memory latency with
  // many resident warps. GEMM kernels run at low occupancy by design (large register tiles).
  double non_matmul_occupancy_pct = -1;
  std::int64_t non_matmul_occupancy_ns = 0;  // their kernel time (with an occupancy estimate)
  std::int64_t tensor_core_ns = 0;
  double tensor_core_pct = 0;                  // of kernel_ns
  std::int64_t tc_eligible_ns = 0;             // launched by Tensor-Core-eligible operators
  double tc_eligible_pct = 0;                  // of kernel_ns
  std::int64_t tc_eligible_without_tc_ns = 0;  // ... in kernels that show no Tensor Core use
  double tc_eligible_without_tc_pct = 0;       // of kernel_ns
  std::int64_t matmul_conv_ns = 0;             // GEMM / convolution / attention kernels (by name or launching op)
  double matmul_conv_pct = 0;                  // of compute_kernel_ns
  // Measured by PM sampling, -1 without samples: sm__cycles_active ("SM Active") and
  // sm__pipe_tensor_cycles_active ("Tensor Active"), % of peak, beside the estimates above.
  double measured_sm_active_pct = -1;
  double measured_tensor_active_pct = -1;
  double measured_coverage_pct = 0;  // share of the window the SM-active samples cover
};

struct GpuMetricsResult {
  std::vector<DeviceMetrics> devices;  // devices that ran kernels in the window, by index
};

GpuMetricsResult analyze_gpu_metrics(const TraceModel& model, const AnalysisContext& ctx);

// The device's vendor, told from its name (AMD, Radeon, Instinct) or, for NVIDIA, a CUDA compute
// capability (HIP reports one too: the name tells AMD apart) or an NVIDIA product name. Neither
// for MTIA or an accelerator the trace does not name.
bool device_is_amd(const DeviceMetrics& d);
bool device_is_nvidia(const DeviceMetrics& d);

// What the vendor calls its matrix units: "Tensor Cores" (NVIDIA), "Matrix Cores" (AMD CDNA, MFMA
// instructions); "" for other devices, whose units ferret does not know and says nothing of.
std::string matrix_unit_name(const DeviceMetrics& d);
// The device's multiprocessors by the vendor's name: "SM" (NVIDIA), "CU" (AMD), "compute-unit".
std::string multiprocessor_name(const DeviceMetrics& d);

}  // namespace ferret
