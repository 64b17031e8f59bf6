// The simulation behind `ferret gen job`: one data-parallel training job on H100s, as seen by each
// rank's profiler. Gradients are synchronised either as DDP does it (an NCCL all-reduce per
// gradient bucket) or as ZeRO-2 does (a reduce-scatter per bucket in backward; each rank steps
// the optimizer on its shard, then all-gathers the updated parameters).
//
// Each rank is a RankSimulator: a deterministic function of (job plan, rank, the end times of the
// job's collectives). A step is built in two halves around the collectives that couple the ranks:
// begin_step() runs the rank up to the end of backward and says when each bucket's all-reduce
// could start there; the caller settles every collective across ranks (collective_end below);
// finish_step() then fills in the NCCL kernels and runs the optimizer, which waits for them. With
// ZeRO-2 the optimizer's all-gathers couple the ranks again: finish_step() returns their arrivals,
// the caller settles them, and finish_gathers() ends the step.
// The same simulator with the same inputs gives the same events, so a job can be simulated once
// for its physics (events not recorded) and replayed rank by rank to write the files.
//
// The workload (model shapes, kernels, gradient buckets) is data in gen/job_workload.h.
//
// All times here are true time in ns since the job's epoch (kJobEpochNs); each host's clock
// offset is applied only when events are written (job.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gen/job_workload.h"
#include "gen/kineto_emitter.h"

namespace ferret::jobsim {

enum class StragglerCause { kCompute, kInput, kSync };
const char* straggler_cause_name(StragglerCause cause);  // "compute", "input", "sync"

enum class Sharding { kDdp, kZero2 };
const char* sharding_name(Sharding sharding);  // "ddp", "zero2"

// Link bandwidths (nccl-tests bus bandwidth), bytes per ns = GB/s. NVLink 4 on H100 ~450 GB/s per
// direction; 400 Gb/s InfiniBand ~50 GB/s; a NIC fallen back to TCP sockets ~12 GB/s.
inline constexpr std::int64_t kNvlinkBusbwGBps = 450;
inline constexpr std::int64_t kInfinibandBusbwGBps = 50;
inline constexpr std::int64_t kSlowLinkBusbwGBps = 12;

// The job as the simulation needs it (validated by job.cpp).
struct JobPlan {
  int world_size = 2;
  int ranks_per_host = 8;
  int hosts = 1;
  int steps = 10;
  std::uint64_t seed = 1;
  int straggler = -1;  // rank, or -1
  StragglerCause straggler_cause = StragglerCause::kCompute;
  std::int64_t straggler_delay_ns = 0;
  int slow_link_host = -1;       // host whose network link is slow, or -1
  bool seq = true;               // "Seq" in the collective args
  bool distributed_info = true;  // "Rank" in the collective args (and distributedInfo, job.cpp)
  Sharding sharding = Sharding::kDdp;

  int host_of(int rank) const { return rank / ranks_per_host; }
  int local_rank(int rank) const { return rank % ranks_per_host; }
  // The ring's bottleneck: NVLink inside one host; across hosts the slowest host's network link.
  std::int64_t link_busbw_gbps() const;
  const char* link_name() const;  // "nvlink", "infiniband", "socket"
  // NCCL's fixed cost of one all-reduce: kernel setup plus one hop latency per ring step
  // (2(n-1) steps), a hop over the network being slower than one over NVLink.
  std::int64_t alpha_ns() const;
  // Ring all-reduce: ceil(2(n-1)/n x bytes / busbw) + alpha.
  std::int64_t transfer_ns(std::int64_t bytes) const;
  // Ring reduce-scatter or all-gather of `bytes` in all (n-1 ring steps, half an all-reduce):
  // ceil((n-1)/n x bytes / busbw) + kernel setup + (n-1) hops.
  std::int64_t ring_pass_alpha_ns() const;
  std::int64_t ring_pass_ns(std::int64_t bytes) const;
  // What one bucket's collective in backward takes: the all-reduce (DDP) or the reduce-scatter
  // (ZeRO-2) of its gradients.
  std::int64_t backward_transfer_ns(std::int64_t bytes) const;
  // A bucket's elements padded to a multiple of the world size (the sharded flat buffer).
  std::int64_t padded_elements(std::int64_t elements) const;
};

inline constexpr std::int64_t kFirstStepNumber = 5;  // schedule(wait=1, warmup=4)
inline constexpr std::int32_t kComputeStream = 7;
inline constexpr std::int32_t kNcclStream = 20;
// True time 0 is kJobEpochNs on the wall clock (2024-05-31T16:00:00Z); the profilers start at
// kTraceStartNs and the first steps a little later.
inline constexpr std::int64_t kJobEpochNs = 1717171200000000000;
inline constexpr std::int64_t kTraceStartNs = 2000000000;

// One trace event, times in true ns; serialized by job.cpp.
using TraceEvent = kineto::TraceEvent;

// What one step did on one rank, for the ground truth.
struct RankStepRecord {
  std::int64_t start_ns = 0, end_ns = 0;  // the ProfilerStep span
  // Per bucket: the NCCL kernel's start in backward; with ZeRO-2 then each bucket's all-gather.
  std::vector<std::int64_t> collective_start_ns;
  std::int64_t comm_ns = 0;     // union of NCCL kernels
  std::int64_t exposed_ns = 0;  // NCCL time no compute kernel overlaps
  std::int64_t compute_ns = 0;  // union of compute kernels
};

// Deterministic randomness, as the scenarios draw it.
using Random = kineto::Random;

// Each host's clock offset (ns): uniform in [-skew, +skew], host 0 exactly 0. Host h's offset
// depends only on (seed, h, skew), so every world size of a scaling study agrees.
std::vector<std::int64_t> host_clock_offsets(std::uint64_t seed, int hosts, std::int64_t skew_ns);

class RankSimulator {
 public:
  // record_events=false runs the same timeline without building event text (the physics pass).
  RankSimulator(const JobPlan& plan, int rank, bool record_events);
  ~RankSimulator();
  RankSimulator(const RankSimulator&) = delete;
  RankSimulator& operator=(const RankSimulator&) = delete;

  struct CollectiveArrival {
    std::int64_t ready_ns = 0;      // gradients computed and the kernel launched on this rank
    std::int64_t queue_gap_ns = 0;  // after the NCCL stream's previous kernel
  };
  // Builds step `index` (0-based) up to the end of backward.
  const std::vector<CollectiveArrival>& begin_step(int index);
  // Completes the step given each bucket's collective end (true time, same on every rank).
  // The NCCL kernel of bucket k starts at max(ready, previous collective's end + queue gap).
  // DDP: the step ends here and the result is empty. ZeRO-2: runs the sharded optimizer and
  // returns the arrivals of the parameter all-gathers (one per bucket), for finish_gathers().
  const std::vector<CollectiveArrival>& finish_step(std::span<const std::int64_t> collective_end_ns);
  void finish_gathers(std::span<const std::int64_t> gather_end_ns);

  const RankStepRecord& step_record() const;
  std::vector<TraceEvent>& step_events();  // the finished step's events (when recording)

  std::int32_t host_pid() const;
  std::int32_t main_tid() const;
  std::int32_t autograd_tid() const;
  std::int32_t device() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Where a bucket's all-reduce starts on a rank, given the previous collective's end.
inline std::int64_t collective_start(const RankSimulator::CollectiveArrival& a, std::int64_t previous_end_ns) {
  return std::max(a.ready_ns, previous_end_ns + a.queue_gap_ns);
}

}  // namespace ferret::jobsim
