// The GPU timeline per device and stream, as HolisticTraceAnalysis (HTA) defines it, with
// ferret's corrections where HTA's definition is unsound (docs/HTA.md):
//
//   temporal breakdown   over a span: idle = span - |union of GPU activity|, compute = |union of
//                        computation kernels| (not NCCL/RCCL, not memcpy/memset), non-compute =
//                        busy - compute (time when only communication or copies run)
//   kernel types         time with exactly each set of {computation, communication, memory} active
//   comm/comp overlap    |communication ∩ computation| / |communication|
//   idle per stream      each gap between consecutive activities on a stream is host wait (the
//                        activity's launch call started after the stream went idle: the CPU was
//                        late), kernel wait (gap < 30 us: back-to-back launch overhead) or other
//   launch statistics    launch delay = activity start - end of its launch call; short kernels: call
//                        <= 50 us and activity shorter than the call; delay outliers > 100 us
//   queue length         per stream, launch calls issued minus activities started, over time
//
// GPU activity is kernels, memcpys and memsets. cuda_sync events (a stream waiting on an event) and
// gpu_user_annotation ranges (labels over kernels) are not work and never count as busy.
//
// Ferret's definition (TimelineDefinition::kFerret): exact nanoseconds; GPU activity is clipped to
// the analysis window (the selected steps, GPU-extended; the whole trace without steps) and the span
// runs from its first start to its last end, per device; gaps on a stream are measured from the
// latest end so far (overlapping kernels never make negative idle); every launch API counts
// (cuLaunchKernel, hipLaunchKernel, ...), graph launches and synchronous copies excepted.
// TimelineDefinition::kHta reproduces HTA's numbers instead (for comparison): timestamps rounded
// inward to whole microseconds, activity launched before the start of the last ProfilerStep (the last
// step dropped), span = first to last such activity, gaps from the previous activity's end, and only
// cudaLaunchKernel / cudaLaunchKernelExC / cudaMemcpyAsync / cudaMemsetAsync in launch statistics.
//
// CUDA/HIP graph replays (model/graphs.h) are left out of the launch delay and short-kernel counts in
// both definitions: a replayed node was queued with its whole graph, so the delay from the graph
// launch call says nothing about launch latency, and a graph launch call lasts as long as it lasts
// whatever its nodes do. They are counted apart (graph launches, replayed activities and kernels), and
// the share of busy GPU time they cover is reported. GPU work recorded for a launch made during a
// capture (it carries a graph id) did not run then and is left out of the launch statistics too.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/intervals.h"

namespace ferret {

// HTA's thresholds (its get_idle_time_breakdown and get_cuda_kernel_launch_stats defaults).
inline constexpr std::int64_t kKernelWaitMaxGapNs = 30'000;     // gap < 30 us: launch overhead
inline constexpr std::int64_t kShortKernelMaxCallNs = 50'000;   // launch call <= 50 us
inline constexpr std::int64_t kLaunchDelayOutlierNs = 100'000;  // launch delay > 100 us

struct TemporalBreakdown {
  std::int64_t span_ns = 0;
  std::int64_t busy_ns = 0;  // |union of GPU activity|
  std::int64_t idle_ns = 0;
  std::int64_t compute_ns = 0;
  std::int64_t non_compute_ns = 0;
  double idle_pct() const { return pct(idle_ns); }
  double compute_pct() const { return pct(compute_ns); }
  double non_compute_pct() const { return pct(non_compute_ns); }
  double busy_pct() const { return pct(busy_ns); }
  double pct(std::int64_t ns) const {
    return span_ns > 0 ? 100.0 * static_cast<double>(ns) / static_cast<double>(span_ns) : 0.0;
  }
};

// Time with exactly one set of activity types running (HTA's kernel type breakdown); the seven
// entries sum to the busy time.
struct KernelTypeBreakdown {
  std::int64_t computation_ns = 0;
  std::int64_t communication_ns = 0;
  std::int64_t memory_ns = 0;
  std::int64_t computation_communication_ns = 0;
  std::int64_t computation_memory_ns = 0;
  std::int64_t communication_memory_ns = 0;
  std::int64_t all_three_ns = 0;
  std::int64_t total_ns() const {
    return computation_ns + communication_ns + memory_ns + computation_communication_ns + computation_memory_ns +
           communication_memory_ns + all_three_ns;
  }
};

struct LaunchStats {
  std::uint64_t launches = 0;        // activities paired with their launch call
  std::uint64_t short_kernels = 0;   // call <= 50 us and activity shorter than the call
  std::uint64_t delay_outliers = 0;  // launch delay > 100 us
  std::int64_t median_delay_ns = 0;  // 0 when there are no launches
  std::int64_t p90_delay_ns = 0;
  std::int64_t launch_call_ns = 0;     // host time inside those launch calls
  std::uint64_t graph_launches = 0;    // cudaGraphLaunch / hipGraphLaunch calls (not in the counts above)
  std::uint64_t graph_activities = 0;  // GPU activities replayed by graphs (kernels, memcpys, memsets)
  std::uint64_t graph_kernels = 0;     // ... of which kernels
};

struct StreamTimeline {
  std::int32_t device = -1;
  std::int32_t stream = -1;
  std::uint64_t activities = 0;
  std::int64_t first_ns = 0;  // first activity start .. last activity end (within the span)
  std::int64_t last_ns = 0;
  std::int64_t busy_ns = 0;
  // Gaps between consecutive activities on the stream, split three ways (sum = idle_ns).
  std::int64_t idle_ns = 0;
  std::int64_t host_wait_ns = 0;
  std::int64_t kernel_wait_ns = 0;
  std::int64_t other_wait_ns = 0;
  // Queue length: launch calls issued minus activities started. Time-weighted mean over the
  // stream's first launch .. last activity start.
  std::uint32_t max_queue = 0;
  double mean_queue = 0;
};

// Buckets of the downsampled busy curve: enough to see steps and idle gaps on a page, a few kB.
inline constexpr int kBusySeriesBuckets = 400;

struct DeviceTimeline {
  std::int32_t device = -1;
  std::int64_t span_start_ns = 0;
  std::int64_t span_end_ns = 0;
  // The busy share of each of kBusySeriesBuckets equal buckets of [span_start_ns, span_end_ns)
  // (0..1, from the union of GPU activity): the activity timeline the HTML report draws.
  std::vector<float> busy_series;
  // Launches queued and not yet started on the device (all its streams), the most in each bucket
  // of the busy series' buckets; only when AnalysisOptions::queue_series asks (ferret annotate).
  std::vector<std::uint32_t> queue_series;
  Occurrences idle_gaps;  // the longest gaps in the busy union within the span, by time
  TemporalBreakdown breakdown;
  KernelTypeBreakdown kernel_types;
  std::int64_t communication_ns = 0;          // |union of communication kernels|
  std::int64_t communication_overlap_ns = 0;  // |communication ∩ computation|
  double comm_comp_overlap_pct = -1;          // -1 when there is no communication
  LaunchStats launch;
  std::int64_t graph_replayed_ns = 0;   // |union of graph-replayed activity|
  std::vector<StreamTimeline> streams;  // by stream id
  double graph_replayed_pct() const { return replayed_share(graph_replayed_ns, breakdown.busy_ns); }
  static double replayed_share(std::int64_t replayed, std::int64_t busy) {
    return busy > 0 ? 100.0 * static_cast<double>(replayed) / static_cast<double>(busy) : 0.0;
  }
};

struct GpuTimelineResult {
  bool has_gpu = false;  // any GPU activity in the window
  TimelineDefinition definition = TimelineDefinition::kFerret;
  std::vector<DeviceTimeline> devices;  // by device id
  // Every device together: times summed over devices (span too), launch counts added; the median
  // launch delay is over all launches.
  TemporalBreakdown overall;
  KernelTypeBreakdown kernel_types;
  std::int64_t communication_ns = 0;
  std::int64_t communication_overlap_ns = 0;
  double comm_comp_overlap_pct = -1;
  LaunchStats launch;
  std::int64_t graph_replayed_ns = 0;  // summed over devices
  // Share of busy GPU time (overall.busy_ns) in which graph-replayed work ran.
  double graph_replayed_pct() const { return DeviceTimeline::replayed_share(graph_replayed_ns, overall.busy_ns); }
};

GpuTimelineResult analyze_gpu_timeline(const TraceModel& model, const AnalysisContext& ctx);
GpuTimelineResult analyze_gpu_timeline(const TraceModel& model, const AnalysisContext& ctx,
                                       TimelineDefinition definition);

}  // namespace ferret
