// Who waits on whom: for every device activity (kernel, copy, fill) why it started when it did,
// and for the window, how its time divides between the device waiting on the host, the host
// waiting on the device, both working, and neither (docs/CAUSALITY.md).
//
// An activity on stream S launched by a call at time L (the call's start) could start at the
// latest of L, the end of S's previous activity, and - when another stream's activity ended just
// before it (within kDependencySlackNs) - that end. Its reason is the one of these that bound it:
//   launch          the stream was idle when the launch came: the device waited on the host
//   stream backlog  S was still busy when the launch came: the work queued behind earlier work
//   cross-stream    it started right as another stream's work ended, later than its own launch
//                   and stream allowed: an event wait, a collective's dependency
//   before trace    no launch in the trace (queued before profiling began), or a launch-to-start
//                   delay of over kUntracedQueueNs with nothing traced in front of it on any
//                   stream: only a queue the trace does not show explains it
//   unknown         a GPU activity whose launch the trace lost (correlation matching nothing)
// The delay each reason accounts for: the stream's idle time before the launch (launch), the time
// the launched work waited in the queue (backlog), the wait past launch and queue (cross-stream),
// the launch-to-start delay (before trace).
//
// The window (per device): time in blocking host calls (synchronisations, synchronous copies) is
// the host waiting on the device - on traced work while the device is busy, on work the trace
// does not hold (queued before profiling, another process) while it shows none; the rest of the
// device's busy time is both working; of its idle time, the device waited on the host from the
// start of the gap until the launch call of the activity that ends it returned (a first call that
// loads code objects can take milliseconds), and through a launch latency of up to
// kLaunchLatencyMaxNs after it; the rest is neither (a dependency, a queue the trace does not
// show, the window's tail). The four add up to the window.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "analysis/analysis.h"
#include "model/trace_model.h"

namespace ferret {

enum class StartReason : std::uint8_t { kLaunch, kStreamBacklog, kCrossStream, kBeforeTrace, kUnknown };
inline constexpr int kStartReasonCount = 5;
const char* start_reason_name(StartReason r);  // "launch", "stream_backlog", ... (JSON keys)

// Launch latency is 5-20 us on CUDA and HIP; a delay of a millisecond with nothing traced in front
// of the activity is a queue the trace does not hold.
inline constexpr std::int64_t kUntracedQueueNs = 1'000'000;
// The longest launch latency counted as the host's (HolisticTraceAnalysis's launch-delay outlier
// threshold): idle time after a launch beyond it is not the host's doing.
inline constexpr std::int64_t kLaunchLatencyMaxNs = 100'000;
// A launch call this long (ten ordinary launches) whose work then started over kUntracedQueueNs
// after it returned was held by a full device queue (CUDA and HIP block a launch until a queue
// slot frees): the host waited on the device in it, as in a sync. The first launches of lazily
// loaded kernels are as long but find the queue short.
inline constexpr std::int64_t kBlockedLaunchMinNs = 50'000;
bool is_queue_blocked_launch(std::int64_t call_ns, std::int64_t call_end_ns, std::int64_t work_start_ns);
// An idle gap shorter than the longest launch latency is the device's front end, not a stall.
inline constexpr std::int64_t kStallMinNs = kLaunchLatencyMaxNs;
// An activity starting within this of another stream's end, later than its own launch and stream
// allowed, waited on that end.
inline constexpr std::int64_t kDependencySlackNs = 10'000;

struct ActivityCause {
  EventIndex event = kNoEvent;
  StartReason reason = StartReason::kUnknown;
  std::int64_t delay_ns = 0;  // what the reason accounts for (see above)
};

struct ReasonTotal {
  std::uint64_t activities = 0;
  std::int64_t delay_ns = 0;
};

struct DeviceCausality {
  std::int32_t device = 0;
  std::int64_t window_ns = 0;
  std::int64_t busy_ns = 0;
  std::int64_t device_waited_on_host_ns = 0;
  std::int64_t host_waited_on_device_ns = 0;  // blocked while the device works, traced or not
  std::int64_t both_busy_ns = 0;
  std::int64_t neither_ns = 0;
  std::array<ReasonTotal, kStartReasonCount> reasons{};
  // Stalls: idle gaps of at least kStallMinNs ended by work whose launch had returned before the gap
  // began - the device sat idle with its next work queued, neither host nor traced work to blame
  // (part of neither_ns, and of host_waited_on_device_ns where the host was blocked meanwhile).
  std::uint64_t stalls = 0;
  std::int64_t stall_ns = 0;
  std::uint64_t stalls_before_graph_work = 0;  // of those, ended by work a graph launch queued
  std::uint64_t launched = 0;                  // activities with their launch in the trace
  std::int64_t median_launch_to_start_ns = 0;  // over those
  std::int64_t p90_launch_to_start_ns = 0;
  const ReasonTotal& reason(StartReason r) const { return reasons[static_cast<std::size_t>(r)]; }
};

struct CausalityResult {
  std::vector<DeviceCausality> devices;   // by device index
  std::vector<ActivityCause> activities;  // every activity in the window, by start time per device
  // The device with the most busy time (the one a step waits for), or -1 when there is none.
  int busiest = -1;
};

CausalityResult analyze_causality(const TraceModel& model, const AnalysisContext& ctx);

}  // namespace ferret
