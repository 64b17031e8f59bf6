// Every analysis of one trace, run together: the input of diagnosis and of the reports.
#pragma once

#include <optional>
#include <string>

#include "analysis/analysis.h"
#include "analysis/attention_patterns.h"
#include "analysis/causality.h"
#include "analysis/communication.h"
#include "analysis/cpu_gemm.h"
#include "analysis/critical_path.h"
#include "analysis/data_pipeline.h"
#include "analysis/elementwise_chains.h"
#include "analysis/gpu_metrics.h"
#include "analysis/gpu_timeline.h"
#include "analysis/hardware.h"
#include "analysis/host_blockers.h"
#include "analysis/hot_spots.h"
#include "analysis/memory.h"
#include "analysis/python_frames.h"
#include "analysis/roofline.h"
#include "analysis/step_breakdown.h"
#include "analysis/trace_summary.h"
#include "analysis/window_activity.h"
#include "analysis/workload.h"

namespace ferret {

struct TraceAnalysis {
  const TraceModel* model = nullptr;
  AnalysisContext context;
  TraceSummary summary;
  StepBreakdownResult breakdown;
  GpuMetricsResult gpu_metrics;
  GpuTimelineResult timeline;  // ferret's definition: what the rules read
  // HolisticTraceAnalysis's definition, when asked for (--timeline-definition hta): what the
  // reports show in place of ferret's timeline, so a user can check ferret against HTA.
  std::optional<GpuTimelineResult> hta_timeline;
  HotSpotsResult hot_spots;
  DataPipelineResult data_pipeline;
  HostBlockersResult host_blockers;
  PythonFramesResult python_frames;  // on the thread host_blockers found launching the GPU work
  MemoryResult memory;
  CommunicationResult communication;
  HardwareResult hardware;
  WindowActivityResult window_activity;
  AttentionPatternsResult attention;  // attention computed op by op (unfused)
  CpuGemmRate cpu_gemm;               // the host's own GEMM rate (traces without device work only)
  WorkloadResult workload;            // training, inference, serving, micro-benchmark (analysis/workload.h)
  // Why each device activity started when it did, and who waited on whom (analysis/causality.h).
  CausalityResult causality;
  // The critical path of each step and what bounds it (analysis/critical_path.h).
  CriticalPathResult critical_path;
  RooflineResult roofline;
  ElementwiseChainsResult elementwise_chains;  // memory-bound kernel runs between GEMMs
  // The window's step-graph sweep order, sorted once by the critical path, for the diagnosis's
  // what-if predictions (analysis/step_graph.h).
  StepGraphOrder step_order;
};

TraceAnalysis analyze_trace(const TraceModel& model, const AnalysisOptions& options);

// Why the model holds nothing to analyse (no spans, instants or counters: only metadata and flow
// arrows, or no events at all), or "" when it does. A diagnosis of an empty window would read
// as "no bottleneck", which is not what an empty or gutted trace means.
std::string nothing_to_analyse(const TraceModel& model);

}  // namespace ferret
