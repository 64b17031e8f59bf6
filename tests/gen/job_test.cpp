// `ferret gen job` / `gen scaling`: the ground truth is checked against quantities measured on
// the loaded rank traces (event columns, args, relations), never through ferret's analyses and,
// where possible, without the generator's own bookkeeping: clock offsets from the common end of
// each collective, lateness from aligned kernel starts, bandwidth from the shortest kernel.
#include "gen/job.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ingest/trace_loader.h"
#include "interval_checks.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace job_test {

namespace fs = std::filesystem;

// A fresh directory under the test's temp area, removed when the test ends.
struct TempDir {
  explicit TempDir(const std::string& name) : path(test::temp_path(name)) { fs::remove_all(path); }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (fs::path(path) / name).string(); }
  std::string path;
};

JobOptions options_for(const TempDir& dir, int ranks, int steps = 2) {
  JobOptions o;
  o.output_dir = dir.path;
  o.ranks = ranks;
  o.steps = steps;
  o.seed = 11;
  return o;
}

// One NCCL kernel as the trace shows it, in absolute ns (baseTimeNanoseconds + ts).
struct NcclKernel {
  std::int64_t start = 0, end = 0;
  std::int64_t seq = kNoId;
  std::int64_t elements = -1;
  std::int32_t group_size = -1;
  std::int32_t rank_arg = -1;
};

struct Rank {
  TraceModel model;
  nlohmann::json truth;
  std::vector<NcclKernel> nccl;  // in start order
};

std::vector<NcclKernel> nccl_kernels(const TraceModel& m) {
  std::vector<NcclKernel> out;
  const std::int64_t base = m.info.base_time_ns.value_or(0);
  for (EventIndex e = 0; e < m.size(); ++e) {
    if (m.kind[e] != EventKind::kKernel || m.name_of(e).rfind("ncclDevKernel_", 0) != 0) continue;
    NcclKernel k;
    k.start = base + m.ts_ns[e];
    k.end = base + m.end_ns(e);
    if (const CollectiveArgs* c = m.collective_args_of(e)) {
      k.seq = c->seq;
      k.elements = c->in_msg_nelems;
      k.group_size = c->group_size;
      k.rank_arg = c->rank;
    }
    out.push_back(k);
  }
  std::sort(out.begin(), out.end(), [](const NcclKernel& a, const NcclKernel& b) { return a.start < b.start; });
  return out;
}

struct LoadedJob {
  JobResult result;
  nlohmann::json truth;  // job_truth.json
  std::vector<Rank> ranks;
};

LoadedJob generate(const JobOptions& options) {
  LoadedJob job;
  job.result = write_job(options);
  job.truth = nlohmann::json::parse(test::read_file((fs::path(options.output_dir) / "job_truth.json").string()));
  EXPECT_EQ(job.truth, nlohmann::json::parse(job.result.ground_truth_json));
  for (const std::string& path : job.result.files) {
    Rank r;
    r.model = load_trace(path);
    r.truth = nlohmann::json::parse(test::read_file(path))["ferret_ground_truth"];
    r.nccl = nccl_kernels(r.model);
    job.ranks.push_back(std::move(r));
  }
  return job;
}

// Measured clock offset of each rank against rank 0: every participant's kernel of one
// collective ends at the same true moment, so the difference of written ends is the offset.
std::vector<std::int64_t> measured_offsets(const LoadedJob& job) {
  std::vector<std::int64_t> offsets;
  for (const Rank& r : job.ranks) {
    EXPECT_EQ(r.nccl.size(), job.ranks[0].nccl.size());
    const std::int64_t offset = r.nccl.front().end - job.ranks[0].nccl.front().end;
    for (std::size_t k = 0; k < r.nccl.size(); ++k)
      EXPECT_EQ(r.nccl[k].end - job.ranks[0].nccl[k].end, offset) << "collective " << k;
    offsets.push_back(offset);
  }
  return offsets;
}

std::uint64_t count_named(const TraceModel& m, std::string_view name) {
  std::uint64_t n = 0;
  for (EventIndex e = 0; e < m.size(); ++e) n += m.name_of(e) == name;
  return n;
}

// ZeRO-2: per step and bucket a reduce-scatter in backward, then after AdamW an all-gather; each
// kernel lasts at least its planted transfer, (n-1)/n of the padded bucket over the link plus
// the ring's latency, and every rank's kernel of one call ends at the same moment.
TEST(GenJob, Zero2ReduceScattersThenAllGathers) {
  TempDir dir("job-zero2");
  JobOptions o = options_for(dir, 6, 2);
  o.sharding = "zero2";
  const LoadedJob job = generate(o);
  EXPECT_EQ(job.truth["sharding"], "zero2");
  const std::size_t per_step = job.truth["collectives"]["per_step"].get<std::size_t>();
  ASSERT_EQ(per_step, 26u);
  const nlohmann::json& bucket0 = job.truth["collectives"]["buckets"][0];
  // 7,089,408 elements padded to 6 shards: 7,089,408 (already a multiple), 28,357,632 bytes;
  // ceil(5/6 x 28,357,632 / 450) + 8000 + 5 x 500 = 52,515 + 10,500.
  EXPECT_EQ(bucket0["padded_elements"], 7089408);
  EXPECT_EQ(bucket0["transfer_ns"], 52515 + 10500);
  EXPECT_EQ(bucket0["all_gather_transfer_ns"], 52515 + 10500);
  for (std::size_t r = 0; r < job.ranks.size(); ++r) {
    const TraceModel& m = job.ranks[r].model;
    EXPECT_EQ(m.report.repair_count(), 0u);
    EXPECT_EQ(m.relations.unmatched_gpu, 0u);
    EXPECT_EQ(count_named(m, "nccl:_reduce_scatter_base"), 2 * 13u);
    EXPECT_EQ(count_named(m, "nccl:_all_gather_base"), 2 * 13u);
    EXPECT_EQ(count_named(m, "nccl:all_reduce"), 0u);
    ASSERT_EQ(job.ranks[r].nccl.size(), 2 * per_step);
    for (std::size_t k = 0; k < job.ranks[r].nccl.size(); ++k) {
      const NcclKernel& call = job.ranks[r].nccl[k];
      const bool gather = k % per_step >= 13;
      // reduce-scatter: In = the padded bucket; all-gather: In = one shard.
      const std::int64_t padded = job.truth["collectives"]["buckets"][k % 13]["padded_elements"].get<std::int64_t>();
      EXPECT_EQ(call.elements, gather ? padded / 6 : padded) << k;
      EXPECT_EQ(call.seq, static_cast<std::int64_t>(k) + 1) << k;
      EXPECT_GE(call.end - call.start, job.truth["collectives"]["buckets"][k % 13]["transfer_ns"].get<std::int64_t>())
          << k;
      EXPECT_EQ(call.end - job.ranks[0].nccl[k].end, 0) << r << " " << k;  // one host, one clock
    }
  }
}

TEST(GenJob, EveryRankLoadsCleanlyAndSaysWhoItIs) {
  TempDir dir("job-clean");
  JobOptions o = options_for(dir, 12, 3);  // 12 ranks at 8 per host: hosts of 8 and 4
  const LoadedJob job = generate(o);
  ASSERT_EQ(job.ranks.size(), 12u);
  EXPECT_EQ(job.truth["world_size"], 12);
  EXPECT_EQ(job.truth["hosts"], 2);
  EXPECT_EQ(job.truth["ranks_by_host"][1].size(), 4u);
  EXPECT_EQ(job.result.steps, 3);
  const std::size_t buckets = job.truth["collectives"]["per_step"].get<std::size_t>();
  EXPECT_EQ(buckets, 13u);
  std::uint64_t events = 0;
  for (int r = 0; r < 12; ++r) {
    const Rank& rank = job.ranks[static_cast<std::size_t>(r)];
    const TraceModel& m = rank.model;
    EXPECT_EQ(job.result.files[static_cast<std::size_t>(r)], dir.file("rank-" + std::to_string(r) + ".json"));
    EXPECT_EQ(m.report.repair_count(), 0u) << "rank " << r;
    EXPECT_EQ(m.report.skip_count(), 0u) << "rank " << r;
    EXPECT_FALSE(m.report.truncated);
    EXPECT_EQ(m.info.generation, FormatGeneration::kKineto2);
    ASSERT_TRUE(m.info.distributed.present);
    EXPECT_EQ(m.info.distributed.rank, r);
    EXPECT_EQ(m.info.distributed.world_size, 12);
    EXPECT_EQ(m.info.distributed.backend, "nccl");
    ASSERT_EQ(m.info.devices.size(), 8u);
    EXPECT_EQ(m.info.devices[0].name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(m.info.devices[0].num_sms, 132);
    // Three whole steps, every GPU activity matched to its launch and inside its step.
    ASSERT_EQ(m.relations.steps.size(), 3u);
    EXPECT_FALSE(m.relations.dropped_step.has_value());
    EXPECT_EQ(m.relations.steps.front().number, 5);
    EXPECT_EQ(m.relations.unmatched_gpu, 0u);
    EXPECT_EQ(m.relations.launches_without_gpu, 0u);
    for (const Step& s : m.relations.steps) EXPECT_EQ(s.end_ns, s.cpu_end_ns);
    // Kernels on the rank's own GPU (local rank), NCCL on its own stream.
    for (EventIndex e = 0; e < m.size(); ++e)
      if (m.kind[e] == EventKind::kKernel) {
        EXPECT_EQ(m.pid[e], r % 8);
        EXPECT_EQ(m.tid[e], m.name_of(e).rfind("nccl", 0) == 0 ? 20 : 7);
      }
    // Each NCCL kernel carries the collective's args, group size and rank included.
    ASSERT_EQ(rank.nccl.size(), 3 * buckets);
    for (const NcclKernel& k : rank.nccl) {
      EXPECT_EQ(k.group_size, 12);
      EXPECT_EQ(k.rank_arg, r);
      EXPECT_GT(k.elements, 0);
    }
    EXPECT_EQ(count_named(m, "record_param_comms"), 3 * buckets);
    EXPECT_EQ(count_named(m, "nccl:all_reduce"), 3 * buckets);
    EXPECT_EQ(count_named(m, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"), 3u);
    // The file's truth is the job's plus which rank it is.
    nlohmann::json own = rank.truth;
    EXPECT_EQ(own["this_rank"]["rank"], r);
    EXPECT_EQ(own["this_rank"]["host"], r / 8);
    own.erase("this_rank");
    EXPECT_EQ(own, job.truth);
    // Step times in the truth are the ProfilerStep spans.
    for (std::size_t s = 0; s < 3; ++s)
      EXPECT_EQ(job.truth["step_ns_by_rank"][static_cast<std::size_t>(r)][s].get<std::int64_t>(),
                m.relations.steps[s].end_ns - m.relations.steps[s].start_ns);
    events += m.size();
  }
  EXPECT_EQ(job.result.events, events);
}

TEST(GenJob, SameOptionsSameBytesWhateverTheThreads) {
  TempDir a("job-det-a"), b("job-det-b"), c("job-det-c");
  JobOptions o = options_for(a, 4);
  o.straggler = 1;
  o.clock_skew_ms = 1.5;
  o.ranks_per_host = 2;
  o.threads = 1;
  write_job(o);
  o.output_dir = b.path;
  o.threads = 3;
  write_job(o);
  o.output_dir = c.path;
  o.seed = 12;
  write_job(o);
  for (const char* name : {"rank-0.json", "rank-1.json", "rank-2.json", "rank-3.json", "job_truth.json"}) {
    const std::string bytes = test::read_file(a.file(name));
    EXPECT_FALSE(bytes.empty()) << name;
    EXPECT_EQ(bytes, test::read_file(b.file(name))) << name;
    EXPECT_NE(bytes, test::read_file(c.file(name))) << name;
  }
}

TEST(GenJob, ClockOffsetsAreWhatTheCollectivesShow) {
  TempDir dir("job-clock");
  JobOptions o = options_for(dir, 16);
  o.ranks_per_host = 4;  // four hosts, three of them offset
  o.clock_skew_ms = 3;
  const LoadedJob job = generate(o);
  const std::vector<std::int64_t> measured = measured_offsets(job);
  const auto& by_rank = job.truth["clock"]["offset_ns_by_rank"];
  const auto& by_host = job.truth["clock"]["offset_ns_by_host"];
  ASSERT_EQ(by_host.size(), 4u);
  EXPECT_EQ(by_host[0], 0);
  std::set<std::int64_t> distinct;
  for (std::size_t r = 0; r < 16; ++r) {
    EXPECT_EQ(measured[r], by_rank[r].get<std::int64_t>()) << "rank " << r;  // rank 0 is on host 0 (offset 0)
    EXPECT_EQ(by_rank[r], by_host[r / 4]);
    EXPECT_LE(std::abs(measured[r]), 3000000);
    EXPECT_EQ(job.ranks[r].truth["this_rank"]["clock_offset_ns"], by_rank[r]);
    distinct.insert(measured[r]);
  }
  EXPECT_EQ(distinct.size(), 4u);  // every host has its own clock
  // Without skew every collective ends at the same written time on every rank.
  TempDir flat("job-clock-flat");
  const LoadedJob aligned = generate(options_for(flat, 4));
  for (std::int64_t offset : measured_offsets(aligned)) EXPECT_EQ(offset, 0);
}

// Lateness from the events: aligned kernel starts (clock offsets measured as above), the
// straggler's start minus the latest start among the others, per collective.
struct Lateness {
  std::vector<std::int64_t> values;  // per collective, in order
  std::int64_t mean = 0, first_mean = 0;
  std::size_t last_count = 0;
};

Lateness measured_lateness(const LoadedJob& job, int straggler, std::size_t buckets) {
  const std::vector<std::int64_t> offsets = measured_offsets(job);
  Lateness l;
  const std::size_t collectives = job.ranks[0].nccl.size();
  std::int64_t total = 0, first_total = 0;
  for (std::size_t k = 0; k < collectives; ++k) {
    std::int64_t others = INT64_MIN;
    for (std::size_t r = 0; r < job.ranks.size(); ++r)
      if (static_cast<int>(r) != straggler) others = std::max(others, job.ranks[r].nccl[k].start - offsets[r]);
    const std::size_t s = static_cast<std::size_t>(straggler);
    const std::int64_t v = job.ranks[s].nccl[k].start - offsets[s] - others;
    l.values.push_back(v);
    total += v;
    if (k % buckets == 0) first_total += v;
    l.last_count += v > 0;
  }
  l.mean = total / static_cast<std::int64_t>(collectives);
  l.first_mean = first_total / static_cast<std::int64_t>(collectives / buckets);
  return l;
}

TEST(GenJob, StragglerLatenessIsWhatTheEventsShow) {
  for (const char* cause : {"compute", "input", "sync"}) {
    TempDir dir(std::string("job-straggler-") + cause);
    JobOptions o = options_for(dir, 12, 3);
    o.straggler = 9;  // on host 1, whose clock is off
    o.straggler_cause = cause;
    o.straggler_delay_ms = 4;
    o.clock_skew_ms = 2;
    const LoadedJob job = generate(o);
    const auto& truth = job.truth["straggler"];
    ASSERT_TRUE(truth.is_object()) << cause;
    EXPECT_EQ(truth["rank"], 9);
    EXPECT_EQ(truth["host"], 1);
    EXPECT_EQ(truth["cause"], cause);
    EXPECT_EQ(truth["planted_delay_ns"], 4000000);
    const std::size_t buckets = 13;
    const Lateness l = measured_lateness(job, 9, buckets);
    EXPECT_EQ(l.mean, truth["mean_lateness_ns"].get<std::int64_t>()) << cause;
    EXPECT_EQ(l.first_mean, truth["first_collective_mean_lateness_ns"].get<std::int64_t>()) << cause;
    EXPECT_NEAR(static_cast<double>(l.last_count) / static_cast<double>(l.values.size()),
                truth["last_to_start_share"].get<double>(), 1e-6);
    // The planted delay shows at the first all-reduce of every step (the others' jitter aside);
    // later ones queue behind it on the other ranks' NCCL streams, so it is late by less there.
    for (std::size_t k = 0; k < l.values.size(); k += buckets) {
      EXPECT_GT(l.values[k], 3000000) << cause << " step " << k / buckets;
      EXPECT_LT(l.values[k], 4400000) << cause << " step " << k / buckets;
    }
    EXPECT_GT(truth["last_to_start_share"].get<double>(), 0.5) << cause;
    // Every rank waits for it: the others' mean wait exceeds the straggler's.
    const auto& wait = job.truth["collectives"]["mean_wait_ns_by_rank"];
    for (std::size_t r = 0; r < 12; ++r)
      if (r != 9) {
        EXPECT_GT(wait[r].get<std::int64_t>(), wait[9].get<std::int64_t>() + 200000) << cause;
      }
  }
}

// Sum of the durations of events named `name` (or kernels launched from the main thread).
std::int64_t total_named(const TraceModel& m, std::string_view name) {
  std::int64_t total = 0;
  for (EventIndex e = 0; e < m.size(); ++e)
    if (m.name_of(e) == name) total += m.dur_ns[e];
  return total;
}

// Kernel time launched from the main thread outside the optimizer: the forward pass.
std::int64_t forward_kernel_ns(const TraceModel& m) {
  std::int64_t total = 0;
  const Relations& rel = m.relations;
  for (std::size_t g = 0; g < rel.gpu_events.size(); ++g) {
    const EventIndex e = rel.gpu_events[g], launch = rel.gpu_launcher[g];
    if (m.kind[e] != EventKind::kKernel || launch == kNoEvent) continue;
    if (m.tid[launch] != m.pid[launch]) continue;  // the autograd thread
    if (m.name_of(e).find("multi_tensor_apply") != std::string_view::npos) continue;
    total += m.dur_ns[e];
  }
  return total;
}

TEST(GenJob, StragglerCauseLeavesItsSignature) {
  constexpr std::int64_t kDelay = 6000000;
  const auto job_with = [&](const char* cause, const TempDir& dir) {
    JobOptions o = options_for(dir, 4, 2);
    o.straggler = 2;
    o.straggler_cause = cause;
    o.straggler_delay_ms = 6;
    LoadedJob job = generate(o);
    for (const Rank& r : job.ranks) {
      EXPECT_EQ(r.model.report.repair_count(), 0u) << cause;
      EXPECT_EQ(r.model.relations.unmatched_gpu, 0u) << cause;
      EXPECT_EQ(r.model.relations.steps.size(), 2u) << cause;
    }
    return job;
  };
  {
    TempDir dir("job-cause-compute");
    const LoadedJob job = job_with("compute", dir);
    // Its forward kernels take X longer in all than another rank's (their draws differ by < 3%).
    const std::int64_t extra = forward_kernel_ns(job.ranks[2].model) - forward_kernel_ns(job.ranks[0].model);
    EXPECT_NEAR(static_cast<double>(extra), 2.0 * kDelay, 0.05 * 2 * kDelay);  // two steps
    EXPECT_EQ(count_named(job.ranks[2].model, "cudaStreamSynchronize"), 0u);
  }
  {
    TempDir dir("job-cause-input");
    const LoadedJob job = job_with("input", dir);
    const std::string loader = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
    const std::int64_t extra = total_named(job.ranks[2].model, loader) - total_named(job.ranks[1].model, loader);
    EXPECT_NEAR(static_cast<double>(extra), 2.0 * kDelay, 400000);  // normal loads: 0.25-0.44 ms
    // The GPU has nothing to do while the straggler loads.
    const TraceModel& m = job.ranks[2].model;
    for (EventIndex l = 0; l < m.size(); ++l) {
      if (m.name_of(l) != loader) continue;
      for (EventIndex e = 0; e < m.size(); ++e)
        if (is_gpu_activity(m.kind[e])) {
          EXPECT_FALSE(m.ts_ns[e] < m.end_ns(l) && m.end_ns(e) > m.ts_ns[l]);
        }
    }
  }
  {
    TempDir dir("job-cause-sync");
    const LoadedJob job = job_with("sync", dir);
    const TraceModel& m = job.ranks[2].model;
    EXPECT_EQ(count_named(m, "cudaStreamSynchronize"), 8u);  // four per step
    std::uint64_t sync_events = 0;
    for (EventIndex e = 0; e < m.size(); ++e) sync_events += m.kind[e] == EventKind::kSync;
    EXPECT_EQ(sync_events, 8u);
    EXPECT_EQ(count_named(m, "aten::item"), 2u + 8u);  // loss.item() per step + one per sync point
    EXPECT_EQ(count_named(job.ranks[0].model, "cudaStreamSynchronize"), 0u);
    EXPECT_EQ(count_named(job.ranks[0].model, "aten::item"), 2u);
  }
}

// busbw (nccl-tests): bytes x 2(n-1)/n over the transfer; the shortest kernel of a collective
// across ranks is the last arrival's, which waited for nobody.
void expect_planted_bandwidth(const LoadedJob& job, double link_gbps, const char* what) {
  const auto& c = job.truth["collectives"];
  EXPECT_EQ(c["link_busbw_gbps"].get<double>(), link_gbps) << what;
  const double n = static_cast<double>(job.ranks.size());
  const std::int64_t alpha = c["alpha_ns"].get<std::int64_t>();
  const std::size_t buckets = c["per_step"].get<std::size_t>();
  for (std::size_t k = 0; k < job.ranks[0].nccl.size(); ++k) {
    std::int64_t shortest = INT64_MAX;
    for (const Rank& r : job.ranks) shortest = std::min(shortest, r.nccl[k].end - r.nccl[k].start);
    const auto& bucket = c["buckets"][k % buckets];
    EXPECT_EQ(shortest, bucket["transfer_ns"].get<std::int64_t>()) << what << " collective " << k;
    const double bus_bytes = static_cast<double>(job.ranks[0].nccl[k].elements) * 4 * 2 * (n - 1) / n;
    EXPECT_EQ(job.ranks[0].nccl[k].elements * 4, bucket["bytes"].get<std::int64_t>());
    EXPECT_NEAR(bus_bytes / static_cast<double>(shortest - alpha), link_gbps, link_gbps * 1e-4) << what;
    EXPECT_NEAR(bus_bytes / static_cast<double>(shortest), bucket["busbw_gbps"].get<double>(), 1e-3) << what;
  }
}

TEST(GenJob, BusBandwidthOfTheShortestKernelIsThePlantedLink) {
  {
    TempDir dir("job-bw-nvlink");
    const LoadedJob job = generate(options_for(dir, 8));
    EXPECT_EQ(job.truth["collectives"]["link"], "nvlink");
    expect_planted_bandwidth(job, 450, "one host");
  }
  TempDir ib("job-bw-ib"), slow("job-bw-slow");
  JobOptions o = options_for(ib, 16);
  o.clock_skew_ms = 1;
  const LoadedJob fast = generate(o);
  EXPECT_EQ(fast.truth["collectives"]["link"], "infiniband");
  expect_planted_bandwidth(fast, 50, "two hosts");
  o.output_dir = slow.path;
  o.slow_link_host = 1;
  const LoadedJob slowed = generate(o);
  EXPECT_EQ(slowed.truth["collectives"]["link"], "socket");
  EXPECT_EQ(slowed.truth["collectives"]["slow_link_host"], 1);
  expect_planted_bandwidth(slowed, 12, "slow host link");
  // The slow link makes every rank's steps longer, not only its own host's.
  for (std::size_t r = 0; r < 16; ++r)
    EXPECT_GT(slowed.truth["step_ns_by_rank"][r][1].get<std::int64_t>(),
              fast.truth["step_ns_by_rank"][r][1].get<std::int64_t>() + 20000000)
        << "rank " << r;
}

TEST(GenJob, NoSeqAndNoDistributedInfoAreHonoured) {
  TempDir with("job-seq"), without("job-noseq");
  JobOptions o = options_for(with, 4);
  const LoadedJob plain = generate(o);
  // Seq counts the process group's collectives, the same on every rank.
  for (const Rank& r : plain.ranks) {
    ASSERT_EQ(r.nccl.size(), 26u);
    for (std::size_t k = 0; k < r.nccl.size(); ++k) EXPECT_EQ(r.nccl[k].seq, static_cast<std::int64_t>(k) + 1);
  }
  o.output_dir = without.path;
  o.seq = false;
  o.distributed_info = false;
  const LoadedJob bare = generate(o);
  for (std::size_t r = 0; r < bare.ranks.size(); ++r) {
    const TraceModel& m = bare.ranks[r].model;
    EXPECT_FALSE(m.info.distributed.present);
    EXPECT_EQ(m.report.repair_count(), 0u);
    EXPECT_FALSE(m.collective_args.empty());
    for (const CollectiveArgs& c : m.collective_args) {
      EXPECT_EQ(c.seq, kNoId);
      EXPECT_EQ(c.rank, -1);
      EXPECT_EQ(c.group_size, 4);
    }
    const std::string text = test::read_file(bare.result.files[r]);
    EXPECT_EQ(text.find("\"distributedInfo\""), std::string::npos);
    EXPECT_EQ(text.find("\"Seq\""), std::string::npos);
    EXPECT_EQ(text.find("\"Rank\""), std::string::npos);
    EXPECT_EQ(bare.result.files[r], without.file("rank-" + std::to_string(r) + ".json"));
  }
  EXPECT_FALSE(bare.truth["distributed_info"].get<bool>());
  EXPECT_FALSE(bare.truth["seq"].get<bool>());
}

// Exposed communication of one rank from its events: NCCL kernel time no compute kernel overlaps.
std::int64_t exposed_comm_ns(const TraceModel& m) {
  std::vector<std::pair<std::int64_t, std::int64_t>> nccl, compute;
  for (EventIndex e = 0; e < m.size(); ++e)
    if (m.kind[e] == EventKind::kKernel)
      (m.name_of(e).rfind("nccl", 0) == 0 ? nccl : compute).emplace_back(m.ts_ns[e], m.end_ns(e));
  std::vector<std::pair<std::int64_t, std::int64_t>> both = nccl;
  both.insert(both.end(), compute.begin(), compute.end());
  return test::union_length(both) - test::union_length(compute);  // |nccl \ compute|
}

TEST(GenScaling, StepTimeAndExposedCommunicationGrowWithTheWorldSize) {
  TempDir dir("scaling");
  JobOptions o = options_for(dir, 0, 3);
  const ScalingResult result = write_scaling(o, {16, 2, 8, 4});
  const auto truth = nlohmann::json::parse(test::read_file(dir.file("scaling_truth.json")));
  EXPECT_EQ(truth, nlohmann::json::parse(result.ground_truth_json));
  const auto& rows = truth["by_world_size"];
  ASSERT_EQ(rows.size(), 4u);
  ASSERT_EQ(result.jobs.size(), 4u);
  const std::vector<int> sizes = {2, 4, 8, 16};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["world_size"], sizes[i]);
    EXPECT_EQ(result.jobs[i].files.size(), static_cast<std::size_t>(sizes[i]));
    for (int r = 0; r < sizes[i]; ++r)
      EXPECT_TRUE(fs::exists(dir.file(fmt::format("ws-{}/rank-{}.json", sizes[i], r))));
    EXPECT_TRUE(fs::exists(dir.file(fmt::format("ws-{}/job_truth.json", sizes[i]))));
    // Rank 0's truth, measured on its trace: mean ProfilerStep and exposed NCCL time per step.
    const TraceModel m = load_trace(dir.file(fmt::format("ws-{}/rank-0.json", sizes[i])));
    std::int64_t steps_ns = 0;
    for (const Step& s : m.relations.steps) steps_ns += s.end_ns - s.start_ns;
    EXPECT_EQ(steps_ns / 3, rows[i]["step_ns"].get<std::int64_t>());
    EXPECT_EQ(exposed_comm_ns(m) / 3, rows[i]["exposed_comm_ns"].get<std::int64_t>());
  }
  EXPECT_EQ(rows[3]["link"], "infiniband");
  EXPECT_EQ(rows[2]["link"], "nvlink");
  for (std::size_t i = 1; i < rows.size(); ++i) {
    // By the formula: more ranks move more bytes per rank, with more hops.
    EXPECT_GT(rows[i]["transfer_ns_per_step"].get<std::int64_t>(),
              rows[i - 1]["transfer_ns_per_step"].get<std::int64_t>());
    EXPECT_GE(rows[i]["step_ns"].get<std::int64_t>(), rows[i - 1]["step_ns"].get<std::int64_t>());
    EXPECT_GE(rows[i]["exposed_comm_ns"].get<std::int64_t>(), rows[i - 1]["exposed_comm_ns"].get<std::int64_t>());
    EXPECT_LE(rows[i]["scaling_efficiency"].get<double>(), rows[i - 1]["scaling_efficiency"].get<double>());
  }
  // Leaving NVLink for the network is the step change.
  EXPECT_GT(rows[3]["exposed_comm_ns"].get<std::int64_t>(), rows[2]["exposed_comm_ns"].get<std::int64_t>() + 3000000);
  EXPECT_LT(rows[3]["scaling_efficiency"].get<double>(), 0.95);
}

TEST(GenJob, TargetSizeSetsTheStepCount) {
  TempDir dir("job-target");
  JobOptions o = options_for(dir, 2);
  o.target_bytes = 12000000;
  const JobResult r = write_job(o);
  EXPECT_GT(r.steps, 10);
  // Within half a step (~0.6 MB) of the target.
  for (const std::string& f : r.files) EXPECT_NEAR(static_cast<double>(fs::file_size(f)), 12e6, 0.03 * 12e6) << f;
  EXPECT_EQ(nlohmann::json::parse(r.ground_truth_json)["steps"], r.steps);
}

TEST(GenJob, GzipRanksLoadLikePlain) {
  TempDir dir("job-gzip");
  JobOptions o = options_for(dir, 2, 1);
  o.compression = OutputCompression::kGzip;
  const JobResult r = write_job(o);
  ASSERT_EQ(r.files.size(), 2u);
  EXPECT_EQ(r.files[1], dir.file("rank-1.json.gz"));
  EXPECT_LT(r.file_bytes, r.json_bytes / 4);
  const TraceModel m = load_trace(r.files[1]);
  EXPECT_EQ(m.info.compression, "gzip");
  EXPECT_EQ(m.report.repair_count(), 0u);
  EXPECT_EQ(m.info.distributed.rank, 1);
  EXPECT_EQ(m.relations.steps.size(), 1u);
}

TEST(GenJob, RejectsImpossibleJobs) {
  TempDir dir("job-bad");
  const auto rejects = [&](auto change) {
    JobOptions o = options_for(dir, 8, 1);
    change(o);
    EXPECT_THROW(write_job(o), std::invalid_argument);
  };
  rejects([](JobOptions& o) { o.ranks = 1; });
  rejects([](JobOptions& o) { o.steps = 0; });
  rejects([](JobOptions& o) { o.straggler = 8; });
  rejects([](JobOptions& o) { o.straggler_cause = "cosmic-rays"; });
  rejects([](JobOptions& o) { o.slow_link_host = 0; });  // one host: no link to slow down
  rejects([](JobOptions& o) {
    o.ranks = 16;
    o.slow_link_host = 2;
  });
  rejects([](JobOptions& o) { o.ranks_per_host = 0; });
  rejects([](JobOptions& o) { o.clock_skew_ms = -1; });
  EXPECT_THROW(write_scaling(options_for(dir, 0, 1), {4, 4}), std::invalid_argument);
  EXPECT_FALSE(fs::exists(dir.file("rank-0.json")));
}

TEST(GenCli, JobAndScalingRunFromTheCommandLine) {
  TempDir job("cli-job"), scaling("cli-scaling");
  test::CommandResult r = test::run_ferret("gen job -o " + job.path +
                                           " --ranks 4 --ranks-per-host 2 --steps 1 --straggler 3 --straggler-cause "
                                           "input --straggler-delay-ms 2 --slow-link 1 --clock-skew-ms 1 --no-seq");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("4 rank files"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("straggler: rank 3"), std::string::npos) << r.out;
  const auto truth = nlohmann::json::parse(test::read_file(job.file("job_truth.json")));
  EXPECT_EQ(truth["straggler"]["cause"], "input");
  EXPECT_EQ(truth["collectives"]["slow_link_host"], 1);
  EXPECT_FALSE(truth["seq"].get<bool>());
  EXPECT_TRUE(fs::exists(job.file("rank-3.json")));

  r = test::run_ferret("gen scaling -o " + scaling.path + " --world-sizes 2,4 --steps 1 --gzip");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(scaling.file("ws-4/rank-3.json.gz")));
  EXPECT_TRUE(fs::exists(scaling.file("scaling_truth.json")));

  r = test::run_ferret("gen job -o " + job.path + " --ranks 8 --slow-link 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("more than one host"), std::string::npos) << r.err;
}

}  // namespace job_test
}  // namespace
}  // namespace ferret
