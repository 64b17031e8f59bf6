#include "analysis/trace_analysis.h"

#include <exception>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "base/threads.h"

namespace ferret {

namespace {

// The step graph (critical path) and the operator layer (roofline, kernel chains): they read the
// model and the context only, and take about as long as the other analyses together on large
// traces, so they run beside them.
void analyze_graph_and_operators(const TraceModel& model, TraceAnalysis& a) {
  a.critical_path = analyze_critical_path(model, a.context, &a.step_order);
  a.roofline = analyze_roofline(model, a.context);
  a.elementwise_chains = analyze_elementwise_chains(model, a.context);
}

}  // namespace

TraceAnalysis analyze_trace(const TraceModel& model, const AnalysisOptions& options) {
  TraceAnalysis a;
  a.model = &model;
  a.context = make_analysis_context(model, options);
  // Every analysis takes the model and context by const reference and writes only its own member
  // of `a`; the worker's members are read after the join.
  std::thread worker;
  std::exception_ptr worker_error;
  if (options.concurrent && model.size() >= options.concurrent_min_events && std::thread::hardware_concurrency() > 1) {
    try {
      worker = start_thread([&] {
        try {
          analyze_graph_and_operators(model, a);
        } catch (...) {
          worker_error = std::current_exception();
        }
      });
    } catch (const std::system_error&) {  // threads refused: one thread does it all
    }
  }
  a.summary = summarize_trace(model);
  a.breakdown = analyze_step_breakdown(model, a.context);
  a.gpu_metrics = analyze_gpu_metrics(model, a.context);
  a.timeline = analyze_gpu_timeline(model, a.context);
  if (options.timeline_definition == TimelineDefinition::kHta)
    a.hta_timeline = analyze_gpu_timeline(model, a.context, TimelineDefinition::kHta);
  a.hot_spots = analyze_hot_spots(model, a.context);
  a.data_pipeline = analyze_data_pipeline(model, a.context);
  a.host_blockers = analyze_host_blockers(model, a.context);
  a.causality = analyze_causality(model, a.context);
  a.python_frames =
      analyze_python_frames(model, a.context, a.host_blockers.launch.main_pid, a.host_blockers.launch.main_tid);
  a.memory = analyze_memory(model, a.context);
  a.communication = analyze_communication(model, a.context);
  a.hardware = analyze_hardware(model, a.context);
  a.window_activity = analyze_window_activity(model, a.context);
  a.attention = analyze_attention_patterns(model, a.context);
  a.workload = analyze_workload(model, a.context, a.window_activity);
  if (a.hot_spots.gpu_activities == 0) a.cpu_gemm = analyze_cpu_gemm_rate(model, a.context);
  if (worker.joinable()) {
    worker.join();
    if (worker_error) std::rethrow_exception(worker_error);
  } else {
    analyze_graph_and_operators(model, a);
  }
  return a;
}

std::string nothing_to_analyse(const TraceModel& model) {
  std::size_t metadata = 0, flows = 0;
  for (std::size_t e = 0; e < model.size(); ++e) {
    const EventKind k = model.kind[e];
    if (k == EventKind::kMetadata)
      ++metadata;
    else if (k == EventKind::kFlowStart || k == EventKind::kFlowEnd)
      ++flows;
    else
      return "";
  }
  if (model.size() == 0) return "nothing to analyse: the trace holds no events";
  return fmt::format("nothing to analyse: the trace holds only {} metadata and {} flow events, no timed events",
                     metadata, flows);
}

}  // namespace ferret
