// The cross-rank analyses on hand-made ranks whose answers are known by construction.
#include "job/job_analysis.h"

#include <gtest/gtest.h>

#include "job/hand_made_rank.h"
#include "job/job_diagnosis.h"
#include "job/rank_files.h"
#include "report/job/job_report.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace job_analysis_test {

constexpr std::int64_t kMs = 1'000'000;

// A job of `ranks` ranks with `steps` steps of 100 ms and two AllReduce calls of 64 MiB per step.
// Every call ends at the same true moment on all ranks; the transfer takes 1 ms; `late` starts
// each call 1 ms before the end (it waits for nobody), the others 3 ms before (2 ms waiting).
// offsets[r] is rank r's clock error: its trace shows true time - offsets[r].
std::vector<RankResult> make_job(int ranks, int steps, int late, const std::vector<std::int64_t>& offsets,
                                 bool with_seq) {
  std::vector<RankResult> out;
  for (int r = 0; r < ranks; ++r) {
    RankResult rr = test::hand_made_rank(r, ranks);
    const std::int64_t shift = -offsets[static_cast<std::size_t>(r)];
    for (int s = 0; s < steps; ++s) {
      RankStep step;
      step.number = 10 + s;
      step.start_ns = s * 100 * kMs + shift;
      step.duration_ns = 100 * kMs;
      step.compute_kernel_ns = 60 * kMs;
      step.dataloader_ns = r == late ? 5 * kMs : 1 * kMs;  // the late rank waits 4 ms more for input
      step.category_ns[static_cast<std::size_t>(StepCategory::kKernel)] = 60 * kMs;
      rr.steps.push_back(step);
      for (int c = 0; c < 2; ++c) {
        const std::int64_t true_end = s * 100 * kMs + (50 + 20 * c) * kMs;
        RankCollective call;
        call.kind = Collective::kAllReduce;
        call.process_group = 0;
        call.seq = with_seq ? 2 * s + c : -1;
        call.step = 10 + s;
        call.dur_ns = r == late ? 1 * kMs : 3 * kMs;
        call.start_ns = true_end - call.dur_ns + shift;
        call.bytes = 64ll << 20;
        call.group_size = ranks;
        call.exposed_ns = call.dur_ns;  // nothing overlaps the collectives
        rr.collectives.push_back(call);
      }
    }
    rr.mean_step_ns = 100 * kMs;
    // Nothing overlaps the collectives: each rank's exposed communication is its time in them.
    rr.exposed_comm_ns = steps * 2 * (r == late ? 1 : 3) * kMs;
    rr.window_ns = steps * 100 * kMs;
    out.push_back(std::move(rr));
  }
  return out;
}

TEST(JobAnalysis, SequenceNumbersMatchEveryCallAndRecoverTheClockOffsets) {
  const std::vector<std::int64_t> offsets = {0, 5 * kMs, -3 * kMs, 5 * kMs};
  const JobAnalysis job = analyze_job(make_job(4, 3, 2, offsets, true));
  const CollectiveMatching& m = job.matching;
  EXPECT_EQ(m.method, MatchMethod::kSequenceNumbers);
  EXPECT_EQ(m.collectives, 24u);
  EXPECT_EQ(m.matched_collectives, 24u);
  ASSERT_EQ(m.calls.size(), 6u);
  for (std::size_t r = 0; r < 4; ++r) {
    EXPECT_TRUE(m.clocks[r].aligned) << r;
    EXPECT_EQ(m.clocks[r].offset_ns, offsets[r]) << r;
  }
  // Ranks 1 and 3 share a clock; 0 and 2 each have their own.
  EXPECT_EQ(m.clock_groups, 3);
  EXPECT_EQ(m.clocks[1].clock_group, m.clocks[3].clock_group);
  EXPECT_NE(m.clocks[0].clock_group, m.clocks[2].clock_group);
  for (const MatchedCall& call : m.calls) {
    EXPECT_EQ(call.participants.size(), 4u);
    EXPECT_EQ(call.transfer_ns, 1 * kMs);
    EXPECT_EQ(call.last_rank_index, 2);
    EXPECT_EQ(call.lateness_ns, 2 * kMs);  // starts 1 ms before the end, the next-latest 3 ms before
  }
}

TEST(JobAnalysis, CostsSplitWaitingFromTransferWithNcclTestsBandwidth) {
  const JobAnalysis job = analyze_job(make_job(4, 3, 2, {0, 0, 0, 0}, true));
  ASSERT_EQ(job.costs.size(), 1u);
  const CollectiveCost& c = job.costs.front();
  EXPECT_EQ(c.kind, Collective::kAllReduce);
  EXPECT_EQ(c.bucket, 3);  // 64 MiB: 16 - 256 MiB
  EXPECT_EQ(c.calls, 6u);
  EXPECT_EQ(c.transfer_ns, 6 * kMs);
  // Per call: three ranks for 3 ms, one for 1 ms -> mean 2.5 ms, wait (2+2+2+0)/4 = 1.5 ms.
  EXPECT_EQ(c.mean_duration_ns, 2'500'000);
  EXPECT_EQ(c.mean_wait_ns, 1'500'000);
  EXPECT_DOUBLE_EQ(c.wait_share, 6.0 / 10.0);
  // algbw = 64 MiB / 1 ms = 67.108864 GB/s; busbw = x 2(n-1)/n = x 1.5.
  EXPECT_NEAR(c.algbw_gbps, 67.108864, 1e-9);
  EXPECT_NEAR(c.busbw_gbps, 100.663296, 1e-9);
  ASSERT_EQ(c.rank_mean_duration_ns.size(), 4u);
  EXPECT_EQ(c.rank_mean_duration_ns[2], 1 * kMs);
  EXPECT_EQ(c.rank_mean_duration_ns[0], 3 * kMs);
}

TEST(JobAnalysis, TheLateRankIsAStragglerWithItsCause) {
  const JobAnalysis job = analyze_job(make_job(4, 3, 2, {0, 2 * kMs, 0, -7 * kMs}, true));
  ASSERT_EQ(job.stragglers.stragglers.size(), 1u);
  const Straggler& s = job.stragglers.stragglers.front();
  EXPECT_EQ(job.ranks[static_cast<std::size_t>(s.rank_index)].rank, 2);
  EXPECT_EQ(s.times_last, 6u);
  EXPECT_EQ(s.calls, 6u);
  EXPECT_EQ(s.mean_lateness_ns, 2 * kMs);
  EXPECT_EQ(s.lateness_per_step_ns, 4 * kMs);  // two calls per step
  EXPECT_EQ(s.cost_per_step_ns, 4 * kMs);      // others: 6 ms exposed per step, the straggler 2 ms
  EXPECT_DOUBLE_EQ(s.step_share, 0.04);
  EXPECT_EQ(s.cause, StragglerCause::kInput);  // 4 ms more DataLoader per step covers the 4 ms
  // The others wait 2 ms in each of the 6 calls; the straggler does not wait.
  EXPECT_EQ(job.stragglers.ranks[0].wait_ns, 12 * kMs);
  EXPECT_EQ(job.stragglers.ranks[2].wait_ns, 0);
}

TEST(JobAnalysis, HiddenLatenessCostsNothing) {
  std::vector<RankResult> ranks = make_job(4, 3, 2, {0, 0, 0, 0}, true);
  for (RankResult& r : ranks) r.exposed_comm_ns = 0;  // compute overlaps every collective
  const JobAnalysis job = analyze_job(ranks);
  ASSERT_EQ(job.stragglers.stragglers.size(), 1u);
  EXPECT_EQ(job.stragglers.stragglers.front().lateness_per_step_ns, 4 * kMs);
  EXPECT_EQ(job.stragglers.stragglers.front().cost_per_step_ns, 0);
}

TEST(JobAnalysis, NoStragglerWhenTheLastRankChanges) {
  std::vector<RankResult> ranks = make_job(4, 4, 0, {0, 0, 0, 0}, true);
  // Make a different rank last in each step: swap durations so that rank (step % 4) is late.
  for (RankResult& r : ranks)
    for (RankCollective& c : r.collectives) {
      const std::int64_t end = c.start_ns + c.dur_ns;
      const int step = static_cast<int>(c.step - 10);
      c.dur_ns = (step % 4 == r.rank) ? 1 * kMs : 3 * kMs;
      c.start_ns = end - c.dur_ns;
    }
  const JobAnalysis job = analyze_job(ranks);
  EXPECT_TRUE(job.stragglers.stragglers.empty());
  for (const RankLateness& l : job.stragglers.ranks) EXPECT_EQ(l.times_last, 2u);
}

TEST(JobAnalysis, OrderMatchingSlidesOverACallMissingFromOneTrace) {
  const std::vector<std::int64_t> offsets = {0, 40 * kMs, -3 * kMs};
  std::vector<RankResult> ranks = make_job(3, 3, 1, offsets, false);
  // Rank 2's trace starts late: its first call is not in it.
  ranks[2].collectives.erase(ranks[2].collectives.begin());
  const JobAnalysis job = analyze_job(ranks);
  const CollectiveMatching& m = job.matching;
  EXPECT_EQ(m.method, MatchMethod::kOrder);
  EXPECT_EQ(m.collectives, 17u);
  EXPECT_EQ(m.matched_collectives, 17u);
  EXPECT_EQ(m.mismatches_dropped, 0u);
  EXPECT_EQ(m.clocks[1].offset_ns, 40 * kMs);
  EXPECT_EQ(m.clocks[2].offset_ns, -3 * kMs);
  ASSERT_EQ(m.calls.size(), 6u);
  EXPECT_EQ(m.calls.front().participants.size(), 2u);
}

TEST(JobAnalysis, CallsWhoseEndsDisagreeAreDropped) {
  std::vector<RankResult> ranks = make_job(3, 2, 1, {0, 0, 0}, true);
  ranks[2].collectives[1].start_ns += 5 * kMs;  // this call ends 5 ms after the others
  const JobAnalysis job = analyze_job(ranks);
  EXPECT_EQ(job.matching.mismatches_dropped, 1u);
  EXPECT_EQ(job.matching.matched_collectives, 11u);
}

TEST(JobAnalysis, RanksAreNumberedFromFileNamesThenOrderAndChecked) {
  std::vector<RankResult> ranks(4);
  ranks[0].source = "/x/worker3.pt.trace.json";
  ranks[1].source = "/x/b.json";
  ranks[2].source = "/x/rank_0.json.gz";
  ranks[3].source = "/x/a.json";
  ranks[3].rank = 5;
  ranks[3].rank_source = RankSource::kDistributedInfo;
  ranks[3].world_size = 8;
  const JobAnalysis job = analyze_job(ranks);
  ASSERT_EQ(job.ranks.size(), 4u);
  EXPECT_EQ(job.ranks[0].rank, 0);
  EXPECT_EQ(job.ranks[0].source, "/x/rank_0.json.gz");
  EXPECT_EQ(job.ranks[0].rank_source, RankSource::kFileName);
  EXPECT_EQ(job.ranks[1].rank, 1);  // b.json: the smallest free number
  EXPECT_EQ(job.ranks[1].rank_source, RankSource::kOrder);
  EXPECT_EQ(job.ranks[2].rank, 3);
  EXPECT_EQ(job.ranks[3].rank, 5);
  EXPECT_EQ(job.world_size, 8);
  EXPECT_EQ(job.missing_rank_count, 4u);  // 2, 4, 6, 7
  EXPECT_EQ(job.missing_ranks, (std::vector<int>{2, 4, 6, 7}));
}

TEST(JobAnalysis, ADuplicatedRankIsAWarningNotALoss) {
  std::vector<RankResult> ranks = make_job(2, 1, 0, {0, 0}, true);
  ranks[1].rank = 0;
  const JobAnalysis job = analyze_job(ranks);
  ASSERT_EQ(job.ranks.size(), 2u);
  EXPECT_EQ(job.ranks[1].rank, 1);
  ASSERT_FALSE(job.warnings.empty());
  EXPECT_NE(job.warnings.front().find("rank 0 appears twice"), std::string::npos);
}

TEST(RankFiles, RankFromFileName) {
  EXPECT_EQ(rank_from_file_name("rank-3.json"), 3);
  EXPECT_EQ(rank_from_file_name("/a/rank_12.pt.trace.json.gz"), 12);
  EXPECT_EQ(rank_from_file_name("a100-rank3of8-2022.json.gz"), 3);
  EXPECT_EQ(rank_from_file_name("RANK7.json"), 7);
  EXPECT_EQ(rank_from_file_name("trace_worker2.json"), 2);
  EXPECT_EQ(rank_from_file_name("/rank9/dir/host_123.1700000000.pt.trace.json"), std::nullopt);  // the file name only
  EXPECT_EQ(rank_from_file_name("myrank3.json"), std::nullopt);
  EXPECT_EQ(rank_from_file_name("rank3x.json"), std::nullopt);
  EXPECT_EQ(rank_from_file_name("host_123.1700000000.pt.trace.json"), std::nullopt);
}

TEST(RankResult, EncodingRoundTripsExactly) {
  std::vector<RankResult> ranks = make_job(2, 2, 1, {0, 3}, true);
  RankResult r = ranks[1];
  r.gpu_utilization_pct = 0.1 + 0.2;  // not exactly representable in decimal
  r.overlap_pct = 1.0 / 3.0;
  r.breakdown_pct[2] = 12.345678901234567;
  r.findings.push_back(
      {"input-bound", "Input-bound: \xff bad utf-8", Severity::kHigh, Dimension::kDataPipeline, 0.33, 1.5});
  r.notes = {"last step excluded"};
  r.scale_up_link = "NVLink4";
  r.scale_up_gbps = 450;
  r.collectives[2].exposed_ns = 123457;
  // Every other field away from its default, so that a field the codec drops cannot go unseen.
  r.source = "/runs/rank-1.json";
  r.rank_source = RankSource::kFileName;
  r.world_size = 2;
  r.backend = "nccl";
  r.nccl_version = "2.21.5";
  r.device_name = "NVIDIA H100 80GB HBM3";
  r.error = "";
  r.mean_step_ns = 1234567;
  r.comm_ns = 222;
  r.exposed_comm_ns = 111;
  r.window_ns = 9876543;
  r.process_groups = {"default_pg", "tp:0"};
  r.verdict = "Communication-bound";
  r.repairs = 3;
  r.skips = 4;
  r.steps[0].host_syncs = 7;
  r.steps[0].host_sync_ns = 700;
  r.steps[0].comm_ns = 50;
  r.steps[0].exposed_comm_ns = 20;
  r.steps[0].category_ns[1] = 17;
  r.collectives[0].process_group = 1;
  r.collectives[0].seq = 42;
  r.collectives[0].bytes = 1 << 20;
  r.collectives[0].group_size = 2;
  r.collectives[0].device = 3;
  const RankResult back = decode_rank_result(encode_rank_result(r));
  EXPECT_TRUE(back == r);
  RankResult changed = back;
  changed.collectives[0].device = 4;
  EXPECT_FALSE(changed == r);  // the comparison sees nested fields
  EXPECT_EQ(back.gpu_utilization_pct, r.gpu_utilization_pct);
  EXPECT_EQ(back.overlap_pct, r.overlap_pct);
  EXPECT_EQ(back.breakdown_pct, r.breakdown_pct);
  ASSERT_EQ(back.collectives.size(), r.collectives.size());
  EXPECT_EQ(back.collectives[3].start_ns, r.collectives[3].start_ns);
  EXPECT_EQ(back.collectives[2].exposed_ns, 123457);
  EXPECT_EQ(back.steps[1].dataloader_ns, r.steps[1].dataloader_ns);
  EXPECT_EQ(back.findings[0].title, r.findings[0].title);
  EXPECT_THROW(decode_rank_result({0x01, 0x02}), std::runtime_error);
}

}  // namespace job_analysis_test
}  // namespace
}  // namespace ferret

namespace ferret {
namespace {
namespace job_analysis_test {

// The job report's tables fit the layout width: at 80 columns the collectives table shows every
// column two spaces apart; at 60 the bus bandwidth goes and the rest stays. Figures by hand as in
// CostsSplitWaitingFromTransferWithNcclTestsBandwidth: 6 calls, mean 2.5 ms, transfer 1 ms per
// call, wait 60%, busbw 100.7 GB/s; ranks step 100 ms.
TEST(JobText, TablesFitTheWidth) {
  const JobAnalysis job = analyze_job(make_job(4, 3, 2, {0, 0, 0, 0}, true));
  const JobDiagnosis d = diagnose_job(job);
  Style st;
  const std::string wide = job_text(job, d, st);
  EXPECT_LE(test::longest_line(wide), 80u) << wide;
  EXPECT_NE(wide.find(" AllReduce  16 - 256 MiB      6    2.500        1.000   60%       100.7\n"), std::string::npos)
      << wide;
  st.width = 60;
  const std::string narrow = job_text(job, d, st);
  EXPECT_LE(test::longest_line(narrow), 60u) << narrow;
  EXPECT_NE(narrow.find(" AllReduce  16 - 256 MiB      6    2.500        1.000   60%\n"), std::string::npos) << narrow;
  EXPECT_EQ(narrow.find("busbw"), std::string::npos) << narrow;
  EXPECT_NE(narrow.find("100.00"), std::string::npos) << narrow;  // the ranks' step time
}

}  // namespace job_analysis_test
}  // namespace
}  // namespace ferret
