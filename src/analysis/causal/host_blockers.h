// Host-side blockers: what makes the CPU wait, or the GPU wait for the CPU, over the selected window.
//
//   device syncs       host calls that block until the GPU drains: cudaStreamSynchronize,
//                      cudaDeviceSynchronize, cudaEventSynchronize and their hip* / cu* forms, and
//                      the ops aten::item / aten::_local_scalar_dense (a tensor read on the host:
//                      .item(), .tolist(), if tensor:, print). Nested ones count once (the outermost
//                      span: aten::item > _local_scalar_dense > cudaStreamSynchronize). CPU-only
//                      traces count the ops too: the code still syncs once it runs on a GPU.
//   allocator calls    cudaMalloc / cudaFree / cudaHostAlloc / hipMalloc / cuMemAlloc / cuMemCreate ...
//                      (not the cheap stream-ordered *Async forms); "steady state" = every selected
//                      step except the trace's first, where the caching allocator warms up
//   copies             pageable memcpys (the name says "Pageable": staged through a bounce buffer,
//                      synchronous with the host) and synchronous memcpy/memset calls (cudaMemcpy,
//                      cudaMemset, hipMemcpyWithStream, cuMemcpyHtoD ...: no "Async" in the name)
//   launch regime      whether the GPU starves because kernels are too short for the host to launch
//                      them (launch-bound) or because the host is busy elsewhere (CPU-bound)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/intervals.h"

namespace ferret {

// Launch-bound: the typical kernel is shorter than a launch costs. A CUDA launch costs ~5-10 us of
// host time (HTA calls a kernel "short" when it is shorter than its launch call); 10 us is the top.
inline constexpr std::int64_t kLaunchBoundMedianKernelNs = 10'000;
// The GPU counts as starved below 70% busy (SageMaker Debugger's low-GPU-utilization rule fires at
// p95 < 70%).
inline constexpr double kGpuStarvedBusyShare = 0.70;
// Kernel launch overhead (host time in launch calls / window) at which XProf calls a job moderately
// launch-bound (>= 3%; high at >= 15%, see rules_host.cpp).
inline constexpr double kLaunchOverheadModerate = 0.03;
// Too few kernels say nothing about a regime (a trace of a handful of kernels is a micro-benchmark).
inline constexpr std::uint64_t kRegimeMinKernels = 50;
// Launch-bound or CPU-bound needs the host to be the cause: at least half of the GPU's idle time
// falls while the launching thread runs ops or launch calls (not data loading, syncs, allocator
// calls). Ferret's threshold: the majority of the idle time names the cause.
inline constexpr double kHostIssueIdleShare = 0.50;

struct NamedTime {
  std::string name;
  std::uint64_t count = 0;
  std::int64_t total_ns = 0;
};

struct StepCount {
  std::int64_t step = -1;  // ProfilerStep number
  std::uint64_t count = 0;
  std::int64_t total_ns = 0;
};

struct HostSyncs {
  std::uint64_t count = 0;    // outermost sync spans starting in the window
  std::int64_t total_ns = 0;  // host time blocked in them
  // What the syncs cost the GPU. When a sync returns, the host has nothing queued ahead, so the GPU
  // idles whenever it finishes work faster than the host issues the next. Without the sync the
  // host would have been as far ahead as the sync lasted, so the GPU idle from its return until
  // its duration later (not past the window nor the start of its last GPU work, not while the
  // launching thread loads data) is what removing it saves; overlapping spans count once.
  std::int64_t gpu_stall_ns = 0;
  std::vector<NamedTime> by_name;   // aten::item, cudaStreamSynchronize, ... (time descending)
  std::vector<NamedTime> callers;   // the op / annotation / Python frame around each sync (top-K)
  std::vector<StepCount> per_step;  // every selected step, in order (empty without steps)
  std::uint64_t steps_with_syncs = 0;
  Occurrences sites;                 // the longest of the outermost syncs, by time
  std::uint64_t gpu_side_waits = 0;  // cuda_sync events: GPU streams waiting on events
  // Blocking device-to-host copies that are syncs (cudaMemcpyAsync to pageable memory, cudaMemcpy,
  // hipMemcpyWithStream, hipMemcpy ...): the call holds the host far longer than its transfer takes
  // (kSyncCopyFactor times, and kSyncCopyMinWaitNs more), so it waited for the GPU's whole queue -
  // the .item() / .cpu() / .tolist() / print(tensor) / `if tensor:` of the code. Those not inside
  // an aten::item are counted above as syncs of their own; all are described here.
  std::uint64_t copy_syncs = 0;
  std::int64_t copy_sync_bytes = 0;         // summed; -1 sizes not counted
  std::int64_t copy_sync_host_ns = 0;       // host time in the calls
  std::int64_t copy_sync_transfer_ns = 0;   // the copies' own GPU time
  std::vector<NamedTime> copy_sync_stacks;  // "aten::to > aten::_to_copy > aten::copy_ > cudaMemcpyAsync"
  // The syncs by what the code did, each fixed another way:
  //   reads           a value read on the host: aten::item / _local_scalar_dense, a blocking copy;
  //   data_dependent  an op whose output size depends on the data waits for it (nonzero,
  //                   masked_select, unique, repeat_interleave, ...: `x[mask]` is one of them);
  //   inside_ops      another op syncs by itself (a library op: fbgemm, a custom kernel's wrapper);
  //   explicit_calls  a device, stream or event sync with no op around it: the code's own
  //                   torch.cuda.synchronize(), stream.synchronize(), event.synchronize().
  // `where`: the callers (for explicit calls the sync API itself when nothing named is around it),
  // by time, top 3.
  struct Kind {
    std::uint64_t count = 0;
    std::int64_t total_ns = 0;
    std::vector<NamedTime> where;
  };
  Kind reads, data_dependent, inside_ops, explicit_calls;
};

// Ops whose output size depends on the values of their input, so that they wait for the device to
// size the result (PyTorch's CUDA implementations copy the count to the host): nonzero and what
// calls it.
bool is_data_dependent_shape_op(std::string_view op_name);
// Ops that read a device value on the host: aten::item, a copy to the host, a truth test.
bool is_host_read_op(std::string_view op_name);

// A device-to-host copy call is a sync when it holds the host at least this many times its
// transfer and at least kSyncCopyMinWaitNs longer. ferret's levels: a copy call costs the host
// the transfer plus a launch (~5-10 us, see kLaunchBoundMedianKernelNs); ten times the transfer
// and 50 us (five launches) beyond it is no transfer, it is a wait for queued work.
inline constexpr double kSyncCopyFactor = 10.0;
inline constexpr std::int64_t kSyncCopyMinWaitNs = 50'000;
// Transfer time of a copy whose GPU activity has no duration: its bytes at 25 GB/s (PCIe 4.0 x16's
// ~32 GB/s less protocol overhead; NVIDIA's bandwidthTest reports ~25 GB/s pinned).
inline constexpr double kCopyBytesPerNs = 25.0;

struct AllocatorCalls {
  std::uint64_t count = 0;  // in the window
  std::int64_t total_ns = 0;
  bool steady_state_known = false;  // a selected step other than the trace's first exists
  std::uint64_t steady_count = 0;   // in selected steps after the trace's first
  std::int64_t steady_ns = 0;
  std::int64_t steady_window_ns = 0;  // wall time of those steps
  std::uint64_t steady_steps = 0;
  std::vector<NamedTime> by_name;  // steady state when known, else the whole window
};

struct CopyBlockers {
  std::uint64_t pageable_copies = 0;  // GPU memcpys from or to pageable memory
  std::int64_t pageable_bytes = 0;    // -1 entries (unknown size) not counted
  std::int64_t pageable_ns = 0;       // their GPU time
  std::int64_t pageable_host_ns = 0;  // host time in the calls that issued them (they block the host)
  // What they cost: host-to-device calls their duration (the host stages the data); device-to-host
  // calls the GPU bubble after them, as a sync (they wait for the GPU). Copies made inside a sync
  // span (aten::item reads its scalar this way) are the sync's cost, not counted here.
  std::int64_t pageable_cost_ns = 0;
  std::uint64_t pageable_in_syncs = 0;
  std::vector<NamedTime> pageable_by_name;  // "Memcpy HtoD (Pageable -> Device)", ...
  std::uint64_t sync_copy_calls = 0;        // synchronous memcpy / memset API calls (not syncs, see below)
  std::int64_t sync_copy_ns = 0;            // host time in them
  std::vector<NamedTime> sync_copy_by_name;
  std::uint64_t sync_copy_waits = 0;  // synchronous copy calls that were syncs (HostSyncs::copy_syncs)
  std::uint64_t memsets = 0;          // GPU memset activities
  std::int64_t memset_ns = 0;
};

enum class HostRegime : std::uint8_t {
  kNoGpu,        // no GPU work in the window (CPU-only trace)
  kTooFew,       // fewer than kRegimeMinKernels kernels
  kGpuBound,     // GPU busy >= 70%: the host keeps up
  kLaunchBound,  // starved GPU idle while the host issues work; short kernels; launch overhead >= 3%
  kCpuBound,     // starved GPU idle while the host runs ops, kernels long enough to hide launches
  kOther,        // starved GPU for another reason (input, syncs, allocator, communication, ...)
};
const char* host_regime_name(HostRegime r);  // "no_gpu", "too_few_kernels", "gpu_bound", ...

// What the launching thread does while the GPU idles. Each idle instant goes to the first state
// that holds, in this priority: sync (the call, and the GPU idle it causes after it returns: up to
// the sync's own duration later, the head start the host lost) > data loading > host preprocessing
// (python_frames.h) > blocking API (allocator calls, synchronous copies) > launch call > other op or
// API call > none of these (Python between ops, untraced).
struct IdleAttribution {
  std::int64_t gpu_idle_ns = 0;  // window - GPU busy
  std::int64_t sync_ns = 0;
  std::int64_t dataloader_ns = 0;
  std::int64_t preprocessing_ns = 0;
  std::int64_t blocking_api_ns = 0;
  std::int64_t launch_ns = 0;
  std::int64_t op_ns = 0;
  std::int64_t other_ns = 0;
  std::int64_t issuing_ns() const { return launch_ns + op_ns; }  // the host is issuing work
};

struct LaunchRegime {
  std::uint64_t kernels = 0;  // kernels starting in the window
  std::int64_t median_kernel_ns = 0;
  std::int64_t gpu_busy_ns = 0;      // |union of kernels, memcpys, memsets| in the window
  double gpu_busy_share = 0;         // of the window
  std::uint64_t launch_calls = 0;    // kernel launches, graph launches, async copies and fills
  std::int64_t launch_call_ns = 0;   // host time in them (every thread)
  double launch_overhead_share = 0;  // launch_call_ns / window (XProf's kernel launch overhead)
  std::uint64_t short_kernels = 0;   // kernels shorter than their launch call
  // The thread issuing most launches (with no GPU: most op time); its busy share of the window in
  // ops and API calls outside data loading, syncs and blocking calls, and the part of that time in
  // launch calls.
  std::int32_t main_pid = 0;
  std::int32_t main_tid = 0;
  double host_busy_share = 0;
  double launch_share_of_host = 0;
  IdleAttribution idle;  // GPU idle time by what the main thread was doing
  HostRegime regime = HostRegime::kNoGpu;
};

struct HostBlockersResult {
  std::int64_t window_ns = 0;
  bool has_gpu = false;
  HostSyncs syncs;
  AllocatorCalls allocator;
  CopyBlockers copies;
  LaunchRegime launch;
};

HostBlockersResult analyze_host_blockers(const TraceModel& model, const AnalysisContext& ctx);

// Name tests, exposed for the rules and tests.
bool is_host_sync_call(std::string_view name);  // *Synchronize runtime/driver calls
bool is_host_sync_op(std::string_view name);    // aten::item, aten::_local_scalar_dense
bool is_allocator_call(std::string_view name);  // cudaMalloc, cudaFree, hipMalloc, cuMemAlloc, ...
bool is_sync_copy_call(std::string_view name);  // cudaMemcpy, cudaMemset, hipMemcpyWithStream, ...
bool is_launch_call(std::string_view name);     // kernel / graph launches, async copies and fills

}  // namespace ferret
