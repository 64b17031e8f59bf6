#include "gen/job.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <filesystem>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/threads.h"
#include "gen/job_simulation.h"

namespace ferret {

namespace {

using jobsim::JobPlan;
using jobsim::RankSimulator;
using jobsim::RankStepRecord;
using kineto::rounded;

constexpr int kMaxRanks = 4096;
constexpr int kMaxSteps = 100000;
constexpr std::int64_t kNsPerMs = 1000000;
constexpr std::int64_t kTokensPerRankStep = 16 * 1024;
constexpr int kSamplesPerRankStep = 16;

// A well-mixed 64-bit value from two inputs (splitmix64's finalizer): per-rank constants that
// must not consume the rank's random stream.
std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  std::uint64_t z = a * 0x9E3779B97F4A7C15ULL + b + 0x632BE59BD9B4E019ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

std::int64_t ms_to_ns(double ms) { return static_cast<std::int64_t>(std::llround(ms * static_cast<double>(kNsPerMs))); }

jobsim::StragglerCause parse_cause(const std::string& text) {
  if (text == "compute") return jobsim::StragglerCause::kCompute;
  if (text == "input") return jobsim::StragglerCause::kInput;
  if (text == "sync") return jobsim::StragglerCause::kSync;
  throw std::invalid_argument(fmt::format("--straggler-cause must be compute, input or sync (got \"{}\")", text));
}

jobsim::Sharding parse_sharding(const std::string& text) {
  if (text == "ddp") return jobsim::Sharding::kDdp;
  if (text == "zero2") return jobsim::Sharding::kZero2;
  throw std::invalid_argument(fmt::format("--sharding must be ddp or zero2 (got \"{}\")", text));
}

struct JobSetup {
  JobPlan plan;
  std::vector<std::int64_t> host_offsets_ns;
  std::int64_t skew_ns = 0;
};

// Checks the options of one job; `lenient` (scaling) drops a straggler or slow host that this
// world size does not have instead of refusing.
JobSetup make_setup(const JobOptions& o, int ranks, bool lenient) {
  if (ranks < 2 || ranks > kMaxRanks)
    throw std::invalid_argument(fmt::format("ranks must be between 2 and {} (got {})", kMaxRanks, ranks));
  if (o.ranks_per_host < 1 || o.ranks_per_host > 64)
    throw std::invalid_argument(fmt::format("ranks per host must be between 1 and 64 (got {})", o.ranks_per_host));
  if (o.steps < 1 || o.steps > kMaxSteps)
    throw std::invalid_argument(fmt::format("steps must be between 1 and {} (got {})", kMaxSteps, o.steps));
  if (!(o.straggler_delay_ms >= 0) || o.straggler_delay_ms > 10000)
    throw std::invalid_argument("--straggler-delay-ms must be between 0 and 10000");
  if (!(o.clock_skew_ms >= 0) || o.clock_skew_ms > 100000)
    throw std::invalid_argument("--clock-skew-ms must be between 0 and 100000");
  JobSetup s;
  JobPlan& p = s.plan;
  p.world_size = ranks;
  p.ranks_per_host = o.ranks_per_host;
  p.hosts = (ranks + o.ranks_per_host - 1) / o.ranks_per_host;
  p.steps = o.steps;
  p.seed = o.seed;
  p.straggler_cause = parse_cause(o.straggler_cause);
  p.sharding = parse_sharding(o.sharding);
  p.straggler_delay_ns = ms_to_ns(o.straggler_delay_ms);
  p.seq = o.seq;
  p.distributed_info = o.distributed_info;
  if (o.straggler >= 0) {
    if (o.straggler < ranks)
      p.straggler = o.straggler;
    else if (!lenient)
      throw std::invalid_argument(fmt::format("--straggler {} is not a rank of a {}-rank job", o.straggler, ranks));
  }
  if (o.slow_link_host >= 0) {
    if (o.slow_link_host < p.hosts && p.hosts > 1)
      p.slow_link_host = o.slow_link_host;
    else if (!lenient)
      throw std::invalid_argument(
          p.hosts == 1
              ? std::string("--slow-link needs a job that spans more than one host (no collective crosses a host "
                            "link otherwise)")
              : fmt::format("--slow-link {}: the job has hosts 0..{}", o.slow_link_host, p.hosts - 1));
  }
  s.skew_ns = ms_to_ns(o.clock_skew_ms);
  s.host_offsets_ns = jobsim::host_clock_offsets(o.seed, p.hosts, s.skew_ns);
  return s;
}

// ---------------------------------------------------------------------------------------------
// The physics pass: every rank in lockstep, the collectives settled across ranks.
struct JobPhysics {
  // Per collective of a step: the buckets' all-reduces (DDP), or their reduce-scatters and then
  // their all-gathers (ZeRO-2).
  std::vector<std::int64_t> transfer_ns;
  std::vector<std::vector<std::int64_t>> collective_end_ns;  // [step][collective]
  std::vector<std::vector<RankStepRecord>> records;          // [rank][step]
};

// What one bucket's collective moves in all (nccl-tests' size): its gradients, padded to whole
// shards when sharded.
std::int64_t collective_bytes(const JobPlan& plan, const jobsim::GradientBucket& b) {
  return plan.sharding == jobsim::Sharding::kZero2 ? 4 * plan.padded_elements(b.elements) : b.bytes();
}

// Every participant's kernel ends when the last one to arrive has moved the data; calls on the
// NCCL stream run in order. `previous_end` carries the stream across calls.
std::vector<std::int64_t> settle(const std::vector<const std::vector<RankSimulator::CollectiveArrival>*>& arrivals,
                                 std::span<const std::int64_t> transfer_ns, std::int64_t& previous_end) {
  std::vector<std::int64_t> ends(transfer_ns.size());
  for (std::size_t k = 0; k < transfer_ns.size(); ++k) {
    std::int64_t latest_start = 0;
    for (const auto* rank : arrivals)
      latest_start = std::max(latest_start, jobsim::collective_start((*rank)[k], previous_end));
    ends[k] = latest_start + transfer_ns[k];
    previous_end = ends[k];
  }
  return ends;
}

JobPhysics simulate(const JobPlan& plan) {
  const auto& buckets = jobsim::gradient_buckets();
  const bool sharded = plan.sharding == jobsim::Sharding::kZero2;
  JobPhysics physics;
  for (const auto& b : buckets) physics.transfer_ns.push_back(plan.backward_transfer_ns(collective_bytes(plan, b)));
  if (sharded)
    for (const auto& b : buckets) physics.transfer_ns.push_back(plan.ring_pass_ns(collective_bytes(plan, b)));
  const std::span<const std::int64_t> backward(physics.transfer_ns.data(), buckets.size());
  const std::span<const std::int64_t> gathers(physics.transfer_ns.data() + buckets.size(),
                                              physics.transfer_ns.size() - buckets.size());
  std::vector<std::unique_ptr<RankSimulator>> ranks;
  for (int r = 0; r < plan.world_size; ++r) ranks.push_back(std::make_unique<RankSimulator>(plan, r, false));
  physics.records.assign(static_cast<std::size_t>(plan.world_size), {});
  std::vector<const std::vector<RankSimulator::CollectiveArrival>*> arrivals(ranks.size());
  std::int64_t previous_end = 0;  // the NCCL streams are idle before the first step
  for (int step = 0; step < plan.steps; ++step) {
    for (std::size_t r = 0; r < ranks.size(); ++r) arrivals[r] = &ranks[r]->begin_step(step);
    std::vector<std::int64_t> ends = settle(arrivals, backward, previous_end);
    for (std::size_t r = 0; r < ranks.size(); ++r) arrivals[r] = &ranks[r]->finish_step(ends);
    if (sharded) {
      const std::vector<std::int64_t> gather_ends = settle(arrivals, gathers, previous_end);
      for (auto& rank : ranks) rank->finish_gathers(gather_ends);
      ends.insert(ends.end(), gather_ends.begin(), gather_ends.end());
    }
    for (std::size_t r = 0; r < ranks.size(); ++r) physics.records[r].push_back(ranks[r]->step_record());
    physics.collective_end_ns.push_back(std::move(ends));
  }
  return physics;
}

// ---------------------------------------------------------------------------------------------
// Ground truth, from the simulated timelines (the very times the events carry).
struct JobSummary {
  int world_size = 0, hosts = 0;
  std::string link;
  std::int64_t link_busbw_gbps = 0, alpha_ns = 0, transfer_ns_per_step = 0;
  std::int64_t rank0_step_ns = 0, mean_step_ns = 0;
  std::int64_t rank0_comm_ns = 0, rank0_exposed_ns = 0, mean_exposed_ns = 0;
};

std::string findings_link(const JobPlan& plan) {
  if (plan.hosts == 1) return fmt::format("NVLink inside one host ({} GB/s bus bandwidth)", jobsim::kNvlinkBusbwGBps);
  if (plan.slow_link_host >= 0)
    return fmt::format(
        "a ring across {} hosts bound by host {}'s slow network link ({} GB/s, a TCP socket fallback "
        "instead of InfiniBand)",
        plan.hosts, plan.slow_link_host, jobsim::kSlowLinkBusbwGBps);
  return fmt::format("a ring across {} hosts over 400 Gb/s InfiniBand ({} GB/s bus bandwidth)", plan.hosts,
                     jobsim::kInfinibandBusbwGBps);
}

// What one step moves: the bytes of its gradient collectives and their planted transfer time.
struct StepTransfer {
  std::int64_t bytes = 0;
  std::int64_t transfer_ns = 0;
};

// Each rank's steps: their lengths, communication and exposed communication.
struct StepTotals {
  std::vector<std::vector<std::int64_t>> step_ns;
  std::int64_t all_steps = 0, exposed_all = 0;
  std::vector<std::int64_t> comm_by_rank, exposed_by_rank;
};

// The job as planned: model, ranks and hosts, clocks.
void truth_of_the_job(const JobSetup& setup, nlohmann::ordered_json& t) {
  const JobPlan& plan = setup.plan;
  const bool sharded = setup.plan.sharding == jobsim::Sharding::kZero2;
  t["generator"] = "ferret gen job";
  t["seed"] = plan.seed;
  t["steps"] = plan.steps;
  t["first_step"] = jobsim::kFirstStepNumber;
  t["device"] = "NVIDIA H100 80GB HBM3";
  t["model"] =
      fmt::format("GPT-2 small (124,439,808 parameters), bf16 autocast, 16 x 1024 tokens per rank and step, {}",
                  sharded ? "ZeRO-2 (gradients reduce-scattered, AdamW on each rank's shard, parameters "
                            "all-gathered)"
                          : "DDP, AdamW");
  t["sharding"] = jobsim::sharding_name(plan.sharding);
  t["world_size"] = plan.world_size;
  t["hosts"] = plan.hosts;
  t["ranks_per_host"] = plan.ranks_per_host;
  nlohmann::ordered_json by_host = nlohmann::ordered_json::array();
  for (int h = 0; h < plan.hosts; ++h) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (int r = h * plan.ranks_per_host; r < std::min(plan.world_size, (h + 1) * plan.ranks_per_host); ++r)
      list.push_back(r);
    by_host.push_back(list);
  }
  t["ranks_by_host"] = by_host;
  t["distributed_info"] = plan.distributed_info;
  t["seq"] = plan.seq;
  t["timestamps"] =
      "ts in microseconds with 3 decimals relative to baseTimeNanoseconds (different on every rank): "
      "absolute ns = baseTimeNanoseconds + ts x 1000 = true time + the host's clock offset";

  std::vector<std::int64_t> rank_offsets;
  for (int r = 0; r < plan.world_size; ++r)
    rank_offsets.push_back(setup.host_offsets_ns[static_cast<std::size_t>(plan.host_of(r))]);
  nlohmann::ordered_json clock;
  clock["skew_ms"] = rounded(static_cast<double>(setup.skew_ns) / kNsPerMs, 6);
  clock["offset_ns_by_host"] = setup.host_offsets_ns;
  clock["offset_ns_by_rank"] = rank_offsets;
  clock["definition"] = "written time = true time + offset of the rank's host; host 0 is the reference (offset 0)";
  t["clock"] = clock;
}

// The collectives: the planted transfer time of each bucket, and each rank's waiting.
StepTransfer truth_of_the_collectives(const JobSetup& setup, const JobPhysics& physics, nlohmann::ordered_json& t) {
  const JobPlan& plan = setup.plan;
  const auto& buckets = jobsim::gradient_buckets();
  const std::size_t ranks = static_cast<std::size_t>(setup.plan.world_size);
  const std::size_t steps = static_cast<std::size_t>(setup.plan.steps);
  const double n = setup.plan.world_size;
  const bool sharded = setup.plan.sharding == jobsim::Sharding::kZero2;
  nlohmann::ordered_json c;
  const std::size_t per_step = physics.transfer_ns.size();
  if (sharded) {
    c["collective"] =
        "_reduce_scatter_base per bucket in backward, then _allgather_base per bucket after the optimizer";
    c["dtype"] = "Float";
    c["process_group"] = "0";
    c["kernel"] = "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)";
    c["gather_kernel"] = "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)";
  } else {
    c["collective"] = "allreduce";
    c["dtype"] = "Float";
    c["process_group"] = "0";
    c["kernel"] = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)";
  }
  c["per_step"] = per_step;
  c["total"] = per_step * steps;
  c["link"] = plan.link_name();
  c["link_busbw_gbps"] = plan.link_busbw_gbps();
  c["nvlink_busbw_gbps"] = jobsim::kNvlinkBusbwGBps;
  c["inter_host_busbw_gbps"] =
      plan.hosts > 1 ? nlohmann::ordered_json(jobsim::kInfinibandBusbwGBps) : nlohmann::ordered_json();
  c["slow_link_host"] =
      plan.slow_link_host >= 0 ? nlohmann::ordered_json(plan.slow_link_host) : nlohmann::ordered_json();
  c["slow_link_busbw_gbps"] =
      plan.slow_link_host >= 0 ? nlohmann::ordered_json(jobsim::kSlowLinkBusbwGBps) : nlohmann::ordered_json();
  c["alpha_ns"] = sharded ? plan.ring_pass_alpha_ns() : plan.alpha_ns();
  c["formula"] =
      sharded
          ? "transfer_ns = ceil((n-1)/n x bytes / link_busbw) + alpha_ns for a reduce-scatter or all-gather of bytes "
            "in all (the bucket padded to n shards), alpha_ns = 8000 + (n-1) x (500 inside one host, 1500 across "
            "hosts); link_busbw = NVLink 450 GB/s inside one host, else the slowest host link (InfiniBand 50, slow "
            "link 12); on every rank the NCCL kernel starts when that rank reaches it and ends at max over ranks of "
            "start + transfer_ns"
          : "transfer_ns = ceil(2(n-1)/n x bytes / link_busbw) + alpha_ns, alpha_ns = 8000 + 2(n-1) x (500 inside one "
            "host, "
            "1500 across hosts); link_busbw = NVLink 450 GB/s inside one host, else the slowest host link (InfiniBand "
            "50, "
            "slow link 12); on every rank the NCCL kernel starts when that rank reaches it and ends at max over ranks "
            "of "
            "start + transfer_ns";
  nlohmann::ordered_json bucket_list = nlohmann::ordered_json::array();
  std::int64_t bytes_per_step = 0, transfer_per_step = 0;
  // nccl-tests' bus factor: 2(n-1)/n for an all-reduce, (n-1)/n for a reduce-scatter or all-gather.
  const double bus_factor = sharded ? (n - 1) / n : 2 * (n - 1) / n;
  for (std::size_t k = 0; k < buckets.size(); ++k) {
    const std::int64_t bytes = collective_bytes(plan, buckets[k]);
    const std::int64_t transfer = physics.transfer_ns[k];
    bytes_per_step += bytes;
    transfer_per_step += transfer;
    nlohmann::ordered_json b;
    b["bucket"] = k;
    b["elements"] = buckets[k].elements;
    if (sharded) b["padded_elements"] = plan.padded_elements(buckets[k].elements);
    b["bytes"] = bytes;
    b["transfer_ns"] = transfer;
    if (sharded) b["all_gather_transfer_ns"] = physics.transfer_ns[buckets.size() + k];
    // nccl-tests' busbw over the whole transfer (alpha included), and without alpha (the link).
    b["busbw_gbps"] = rounded(static_cast<double>(bytes) * bus_factor / static_cast<double>(transfer), 3);
    b["link_busbw_gbps"] = plan.link_busbw_gbps();
    bucket_list.push_back(b);
  }
  for (std::size_t k = buckets.size(); k < per_step; ++k) transfer_per_step += physics.transfer_ns[k];
  c["buckets"] = bucket_list;
  c[sharded ? "reduce_scatter_bytes_per_step" : "allreduce_bytes_per_step"] = bytes_per_step;
  if (sharded) c["all_gather_bytes_per_step"] = bytes_per_step;
  c["transfer_ns_per_step"] = transfer_per_step;
  std::vector<std::int64_t> mean_wait;
  for (std::size_t r = 0; r < ranks; ++r) {
    std::int64_t wait = 0;
    for (std::size_t s = 0; s < steps; ++s)
      for (std::size_t k = 0; k < per_step; ++k)
        wait += physics.collective_end_ns[s][k] - physics.records[r][s].collective_start_ns[k] - physics.transfer_ns[k];
    mean_wait.push_back(wait / static_cast<std::int64_t>(steps * per_step));
  }
  c["mean_wait_ns_by_rank"] = mean_wait;
  t["collectives"] = c;
  return {bytes_per_step, transfer_per_step};
}

void truth_of_the_straggler(const JobSetup& setup, const JobPhysics& physics, nlohmann::ordered_json& t) {
  const JobPlan& plan = setup.plan;
  const auto& buckets = jobsim::gradient_buckets();
  const std::size_t ranks = static_cast<std::size_t>(setup.plan.world_size);
  const std::size_t steps = static_cast<std::size_t>(setup.plan.steps);
  // The straggler: lateness = its kernel start minus the latest start among the other ranks.
  if (plan.straggler >= 0) {
    const std::size_t sr = static_cast<std::size_t>(plan.straggler);
    std::int64_t total = 0, first_total = 0;
    std::size_t last_count = 0;
    std::vector<std::int64_t> by_bucket(buckets.size(), 0);
    for (std::size_t s = 0; s < steps; ++s) {
      for (std::size_t k = 0; k < buckets.size(); ++k) {
        std::int64_t others = INT64_MIN;
        for (std::size_t r = 0; r < ranks; ++r)
          if (r != sr) others = std::max(others, physics.records[r][s].collective_start_ns[k]);
        const std::int64_t lateness = physics.records[sr][s].collective_start_ns[k] - others;
        total += lateness;
        by_bucket[k] += lateness;
        if (k == 0) first_total += lateness;
        last_count += lateness > 0;
      }
    }
    for (std::int64_t& v : by_bucket) v /= static_cast<std::int64_t>(steps);
    nlohmann::ordered_json st;
    st["rank"] = plan.straggler;
    st["host"] = plan.host_of(plan.straggler);
    st["cause"] = jobsim::straggler_cause_name(plan.straggler_cause);
    st["planted_delay_ns"] = plan.straggler_delay_ns;
    st["mean_lateness_ns"] = total / static_cast<std::int64_t>(steps * buckets.size());
    st["first_collective_mean_lateness_ns"] = first_total / static_cast<std::int64_t>(steps);
    st["lateness_ns_by_bucket"] = by_bucket;
    st["last_to_start_share"] = rounded(static_cast<double>(last_count) / static_cast<double>(steps * buckets.size()));
    st["lateness_definition"] =
        "per bucket's collective in backward: the straggler's NCCL kernel start minus the latest start among the other "
        "ranks (true time); "
        "means are integer divisions over all collectives, over steps for first_collective and by_bucket";
    t["straggler"] = st;
  } else {
    t["straggler"] = nullptr;
  }
}

StepTotals truth_of_the_steps(const JobSetup& setup, const JobPhysics& physics, nlohmann::ordered_json& t) {
  const std::size_t ranks = static_cast<std::size_t>(setup.plan.world_size);
  const std::size_t steps = static_cast<std::size_t>(setup.plan.steps);
  // Steps: the ProfilerStep span on each rank (GPU work of a step ends inside it).
  StepTotals totals;
  auto& [step_ns, all_steps, exposed_all, comm_by_rank, exposed_by_rank] = totals;
  step_ns.resize(ranks);
  for (std::size_t r = 0; r < ranks; ++r) {
    std::int64_t comm = 0, exposed = 0;
    for (const RankStepRecord& rec : physics.records[r]) {
      step_ns[r].push_back(rec.end_ns - rec.start_ns);
      all_steps += rec.end_ns - rec.start_ns;
      comm += rec.comm_ns;
      exposed += rec.exposed_ns;
    }
    comm_by_rank.push_back(comm / static_cast<std::int64_t>(steps));
    exposed_by_rank.push_back(exposed / static_cast<std::int64_t>(steps));
    exposed_all += exposed;
  }
  t["step_ns_by_rank"] = step_ns;
  t["mean_step_ns"] = all_steps / static_cast<std::int64_t>(ranks * steps);
  t["comm_ns_per_step_by_rank"] = comm_by_rank;
  t["exposed_comm_ns_per_step_by_rank"] = exposed_by_rank;
  return totals;
}

// What ferret should find, in words.
std::vector<std::string> expected_findings(const JobSetup& setup, const StepTransfer& per_step) {
  const JobPlan& plan = setup.plan;
  const auto& buckets = jobsim::gradient_buckets();
  const bool sharded = setup.plan.sharding == jobsim::Sharding::kZero2;
  const std::int64_t bytes_per_step = per_step.bytes, transfer_per_step = per_step.transfer_ns;
  std::vector<std::string> findings;
  if (sharded)
    findings.push_back(fmt::format(
        "communication: every step reduce-scatters {:.1f} MB of fp32 gradients in {} buckets during backward and, "
        "after "
        "AdamW steps each rank's shard, all-gathers as many bytes of parameters with no compute left to hide them "
        "(ZeRO-2), over {}; planted transfer {:.2f} ms per step",
        static_cast<double>(bytes_per_step) / 1e6, buckets.size(), findings_link(plan),
        static_cast<double>(transfer_per_step) / 1e6));
  else
    findings.push_back(fmt::format(
        "communication: every step all-reduces {:.1f} MB of fp32 gradients in {} DDP buckets over {}; planted "
        "transfer {:.2f} ms per step",
        static_cast<double>(bytes_per_step) / 1e6, buckets.size(), findings_link(plan),
        static_cast<double>(transfer_per_step) / 1e6));
  if (plan.straggler >= 0) {
    const char* signature = "";
    switch (plan.straggler_cause) {
      case jobsim::StragglerCause::kCompute:
        signature = "its forward kernels run longer than the other ranks' same kernels (a slower GPU)";
        break;
      case jobsim::StragglerCause::kInput:
        signature = "its DataLoader wait is longer by that much, with the GPU idle";
        break;
      case jobsim::StragglerCause::kSync:
        signature = "cudaStreamSynchronize + aten::item host syncs in its forward leave the GPU idle between launches";
        break;
    }
    findings.push_back(fmt::format(
        "straggler: rank {} (host {}) arrives last at the collectives, ~{:.2f} ms late at the first all-reduce of each "
        "step, and every rank waits for it; cause {}: {}",
        plan.straggler, plan.host_of(plan.straggler), static_cast<double>(plan.straggler_delay_ns) / 1e6,
        jobsim::straggler_cause_name(plan.straggler_cause), signature));
  }
  if (plan.slow_link_host >= 0)
    findings.push_back(fmt::format(
        "slow link: host {} reaches only {} GB/s (socket fallback); every all-reduce crosses it, so the bus bandwidth "
        "of the whole job drops from {} to {} GB/s",
        plan.slow_link_host, jobsim::kSlowLinkBusbwGBps, jobsim::kInfinibandBusbwGBps, jobsim::kSlowLinkBusbwGBps));
  if (setup.skew_ns > 0)
    findings.push_back(fmt::format(
        "clock skew: host clocks differ by up to {:.3f} ms; align ranks (e.g. on the common end of each collective) "
        "before comparing them",
        static_cast<double>(setup.skew_ns) / 1e6));
  return findings;
}

nlohmann::ordered_json job_truth(const JobSetup& setup, const JobPhysics& physics, JobSummary& summary) {
  const JobPlan& plan = setup.plan;
  const std::size_t ranks = static_cast<std::size_t>(plan.world_size);
  const std::size_t steps = static_cast<std::size_t>(plan.steps);
  nlohmann::ordered_json t;
  truth_of_the_job(setup, t);
  const StepTransfer per_step = truth_of_the_collectives(setup, physics, t);
  truth_of_the_straggler(setup, physics, t);
  const StepTotals totals = truth_of_the_steps(setup, physics, t);
  const auto& [step_ns, all_steps, exposed_all, comm_by_rank, exposed_by_rank] = totals;
  const std::int64_t transfer_per_step = per_step.transfer_ns;
  t["expected_findings"] = expected_findings(setup, per_step);

  summary.world_size = plan.world_size;
  summary.hosts = plan.hosts;
  summary.link = plan.link_name();
  summary.link_busbw_gbps = plan.link_busbw_gbps();
  summary.alpha_ns = plan.alpha_ns();
  summary.transfer_ns_per_step = transfer_per_step;
  std::int64_t rank0 = 0;
  for (std::int64_t v : step_ns[0]) rank0 += v;
  summary.rank0_step_ns = rank0 / static_cast<std::int64_t>(steps);
  summary.mean_step_ns = all_steps / static_cast<std::int64_t>(ranks * steps);
  summary.rank0_comm_ns = comm_by_rank[0];
  summary.rank0_exposed_ns = exposed_by_rank[0];
  summary.mean_exposed_ns = exposed_all / static_cast<std::int64_t>(ranks * steps);
  return t;
}

// ---------------------------------------------------------------------------------------------
// Writing one rank's file: a replay of the rank with its events recorded.

// One top-level key per line, each value on one line: readable, and diffable, without the one
// number per line of a pretty-printed array.
void write_truth_file(const std::string& path, const nlohmann::ordered_json& truth) {
  std::string text = "{";
  bool first = true;
  for (const auto& [key, value] : truth.items()) {
    text += first ? "\n  " : ",\n  ";
    first = false;
    text += nlohmann::json(key).dump() + ": " + value.dump();
  }
  text += "\n}\n";
  OutputFile out(path, OutputCompression::kNone);
  out.write(text);
  out.close();
}

struct RankFile {
  std::uint64_t events = 0, json_bytes = 0, file_bytes = 0;
};

// Each rank's profiler has its own baseTimeNanoseconds (when it started), 1-3 s before the epoch.
std::int64_t base_time_ns(const JobSetup& setup, int rank) {
  const std::int64_t two_seconds = 2000000000;
  return jobsim::kJobEpochNs - setup.skew_ns - 1000000000 -
         static_cast<std::int64_t>(mix(setup.plan.seed, static_cast<std::uint64_t>(rank) + 7) %
                                   static_cast<std::uint64_t>(two_seconds));
}

void write_header(TraceWriter& writer, const JobSetup& setup, int rank) {
  const JobPlan& plan = setup.plan;
  kineto::TraceHeader h;
  h.devices = plan.ranks_per_host;
  if (plan.distributed_info) h.distributed = kineto::DistributedInfo{rank, plan.world_size, "2.18.6"};
  h.cuda_runtime_version = "12010";
  h.cupti_version = "20";
  h.cuda_driver_version = "12020";
  // Per-rank constants that must not consume the rank's random stream.
  h.trace_id_high = mix(plan.seed, static_cast<std::uint64_t>(rank) * 2 + 1);
  h.trace_id_low = mix(plan.seed, static_cast<std::uint64_t>(rank) * 2 + 2);
  kineto::write_header(writer, h);
}

void write_metadata(TraceWriter& writer, const RankSimulator& sim, std::int64_t shift) {
  kineto::write_metadata(
      writer,
      {sim.host_pid(), sim.main_tid(), sim.autograd_tid(), sim.device(), {jobsim::kComputeStream, jobsim::kNcclStream}},
      jobsim::kTraceStartNs + shift);
}

RankFile write_rank(const JobSetup& setup, const JobPhysics& physics, int rank, const std::string& truth_json,
                    const std::string& path, OutputCompression compression) {
  const JobPlan& plan = setup.plan;
  const std::int64_t base = base_time_ns(setup, rank);
  // Written ts (relative to base) = true time + host clock offset + (epoch - base).
  const std::int64_t shift =
      setup.host_offsets_ns[static_cast<std::size_t>(plan.host_of(rank))] + jobsim::kJobEpochNs - base;
  OutputFile out(path, compression);
  TraceWriter writer(out);
  write_header(writer, setup, rank);
  RankSimulator sim(plan, rank, true);
  write_metadata(writer, sim, shift);
  std::int64_t last_end = jobsim::kTraceStartNs;
  for (int step = 0; step < plan.steps; ++step) {
    sim.begin_step(step);
    const std::vector<std::int64_t>& ends = physics.collective_end_ns[static_cast<std::size_t>(step)];
    const std::size_t backward = jobsim::gradient_buckets().size();
    sim.finish_step(std::span<const std::int64_t>(ends.data(), backward));
    if (plan.sharding == jobsim::Sharding::kZero2)
      sim.finish_gathers(std::span<const std::int64_t>(ends.data() + backward, ends.size() - backward));
    const RankStepRecord& replayed = sim.step_record();
    const RankStepRecord& simulated = physics.records[static_cast<std::size_t>(rank)][static_cast<std::size_t>(step)];
    if (replayed.end_ns != simulated.end_ns || replayed.collective_start_ns != simulated.collective_start_ns)
      throw std::logic_error(fmt::format("job simulation: rank {} step {} replays differently", rank, step));
    kineto::write_events(writer, sim.step_events(), shift);
    last_end = replayed.end_ns;
  }
  kineto::write_profiler_markers(writer, jobsim::kTraceStartNs + shift, last_end + 20000 + shift);

  // The job's truth plus which rank this file is.
  std::string truth = truth_json;
  truth.pop_back();  // the closing brace
  truth += fmt::format(",\"this_rank\":{{\"rank\":{},\"host\":{},\"local_rank\":{},\"clock_offset_ns\":{}}}}}", rank,
                       plan.host_of(rank), plan.local_rank(rank),
                       setup.host_offsets_ns[static_cast<std::size_t>(plan.host_of(rank))]);
  kineto::write_trailer(
      writer, truth,
      fmt::format("/tmp/ferret-gen/job-seed{}/node{}_{}.pt.trace.json", plan.seed, plan.host_of(rank), sim.host_pid()),
      base);
  writer.finish();
  out.close();
  return {writer.events(), out.bytes_in(), out.bytes_out()};
}

std::string rank_file_name(int rank, OutputCompression compression) {
  return fmt::format("rank-{}.json{}", rank, compression == OutputCompression::kGzip ? ".gz" : "");
}

unsigned thread_count(const JobOptions& o, int ranks) {
  unsigned n = o.threads ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  return std::min<unsigned>({n, thread_cap(), static_cast<unsigned>(ranks)});
}

// Steps that bring one rank's JSON closest to `target` bytes, measured on rank 0 of a 2- and a
// 4-step job (the size grows linearly with steps).
int steps_for_target(const JobSetup& setup, std::uint64_t target) {
  std::uint64_t bytes[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    JobSetup probe = setup;
    probe.plan.steps = 2 + 2 * i;
    const JobPhysics physics = simulate(probe.plan);
    JobSummary ignored;
    const std::string truth = job_truth(probe, physics, ignored).dump();
    bytes[i] = write_rank(probe, physics, 0, truth, "/dev/null", OutputCompression::kNone).json_bytes;
  }
  const double per_step = static_cast<double>(bytes[1] - bytes[0]) / 2;
  const double fixed = static_cast<double>(bytes[0]) - 2 * per_step;
  const double steps = std::round((static_cast<double>(target) - fixed) / per_step);  // within half a step
  return static_cast<int>(std::clamp(steps, 1.0, static_cast<double>(kMaxSteps)));
}

struct JobRun {
  JobResult result;
  JobSummary summary;
};

JobRun run_job(const JobOptions& options, const JobSetup& setup) {
  namespace fs = std::filesystem;
  if (options.output_dir.empty()) throw std::invalid_argument("give an output directory");
  std::error_code ec;
  fs::create_directories(options.output_dir, ec);
  if (ec || !fs::is_directory(options.output_dir))
    throw std::runtime_error(fmt::format("{}: cannot create the directory: {}", options.output_dir, ec.message()));
  const JobPlan& plan = setup.plan;
  const JobPhysics physics = simulate(plan);
  JobRun run;
  const nlohmann::ordered_json truth = job_truth(setup, physics, run.summary);
  const std::string truth_json = truth.dump();
  write_truth_file((fs::path(options.output_dir) / "job_truth.json").string(), truth);

  // Ranks are independent once the physics is known: each thread takes the next rank.
  std::vector<RankFile> files(static_cast<std::size_t>(plan.world_size));
  std::atomic<int> next_rank{0};
  std::mutex mutex;
  std::exception_ptr error;
  int done = 0;
  const auto worker = [&] {
    for (int r = next_rank++; r < plan.world_size; r = next_rank++) {
      try {
        const std::string path = (fs::path(options.output_dir) / rank_file_name(r, options.compression)).string();
        files[static_cast<std::size_t>(r)] = write_rank(setup, physics, r, truth_json, path, options.compression);
        std::lock_guard<std::mutex> lock(mutex);
        ++done;
        if (options.progress) options.progress(done, plan.world_size);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!error) error = std::current_exception();
        next_rank = plan.world_size;
      }
    }
  };
  const unsigned threads = thread_count(options, plan.world_size);
  std::vector<std::thread> pool;
  // This thread works too: when the system refuses more threads, those that started write the rest.
  try {
    for (unsigned i = 1; i < threads; ++i) pool.push_back(start_thread(worker));
  } catch (const std::system_error&) {
  }
  worker();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);

  JobResult& result = run.result;
  result.ground_truth_json = truth_json;
  result.steps = plan.steps;
  for (int r = 0; r < plan.world_size; ++r) {
    const RankFile& f = files[static_cast<std::size_t>(r)];
    result.files.push_back((fs::path(options.output_dir) / rank_file_name(r, options.compression)).string());
    result.events += f.events;
    result.json_bytes += f.json_bytes;
    result.file_bytes += f.file_bytes;
  }
  return run;
}

}  // namespace

JobResult write_job(const JobOptions& options) {
  JobSetup setup = make_setup(options, options.ranks, false);
  if (options.target_bytes > 0) setup.plan.steps = steps_for_target(setup, options.target_bytes);
  return run_job(options, setup).result;
}

ScalingResult write_scaling(const JobOptions& options, const std::vector<int>& requested_world_sizes) {
  namespace fs = std::filesystem;
  if (requested_world_sizes.empty()) throw std::invalid_argument("give at least one world size");
  const std::set<int> distinct(requested_world_sizes.begin(), requested_world_sizes.end());
  if (distinct.size() != requested_world_sizes.size()) throw std::invalid_argument("world sizes must be distinct");
  const std::vector<int> world_sizes(distinct.begin(), distinct.end());  // ascending
  std::vector<JobSetup> setups;
  for (int n : world_sizes) setups.push_back(make_setup(options, n, true));
  // One step count for every world size, so that their means compare: sized on the largest.
  int steps = options.steps;
  if (options.target_bytes > 0) {
    const auto largest = std::max_element(setups.begin(), setups.end(), [](const JobSetup& a, const JobSetup& b) {
      return a.plan.world_size < b.plan.world_size;
    });
    steps = steps_for_target(*largest, options.target_bytes);
  }
  ScalingResult result;
  nlohmann::ordered_json truth;
  truth["generator"] = "ferret gen scaling";
  truth["seed"] = options.seed;
  truth["steps"] = steps;
  truth["first_step"] = jobsim::kFirstStepNumber;
  truth["ranks_per_host"] = options.ranks_per_host;
  truth["world_sizes"] = world_sizes;
  truth["straggler"] = options.straggler >= 0 ? nlohmann::ordered_json(options.straggler) : nlohmann::ordered_json();
  truth["straggler_cause"] =
      options.straggler >= 0 ? nlohmann::ordered_json(options.straggler_cause) : nlohmann::ordered_json();
  truth["slow_link_host"] =
      options.slow_link_host >= 0 ? nlohmann::ordered_json(options.slow_link_host) : nlohmann::ordered_json();
  truth["formula"] =
      "per world size n: transfer_ns_per_step = sum over the 13 buckets of ceil(2(n-1)/n x bytes / link_busbw) + "
      "alpha_ns (link_busbw 450 GB/s NVLink while n <= ranks_per_host, else 50 GB/s InfiniBand, 12 GB/s with a slow "
      "host; alpha_ns = 8000 + 2(n-1) x 500 or 1500 across hosts); the gradients of each layer are all-reduced while "
      "backward computes the next ones, so step_ns = compute + the communication that does not fit under backward "
      "(exposed_comm_ns) + waiting for the slowest rank. step_ns: rank 0's mean ProfilerStep duration (every time in "
      "the simulation is a max-plus function of its inputs and rank r draws the same random numbers at every world "
      "size, so it cannot decrease as n grows); exposed_comm_ns: rank 0's mean per step of NCCL kernel time that no "
      "compute kernel overlaps; scaling_efficiency = step_ns(smallest n) / step_ns(n)";
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::int64_t first_step_ns = 0;
  for (std::size_t i = 0; i < setups.size(); ++i) {
    setups[i].plan.steps = steps;
    JobOptions job = options;
    job.ranks = world_sizes[i];
    job.steps = steps;
    job.output_dir = (fs::path(options.output_dir) / fmt::format("ws-{}", world_sizes[i])).string();
    JobRun run = run_job(job, setups[i]);
    const JobSummary& s = run.summary;
    if (i == 0) first_step_ns = s.rank0_step_ns;
    nlohmann::ordered_json row;
    row["world_size"] = s.world_size;
    row["directory"] = fmt::format("ws-{}", world_sizes[i]);
    row["hosts"] = s.hosts;
    row["link"] = s.link;
    row["link_busbw_gbps"] = s.link_busbw_gbps;
    row["alpha_ns"] = s.alpha_ns;
    row["transfer_ns_per_step"] = s.transfer_ns_per_step;
    row["step_ns"] = s.rank0_step_ns;
    row["mean_step_ns"] = s.mean_step_ns;
    row["comm_ns"] = s.rank0_comm_ns;
    row["exposed_comm_ns"] = s.rank0_exposed_ns;
    row["mean_exposed_comm_ns"] = s.mean_exposed_ns;
    row["samples_per_s"] = rounded(
        static_cast<double>(s.world_size) * kSamplesPerRankStep * 1e9 / static_cast<double>(s.rank0_step_ns), 3);
    row["tokens_per_s"] =
        rounded(static_cast<double>(s.world_size) * kTokensPerRankStep * 1e9 / static_cast<double>(s.rank0_step_ns), 1);
    row["scaling_efficiency"] = rounded(static_cast<double>(first_step_ns) / static_cast<double>(s.rank0_step_ns));
    rows.push_back(row);
    result.jobs.push_back(std::move(run.result));
  }
  truth["by_world_size"] = rows;
  result.ground_truth_json = truth.dump();
  write_truth_file((fs::path(options.output_dir) / "scaling_truth.json").string(), truth);
  return result;
}

}  // namespace ferret
