// DDP over gloo on CPU tensors, by hand: the all-reduce runs as a `gloo:all_reduce` span on one of
// gloo's threads; the training thread ends backward, then waits in no operator until it ends.
// Exposure is gloo time the training thread spends in no operator; the what-if closes the wait.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/timeline/communication.h"
#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace gloo_communication_test {

using test::span;

// Two 100 ms steps (us). Training thread 1: forward [1, 30], backward [30, 60] in which DDP's hook
// hands the bucket over (c10d::allreduce_ [49.9, 50]), then the gradient copy-back [90.1, 95] once
// the collective ends. gloo thread 2: gloo:all_reduce [50, 90] of 1,048,576 floats (4 MiB).
std::string ddp_gloo_steps() {
  std::vector<std::string> ev;
  for (int k = 0; k < 2; ++k) {
    const double s = k * 100'000.0;
    ev.push_back(span("user_annotation", fmt::format("ProfilerStep#{}", k), 1, 1, s, 100'000));
    ev.push_back(span("cpu_op", "aten::addmm", 1, 1, s + 1'000, 29'000));
    ev.push_back(span("cpu_op", "aten::mm", 1, 1, s + 30'000, 30'000));
    ev.push_back(span("cpu_op", "c10d::allreduce_", 1, 1, s + 49'900, 100));
    ev.push_back(span("user_annotation", "gloo:all_reduce", 1, 2, s + 50'000, 40'000,
                      R"("Input Dims": [[1048576]], "Input type": ["float"])"));
    ev.push_back(span("cpu_op", "aten::copy_", 1, 1, s + 90'100, 4'900));
  }
  std::string t = test::trace(ev);
  return R"({"distributedInfo": {"backend": "gloo", "rank": 0, "world_size": 2}, )" + t.substr(1);
}

TEST(GlooCommunication, ExposureIsTheTrainingThreadWaitingByHand) {
  const TraceModel m = load_trace_text(ddp_gloo_steps());
  const TraceAnalysis a = analyze_trace(m, {});
  const CommunicationResult& c = a.communication;
  ASSERT_TRUE(c.present);
  EXPECT_TRUE(c.on_host);
  ASSERT_EQ(c.calls.size(), 2u);
  for (const CollectiveCall& call : c.calls) {
    EXPECT_EQ(call.device, kHostCollectiveDevice);
    EXPECT_EQ(call.kind, Collective::kAllReduce);
    EXPECT_EQ(call.bytes, 4 << 20);
    EXPECT_EQ(call.group_size, 2);
    EXPECT_EQ(call.exposed_ns, 30'000'000);  // [60, 90]: the training thread in no operator
  }
  EXPECT_EQ(c.comm_ns, 80'000'000);
  EXPECT_EQ(c.exposed_ns, 60'000'000);
  EXPECT_NEAR(c.exposed_share, 0.30, 1e-12);
  EXPECT_NEAR(c.overlap_share, 0.25, 1e-12);  // [50, 60] under backward, of 40 ms each
  // The hardware layer compares NCCL's bandwidth with device links: gloo crosses none.
  EXPECT_TRUE(collect_collectives(m, a.context).empty());
}

TEST(GlooCommunication, TheWaitIsTheFindingAndItsPrediction) {
  const TraceModel m = load_trace_text(ddp_gloo_steps());
  const Diagnosis d = diagnose(analyze_trace(m, {}));
  const auto found = std::find_if(d.findings.begin(), d.findings.end(),
                                  [](const Finding& x) { return x.id == "exposed-communication"; });
  ASSERT_NE(found, d.findings.end());
  const Finding& f = *found;
  EXPECT_NE(f.title.find("30% of step time waits on gloo"), std::string::npos) << f.title;
  // Without the collective's time the training thread resumes its 0.1 ms wake-up after backward
  // ends (60.1 ms), not at 90.1: each step loses 30 ms, 100 -> 70 ms.
  EXPECT_NEAR(f.predicted_speedup, 100.0 / 70.0, 0.001) << f.title;
  EXPECT_NEAR(f.max_speedup, 1.0 / 0.7, 1e-9);
  EXPECT_LE(f.predicted_speedup, f.max_speedup);
}

TEST(GlooCommunication, AThreadThatHandsNoCollectiveOverWaitsForNone) {
  // The hand-overs come from another thread (3): nothing says the training thread waits for the
  // collective; exposure is measured, no wait closed.
  std::string t = ddp_gloo_steps();
  const std::string on_training = R"("c10d::allreduce_","pid":1,"tid":1)";
  for (std::string::size_type at = 0; (at = t.find(on_training, at)) != std::string::npos;)
    t.replace(at, on_training.size(), R"("c10d::allreduce_","pid":1,"tid":3)");
  const TraceModel m = load_trace_text(t);
  const TraceAnalysis a = analyze_trace(m, {});
  EXPECT_EQ(a.communication.exposed_ns, 2 * 30'000'000);
  // Without hand-overs recorded anywhere (operators left out), any idle thread may have waited.
  std::string unrecorded = ddp_gloo_steps();
  for (std::string::size_type at = 0; (at = unrecorded.find("c10d::allreduce_", at)) != std::string::npos;)
    unrecorded.replace(at, 16, "aten::detach_");
  const TraceModel m2 = load_trace_text(unrecorded);
  const Diagnosis d2 = diagnose(analyze_trace(m2, {}));
  for (const Finding& x : d2.findings) {
    if (x.id == "exposed-communication") {
      EXPECT_NEAR(x.predicted_speedup, 100.0 / 70.0, 0.001);
    }
  }
  const Diagnosis d = diagnose(a);
  const auto f = std::find_if(d.findings.begin(), d.findings.end(),
                              [](const Finding& x) { return x.id == "exposed-communication"; });
  ASSERT_NE(f, d.findings.end());
  EXPECT_LE(f->predicted_speedup, 1.0 + 1e-9) << f->title;
  // Nothing to gain, so it is not the verdict: the step's matmuls are.
  EXPECT_NE(d.verdict.finding_id, "exposed-communication");
}

}  // namespace gloo_communication_test
}  // namespace
}  // namespace ferret
