// What the traced job does: training, inference, serving or a micro-benchmark, with the evidence
// (docs/RULES.md, "Fixes that fit the workload"). Advice depends on it: no optimizer or
// gradient-bucket fix for inference, no inference-engine export for training.
#pragma once

#include <cstdint>
#include <string>

#include "analysis/analysis.h"
#include "analysis/timeline/window_activity.h"

namespace ferret {

enum class Workload { kTraining, kInference, kServing, kMicrobenchmark, kUnknown };
const char* workload_name(Workload w);  // "training", "inference", "serving", "microbenchmark", "unknown"

struct WorkloadResult {
  Workload kind = Workload::kUnknown;
  std::uint64_t backward_ops = 0;     // autograd backward functions and *_backward ops in the window
  std::uint64_t optimizer_steps = 0;  // Optimizer.step spans and fused optimizer ops
  std::uint64_t forward_ops = 0;      // other operators
  std::string server;                 // the serving engine recognised by name, or ""
  std::string evidence;               // one line: what decided it
};

WorkloadResult analyze_workload(const TraceModel& model, const AnalysisContext& ctx,
                                const WindowActivityResult& window);

}  // namespace ferret
