// `ferret watch`'s rules (docs/WATCH.md, docs/RULES.md): the macro verdict from the CPU use of a
// command's process tree and its GPUs' utilisation (analysis/watch/watch_summary.h). Sampled counters
// bound no speed-up (max_speedup 1), except where the GPU's idle share is the bound.
#pragma once

#include <vector>

#include "analysis/watch/watch_summary.h"
#include "diagnosis/finding.h"

namespace ferret {

// GPU starved: the judged GPUs were busy less than 60% of the time (the threshold; the
// TensorBoard plugin flags GPU utilization < 50%, SageMaker Debugger's LowGPUUtilization p95 < 70%).
inline constexpr double kWatchGpuStarvedPct = 60;
// Pegged: the workers used >= 90% of the cores they could have (min(workers alive, cores
// available)); ferret's threshold, 10% left for the sampling's tick granularity and the kernel.
inline constexpr double kWatchPeggedShare = 0.90;
// One core: the main process used >= 0.85 cores on average and never much more than one (p95 <=
// 1.25): one thread is its limit, the Python interpreter's (GIL). ferret's thresholds.
inline constexpr double kWatchOneCoreMean = 0.85, kWatchOneCoreP95 = 1.25;
// Waiting: the whole tree used < 0.10 cores on average: it slept, read, or waited on the network,
// a lock or a device. ferret's threshold.
inline constexpr double kWatchIdleCores = 0.10;

void rules_watch(const WatchSummary& summary, std::vector<Finding>& out);

}  // namespace ferret
