// The step dependency graph and its re-timing: the engine under the critical path
// (analysis/causal/critical_path.h) and the what-if (analysis/causal/whatif.h). docs/CRITICAL_PATH.md explains it.
//
// Nodes are the host spans of the window (CPU ops, annotations, runtime/driver calls) on every
// thread and the GPU activities launched from them. Edges:
//   host order     on one thread a span starts after what came before it (its offset from the
//                  previous work is kept: Python between ops costs what it cost)
//   nesting        a child moves with its parent (a shortened parent shortens its children alike)
//   launch         a GPU activity starts no earlier than its launch call plus the launch latency
//                  it showed (kLaunchLatencyNs when it waited on its stream instead)
//   stream order   an activity starts after the previous one on its stream (plus the gap it had,
//                  at most kBackToBackGapNs: a longer gap was the launch's, not the stream's)
//   stream wait    a GPU-side wait (cuda_sync) ends when the work it waited for on another stream
//                  ends
//   host sync      a synchronising call (cudaDeviceSynchronize, cudaStreamSynchronize,
//                  cudaEventSynchronize, aten::item, blocking copies) returns when the GPU work
//                  launched before it that it waited for ends, plus the tail it showed
// Re-timing walks the nodes once in time order (every edge points back in time, so the order is a
// topological order) and moves each node by the changes: O(n log n) for the sort, linear after.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/analysis.h"

namespace ferret {

// No node: the sentinel of every node index below (StepNode::previous, waited, last_gpu).
inline constexpr std::uint32_t kNoNode = 0xFFFFFFFFu;

// One key per host thread (pid, tid), as the graph's builders and readers group events by thread.
inline std::uint64_t thread_key(std::int32_t pid, std::int32_t tid) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(pid)) << 32) | static_cast<std::uint32_t>(tid);
}

// A kernel that waited on its stream may start this soon after its launch call began, once the
// stream frees up earlier: the launch-to-start latency of an idle GPU (~5 us; HTA's "kernel
// launch delay" and NVIDIA's launch overhead figures are a few microseconds).
inline constexpr std::int64_t kLaunchLatencyNs = 5'000;
// The host time of an asynchronous copy call from pinned memory: a launch's (a few us).
inline constexpr std::int64_t kAsyncCopyCallNs = 5'000;
// Back-to-back kernels on a stream are separated by a couple of microseconds of GPU front-end
// time; a longer gap is not the stream's own (ferret's level: twice the ~1-2 us seen in H100 traces).
inline constexpr std::int64_t kBackToBackGapNs = 4'000;
// A synchronising call returns a little after the work it waited on ends; work ending up to this
// after the call's end (clock rounding between host and device) still counts as waited on.
inline constexpr std::int64_t kSyncSlackNs = 2'000;

// What a re-timing changes. Defaults change nothing (the baseline).
struct RetimeChanges {
  bool remove_dataloader = false;             // enumerate(DataLoader) waits take no time
  bool remove_host_sync = false;              // synchronising calls take no time
  bool remove_launch_overhead = false;        // launch calls take no host time
  bool remove_exposed_communication = false;  // communication not overlapped by compute is gone
  bool remove_sync_copies = false;            // synchronous (and blocking pageable) copies stop blocking the host
  bool remove_device_stalls = false;  // the device no longer idles with its next work launched and nothing traced ahead
  // The host issues the step's work with no per-operator cost, as a captured graph's replay does:
  // its time stops passing except in what it must still do or wait for (syncs, DataLoader waits,
  // collectives run on the host, top-level CPU operators that launch no device work).
  bool remove_host_overhead = false;
  // Host-to-device copies from pageable memory become copies from pinned memory with
  // `non_blocking=True`: their calls return once issued, and the stream syncs their operator made
  // after them go. Device-to-host ones keep their wait: the host reads what they bring.
  bool pin_pageable_uploads = false;
  struct Speedup {
    std::string pattern;  // substring of a kernel name, or of an op enclosing its launch / a CPU op
    double factor = 1;    // durations divided by this (> 0)
    // A finding's fix selects what it speeds up by what the events are, not by a part of a name:
    // `selects` (of an event's name: a kernel's, or an op's enclosing a launch, or a host op's)
    // replaces the pattern, which then only describes the selection; `kernels` (of a kernel's
    // name), when set, keeps only the kernels it accepts among those selected through their op.
    std::function<bool(std::string_view)> selects;
    std::function<bool(std::string_view)> kernels;
    // Or the very device activities (ascending), when the fix shortens some instances of a name only
    // (the kernels of element-wise chains, not every aten::add).
    std::shared_ptr<const std::vector<EventIndex>> events;
    // Which durations it scales: device activities (by their name or their launching op's),
    // host ops that launch nothing (runtime calls too: an allocator call), or both (`--speedup`:
    // CPU ops, not runtime calls).
    enum class Scope : std::uint8_t { kAny, kDevice, kHost } scope = Scope::kAny;
  };
  std::vector<Speedup> speedups;
};

// How many events each change touched.
struct RetimeTouched {
  std::uint64_t dataloader_spans = 0;
  std::uint64_t host_syncs = 0;
  std::uint64_t launch_calls = 0;
  std::uint64_t communication = 0;            // communication kernels and host collectives shortened
  std::uint64_t device_stalls = 0;            // activities that no longer wait out an unexplained gap
  std::uint64_t host_overhead_spans = 0;      // top-level host spans whose time no longer passes
  std::uint64_t pageable_uploads = 0;         // copy calls (and the syncs after them) that no longer block
  std::vector<std::uint64_t> speedup_events;  // per RetimeChanges::speedups: kernels + CPU ops scaled
};

// What bound a GPU node's start.
enum class GpuBinding : std::uint8_t { kNone, kLaunch, kStream, kWait };

struct GpuNode {
  EventIndex event = kNoEvent;
  EventIndex launch = kNoEvent;  // the launch call, kNoEvent for none in the window
  std::int32_t step = -1;        // index into the re-timed steps, -1 outside them
  std::int64_t start_ns = 0;     // re-timed
  std::int64_t end_ns = 0;
  GpuBinding binding = GpuBinding::kNone;
  std::uint32_t previous = kNoNode;  // kStream: previous node on its stream; kWait: node waited on
};

struct SyncNode {
  EventIndex event = kNoEvent;
  std::int64_t start_ns = 0;  // re-timed
  std::int64_t end_ns = 0;
  std::uint32_t waited = kNoNode;  // the GPU node whose end it returned after, when it waited
};

struct RetimedStep {
  std::int64_t number = -1;  // ProfilerStep#N; -1 for the pseudo-step of a trace without steps
  EventIndex event = kNoEvent;
  std::int64_t start_ns = 0;  // re-timed
  std::int64_t end_ns = 0;
  std::int64_t cpu_end_ns = 0;       // re-timed end of the step's host span (its whole host work without steps)
  std::uint32_t last_gpu = kNoNode;  // the step's last-ending GPU node, if any
  std::int64_t duration_ns() const { return end_ns - start_ns; }
};

struct RetimeResult {
  bool has_steps = false;
  std::vector<RetimedStep> steps;
  std::vector<GpuNode> gpu;     // in the order re-timed
  std::vector<SyncNode> syncs;  // in the order re-timed (time order per thread)
  RetimeTouched touched;
};

// The order in which a window's nodes are re-timed (host spans, GPU activities without a launch
// in the window, the steps' time points, in time order). It does not depend on the changes, so
// one order, sorted once, serves every re-timing of a window: the critical path's and each
// what-if's. 4 bytes per node.
struct StepGraphOrder {
  bool built = false;
  std::vector<std::uint64_t> point_threads;  // the time points: thread and original time
  std::vector<std::int64_t> point_times;
  std::vector<std::uint32_t> items;  // an event index, or kPointItem | point index
  static constexpr std::uint32_t kPointItem = 0x80000000u;
  // Per item, a launch call's index in Relations::launches (kNoLaunch for any other item): each
  // re-timing would otherwise search for it.
  std::vector<std::uint32_t> launch_slots;
  static constexpr std::uint32_t kNoLaunch = 0xFFFFFFFFu;
  // Per interned name, what the graph needs to know of it (classified once, on the first sweep).
  std::vector<std::uint16_t> name_flags;
};

// Re-times the window's steps (or the whole window as one pseudo-step) with `changes`. With no
// changes every node keeps its time. `order`: the window's sweep order from an earlier call
// (its `order_out`), which saves collecting and sorting the nodes again.
RetimeResult retime_steps(const TraceModel& model, const AnalysisContext& ctx, const RetimeChanges& changes = {},
                          const StepGraphOrder* order = nullptr, StepGraphOrder* order_out = nullptr);

// The host spans the graph treats as synchronising calls.
bool is_graph_sync(const TraceModel& model, EventIndex e);

}  // namespace ferret
