// The one-trace rule families (rule_registry.h): each file's entry, which diagnose() runs through
// the registry and tests call alone. Each rule lives in one function with its threshold and the
// threshold's source written beside it; docs/RULES.md lists them all.
#pragma once

#include <string>
#include <vector>

#include "analysis/trace_analysis.h"
#include "diagnosis/finding.h"

namespace ferret {

void rules_step_time(const TraceAnalysis& a, std::vector<Finding>& out);       // GPU idle / utilization, CPU-bound
void rules_data_pipeline(const TraceAnalysis& a, std::vector<Finding>& out);   // input-bound
void rules_gpu_efficiency(const TraceAnalysis& a, std::vector<Finding>& out);  // Tensor Cores, occupancy, precision
void rules_host(const TraceAnalysis& a, std::vector<Finding>& out);  // launch-bound, syncs, allocator calls, copies
void rules_hot_operator(const TraceAnalysis& a, std::vector<Finding>& out);  // hot-operator (rules_operator_cost.cpp)
// host-preprocessing, and the Python frames as evidence in the host-wait findings (after those findings)
void rules_host_preprocessing(const TraceAnalysis& a, std::vector<Finding>& out);
// After folding: writes each finding's Finding::Notes on Python frames into its detail, once.
void say_python_frames(const TraceAnalysis& a, std::vector<Finding>& findings);
void rules_memory(const TraceAnalysis& a, std::vector<Finding>& out);
void rules_distributed(const TraceAnalysis& a, std::vector<Finding>& out);
void rules_hardware(const TraceAnalysis& a, std::vector<Finding>& out);   // copy bandwidth, pageable copies
void rules_cpu(const TraceAnalysis& a, std::vector<Finding>& out);        // traces without GPU work
void rules_attention(const TraceAnalysis& a, std::vector<Finding>& out);  // unfused-attention
void rules_operator(const TraceAnalysis& a, std::vector<Finding>& out);   // gemm-shape (the roofline's groups)
void rules_window(const TraceAnalysis& a, std::vector<Finding>& out);     // capture / initialisation / edge waits
void rules_compile(const TraceAnalysis& a, std::vector<Finding>& out);    // compile-in-window
// What compile-in-window and a window mostly spent compiling say of it, and their fixes (rules_compile.cpp).
std::string compile_detail(const CompileActivity& c);
std::vector<Fix> compile_fixes(const CompileActivity& c);
void rule_device_stall(const TraceAnalysis& a,
                       std::vector<Finding>& out);  // idle with work queued (rules_device_stall.cpp)
// top-cost: the operator with the most self time, informational; diagnose() calls it only when no
// finding is the verdict, so that no report reads as "nothing costs anything" (rules_operator_cost.cpp).
void rule_top_cost(const TraceAnalysis& a, std::vector<Finding>& out);

// Where the GPU idled: the longest gaps in its busy union, over the devices (one, or all: -1).
Occurrences gpu_idle_sites(const GpuTimelineResult& timeline, int device = -1);

// "trace" for a whole trace, "window" for a span or stretch chosen with --window / --time: what
// a rule's text calls the analysed time when there are no steps.
inline const char* window_noun(const TraceAnalysis& a) { return a.context.whole_trace() ? "trace" : "window"; }

}  // namespace ferret
