// The ranking policy on hand-built findings: one finding per cause (symptoms fold into their causes,
// same-cause pairs into the more precise id), severity follows the gain's band, the list never
// interleaves severities, the verdict is finding #1, a window finding wins with no bottleneck, and
// nothing below medium is a verdict.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "diagnosis/verdict.h"

#include "analysis/causal/whatif.h"
#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "diagnosis/rules.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace verdict_test {

Finding finding(const std::string& id, Severity severity, double max_speedup,
                Dimension dimension = Dimension::kCompute) {
  Finding f;
  f.id = id;
  f.title = id + " title";
  f.severity = severity;
  f.max_speedup = max_speedup;
  f.time_share = 1.0 - 1.0 / max_speedup;  // Amdahl's share; 0 for a finding that bounds no gain
  f.dimension = dimension;
  f.fixes = {id + " fix"};
  return f;
}

std::vector<std::string> ids(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const Finding& f : findings) out.push_back(f.id);
  return out;
}

// The GPU idles half the time (2.0x) and launch overhead explains a third of the time (1.5x), over
// half of the idle time: one finding, launch-bound, with its own title, fix and gain, the symptom's
// numbers as evidence and its detail appended.
TEST(Verdict, SymptomFoldsIntoItsCauseAsEvidence) {
  Finding cause = finding("launch-bound", Severity::kMedium, 1.5);
  cause.detail = "Kernels are short.";
  cause.evidence = {{"launch_overhead_pct", 18, "%"}};
  Finding symptom = finding("low-gpu-utilization", Severity::kHigh, 2.0);
  symptom.detail = "The GPU idles half the time.";
  symptom.evidence = {{"gpu_utilization_pct", 50, "%"}, {"launch_overhead_pct", 99, "%"}};
  std::vector<Finding> findings = {cause, symptom};
  const Finding* verdict = rank_and_lead_with_verdict(findings);
  ASSERT_NE(verdict, nullptr);
  EXPECT_EQ(verdict, &findings.front());
  EXPECT_EQ(ids(findings), std::vector<std::string>{"launch-bound"});
  EXPECT_DOUBLE_EQ(findings[0].max_speedup, 1.5);
  EXPECT_EQ(fix_texts(findings[0]), std::vector<std::string>{"launch-bound fix"});  // the symptom's guesses stay out
  EXPECT_EQ(findings[0].detail, "Kernels are short. The GPU idles half the time.");
  ASSERT_EQ(findings[0].evidence.size(), 2u);  // the cause's own launch_overhead_pct wins a name clash
  EXPECT_DOUBLE_EQ(findings[0].evidence[0].value, 18);
  EXPECT_EQ(findings[0].evidence[1].name, "gpu_utilization_pct");
  EXPECT_EQ(findings[0].severity, Severity::kHigh);  // 1.5x: a third of the time, >= 20%
}

// A sentence both findings would carry (the advice to record Python stacks) is a note on each:
// the fold keeps one note and appends the symptom's detail after the cause's; the diagnosis writes
// the note's sentence once, after folding.
TEST(Verdict, FoldedNotesAreOneAndDetailsAppend) {
  Finding cause = finding("launch-bound", Severity::kMedium, 1.5);
  cause.detail = "Kernels are short.";
  cause.notes.record_stacks = true;
  Finding symptom = finding("low-gpu-utilization", Severity::kHigh, 2.0);
  symptom.detail = "The GPU idles half the time (e.g. 50.0 ms).";
  symptom.notes.record_stacks = true;
  symptom.notes.python_frames = false;
  std::vector<Finding> findings = {cause, symptom};
  rank_and_lead_with_verdict(findings);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].detail, "Kernels are short. The GPU idles half the time (e.g. 50.0 ms).");
  EXPECT_TRUE(findings[0].notes.record_stacks);
  EXPECT_FALSE(findings[0].notes.python_frames);
  TraceAnalysis a;
  say_python_frames(a, findings);
  EXPECT_EQ(findings[0].detail,
            "Kernels are short. The GPU idles half the time (e.g. 50.0 ms). Recording with "
            "`torch.profiler.profile(..., with_stack=True)` would name the Python code that holds the host.");
}

// Causes that explain under half of a symptom's time leave it standing for the rest: a GPU idle
// 90% of the time (10x) beside a synchronous copy worth 2% (1.0204x) and host syncs worth 20%
// (1.25x) - 22% < 45%. The symptom leads, asks first what to record, and names the partial causes.
TEST(Verdict, CausesOfASmallPartLeaveTheSymptomStanding) {
  std::vector<Finding> findings = {finding("sync-copy", Severity::kLow, 1.0 / 0.98),
                                   finding("low-gpu-utilization", Severity::kHigh, 10.0),
                                   finding("host-sync", Severity::kMedium, 1.25)};
  const Finding* verdict = rank_and_lead_with_verdict(findings);
  ASSERT_NE(verdict, nullptr);
  EXPECT_EQ(ids(findings), (std::vector<std::string>{"low-gpu-utilization", "host-sync", "sync-copy"}));
  EXPECT_NE(findings[0].fixes.front().text.find("with_stack=True"), std::string::npos);
  EXPECT_NE(findings[0].detail.find("Findings sync-copy, host-sync explain 22% of the time against 90% here"),
            std::string::npos)
      << findings[0].detail;
  // A cause of 50% (2x) covers over half of the 90%: then it folds.
  std::vector<Finding> half = {finding("low-gpu-utilization", Severity::kHigh, 10.0),
                               finding("host-sync", Severity::kMedium, 2.0)};
  rank_and_lead_with_verdict(half);
  EXPECT_EQ(ids(half), std::vector<std::string>{"host-sync"});
}

// With no cause, low utilization beside CPU-bound is one symptom told twice: it folds into
// cpu-bound, which stands alone and asks first for a recording that can name the cause.
TEST(Verdict, LoneSymptomKeepsARecordNextFix) {
  std::vector<Finding> findings = {finding("low-gpu-utilization", Severity::kHigh, 2.0),
                                   finding("cpu-bound", Severity::kMedium, 1.5),
                                   finding("memory-fragmentation", Severity::kMedium, 1.0, Dimension::kMemory)};
  const Finding* verdict = rank_and_lead_with_verdict(findings);
  ASSERT_NE(verdict, nullptr);
  EXPECT_EQ(ids(findings), (std::vector<std::string>{"cpu-bound", "memory-fragmentation"}));
  ASSERT_EQ(findings[0].fixes.size(), 2u);
  EXPECT_NE(findings[0].fixes[0].text.find("with_stack=True"), std::string::npos) << findings[0].fixes[0].text;
  EXPECT_NE(findings[0].fixes[0].text.find("record_shapes=True"), std::string::npos);
  EXPECT_NE(findings[0].fixes[0].text.find("set_sync_debug_mode"), std::string::npos);
  EXPECT_EQ(findings[0].fixes[1].text, "cpu-bound fix");
  EXPECT_EQ(fix_texts(findings[1]), std::vector<std::string>{"memory-fragmentation fix"});  // a cause: no record-next
  const Verdict v = verdict_of(*verdict);
  EXPECT_TRUE(v.bottleneck_found);
  EXPECT_EQ(v.finding_id, "cpu-bound");
  EXPECT_DOUBLE_EQ(v.max_speedup, 1.5);
}

// Same cause, two rules: matmul-dominated folds into the more precise no-tensor-cores, which keeps
// its id, title and gain and takes the other's evidence and fixes (FP8, fused attention).
TEST(Verdict, SameCausePairsBecomeOneFindingUnderTheMorePreciseId) {
  Finding precise = finding("no-tensor-cores", Severity::kHigh, 1.9);
  precise.evidence = {{"tc_eligible_without_tc_pct", 60, "%"}};
  Finding broad = finding("matmul-dominated", Severity::kMedium, 2.1);
  broad.evidence = {{"matmul_conv_pct", 70, "%"}};
  Finding heavy = finding("communication-heavy", Severity::kLow, 1.08, Dimension::kDistributed);
  heavy.evidence = {{"communication_pct", 30, "%"}};
  Finding exposed = finding("exposed-communication", Severity::kMedium, 1.08, Dimension::kDistributed);
  std::vector<Finding> findings = {broad, heavy, precise, exposed};
  ASSERT_NE(rank_and_lead_with_verdict(findings), nullptr);
  EXPECT_EQ(ids(findings), (std::vector<std::string>{"no-tensor-cores", "exposed-communication"}));
  EXPECT_DOUBLE_EQ(findings[0].max_speedup, 1.9);
  EXPECT_EQ(findings[0].title, "no-tensor-cores title");
  EXPECT_EQ(fix_texts(findings[0]), (std::vector<std::string>{"no-tensor-cores fix", "matmul-dominated fix"}));
  ASSERT_EQ(findings[0].evidence.size(), 2u);
  EXPECT_EQ(findings[0].evidence[1].name, "matmul_conv_pct");
  EXPECT_EQ(fix_texts(findings[1]), (std::vector<std::string>{"exposed-communication fix", "communication-heavy fix"}));
  EXPECT_EQ(findings[1].evidence.at(0).name, "communication_pct");
  // Alone, each of them is a finding of its own.
  std::vector<Finding> alone = {heavy};
  rank_and_lead_with_verdict(alone);
  EXPECT_EQ(ids(alone), std::vector<std::string>{"communication-heavy"});
}

// Findings sharing a cause key keep the one with the larger gain, whatever order they came in.
TEST(Verdict, SharedCauseKeyKeepsTheLargerGain) {
  Finding host = finding("pageable-copy", Severity::kLow, 1.02);
  Finding hardware = finding("pageable-copies", Severity::kLow, 1.06, Dimension::kMemory);
  hardware.cause = "pageable-copy";
  std::vector<Finding> findings = {host, hardware};
  rank_and_lead_with_verdict(findings);
  EXPECT_EQ(ids(findings), std::vector<std::string>{"pageable-copies"});
  EXPECT_EQ(fix_texts(findings[0]), (std::vector<std::string>{"pageable-copies fix", "pageable-copy fix"}));
}

// The bands, at the shares they stand for: 1/(1-0.20) = 1.25, 1/(1-0.05) = 1.0526.., 1/(1-0.01) = 1.0101..
TEST(Verdict, SeverityBandsOfTheGain) {
  EXPECT_EQ(severity_of_gain(1.25), Severity::kHigh);
  EXPECT_EQ(severity_of_gain(1.2499), Severity::kMedium);
  EXPECT_EQ(severity_of_gain(1.0 / 0.95), Severity::kMedium);
  EXPECT_EQ(severity_of_gain(1.05), Severity::kLow);  // 4.8% of the time
  EXPECT_EQ(severity_of_gain(1.02), Severity::kLow);  // the example: not medium
  EXPECT_EQ(severity_of_gain(1.0 / 0.99), Severity::kLow);
  EXPECT_EQ(severity_of_gain(1.01), Severity::kInfo);
  EXPECT_EQ(severity_of_gain(1.0), Severity::kInfo);
}

// Severity follows the gain, so a rule's HIGH with a 1.02x bound is low and ranks below a 1.3x
// MEDIUM; findings that bound no gain keep their severity and come after bounded ones of the same
// severity. Severities never increase down the list.
TEST(Verdict, SeveritiesNeverInterleave) {
  std::vector<Finding> findings = {finding("host-sync", Severity::kHigh, 1.02),
                                   finding("input-bound", Severity::kMedium, 1.3, Dimension::kDataPipeline),
                                   finding("memory-near-capacity", Severity::kHigh, 1.0, Dimension::kMemory),
                                   finding("launch-bound", Severity::kHigh, 1.06),
                                   finding("hot-operator", Severity::kLow, 1.0)};
  const Finding* verdict = rank_and_lead_with_verdict(findings);
  ASSERT_NE(verdict, nullptr);
  EXPECT_EQ(verdict->id, "input-bound");
  EXPECT_EQ(ids(findings), (std::vector<std::string>{"input-bound", "memory-near-capacity", "launch-bound", "host-sync",
                                                     "hot-operator"}));
  EXPECT_EQ(findings[0].severity, Severity::kHigh);
  EXPECT_EQ(findings[2].severity, Severity::kMedium);
  EXPECT_EQ(findings[3].severity, Severity::kLow);
  for (std::size_t i = 1; i < findings.size(); ++i) EXPECT_LE(findings[i].severity, findings[i - 1].severity) << i;
}

// Equal severity and gain: id order; all equal: the order the rule gave (two nccl-missing-ranks
// findings told apart by their titles). NCCL findings bound no gain and keep their severities.
TEST(Verdict, TiesGoByGainThenIdThenRuleOrder) {
  std::vector<Finding> findings = {finding("sync-copy", Severity::kMedium, 1.25),
                                   finding("launch-bound", Severity::kMedium, 1.25),
                                   finding("host-sync", Severity::kHigh, 1.3)};
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

// The job path: a slow transport explains the exposed communication, which folds into it even
// with the larger gain; alone, the job symptom asks for the NCCL logs of every rank.
TEST(Verdict, JobSymptomFoldsIntoItsCause) {
  std::vector<Finding> findings = {
      finding("slow-collective-transport", Severity::kMedium, 1.0, Dimension::kDistributed),
      finding("job-exposed-communication", Severity::kHigh, 1.3, Dimension::kDistributed)};
  const Finding* verdict = rank_and_lead_with_verdict(findings);
  ASSERT_NE(verdict, nullptr);
  EXPECT_EQ(ids(findings), std::vector<std::string>{"slow-collective-transport"});

  std::vector<Finding> alone = {finding("job-exposed-communication", Severity::kHigh, 1.3, Dimension::kDistributed)};
  ASSERT_NE(rank_and_lead_with_verdict(alone), nullptr);
  EXPECT_NE(alone[0].fixes.front().text.find("NCCL_DEBUG=INFO"), std::string::npos) << alone[0].fixes.front().text;
}

TEST(Verdict, NothingOfMediumSeverityIsNoVerdict) {
  std::vector<Finding> findings = {finding("hot-operator", Severity::kLow, 1.0),
                                   finding("window-edge-wait", Severity::kInfo, 1.0, Dimension::kBenchmark),
                                   finding("host-sync", Severity::kHigh, 1.04)};
  EXPECT_EQ(rank_and_lead_with_verdict(findings), nullptr);
  EXPECT_EQ(ids(findings), (std::vector<std::string>{"host-sync", "hot-operator", "window-edge-wait"}));
  EXPECT_EQ(pick_verdict({}), nullptr);
}

}  // namespace verdict_test
}  // namespace
}  // namespace ferret

namespace ferret {
namespace {
namespace verdict_test {

// The what-if's prediction sits beside each removable cause's bound. On the ResNet50 / V100
// trace the TensorBoard plugin's figures give the DataLoader-free step: 177.592 - 59.262 ms =
// 118.330 ms, 1.501x; the re-timed steps must agree within 2%. A prediction above a bound raises it.
TEST(PredictedGain, InputBoundMatchesThePluginsDataLoaderShare) {
  FERRET_REQUIRE_CORPUS(path, "resnet50-v100-torch19-dataloader.pt.trace.json.gz");
  const TraceModel model = load_trace(path);
  const TraceAnalysis a = analyze_trace(model, {});
  const Diagnosis d = diagnose(a);
  bool seen = false;
  for (const Finding& f : d.findings) {
    if (f.id == "input-bound") {
      seen = true;
      EXPECT_NEAR(f.predicted_speedup, 177.592 / 118.330, 0.02 * 177.592 / 118.330);
    }
    // Predicted exactly when the diagnosis has a change to re-time for its fix.
    const RetimeChanges c = fix_change_of(f);
    const bool changes = whatif_changes_anything(c);
    EXPECT_EQ(f.predicted_speedup > 0, changes) << f.id;
    if (f.predicted_speedup > 0) {
      EXPECT_GE(f.max_speedup + 1e-12, f.predicted_speedup) << f.id;
    }
  }
  EXPECT_TRUE(seen);
}

}  // namespace verdict_test
}  // namespace
}  // namespace ferret
