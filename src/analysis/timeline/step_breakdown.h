// Step time breakdown, as the TensorBoard profiler plugin defines it (kineto tb_plugin, docs/RULES.md): every
// instant of a step is given to the first category active at that instant, in the priority
//   Kernel > Memcpy > Memset > Communication > Runtime > DataLoader > CPU Exec > Other,
// so the categories of a step sum exactly to its wall time.
//
// What each category holds:
//   Kernel         GPU kernels other than NCCL/RCCL ones (every device, or --device N only)
//   Memcpy, Memset GPU copies and fills (same device rule)
//   Communication  NCCL/RCCL kernels; host spans of gloo collectives ("gloo:all_reduce"), which run
//                  on the CPU
//   Runtime        CUDA/HIP runtime and driver API calls (cudaLaunchKernel, cuLaunchKernel, ...)
//   DataLoader     host spans "enumerate(DataLoader)#..." and "enumerate(DataPipe)#..."
//   CPU Exec       other CPU operators and user annotations (record_function ranges), except the
//                  ProfilerStep#N span itself
//   Other          the rest: Python between operators, profiler overhead, unrecorded waits
// Like the plugin, python_function frames are not CPU Exec: the outermost frames ("<module>",
// the training loop) enclose the whole step, and counting them would turn every gap into CPU Exec.
// Unlike the plugin, host-side "nccl:*" ops are CPU Exec (the NCCL kernel is the communication;
// the host span only enqueues it), cuda_driver calls are Runtime, and gpu_user_annotation ranges
// (GPU-side labels over kernels already counted) are ignored rather than counted as CPU Exec.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "analysis/analysis.h"

namespace ferret {

enum class StepCategory : std::uint8_t {
  kKernel,
  kMemcpy,
  kMemset,
  kCommunication,
  kRuntime,
  kDataLoader,
  kCpuExec,
  kOther,
};
inline constexpr int kStepCategoryCount = static_cast<int>(StepCategory::kOther) + 1;
const char* step_category_label(StepCategory c);  // the plugin's label: "Kernel", ..., "CPU Exec", "Other"
const char* step_category_key(StepCategory c);    // stable snake_case: "kernel", ..., "cpu_exec", "other"

struct StepCost {
  std::int64_t number = -1;  // ProfilerStep#N; -1 for the pseudo-step of a trace without steps
  std::int64_t start_ns = 0;
  std::int64_t duration_ns = 0;
  std::array<std::int64_t, kStepCategoryCount> ns{};  // sums to duration_ns

  std::int64_t of(StepCategory c) const { return ns[static_cast<int>(c)]; }
  double pct(StepCategory c) const {
    return duration_ns > 0 ? 100.0 * static_cast<double>(of(c)) / static_cast<double>(duration_ns) : 0.0;
  }
};

struct StepBreakdownResult {
  bool has_steps = false;       // false: one pseudo-step spans the whole trace
  std::vector<StepCost> steps;  // selected steps, in time order
  // Mean over the steps (a mean of integer nanoseconds is kept as a double).
  double average_duration_ns = 0;
  std::array<double, kStepCategoryCount> average_ns{};
  std::array<double, kStepCategoryCount> average_pct{};  // of the mean step; sums to 100

  double average_of(StepCategory c) const { return average_ns[static_cast<int>(c)]; }
  double average_pct_of(StepCategory c) const { return average_pct[static_cast<int>(c)]; }
};

StepBreakdownResult analyze_step_breakdown(const TraceModel& model, const AnalysisContext& ctx);

}  // namespace ferret
