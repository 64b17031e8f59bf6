// Communication on one rank: NCCL / RCCL kernels by collective, their sizes and bandwidth
// (nccl-tests conventions), and how much of their time is exposed - not hidden behind compute.
//
// What a kernel is and how big it is comes, in this order, from: the collective args on the
// kernel itself (torch >= 2.1), the args of the record_param_comms op that launched it, the
// `nccl:<name>` annotation around the launch (its Input Dims / Input type give the size), and
// last the kernel's own name (which in some NCCL builds says SendRecv for every collective).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/analysis.h"

namespace ferret {

enum class Collective : std::uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kSendRecv,  // point-to-point (send, recv, batched isend/irecv)
  kBarrier,
  kUnknown,
};
inline constexpr int kCollectiveCount = static_cast<int>(Collective::kUnknown) + 1;
const char* collective_name(Collective c);  // "AllReduce", ...

// "allreduce", "_allgather_base", "reduce_scatter_tensor_coalesced", "nccl:all_reduce",
// "ncclDevKernel_AllGather_RING_LL(...)", "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(...)", ...
Collective parse_collective(std::string_view text);

// The NCCL protocol a kernel name says ("ncclKernel_AllReduce_RING_LL_Sum_float" -> "LL"):
// "LL", "LL128", "SIMPLE", or "" when the name does not say (ncclDevKernel_Generic, RCCL).
const char* nccl_protocol(std::string_view kernel_name);

// nccl-tests' bus bandwidth factor for a group of n ranks: 2(n-1)/n AllReduce, (n-1)/n
// AllGather / ReduceScatter / AllToAll, 1 Broadcast / Reduce; -1 where none is defined.
double bus_factor(Collective c, int group_size);

// Bytes per element of a dtype as the profiler spells it ("Float", "BFloat16", "c10::Half",
// "float", "long", "unsigned char", ...); 0 when unknown.
int dtype_size(std::string_view dtype);

// The device of a collective that runs on the host (gloo): CPU tensors, the collective's own
// threads, no kernel.
inline constexpr std::int32_t kHostCollectiveDevice = -1;

// One NCCL kernel, or one gloo collective (its `gloo:<name>` span on a gloo thread).
struct CollectiveCall {
  EventIndex kernel = kNoEvent;  // the kernel, or the gloo span
  std::int32_t device = -1;      // kHostCollectiveDevice for gloo
  Collective kind = Collective::kUnknown;
  std::int64_t start_ns = 0;
  std::int64_t dur_ns = 0;
  // nccl-tests' size: the full buffer for AllReduce / Broadcast / Reduce / AllToAll, the full
  // output of AllGather, the full input of ReduceScatter. -1 unknown.
  std::int64_t bytes = -1;
  std::int32_t group_size = -1;  // -1 unknown
  double algbw_gbps = -1;        // bytes / duration, GB/s (1e9); -1 unknown
  double busbw_gbps = -1;
  const char* protocol = "";  // nccl_protocol of the kernel name
  // Where torch recorded them (collective args, torch >= 2.1): the process group's name and the
  // collective's sequence number in it, which identify the same call on every rank.
  StrId process_group = kEmptyStr;
  std::int64_t seq = kNoId;
  // The part of this kernel no compute kernel on its device overlaps (clipped to the window): the
  // time a wait or transfer inside it can cost the step.
  std::int64_t exposed_ns = 0;
};

struct CollectiveStats {
  Collective kind = Collective::kUnknown;
  std::uint64_t calls = 0;
  std::int64_t time_ns = 0;       // sum of kernel durations
  std::uint64_t sized_calls = 0;  // calls whose bytes are known
  std::int64_t bytes = 0;         // over sized calls
  std::int64_t sized_time_ns = 0;
  double algbw_gbps = -1;  // sum bytes / sum time over sized calls
  double busbw_gbps = -1;  // sum (bytes x factor) / sum time over calls with a known group size
  // The fastest call at or above kLargeMessageBytes: the closest one rank's trace gets to the
  // transfer speed, since every call's duration also holds the wait for the slowest peer.
  double best_large_busbw_gbps = -1;
  std::int64_t best_large_bytes = -1;
  std::int32_t group_size = -1;  // the group size when all calls agree, else -1
};

// Messages this large are past NCCL's latency-bound range (nccl-tests bandwidth curves flatten
// from tens of MB), so their bandwidth says something about the link.
inline constexpr std::int64_t kLargeMessageBytes = 16ll << 20;

struct CommunicationStep {
  std::int64_t step = -1;
  std::int64_t duration_ns = 0;
  std::int64_t comm_ns = 0;     // union of communication kernels in the step
  std::int64_t exposed_ns = 0;  // the part no compute kernel on the same device overlaps
  double comm_share = 0;
  double exposed_share = 0;
};

// How the job parallelises, as the time in its collectives tells it - which decides the fixes for
// communication it cannot hide: all-reduce carries replicated gradients (DDP), all-gather with
// reduce-scatter sharded parameters and gradients (FSDP, ZeRO), all-to-all sharded embedding tables
// or experts (torchrec, DLRM, mixture-of-experts). The largest of the three, when it holds at least
// half of the collective time; otherwise unknown (broadcasts, point-to-point, a mix).
enum class ParallelStyle { kUnknown, kReplicated, kSharded, kAllToAll };
struct ParallelStyleShare {
  ParallelStyle style = ParallelStyle::kUnknown;
  double share = 0;  // the style's collectives' share of all collective time
};
ParallelStyleShare parallel_style(std::int64_t all_reduce_ns, std::int64_t sharded_ns, std::int64_t all_to_all_ns,
                                  std::int64_t all_collectives_ns);
// "all-reduce (replicated gradients, as DDP)", ...; "" for unknown.
const char* parallel_style_phrase(ParallelStyle s);

struct CommunicationResult {
  bool present = false;  // any communication kernels (or gloo collectives) in the window
  // Every call in the window is a gloo collective on the host: exposure is then the collectives'
  // time that the process's other threads (the training thread) spend in no operator.
  bool on_host = false;
  std::string backend;  // distributedInfo
  int rank = -1;
  int world_size = -1;
  std::vector<CollectiveCall> calls;           // in the window, by start time
  std::vector<CollectiveStats> by_collective;  // by total time, descending
  ParallelStyleShare style;                    // from by_collective's times
  std::int64_t window_ns = 0;
  std::int64_t comm_ns = 0;         // union over devices of communication kernel time
  std::int64_t exposed_ns = 0;      // union over devices of exposed communication
  std::int64_t overlapped_ns = 0;   // per-device communication overlapped by compute, summed
  std::int64_t comm_device_ns = 0;  // per-device communication time, summed (overlap's denominator)
  double comm_share = 0;            // comm_ns / window
  double exposed_share = 0;         // exposed_ns / window
  double overlap_share = 0;         // overlapped_ns / comm_device_ns (HTA's comm/comp overlap)
  std::vector<CommunicationStep> steps;
  std::uint64_t sized_calls = 0;
  std::uint64_t calls_with_group = 0;
  // Waiting inside collectives, estimated from one rank: calls of the same collective, size, group
  // and process group move the same bytes, so the fastest of them bounds the transfer and the rest
  // of each call's time is this rank waiting for its peers (or a contended link). Over the groups
  // of at least kPeerWaitMinCalls sized calls; a lower bound (the fastest call may wait too).
  std::int64_t peer_wait_ns = 0;
  std::int64_t peer_wait_basis_ns = 0;  // the summed durations of those groups' calls
  std::int64_t peer_wait_floor_ns = 0;  // the summed floors (fastest call x calls) of those groups
  // The waiting that costs time: per call min(wait, exposed - fastest), the wait in the kernel's
  // exposed tail (compute beside a collective ran before it); and those calls' exposed time.
  std::int64_t peer_wait_exposed_ns = 0;
  std::int64_t peer_wait_exposed_basis_ns = 0;
};

inline constexpr std::uint64_t kPeerWaitMinCalls = 3;

// The NCCL kernels in the window with their collective, size and bandwidth (no time breakdown);
// the hardware analysis uses it to compare bus bandwidth with the scale-up link (gloo's host
// collectives are left out: they cross no device link).
std::vector<CollectiveCall> collect_collectives(const TraceModel& model, const AnalysisContext& ctx);

CommunicationResult analyze_communication(const TraceModel& model, const AnalysisContext& ctx);

}  // namespace ferret
