// ferret diff, the computation (bench/trace_diff): hand-made traces whose every expected number is
// worked out by hand in the comments, and the pieces (step-time test, gate, findings matching) on
// hand-made inputs. The CLI and the real corpus pair are in diff_cli_test.cpp.
#include "diff/trace_diff.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "ingest/trace_loader.h"
#include "report/diff/diff_report.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace trace_diff_test {

// ---- A tiny training job, built as Kineto JSON text ---------------------------------------------

std::string span(const char* cat, const std::string& name, int pid, int tid, double ts, double dur,
                 const std::string& args = "") {
  char buf[768];
  std::snprintf(buf, sizeof buf, R"({"ph":"X","cat":"%s","name":"%s","pid":%d,"tid":%d,"ts":%.3f,"dur":%.3f%s%s%s})",
                cat, name.c_str(), pid, tid, ts, dur, args.empty() ? "" : ",\"args\":{", args.c_str(),
                args.empty() ? "" : "}");
  return buf;
}

struct HostOp {
  std::string name;
  double start_us;  // from the step's start
  double dur_us;
};

// `steps` steps (ProfilerStep#0..) of `step_us` each, back to back from t = 0. In each step, on
// host thread 1 of pid 1 and stream 7 of GPU 0:
//   aten::mm           [0, 1000) us, Input Dims `mm_dims`
//     cudaLaunchKernel [900, 1000) us  ->  gemm_kernel [1000, 1000 + gemm_us) on the GPU
//   every `extra` host-only cpu_op at its offset
// Step breakdown by hand (priority Kernel > ... > Runtime > ... > CPU Exec > Other), per step:
//   Kernel = gemm_us; Runtime = 100 us; CPU Exec = 900 us of aten::mm (its last 100 us are
//   Runtime) + the extra ops; Other = the rest. Each step launches one kernel, so no step is
//   dropped as incomplete, and the kernel ends inside its step, so no step is extended.
// Operators by hand, per step: aten::mm host self 900 us (1000 minus its 100 us launch child),
// GPU self gemm_us; each extra op: host self = its duration, no GPU time.
std::string job(int steps, double step_us, double gemm_us, const std::string& mm_dims,
                const std::vector<HostOp>& extra = {}) {
  std::string out = R"({"traceEvents":[)";
  bool first = true;
  auto add = [&](const std::string& e) {
    out += (first ? "" : ",") + e;
    first = false;
  };
  for (int i = 0; i < steps; ++i) {
    const double t0 = step_us * i;
    const int corr = 100 + i;
    add(span("user_annotation", "ProfilerStep#" + std::to_string(i), 1, 1, t0, step_us));
    add(span("cpu_op", "aten::mm", 1, 1, t0, 1000,
             "\"Input Dims\":" + mm_dims + ",\"Input type\":[\"float\",\"float\"]"));
    add(span("cuda_runtime", "cudaLaunchKernel", 1, 1, t0 + 900, 100, "\"correlation\":" + std::to_string(corr)));
    add(span("kernel", "gemm_kernel", 0, 7, t0 + 1000, gemm_us,
             "\"correlation\":" + std::to_string(corr) + ",\"device\":0,\"stream\":7"));
    for (const HostOp& op : extra) add(span("cpu_op", op.name, 1, 1, t0 + op.start_us, op.dur_us));
  }
  return out + "]}";
}

constexpr const char* kDims256 = "[[64,128],[128,256]]";
constexpr const char* kDims512 = "[[64,128],[128,512]]";

// BASE: 5 steps of 10 ms; gemm_kernel 4 ms; aten::copy_ [5000, 5300) us after the kernel.
//   breakdown per step: Kernel 4000, Runtime 100, CPU Exec 900 + 300 = 1200,
//   Other 10000 - 4000 - 100 - 1200 = 4700 us.
std::string base_job(int steps = 5) { return job(steps, 10000, 4000, kDims256, {{"aten::copy_", 5000, 300}}); }
// NEW: 5 steps of 12 ms; gemm_kernel 2 ms longer (6 ms); aten::mm on new shapes; aten::copy_
// gone and aten::add_ [7000, 7500) us added.
//   breakdown per step: Kernel 6000, Runtime 100, CPU Exec 900 + 500 = 1400,
//   Other 12000 - 6000 - 100 - 1400 = 4500 us.
std::string new_job(int steps = 5) { return job(steps, 12000, 6000, kDims512, {{"aten::add_", 7000, 500}}); }

constexpr double kUs = 1000.0;  // ns per us

const CategoryDiff& category(const TraceDiff& d, StepCategory c) { return d.categories[static_cast<int>(c)]; }

// ---- The whole comparison on the hand-made pair -------------------------------------------------

TEST(TraceDiff, StepTimeSlowerAndSignificant) {
  const TraceModel base = load_trace_text(base_job());
  const TraceModel next = load_trace_text(new_job());
  const TraceDiff d = diff_traces(base, next, {});
  ASSERT_EQ(d.base.step_ns.size(), 5u);
  ASSERT_EQ(d.next.step_ns.size(), 5u);
  for (double s : d.base.step_ns) EXPECT_DOUBLE_EQ(s, 10000 * kUs);
  for (double s : d.next.step_ns) EXPECT_DOUBLE_EQ(s, 12000 * kUs);
  const stats::Comparison& c = d.step_time.comparison;
  EXPECT_TRUE(d.step_time.enough_samples);
  EXPECT_DOUBLE_EQ(c.median_a, 10000 * kUs);
  EXPECT_DOUBLE_EQ(c.median_b, 12000 * kUs);
  EXPECT_NEAR(c.relative_change, 0.20, 1e-12);  // (12 - 10) / 10
  EXPECT_DOUBLE_EQ(c.hl_shift, 2000 * kUs);     // every pairwise difference is 2 ms
  // Every resample has medians 10 and 12 ms: the interval is the point [+20%, +20%].
  EXPECT_NEAR(c.relative_change_ci.low, 0.20, 1e-12);
  EXPECT_NEAR(c.relative_change_ci.high, 0.20, 1e-12);
  // Mann–Whitney by hand: the steps tie within each trace, so the normal approximation with tie
  // correction: U_base = 0, mean 25/2, sigma^2 = 25/12 * (11 - (5^3-5 + 5^3-5) / (10 * 9)) = 625/36,
  // sigma = 25/6, z = (12.5 - 0.5) / (25/6) = 2.88, p = erfc(2.88 / sqrt 2) = 0.0039768.
  EXPECT_EQ(c.mann_whitney.method, stats::MannWhitneyMethod::kNormal);
  EXPECT_NEAR(c.mann_whitney.p_value, 0.0039768, 1e-6);
  EXPECT_TRUE(c.significant);
  EXPECT_EQ(d.step_time.verdict, StepVerdict::kSlower);
  EXPECT_DOUBLE_EQ(d.step_time.base_mean_ns, 10000 * kUs);
  EXPECT_DOUBLE_EQ(d.step_time.new_mean_ns, 12000 * kUs);
  EXPECT_EQ(d.exit_code(), 0);  // no gate asked for
}

TEST(TraceDiff, CategoryDeltasPerStep) {
  const TraceModel base = load_trace_text(base_job());
  const TraceModel next = load_trace_text(new_job());
  const TraceDiff d = diff_traces(base, next, {});
  ASSERT_EQ(d.categories.size(), static_cast<std::size_t>(kStepCategoryCount));
  // See base_job / new_job: Kernel 4000 -> 6000 us (+50%).
  EXPECT_DOUBLE_EQ(category(d, StepCategory::kKernel).base_ns, 4000 * kUs);
  EXPECT_DOUBLE_EQ(category(d, StepCategory::kKernel).new_ns, 6000 * kUs);
  EXPECT_DOUBLE_EQ(category(d, StepCategory::kKernel).delta_ns, 2000 * kUs);
  EXPECT_NEAR(category(d, StepCategory::kKernel).relative, 0.5, 1e-12);
  // Runtime 100 -> 100 us: no change, relative 0.
  EXPECT_DOUBLE_EQ(category(d, StepCategory::kRuntime).delta_ns, 0);
  EXPECT_DOUBLE_EQ(category(d, StepCategory::kRuntime).relative, 0);
  // CPU Exec 1200 -> 1400 us: +200 us, +1/6.
  EXPECT_DOUBLE_EQ(category(d, StepCategory::kCpuExec).base_ns, 1200 * kUs);
  EXPECT_DOUBLE_EQ(category(d, StepCategory::kCpuExec).new_ns, 1400 * kUs);
  EXPECT_NEAR(category(d, StepCategory::kCpuExec).relative, 200.0 / 1200.0, 1e-12);
  // Other 4700 -> 4500 us: -200 us, -200/4700.
  EXPECT_DOUBLE_EQ(category(d, StepCategory::kOther).base_ns, 4700 * kUs);
  EXPECT_DOUBLE_EQ(category(d, StepCategory::kOther).delta_ns, -200 * kUs);
  EXPECT_NEAR(category(d, StepCategory::kOther).relative, -200.0 / 4700.0, 1e-12);
  // Memcpy 0 -> 0: no relative change defined.
  EXPECT_DOUBLE_EQ(category(d, StepCategory::kMemcpy).delta_ns, 0);
  EXPECT_TRUE(std::isnan(category(d, StepCategory::kMemcpy).relative));
}

TEST(TraceDiff, OperatorsAddedRemovedAndSlowerByName) {
  const TraceModel base = load_trace_text(base_job());
  const TraceModel next = load_trace_text(new_job());
  const TraceDiff d = diff_traces(base, next, {});
  // By name: aten::mm in both (slower on the GPU), aten::copy_ removed, aten::add_ added.
  EXPECT_EQ(d.ops.added_count, 1u);
  EXPECT_EQ(d.ops.removed_count, 1u);
  EXPECT_EQ(d.ops.slower_count, 1u);
  EXPECT_EQ(d.ops.faster_count, 0u);
  EXPECT_EQ(d.ops.unchanged_count, 0u);
  ASSERT_EQ(d.ops.slower.size(), 1u);
  const OpDiff& mm = d.ops.slower[0];
  EXPECT_EQ(mm.name, "aten::mm");
  EXPECT_EQ(mm.basis, TimeBasis::kDevice);  // GPU self +2000 us against host self +0
  EXPECT_DOUBLE_EQ(mm.base_device_self_ns, 4000 * kUs);
  EXPECT_DOUBLE_EQ(mm.new_device_self_ns, 6000 * kUs);
  EXPECT_DOUBLE_EQ(mm.base_host_self_ns, 900 * kUs);
  EXPECT_DOUBLE_EQ(mm.new_host_self_ns, 900 * kUs);
  EXPECT_DOUBLE_EQ(mm.delta_ns, 2000 * kUs);
  EXPECT_NEAR(mm.relative, 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(mm.base_calls, 1);  // 5 calls over 5 steps
  EXPECT_DOUBLE_EQ(mm.new_calls, 1);
  ASSERT_EQ(d.ops.added.size(), 1u);
  EXPECT_EQ(d.ops.added[0].name, "aten::add_");
  EXPECT_EQ(d.ops.added[0].change, ChangeKind::kAdded);
  EXPECT_EQ(d.ops.added[0].basis, TimeBasis::kHost);  // host +500 us, GPU 0
  EXPECT_DOUBLE_EQ(d.ops.added[0].delta_ns, 500 * kUs);
  EXPECT_TRUE(std::isnan(d.ops.added[0].relative));
  ASSERT_EQ(d.ops.removed.size(), 1u);
  EXPECT_EQ(d.ops.removed[0].name, "aten::copy_");
  EXPECT_DOUBLE_EQ(d.ops.removed[0].delta_ns, -300 * kUs);
  EXPECT_DOUBLE_EQ(d.ops.removed[0].relative, -1.0);
}

TEST(TraceDiff, OperatorsByInputShapes) {
  const TraceModel base = load_trace_text(base_job());
  const TraceModel next = load_trace_text(new_job());
  const TraceDiff d = diff_traces(base, next, {});
  ASSERT_TRUE(d.shapes_compared);
  // aten::mm ran on [[64,128],[128,256]] before and on [[64,128],[128,512]] after: by shapes one
  // group is removed (GPU self -4000 us) and one added (+6000 us). aten::copy_ and aten::add_
  // have one shape group each and are left to the by-name list.
  EXPECT_EQ(d.op_shapes.added_count, 1u);
  EXPECT_EQ(d.op_shapes.removed_count, 1u);
  EXPECT_EQ(d.op_shapes.slower_count + d.op_shapes.faster_count + d.op_shapes.unchanged_count, 0u);
  ASSERT_EQ(d.op_shapes.added.size(), 1u);
  EXPECT_EQ(d.op_shapes.added[0].name, "aten::mm");
  EXPECT_EQ(d.op_shapes.added[0].input_dims, kDims512);
  EXPECT_EQ(d.op_shapes.added[0].input_types, "[\"float\",\"float\"]");
  EXPECT_DOUBLE_EQ(d.op_shapes.added[0].delta_ns, 6000 * kUs);
  ASSERT_EQ(d.op_shapes.removed.size(), 1u);
  EXPECT_EQ(d.op_shapes.removed[0].input_dims, kDims256);
  EXPECT_DOUBLE_EQ(d.op_shapes.removed[0].delta_ns, -4000 * kUs);
}

TEST(TraceDiff, KernelsSlower) {
  const TraceModel base = load_trace_text(base_job());
  const TraceModel next = load_trace_text(new_job());
  const TraceDiff d = diff_traces(base, next, {});
  EXPECT_EQ(d.kernels.slower_count, 1u);
  EXPECT_EQ(d.kernels.added_count + d.kernels.removed_count + d.kernels.faster_count + d.kernels.unchanged_count, 0u);
  ASSERT_EQ(d.kernels.slower.size(), 1u);
  const KernelDiff& k = d.kernels.slower[0];
  EXPECT_EQ(k.name, "gemm_kernel");
  EXPECT_EQ(k.kind, EventKind::kKernel);
  EXPECT_DOUBLE_EQ(k.base_ns, 4000 * kUs);  // one 4 ms call per step
  EXPECT_DOUBLE_EQ(k.new_ns, 6000 * kUs);
  EXPECT_DOUBLE_EQ(k.delta_ns, 2000 * kUs);
  EXPECT_NEAR(k.relative, 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(k.base_calls, 1);
  EXPECT_DOUBLE_EQ(k.base_mean_ns, 4000 * kUs);
  EXPECT_DOUBLE_EQ(k.new_mean_ns, 6000 * kUs);
}

TEST(TraceDiff, SwappedPairIsFasterWithAddedAndRemovedExchanged) {
  const TraceModel base = load_trace_text(new_job());
  const TraceModel next = load_trace_text(base_job());
  DiffOptions o;
  o.fail_if_slower_pct = 1;
  const TraceDiff d = diff_traces(base, next, o);
  EXPECT_EQ(d.step_time.verdict, StepVerdict::kFaster);
  EXPECT_NEAR(d.step_time.comparison.relative_change, -2.0 / 12.0, 1e-12);  // (10 - 12) / 12
  ASSERT_EQ(d.ops.faster.size(), 1u);
  EXPECT_EQ(d.ops.faster[0].name, "aten::mm");
  EXPECT_NEAR(d.ops.faster[0].relative, -2000.0 / 6000.0, 1e-12);
  ASSERT_EQ(d.ops.added.size(), 1u);
  EXPECT_EQ(d.ops.added[0].name, "aten::copy_");
  ASSERT_EQ(d.ops.removed.size(), 1u);
  EXPECT_EQ(d.ops.removed[0].name, "aten::add_");
  ASSERT_EQ(d.kernels.faster.size(), 1u);
  EXPECT_TRUE(d.gate.enabled);
  EXPECT_FALSE(d.gate.failed);  // faster never fails the gate
  EXPECT_EQ(d.exit_code(), 0);
}

TEST(TraceDiff, IdenticalTracesShowNoSignificantChange) {
  const TraceModel base = load_trace_text(base_job());
  const TraceModel next = load_trace_text(base_job());
  DiffOptions o;
  o.fail_if_slower_pct = 1;
  const TraceDiff d = diff_traces(base, next, o);
  // Ten equal samples: sigma = 0, so the U test gives p = 1.
  EXPECT_EQ(d.step_time.verdict, StepVerdict::kNoSignificantChange);
  EXPECT_DOUBLE_EQ(d.step_time.comparison.mann_whitney.p_value, 1.0);
  EXPECT_DOUBLE_EQ(d.step_time.comparison.relative_change, 0.0);
  EXPECT_EQ(d.ops.unchanged_count, 2u);  // aten::mm, aten::copy_
  EXPECT_EQ(d.ops.added_count + d.ops.removed_count + d.ops.slower_count + d.ops.faster_count, 0u);
  EXPECT_EQ(d.kernels.unchanged_count, 1u);
  for (const CategoryDiff& c : d.categories) EXPECT_DOUBLE_EQ(c.delta_ns, 0) << step_category_label(c.category);
  EXPECT_TRUE(d.findings.appeared.empty());
  EXPECT_TRUE(d.findings.resolved.empty());
  EXPECT_FALSE(d.gate.failed);
  EXPECT_EQ(d.exit_code(), 0);
  EXPECT_TRUE(d.warnings.empty());
}

TEST(TraceDiff, TwoStepsAreTooFewForATest) {
  // 2 steps of 10 ms against 2 of 12 ms: +20%, but no test is claimed.
  const TraceModel base = load_trace_text(base_job(2));
  const TraceModel next = load_trace_text(new_job(2));
  DiffOptions o;
  o.fail_if_slower_pct = 5;
  const TraceDiff d = diff_traces(base, next, o);
  EXPECT_FALSE(d.step_time.enough_samples);
  EXPECT_EQ(d.step_time.verdict, StepVerdict::kTooFewSamples);
  EXPECT_NEAR(d.step_time.comparison.relative_change, 0.20, 1e-12);
  EXPECT_TRUE(std::isnan(d.step_time.comparison.mann_whitney.p_value));
  EXPECT_FALSE(d.step_time.comparison.significant);
  // The gate cannot confirm +20% either way with 2 steps: inconclusive (exit 3), no longer "passed".
  EXPECT_FALSE(d.gate.failed);
  EXPECT_EQ(d.gate.outcome, GateOutcome::kInconclusive);
  EXPECT_NE(d.gate.reason.find("too few to confirm"), std::string::npos) << d.gate.reason;
  EXPECT_EQ(d.exit_code(), 3);
}

TEST(TraceDiff, TopLimitsRowsButNotCounts) {
  // NEW adds three host ops of 100, 200 and 300 us: with --top 2 the two largest are kept.
  const TraceModel base = load_trace_text(base_job());
  const TraceModel next =
      load_trace_text(job(5, 10000, 4000, kDims256,
                          {{"aten::copy_", 5000, 300}, {"op_a", 6000, 100}, {"op_b", 6200, 200}, {"op_c", 6500, 300}}));
  DiffOptions o;
  o.top = 2;
  const TraceDiff d = diff_traces(base, next, o);
  EXPECT_EQ(d.ops.added_count, 3u);
  ASSERT_EQ(d.ops.added.size(), 2u);
  EXPECT_EQ(d.ops.added[0].name, "op_c");
  EXPECT_EQ(d.ops.added[1].name, "op_b");
}

TEST(TraceDiff, DifferentStepCountsAreComparedPerStepWithAWarning) {
  // 5 steps against 10 steps of the same job: per-step figures are equal, so nothing changes.
  const TraceModel base = load_trace_text(base_job(5));
  const TraceModel next = load_trace_text(base_job(10));
  const TraceDiff d = diff_traces(base, next, {});
  EXPECT_EQ(d.ops.unchanged_count, 2u);
  EXPECT_DOUBLE_EQ(category(d, StepCategory::kKernel).delta_ns, 0);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find("different numbers of steps"), std::string::npos) << d.warnings[0];
}

TEST(TraceDiff, StepsOptionSelectsTheSameStepsInBoth) {
  // --steps 1-3: three steps each (ProfilerStep#1..#3).
  DiffOptions o;
  o.analysis.first_step = 1;
  o.analysis.last_step = 3;
  const TraceModel base = load_trace_text(base_job());
  const TraceModel next = load_trace_text(new_job());
  const TraceDiff d = diff_traces(base, next, o);
  EXPECT_EQ(d.base.step_ns.size(), 3u);
  EXPECT_EQ(d.next.step_ns.size(), 3u);
  EXPECT_EQ(d.base.first_step, 1);
  EXPECT_EQ(d.next.last_step, 3);
  // 3 against 3 tied samples: normal approximation, U_base = 0, mean 4.5,
  // sigma^2 = 9/12 * (7 - (24 + 24) / 30) = 4.05, z = 4 / 2.01246 = 1.98762, p = 0.046854.
  EXPECT_NEAR(d.step_time.comparison.mann_whitney.p_value, 0.046854, 1e-5);
  EXPECT_DOUBLE_EQ(d.step_time.min_attainable_p, 0.1);  // 2 / C(6, 3)
}

// ---- Findings that appear and are resolved ------------------------------------------------------

TEST(TraceDiff, InputBoundAppearsAndIsResolved) {
  // NEW adds a 3 ms DataLoader wait [5300, 8300) us to each 10 ms step (nothing else runs then):
  // 30% of the step, so input-bound fires at high severity (>= 20%, rules_data_pipeline.cpp).
  const TraceModel base = load_trace_text(base_job());
  const TraceModel next = load_trace_text(
      job(5, 10000, 4000, kDims256,
          {{"aten::copy_", 5000, 300}, {"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 5300, 3000}}));
  const TraceDiff d = diff_traces(base, next, {});
  EXPECT_NEAR(category(d, StepCategory::kDataLoader).new_ns, 3000 * kUs, 1e-6);
  ASSERT_EQ(d.findings.appeared.size(), 1u);
  EXPECT_EQ(d.findings.appeared[0].id, "input-bound");
  EXPECT_EQ(d.findings.appeared[0].severity, Severity::kHigh);
  EXPECT_TRUE(d.findings.resolved.empty());

  const TraceDiff back = diff_traces(next, base, {});
  ASSERT_EQ(back.findings.resolved.size(), 1u);
  EXPECT_EQ(back.findings.resolved[0].id, "input-bound");
  EXPECT_TRUE(back.findings.appeared.empty());
}

Finding finding(const std::string& id, const std::string& cause = "", Severity s = Severity::kMedium) {
  Finding f;
  f.id = id;
  f.cause = cause;
  f.severity = s;
  return f;
}

TEST(TraceDiff, FindingsMatchByCause) {
  // "sync" and "item-sync" share the cause "host-sync": the same problem, judged by another rule.
  const std::vector<Finding> base = {finding("a"), finding("sync", "host-sync", Severity::kLow)};
  const std::vector<Finding> next = {finding("item-sync", "host-sync", Severity::kHigh), finding("d")};
  const FindingsDiff d = diff_findings(base, next);
  ASSERT_EQ(d.appeared.size(), 1u);
  EXPECT_EQ(d.appeared[0].id, "d");
  ASSERT_EQ(d.resolved.size(), 1u);
  EXPECT_EQ(d.resolved[0].id, "a");
  ASSERT_EQ(d.persisting.size(), 1u);
  EXPECT_EQ(d.persisting[0].cause, "host-sync");
  EXPECT_EQ(d.persisting[0].base.severity, Severity::kLow);
  EXPECT_EQ(d.persisting[0].next.severity, Severity::kHigh);
}

// ---- The step-time test and the gate on plain samples -------------------------------------------

std::vector<double> ms(std::initializer_list<double> values) {
  std::vector<double> out;
  for (double v : values) out.push_back(v * 1e6);
  return out;
}

TEST(StepTimeDiff, MinimumAttainablePByHand) {
  EXPECT_DOUBLE_EQ(min_attainable_p(3, 3), 0.1);           // 2 / C(6, 3) = 2 / 20
  EXPECT_NEAR(min_attainable_p(4, 4), 2.0 / 70.0, 1e-15);  // C(8, 4) = 70
  EXPECT_NEAR(min_attainable_p(2, 5), 2.0 / 21.0, 1e-15);  // C(7, 2) = 21
  EXPECT_DOUBLE_EQ(min_attainable_p(1, 1), 1.0);           // 2 / 2
  EXPECT_DOUBLE_EQ(min_attainable_p(0, 5), 1.0);
}

TEST(StepTimeDiff, ThreeAgainstThreeCannotBeSignificant) {
  // Distinct values, fully separated: exact test, U_base = 0, p = 2 / C(6, 3) = 0.1 >= 0.05.
  const StepTimeDiff st = diff_step_time(ms({10.0, 10.1, 10.2}), ms({12.0, 12.1, 12.2}), 0.05);
  EXPECT_TRUE(st.enough_samples);
  EXPECT_EQ(st.comparison.mann_whitney.method, stats::MannWhitneyMethod::kExact);
  EXPECT_NEAR(st.comparison.mann_whitney.p_value, 0.1, 1e-12);
  EXPECT_EQ(st.verdict, StepVerdict::kNoSignificantChange);
  EXPECT_DOUBLE_EQ(st.min_attainable_p, 0.1);
  EXPECT_FALSE(evaluate_gate(st, 1.0).failed);
}

TEST(StepTimeDiff, FourAgainstFourSeparatedIsSignificant) {
  // Exact: p = 2 / C(8, 4) = 0.02857 < 0.05. Medians 10.15 and 12.15 ms: +19.70%.
  const StepTimeDiff st = diff_step_time(ms({10.0, 10.1, 10.2, 10.3}), ms({12.0, 12.1, 12.2, 12.3}), 0.05);
  EXPECT_NEAR(st.comparison.mann_whitney.p_value, 2.0 / 70.0, 1e-12);
  EXPECT_EQ(st.verdict, StepVerdict::kSlower);
  EXPECT_NEAR(st.comparison.relative_change, 2.0 / 10.15, 1e-12);
  // Gate: 19.7% is beyond 5% (fails) and within 25% (passes).
  const GateResult fail = evaluate_gate(st, 5.0);
  EXPECT_TRUE(fail.enabled);
  EXPECT_TRUE(fail.failed);
  EXPECT_NE(fail.reason.find("beyond the 5% allowed"), std::string::npos) << fail.reason;
  const GateResult pass = evaluate_gate(st, 25.0);
  EXPECT_FALSE(pass.failed);
  // The interval [+16.7%, +22.7%] (diff_gate_test.cpp) lies within 25%: the slowdown is confirmed
  // to stay within the allowance.
  EXPECT_EQ(pass.outcome, GateOutcome::kPass);
  EXPECT_NE(pass.reason.find("rules out a slowdown beyond the 25% allowed"), std::string::npos) << pass.reason;
  EXPECT_FALSE(evaluate_gate(st, std::nullopt).enabled);
}

TEST(StepTimeDiff, OverlappingSamplesAreNotSignificant) {
  // Interleaved: base {10, 12, 14, 16}, new {11, 13, 15, 17}: U_base = 0 + 1 + 2 + 3 = 6 of 16.
  // Exact null distribution of U for 4 against 4 (70 splits), counts for U = 0..6: 1, 1, 2, 3, 5,
  // 5, 7 = 24, so p = 2 * 24 / 70 = 0.685714 (checked by enumerating the 70 splits in Python).
  const StepTimeDiff st = diff_step_time(ms({10, 12, 14, 16}), ms({11, 13, 15, 17}), 0.05);
  EXPECT_EQ(st.verdict, StepVerdict::kNoSignificantChange);
  EXPECT_NEAR(st.comparison.mann_whitney.p_value, 48.0 / 70.0, 1e-12);
  EXPECT_FALSE(evaluate_gate(st, 0.0).failed);  // even a 0% allowance does not fail without significance
}

// ---- Rendering -----------------------------------------------------------------------------------

TEST(DiffReport, TextFitsEightyColumnsAndStatesTheGate) {
  const TraceModel base = load_trace_text(base_job());
  const TraceModel next = load_trace_text(new_job());
  DiffOptions o;
  o.fail_if_slower_pct = 5;
  const TraceDiff d = diff_traces(base, next, o);
  const std::string text = diff_text(d, Style{});
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end - start);
    EXPECT_LE(line.size(), 80u) << line;
    start = end == std::string::npos ? text.size() : end + 1;
  }
  EXPECT_NE(text.find("significantly slower, +20.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("FAILED"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::add_"), std::string::npos) << text;
}

TEST(DiffReport, JsonSchemaFields) {
  const TraceModel base = load_trace_text(base_job());
  const TraceModel next = load_trace_text(new_job());
  DiffOptions o;
  o.fail_if_slower_pct = 5;
  const nlohmann::ordered_json j = diff_json(diff_traces(base, next, o));
  EXPECT_EQ(j["schema"], "ferret.diff/2");
  EXPECT_EQ(j["step_time"]["verdict"], "slower");
  EXPECT_DOUBLE_EQ(j["step_time"]["median"]["base_us"].get<double>(), 10000.0);
  EXPECT_DOUBLE_EQ(j["step_time"]["median"]["new_us"].get<double>(), 12000.0);
  // Every pairwise difference is 2 ms: shift +2000 us = +20%, interval [+20%, +20%].
  EXPECT_EQ(j["step_time"]["change"]["statistic"], "hodges-lehmann-shift");
  EXPECT_DOUBLE_EQ(j["step_time"]["change"]["shift_us"].get<double>(), 2000.0);
  EXPECT_DOUBLE_EQ(j["step_time"]["change"]["relative_pct"].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(j["step_time"]["change"]["ci"]["low_pct"].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(j["step_time"]["change"]["ci"]["high_pct"].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(j["step_time"]["mean"]["relative_pct"].get<double>(), 20.0);
  EXPECT_EQ(j["gate"]["outcome"], "fail");
  EXPECT_EQ(j["step_time"]["test"]["method"], "normal");
  EXPECT_EQ(j["gate"]["failed"], true);
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_EQ(j["operators"]["added"][0]["name"], "aten::add_");
  EXPECT_EQ(j["operators"]["added"][0]["basis"], "host");
  EXPECT_DOUBLE_EQ(j["operators"]["added"][0]["delta_us"].get<double>(), 500.0);
  EXPECT_TRUE(j["operators"]["added"][0]["relative_change_pct"].is_null());
  EXPECT_EQ(j["operator_shapes"]["added"][0]["input_dims"], kDims512);
  EXPECT_EQ(j["kernels"]["slower"][0]["kind"], "kernel");
  EXPECT_EQ(j["breakdown"][0]["category"], "kernel");
  EXPECT_DOUBLE_EQ(j["breakdown"][0]["change_us"].get<double>(), 2000.0);
}

TEST(DiffReport, MarkdownEscapesTraceText) {
  const TraceModel base = load_trace_text(base_job());
  const TraceModel next = load_trace_text(job(5, 10000, 4000, kDims256, {{"<b>x|y*_z", 6000, 100}}));
  const std::string md = diff_markdown(diff_traces(base, next, {}));
  EXPECT_EQ(md.find("<b>"), std::string::npos) << md;
  EXPECT_NE(md.find("&lt;b&gt;x\\|y\\*\\_z"), std::string::npos) << md;
  EXPECT_NE(md.find("aten::copy\\_"), std::string::npos) << md;  // removed, underscore escaped
}

}  // namespace trace_diff_test
}  // namespace
}  // namespace ferret
