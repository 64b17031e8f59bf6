// The job rules on hand-made ranks whose numbers are known by construction: which findings fire,
// at what share, and which fixes they give (DDP or FSDP/ZeRO, transport first).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "job/hand_made_rank.h"
#include "job/job_analysis.h"
#include "job/job_diagnosis.h"

namespace ferret {
namespace {
namespace rules_job_test {

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kStepNs = 100 * kMs;

struct PlannedCall {
  Collective kind;
  std::int64_t bytes;
};

// `ranks` ranks on one host (GPU r for rank r, one clock) running `steps` steps of 100 ms. Each
// step issues `calls` in order; call c of step s ends at the same true moment on every rank
// (s x 100 ms + 20 ms + 10 ms x c). The rank late(s) starts it `transfer_ms` before that end (it
// waits for nobody), every other rank `transfer_ms + wait_ms` before. Nothing overlaps the
// collectives, so a rank's exposed communication is all its time in them.
std::vector<RankResult> make_ranks(int ranks, int steps, const std::vector<PlannedCall>& calls, double transfer_ms,
                                   double wait_ms, const std::function<int(int)>& late) {
  const auto transfer = static_cast<std::int64_t>(transfer_ms * kMs);
  const auto wait = static_cast<std::int64_t>(wait_ms * kMs);
  std::vector<RankResult> out;
  for (int r = 0; r < ranks; ++r) {
    RankResult rr = test::hand_made_rank(r, ranks);
    std::int64_t seq = 0;
    for (int s = 0; s < steps; ++s) {
      RankStep step;
      step.number = s;
      step.start_ns = s * kStepNs;
      step.duration_ns = kStepNs;
      step.compute_kernel_ns = 60 * kMs;
      step.dataloader_ns = 1 * kMs;
      step.category_ns[static_cast<std::size_t>(StepCategory::kKernel)] = 60 * kMs;
      for (std::size_t c = 0; c < calls.size(); ++c) {
        const std::int64_t end = s * kStepNs + 20 * kMs + static_cast<std::int64_t>(c) * 10 * kMs;
        RankCollective call;
        call.kind = calls[c].kind;
        call.process_group = 0;
        call.seq = seq++;
        call.step = s;
        call.dur_ns = transfer + (late(s) == r ? 0 : wait);
        call.start_ns = end - call.dur_ns;
        call.bytes = calls[c].bytes;
        call.group_size = ranks;
        call.device = r;
        call.exposed_ns = call.dur_ns;
        rr.collectives.push_back(call);
        step.comm_ns += call.dur_ns;
        step.exposed_comm_ns += call.dur_ns;
      }
      rr.comm_ns += step.comm_ns;
      rr.exposed_comm_ns += step.exposed_comm_ns;
      rr.steps.push_back(step);
    }
    rr.mean_step_ns = kStepNs;
    rr.window_ns = steps * kStepNs;
    out.push_back(std::move(rr));
  }
  return out;
}

const Finding* find(const JobDiagnosis& d, const std::string& id) {
  for (const Finding& f : d.findings)
    if (f.id == id) return &f;
  return nullptr;
}

bool any_fix_mentions(const Finding& f, const std::string& text) {
  for (const std::string& fix : fix_texts(f))
    if (fix.find(text) != std::string::npos) return true;
  return false;
}

constexpr std::int64_t kMiB = 1 << 20;
const auto kNobodyLate = [](int) { return -1; };

// DDP: two 64 MiB all-reduces of 3 ms per 100 ms step on every rank: 6% exposed.
TEST(RulesJob, ExposedAllReduceGivesTheDdpFixes) {
  const std::vector<PlannedCall> calls = {{Collective::kAllReduce, 64 * kMiB}, {Collective::kAllReduce, 64 * kMiB}};
  const JobDiagnosis d = diagnose_job(analyze_job(make_ranks(4, 4, calls, 3, 0, kNobodyLate)));
  const Finding* f = find(d, "job-exposed-communication");
  ASSERT_NE(f, nullptr);
  EXPECT_DOUBLE_EQ(f->time_share, 0.06);
  EXPECT_EQ(f->severity, Severity::kMedium);  // 5% .. 20%
  EXPECT_NEAR(f->max_speedup, 1 / 0.94, 1e-9);
  EXPECT_TRUE(any_fix_mentions(*f, "bucket_cap_mb"));
  EXPECT_TRUE(any_fix_mentions(*f, "static_graph=True"));
  EXPECT_FALSE(any_fix_mentions(*f, "HYBRID_SHARD"));
  // No rank waits: no skew, no straggler. 64 MiB in 3 ms over 4 ranks is 33.6 GB/s of bus
  // bandwidth (x 2(n-1)/n = 1.5), and with no GPU named there is no link to judge it against.
  EXPECT_EQ(find(d, "collective-skew"), nullptr);
  EXPECT_EQ(find(d, "rank-straggler"), nullptr);
  EXPECT_EQ(find(d, "slow-collective-transport"), nullptr);
  EXPECT_EQ(d.verdict.finding_id, "job-exposed-communication");
}

// FSDP: per step two 32 MiB all-gathers and a 64 MiB reduce-scatter of 3 ms each, and one small
// all-reduce of 1 ms: the sharded collectives dominate (9 of 10 ms per step), 10% exposed.
TEST(RulesJob, ExposedAllGatherAndReduceScatterGiveTheShardingFixes) {
  const std::vector<PlannedCall> calls = {{Collective::kAllGather, 32 * kMiB},
                                          {Collective::kAllGather, 32 * kMiB},
                                          {Collective::kReduceScatter, 64 * kMiB}};
  std::vector<RankResult> ranks = make_ranks(4, 4, calls, 3, 0, kNobodyLate);
  // One 1 ms all-reduce (a loss or norm) per step, added on every rank at 95 ms.
  for (RankResult& r : ranks) {
    for (RankStep& s : r.steps) {
      RankCollective c;
      c.kind = Collective::kAllReduce;
      c.process_group = 0;
      c.seq = static_cast<std::int64_t>(r.collectives.size());
      c.step = s.number;
      c.start_ns = s.start_ns + 94 * kMs;
      c.dur_ns = 1 * kMs;
      c.bytes = 4;
      c.group_size = 4;
      c.device = r.rank;
      c.exposed_ns = c.dur_ns;
      r.collectives.push_back(c);
      s.comm_ns += c.dur_ns;
      s.exposed_comm_ns += c.dur_ns;
      r.comm_ns += c.dur_ns;
      r.exposed_comm_ns += c.dur_ns;
    }
    // Sequence numbers in issue order per step: the three sharded calls then the all-reduce.
    std::int64_t seq = 0;
    std::stable_sort(r.collectives.begin(), r.collectives.end(),
                     [](const RankCollective& a, const RankCollective& b) { return a.start_ns < b.start_ns; });
    for (RankCollective& c : r.collectives) c.seq = seq++;
  }
  const JobDiagnosis d = diagnose_job(analyze_job(ranks));
  const Finding* f = find(d, "job-exposed-communication");
  ASSERT_NE(f, nullptr);
  EXPECT_DOUBLE_EQ(f->time_share, 0.10);
  EXPECT_TRUE(any_fix_mentions(*f, "HYBRID_SHARD"));
  EXPECT_TRUE(any_fix_mentions(*f, "backward_prefetch"));
  EXPECT_TRUE(any_fix_mentions(*f, "SHARD_GRAD_OP"));
  EXPECT_FALSE(any_fix_mentions(*f, "bucket_cap_mb"));
}

// Sharded embeddings (torchrec, DLRM): two 16 MiB all-to-alls of 3 ms per step: 6% exposed, and
// the fixes are the all-to-all ones (pipelined input distribution, a sharding plan), not DDP's.
TEST(RulesJob, ExposedAllToAllGivesTheEmbeddingFixes) {
  const std::vector<PlannedCall> calls = {{Collective::kAllToAll, 16 * kMiB}, {Collective::kAllToAll, 16 * kMiB}};
  const JobDiagnosis d = diagnose_job(analyze_job(make_ranks(4, 4, calls, 3, 0, kNobodyLate)));
  const Finding* f = find(d, "job-exposed-communication");
  ASSERT_NE(f, nullptr);
  EXPECT_DOUBLE_EQ(f->time_share, 0.06);
  EXPECT_TRUE(any_fix_mentions(*f, "TrainPipelineSparseDist"));
  EXPECT_TRUE(any_fix_mentions(*f, "EmbeddingShardingPlanner"));
  EXPECT_FALSE(any_fix_mentions(*f, "bucket_cap_mb"));
  EXPECT_FALSE(any_fix_mentions(*f, "HYBRID_SHARD"));
}

// Two ranks, 6% and 10% of their time in exposed communication: the median is 8%, not the larger.
TEST(RulesJob, MedianOfAnEvenRankCountIsTheMeanOfTheMiddleTwo) {
  const std::vector<PlannedCall> calls = {{Collective::kAllReduce, 64 * kMiB}, {Collective::kAllReduce, 64 * kMiB}};
  std::vector<RankResult> ranks = make_ranks(2, 4, calls, 3, 0, kNobodyLate);
  ranks[1].exposed_comm_ns = ranks[1].window_ns / 10;
  const JobDiagnosis d = diagnose_job(analyze_job(ranks));
  const Finding* f = find(d, "job-exposed-communication");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->time_share, 0.08, 1e-9);
}

TEST(RulesJob, ExposedCommunicationBelowFivePercentIsNotAFinding) {
  const std::vector<PlannedCall> calls = {{Collective::kAllReduce, 64 * kMiB}};
  const JobDiagnosis d = diagnose_job(analyze_job(make_ranks(4, 4, calls, 4.9, 0, kNobodyLate)));
  EXPECT_EQ(find(d, "job-exposed-communication"), nullptr);
  EXPECT_TRUE(d.findings.empty());
  EXPECT_FALSE(d.verdict.bottleneck_found);
}

// The late rank moves every step (rank s mod 4): no straggler, but each call is 1 ms of transfer
// and, on the three ranks that wait, 2 ms of waiting. Per call: 6 ms waiting of 10 ms in
// collectives (60%); over the job: 2 calls x 6 ms x 4 steps = 48 ms of the ranks' 1600 ms (3%).
TEST(RulesJob, WaitingThatMovesBetweenRanksIsCollectiveSkew) {
  const std::vector<PlannedCall> calls = {{Collective::kAllReduce, 64 * kMiB}, {Collective::kAllReduce, 64 * kMiB}};
  const JobDiagnosis d = diagnose_job(analyze_job(make_ranks(4, 4, calls, 1, 2, [](int s) { return s % 4; })));
  EXPECT_EQ(find(d, "rank-straggler"), nullptr);
  const Finding* f = find(d, "collective-skew");
  ASSERT_NE(f, nullptr);
  EXPECT_DOUBLE_EQ(f->evidence[0].value, 60.0);  // wait_share_pct
  EXPECT_NEAR(f->time_share, 0.03, 1e-12);
  EXPECT_EQ(f->severity, Severity::kLow);
}

// The same moving skew while backward still computes beside every collective: only the last
// 1 ms of each kernel (the transfer) is exposed, the waiting before it is hidden. Waiting is
// still 60% of collective time, but it costs nothing, so it is not a finding. With the last
// 1 ms of each wait exposed too, 3 waiting ranks x 2 calls x 4 steps x 1 ms = 24 ms of the
// ranks' 1600 ms (1.5%) is lost, and it is.
TEST(RulesJob, SkewThatComputeHidesIsNotAFinding) {
  const std::vector<PlannedCall> calls = {{Collective::kAllReduce, 64 * kMiB}, {Collective::kAllReduce, 64 * kMiB}};
  std::vector<RankResult> ranks = make_ranks(4, 4, calls, 1, 2, [](int s) { return s % 4; });
  for (RankResult& r : ranks)
    for (RankCollective& c : r.collectives) c.exposed_ns = 1 * kMs;
  EXPECT_EQ(find(diagnose_job(analyze_job(ranks)), "collective-skew"), nullptr);
  for (RankResult& r : ranks)
    for (RankCollective& c : r.collectives) c.exposed_ns = c.dur_ns == 3 * kMs ? 2 * kMs : 1 * kMs;
  const JobDiagnosis d = diagnose_job(analyze_job(ranks));  // kept: f points into it
  const Finding* f = find(d, "collective-skew");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->time_share, 0.015, 1e-12);
}

// The same waiting, always for rank 2: a straggler explains it, so it is not also skew; and the
// exposed communication is judged on the straggler (2 x 1 ms per 100 ms step = 2%), not on the
// ranks that wait for it (6%), whose waiting the straggler's fix removes.
TEST(RulesJob, AConsistentLateRankIsAStragglerNotSkew) {
  const std::vector<PlannedCall> calls = {{Collective::kAllReduce, 64 * kMiB}, {Collective::kAllReduce, 64 * kMiB}};
  std::vector<RankResult> ranks = make_ranks(4, 4, calls, 1, 2, [](int) { return 2; });
  for (RankStep& s : ranks[2].steps) s.dataloader_ns = 5 * kMs;  // 4 ms more input wait per step
  const JobDiagnosis d = diagnose_job(analyze_job(ranks));
  const Finding* f = find(d, "rank-straggler");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->cause, "rank-straggler-2");
  EXPECT_NE(f->title.find("input"), std::string::npos) << f->title;
  // Cost: the others' exposed 6 ms per step minus the straggler's 2 ms, within its 4 ms lateness.
  EXPECT_DOUBLE_EQ(f->time_share, 0.04);
  EXPECT_EQ(find(d, "collective-skew"), nullptr);
  EXPECT_EQ(find(d, "job-exposed-communication"), nullptr);
  // 4% is low severity (XProf: 5% moderate), and low findings are no verdict, as for one trace
  // (docs/RULES.md#the-verdict); the headline says so instead of claiming nothing was found.
  // Before the one policy, a job's verdict was its top finding at any severity.
  EXPECT_EQ(f->severity, Severity::kLow);
  EXPECT_FALSE(d.verdict.bottleneck_found);
  EXPECT_EQ(d.verdict.finding_id, "");
  EXPECT_NE(d.verdict.headline.find("No cross-rank bottleneck (only minor cross-rank findings, below). 4 of 4 ranks:"),
            std::string::npos)
      << d.verdict.headline;
}

// Ranks on one host with an NVLink GPU, two 64 MiB all-reduces per 100 ms step, `transfer_ms`
// each, nothing hidden.
std::vector<RankResult> nvlink_ranks(double transfer_ms) {
  const std::vector<PlannedCall> calls = {{Collective::kAllReduce, 64 * kMiB}, {Collective::kAllReduce, 64 * kMiB}};
  std::vector<RankResult> ranks = make_ranks(4, 4, calls, transfer_ms, 0, kNobodyLate);
  for (RankResult& r : ranks) {
    r.device_name = "NVIDIA H100 80GB HBM3";
    r.scale_up_link = "NVLink4";
    r.scale_up_gbps = 450;
  }
  return ranks;
}

// At 6 ms a call, the all-reduce reaches 64 MiB / 6 ms x 1.5 = 16.8 GB/s bus bandwidth, below the
// 25% of NVLink 4's 450 GB/s (112.5 GB/s) the rule expects. At 112.5 GB/s each call would take
// 6 x 16.8 / 112.5 = 0.89 ms: 5.1 ms saved x 8 calls of a rank's 400 ms = 10.2%. The exposed
// communication (12%) is its symptom and the transport explains over half of it: one finding, the
// transport, with the symptom's evidence and its overlap fixes, whose bound (12%, 1/0.88 = 1.136x,
// medium) is then the finding's, the larger of the two fixes' bounds.
TEST(RulesJob, SlowTransportTakesInTheExposedCommunicationItCauses) {
  const JobDiagnosis d = diagnose_job(analyze_job(nvlink_ranks(6)));
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.id, "slow-collective-transport");
  EXPECT_EQ(d.verdict.finding_id, "slow-collective-transport");
  const double busbw = 64.0 * kMiB / 6e6 * 1.5;
  EXPECT_NEAR(f.evidence[0].value, busbw, 1e-3);       // busbw GB/s
  EXPECT_GT(0.12, 8 * 6 * (1 - busbw / 112.5) / 400);  // the transport's own 10.2% is the smaller bound
  EXPECT_DOUBLE_EQ(f.time_share, 0.12);
  EXPECT_NEAR(f.max_speedup, 1 / 0.88, 1e-9);
  EXPECT_EQ(f.severity, Severity::kMedium);
  EXPECT_TRUE(std::any_of(f.evidence.begin(), f.evidence.end(), [](const Evidence& e) {
    return e.name == "median_exposed_pct" && std::abs(e.value - 12) < 1e-9;
  }));
  EXPECT_TRUE(std::ranges::any_of(fix_texts(f),
                                  [](const std::string& x) { return x.find("bucket_cap_mb") != std::string::npos; }));
}

// At 3 ms a call (33.6 GB/s), the transport bounds 8 x 3 x (1 - 33.6 / 112.5) ms of 400 = 4.2%, over
// half of the 6% of exposed communication: one finding, whose bound is the exposed share's 6%
// (1/0.94 = 1.064x, medium), so it is the verdict. Under the previous policy the transport stayed
// low and the exposed communication was the verdict beside it.
TEST(RulesJob, ALowTransportBoundTakesTheExposedCommunicationsGain) {
  const JobDiagnosis d = diagnose_job(analyze_job(nvlink_ranks(3)));
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].id, "slow-collective-transport");
  EXPECT_EQ(d.verdict.finding_id, "slow-collective-transport");
  const double busbw = 64.0 * kMiB / 3e6 * 1.5;
  EXPECT_NEAR(8 * 3 * (1 - busbw / 112.5) / 400, 0.042, 5e-4);
  EXPECT_DOUBLE_EQ(d.findings[0].time_share, 0.06);
  EXPECT_EQ(d.findings[0].severity, Severity::kMedium);
}

// Unknown GPU indices (-1 on every rank) are not a GPU used twice: four ranks on one clock stay
// one host, judged against the scale-up link, not the network.
TEST(RulesJob, UnknownDevicesDoNotMakeAJobSpanHosts) {
  const std::vector<PlannedCall> calls = {{Collective::kAllReduce, 64 * kMiB}};
  std::vector<RankResult> ranks = make_ranks(4, 4, calls, 6, 0, kNobodyLate);  // 16.8 GB/s
  for (RankResult& r : ranks)
    for (RankCollective& c : r.collectives) c.device = -1;
  // No link known and one host: nothing to judge 16.8 GB/s against. Spanning hosts would judge
  // it against 25 GB/s and fire.
  EXPECT_EQ(find(diagnose_job(analyze_job(ranks)), "slow-collective-transport"), nullptr);
}

}  // namespace rules_job_test
}  // namespace
}  // namespace ferret
