// The critical path of each step: the chain of dependent work that ends at the step's end
// (analysis/causal/step_graph.h builds the graph; docs/CRITICAL_PATH.md explains it), walked back from
// the step's end to its start, its time given to what each link was doing. The categories sum to
// the step time; the largest is what bounds the step.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/causal/step_graph.h"

namespace ferret {

enum class PathCategory : std::uint8_t {
  kCpu,             // host work: CPU ops, Python between them, other API calls
  kInput,           // waiting for the DataLoader
  kGpuCompute,      // kernels (other than communication), copies, fills
  kCommunication,   // NCCL/RCCL kernels, host collectives (gloo)
  kLaunchOverhead,  // launch calls and the launch-to-start latency of kernels waiting on them
  kKernelGaps,      // the GPU idle between dependent activities on the path (stream gaps, stream waits)
  kSyncWait,        // synchronising calls: their own time and their return after the GPU work
};
inline constexpr int kPathCategoryCount = static_cast<int>(PathCategory::kSyncWait) + 1;
const char* path_category_key(PathCategory c);    // "cpu", "input", "gpu_compute", ... (JSON keys)
const char* path_category_label(PathCategory c);  // "CPU", "input", "GPU compute", ...

struct CriticalPathStep {
  std::int64_t number = -1;  // ProfilerStep#N; -1 for the pseudo-step of a trace without steps
  std::int64_t start_ns = 0;
  std::int64_t duration_ns = 0;
  std::array<std::int64_t, kPathCategoryCount> ns{};  // sums to duration_ns
  PathCategory bound_by = PathCategory::kCpu;
  std::uint32_t links = 0;  // graph nodes on the path
};

struct CriticalPathResult {
  bool has_steps = false;
  std::vector<CriticalPathStep> steps;
  double mean_duration_ns = 0;
  std::array<double, kPathCategoryCount> mean_ns{};
  PathCategory bound_by = PathCategory::kCpu;  // the largest category of the mean step
};

// `order_out`, when given, receives the window's sweep order for later re-timings (what-ifs).
CriticalPathResult analyze_critical_path(const TraceModel& model, const AnalysisContext& ctx,
                                         StepGraphOrder* order_out = nullptr);

// The largest category (the first in enum order on ties).
PathCategory largest_category(const std::array<double, kPathCategoryCount>& ns);

}  // namespace ferret
