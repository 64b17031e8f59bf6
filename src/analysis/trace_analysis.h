// Every analysis of one trace, run together: the input of diagnosis and of the reports.
#pragma once

#include <optional>
#include <string>

#include "analysis/analysis.h"
#include "analysis/causal/causality.h"
#include "analysis/causal/critical_path.h"
#include "analysis/causal/host_blockers.h"
#include "analysis/causal/python_frames.h"
#include "analysis/device/hardware.h"
#include "analysis/memory/memory.h"
#include "analysis/operator/attention_patterns.h"
#include "analysis/operator/cpu_gemm.h"
#include "analysis/operator/elementwise_chains.h"
#include "analysis/operator/gpu_metrics.h"
#include "analysis/operator/hot_spots.h"
#include "analysis/operator/roofline.h"
#include "analysis/timeline/communication.h"
#include "analysis/timeline/data_pipeline.h"
#include "analysis/timeline/gpu_timeline.h"
#include "analysis/timeline/step_breakdown.h"
#include "analysis/timeline/trace_summary.h"
#include "analysis/timeline/window_activity.h"
#include "analysis/timeline/workload.h"

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
  WorkloadResult workload;            // training, inference, serving, micro-benchmark (analysis/timeline/workload.h)
  // Why each device activity started when it did, and who waited on whom (analysis/causal/causality.h).
  CausalityResult causality;
  // The critical path of each step and what bounds it (analysis/causal/critical_path.h).
  CriticalPathResult critical_path;
  RooflineResult roofline;
  ElementwiseChainsResult elementwise_chains;  // memory-bound kernel runs between GEMMs
  // The window's step-graph sweep order, sorted once by the critical path, for the diagnosis's
  // what-if predictions (analysis/causal/step_graph.h).
  StepGraphOrder step_order;
};

TraceAnalysis analyze_trace(const TraceModel& model, const AnalysisOptions& options);

// Why the model holds nothing to analyse (no spans, instants or counters: only metadata and flow
// arrows, or no events at all), or "" when it does. A diagnosis of an empty window would read
// as "no bottleneck", which is not what an empty or gutted trace means.
std::string nothing_to_analyse(const TraceModel& model);

}  // namespace ferret
