// pick_verdict and the ranking on hand-built findings: a symptom defers to its cause, a symptom
// alone or beside an unrelated finding is the verdict, ties go by severity then id, a window
// finding wins with no bottleneck, and nothing below medium is a verdict.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "diagnosis/verdict.h"

namespace ferret {
namespace {

Finding finding(const std::string& id, Severity severity, double max_speedup,
                Dimension dimension = Dimension::kCompute) {
  Finding f;
  f.id = id;
  f.title = id + " title";
  f.severity = severity;
  f.max_speedup = max_speedup;
  f.dimension = dimension;
  f.fixes = {id + " fix"};
  return f;
}

std::vector<std::string> ids(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const Finding& f : findings) out.push_back(f.id);
  return out;
}

// The GPU idles half the time (2.0x) and launch overhead explains 20% of it (1.25x): the symptom
// ranks first, the cause is the verdict, leads the list, and the symptom's first fix names it.
TEST(Verdict, SymptomWithItsCausePresentDefersToTheCause) {
  std::vector<Finding> findings = {finding("launch-bound", Severity::kMedium, 1.25),
                                   finding("low-gpu-utilization", Severity::kHigh, 2.0)};
  rank_findings(findings);
  EXPECT_EQ(ids(findings), (std::vector<std::string>{"low-gpu-utilization", "launch-bound"}));
  const Finding* verdict = pick_verdict(findings);
  ASSERT_NE(verdict, nullptr);
  EXPECT_EQ(verdict->id, "launch-bound");

  ASSERT_NE(rank_and_lead_with_verdict(findings), nullptr);
  EXPECT_EQ(ids(findings), (std::vector<std::string>{"launch-bound", "low-gpu-utilization"}));
  EXPECT_EQ(findings[1].fixes.size(), 2u);
  EXPECT_NE(findings[1].fixes.front().find("finding launch-bound (launch-bound title)"), std::string::npos)
      << findings[1].fixes.front();
  EXPECT_EQ(findings[0].fixes, std::vector<std::string>{"launch-bound fix"});  // the cause is unchanged
}

TEST(Verdict, SymptomAloneIsTheVerdict) {
  const std::vector<Finding> findings = {finding("cpu-bound", Severity::kMedium, 1.5)};
  const Finding* verdict = pick_verdict(findings);
  ASSERT_NE(verdict, nullptr);
  EXPECT_EQ(verdict->id, "cpu-bound");
  const Verdict v = verdict_of(*verdict);
  EXPECT_TRUE(v.bottleneck_found);
  EXPECT_EQ(v.finding_id, "cpu-bound");
  EXPECT_DOUBLE_EQ(v.max_speedup, 1.5);
}

// Memory fragmentation does not explain an idle GPU: the higher-ranked symptom stays the verdict.
// (Before the registry, any non-symptom took the verdict from a symptom.)
TEST(Verdict, AnUnrelatedFindingDoesNotTakeTheVerdictFromASymptom) {
  std::vector<Finding> findings = {finding("memory-fragmentation", Severity::kMedium, 1.0, Dimension::kMemory),
                                   finding("low-gpu-utilization", Severity::kHigh, 2.0)};
  ASSERT_NE(rank_and_lead_with_verdict(findings), nullptr);
  EXPECT_EQ(findings.front().id, "low-gpu-utilization");
  EXPECT_EQ(findings[0].fixes, std::vector<std::string>{"low-gpu-utilization fix"});  // no cause to point at
}

// A low-severity cause cannot be the verdict, so it does not take it from its symptom; the
// symptom still points at it.
TEST(Verdict, ALowSeverityCauseLeavesTheVerdictToItsSymptom) {
  std::vector<Finding> findings = {finding("host-sync", Severity::kLow, 1.02),
                                   finding("low-gpu-utilization", Severity::kMedium, 1.6)};
  const Finding* verdict = rank_and_lead_with_verdict(findings);
  ASSERT_NE(verdict, nullptr);
  EXPECT_EQ(verdict->id, "low-gpu-utilization");
  EXPECT_NE(findings[0].fixes.front().find("finding host-sync"), std::string::npos);
}

// Equal gain: higher severity first; equal gain and severity: id order; all three equal: the
// order the rule gave (two nccl-missing-ranks findings told apart by their titles).
TEST(Verdict, TiesGoBySeverityThenIdThenRuleOrder) {
  std::vector<Finding> findings = {finding("sync-copy", Severity::kMedium, 1.25),
                                   finding("launch-bound", Severity::kMedium, 1.25),
                                   finding("host-sync", Severity::kHigh, 1.25)};
  ASSERT_NE(rank_and_lead_with_verdict(findings), nullptr);
  EXPECT_EQ(ids(findings), (std::vector<std::string>{"host-sync", "launch-bound", "sync-copy"}));

  std::vector<Finding> nccl = {
      finding("nccl-slow-init", Severity::kLow, 1.0), finding("nccl-missing-ranks", Severity::kMedium, 1.0),
      finding("nccl-config-mismatch", Severity::kMedium, 1.0), finding("nccl-missing-ranks", Severity::kMedium, 1.0)};
  nccl[1].title = "first";
  nccl[3].title = "second";
  const Finding* verdict = rank_and_lead_with_verdict(nccl);
  ASSERT_NE(verdict, nullptr);
  EXPECT_EQ(verdict->id, "nccl-config-mismatch");
  EXPECT_EQ(ids(nccl), (std::vector<std::string>{"nccl-config-mismatch", "nccl-missing-ranks", "nccl-missing-ranks",
                                                 "nccl-slow-init"}));
  EXPECT_EQ(nccl[1].title, "first");
  EXPECT_EQ(nccl[2].title, "second");
}

TEST(Verdict, AWindowFindingWinsWithNoBottleneck) {
  std::vector<Finding> findings = {finding("input-bound", Severity::kHigh, 1.67, Dimension::kDataPipeline),
                                   finding("initialisation-window", Severity::kHigh, 1.0, Dimension::kBenchmark)};
  const Finding* verdict = rank_and_lead_with_verdict(findings);
  ASSERT_NE(verdict, nullptr);
  EXPECT_EQ(ids(findings), (std::vector<std::string>{"initialisation-window", "input-bound"}));
  const Verdict v = verdict_of(*verdict);
  EXPECT_FALSE(v.bottleneck_found);
  EXPECT_EQ(v.dimension, Dimension::kBenchmark);
  EXPECT_DOUBLE_EQ(v.max_speedup, 1.0);
}

// A slow transport explains the job's exposed communication, which outranks it.
TEST(Verdict, JobSymptomDefersToItsCause) {
  std::vector<Finding> findings = {
      finding("slow-collective-transport", Severity::kMedium, 1.1, Dimension::kDistributed),
      finding("job-exposed-communication", Severity::kHigh, 1.3, Dimension::kDistributed)};
  const Finding* verdict = rank_and_lead_with_verdict(findings);
  ASSERT_NE(verdict, nullptr);
  EXPECT_EQ(verdict->id, "slow-collective-transport");
}

TEST(Verdict, NothingOfMediumSeverityIsNoVerdict) {
  std::vector<Finding> findings = {finding("hot-operator", Severity::kLow, 1.3),
                                   finding("window-edge-wait", Severity::kInfo, 1.0, Dimension::kBenchmark),
                                   finding("cpu-bound", Severity::kLow, 1.4)};
  EXPECT_EQ(rank_and_lead_with_verdict(findings), nullptr);
  EXPECT_EQ(ids(findings), (std::vector<std::string>{"cpu-bound", "hot-operator", "window-edge-wait"}));
  EXPECT_EQ(pick_verdict({}), nullptr);
}

}  // namespace
}  // namespace ferret
