// Step time breakdown on hand-made traces (every expected value worked out by hand in the comment
// above it; trace times are microseconds, the model's nanoseconds) and on a real trace against the
// TensorBoard plugin's own golden output (../shared/corpus/MANIFEST.md).
#include "analysis/timeline/step_breakdown.h"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace step_breakdown_test {

constexpr std::int64_t kUs = 1000;  // ns per microsecond

std::string span(const char* cat, const std::string& name, double ts, double dur, int pid = 1, int tid = 1,
                 const std::string& args = "{}") {
  return fmt::format(
      R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {}}})", cat, name,
      pid, tid, ts, dur, args);
}
std::string corr(int c) { return fmt::format(R"({{"correlation": {}}})", c); }
std::string step(int n, double ts, double dur) {
  return span("user_annotation", fmt::format("ProfilerStep#{}", n), ts, dur);
}
std::string launch(double ts, double dur, int c) {
  return span("cuda_runtime", "cudaLaunchKernel", ts, dur, 1, 1, corr(c));
}
std::string kernel(const std::string& name, double ts, double dur, int device = 0, int stream = 7, int c = -1) {
  return span("kernel", name, ts, dur, device, stream, c >= 0 ? corr(c) : "{}");
}
constexpr const char* kLoader = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";

TraceModel load(const std::vector<std::string>& events) {
  std::string text = R"({"traceEvents": [)";
  for (std::size_t i = 0; i < events.size(); ++i) text += (i ? ",\n" : "\n") + events[i];
  return load_trace_text(text + "]}");
}

StepBreakdownResult breakdown(const TraceModel& m, AnalysisOptions options = {}) {
  return analyze_step_breakdown(m, make_analysis_context(m, options));
}

std::int64_t sum(const StepCost& s) {
  std::int64_t total = 0;
  for (std::int64_t v : s.ns) total += v;
  return total;
}

TEST(StepBreakdown, KernelBeatsRuntimeWhenOverlapping) {
  // Step [0,100). cudaLaunchKernel [10,30) launches a kernel [20,50): the overlap [20,30) is
  // Kernel (higher priority), so Kernel = 30, Runtime = [10,20) = 10, Other = 100 - 40 = 60.
  const TraceModel m = load({step(1, 0, 100), launch(10, 20, 1), kernel("gemm", 20, 30, 0, 7, 1)});
  const StepBreakdownResult r = breakdown(m);
  ASSERT_TRUE(r.has_steps);
  ASSERT_EQ(r.steps.size(), 1u);
  const StepCost& s = r.steps[0];
  EXPECT_EQ(s.number, 1);
  EXPECT_EQ(s.duration_ns, 100 * kUs);
  EXPECT_EQ(s.of(StepCategory::kKernel), 30 * kUs);
  EXPECT_EQ(s.of(StepCategory::kRuntime), 10 * kUs);
  EXPECT_EQ(s.of(StepCategory::kCpuExec), 0);
  EXPECT_EQ(s.of(StepCategory::kOther), 60 * kUs);
  EXPECT_EQ(sum(s), s.duration_ns);
}

TEST(StepBreakdown, DataLoaderOverlappingMemcpyCountsAsMemcpy) {
  // Step [0,100); DataLoader [0,40); a memcpy [30,50); aten::copy_ [40,60) on the CPU.
  // Memcpy [30,50) = 20 beats DataLoader, which keeps [0,30) = 30; CPU Exec keeps [50,60) = 10;
  // Other = 100 - 60 = 40.
  const TraceModel m = load({step(1, 0, 100), span("cpu_op", kLoader, 0, 40), span("cpu_op", "aten::copy_", 40, 20),
                             span("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 30, 20, 0, 7)});
  const StepCost s = breakdown(m).steps.at(0);  // a copy: the result is a temporary
  EXPECT_EQ(s.of(StepCategory::kMemcpy), 20 * kUs);
  EXPECT_EQ(s.of(StepCategory::kDataLoader), 30 * kUs);
  EXPECT_EQ(s.of(StepCategory::kCpuExec), 10 * kUs);
  EXPECT_EQ(s.of(StepCategory::kOther), 40 * kUs);
  EXPECT_EQ(sum(s), 100 * kUs);
}

// Two steps that exercise every category. Step 1 [0,100):
//   aten::mm [0,20) holds cudaLaunchKernel [5,10) -> kernel "gemm" [10,40) on device 0;
//   an NCCL kernel [30,60) on device 0; a memset [60,65); DataLoader [70,90);
//   a python_function [0,100) enclosing everything (not CPU Exec, as in the plugin).
//   Kernel [10,40) = 30; Memset [60,65) = 5; Communication [40,60) = 20 ([30,40) is Kernel);
//   Runtime [5,10) = 5; DataLoader [70,90) = 20; CPU Exec [0,5) = 5;
//   Other [65,70) + [90,100) = 15. Sum 100.
// Step 2 [100,200) on the CPU: aten::mm [100,110) holds a launch [102,104) -> kernel [150,230) on
//   device 0, which extends the step to 230 (duration 130); a kernel [110,120) on device 1.
//   All devices: Kernel [110,120) + [150,230) = 90; Runtime 2; CPU Exec 10 - 2 = 8; Other 30.
//   Device 0 only: Kernel 80; Runtime 2; CPU Exec 8; Other 40.
std::vector<std::string> two_steps() {
  return {step(1, 0, 100),
          span("python_function", "train.py(10): <module>", 0, 100),
          span("cpu_op", "aten::mm", 0, 20),
          launch(5, 5, 1),
          kernel("gemm", 10, 30, 0, 7, 1),
          kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 30, 30, 0, 20),
          span("gpu_memset", "Memset (Device)", 60, 5, 0, 7),
          span("cpu_op", kLoader, 70, 20),
          step(2, 100, 100),
          span("cpu_op", "aten::mm", 100, 10),
          launch(102, 2, 2),
          kernel("gemm", 150, 80, 0, 7, 2),
          kernel("elementwise", 110, 10, 1, 7)};
}

TEST(StepBreakdown, EveryCategoryInPriorityOrder) {
  const TraceModel m = load(two_steps());
  const StepBreakdownResult r = breakdown(m);
  ASSERT_EQ(r.steps.size(), 2u);
  const StepCost& s1 = r.steps[0];
  EXPECT_EQ(s1.number, 1);
  EXPECT_EQ(s1.start_ns, 0);
  EXPECT_EQ(s1.duration_ns, 100 * kUs);
  EXPECT_EQ(s1.of(StepCategory::kKernel), 30 * kUs);
  EXPECT_EQ(s1.of(StepCategory::kMemcpy), 0);
  EXPECT_EQ(s1.of(StepCategory::kMemset), 5 * kUs);
  EXPECT_EQ(s1.of(StepCategory::kCommunication), 20 * kUs);
  EXPECT_EQ(s1.of(StepCategory::kRuntime), 5 * kUs);
  EXPECT_EQ(s1.of(StepCategory::kDataLoader), 20 * kUs);
  EXPECT_EQ(s1.of(StepCategory::kCpuExec), 5 * kUs);
  EXPECT_EQ(s1.of(StepCategory::kOther), 15 * kUs);
  EXPECT_EQ(sum(s1), s1.duration_ns);

  const StepCost& s2 = r.steps[1];
  EXPECT_EQ(s2.number, 2);
  EXPECT_EQ(s2.start_ns, 100 * kUs);
  EXPECT_EQ(s2.duration_ns, 130 * kUs);
  EXPECT_EQ(s2.of(StepCategory::kKernel), 90 * kUs);
  EXPECT_EQ(s2.of(StepCategory::kRuntime), 2 * kUs);
  EXPECT_EQ(s2.of(StepCategory::kCpuExec), 8 * kUs);
  EXPECT_EQ(s2.of(StepCategory::kOther), 30 * kUs);
  EXPECT_EQ(sum(s2), s2.duration_ns);

  // Mean step (100 + 130) / 2 = 115 us; Kernel (30 + 90) / 2 = 60 us = 120/230 of the time.
  EXPECT_DOUBLE_EQ(r.average_duration_ns, 115.0 * kUs);
  EXPECT_DOUBLE_EQ(r.average_of(StepCategory::kKernel), 60.0 * kUs);
  EXPECT_NEAR(r.average_pct_of(StepCategory::kKernel), 100.0 * 120 / 230, 1e-9);
  double pct_total = 0;
  for (double p : r.average_pct) pct_total += p;
  EXPECT_NEAR(pct_total, 100.0, 1e-9);
}

TEST(StepBreakdown, DeviceOptionKeepsOnlyThatDevicesGpuWork) {
  const TraceModel m = load(two_steps());
  AnalysisOptions options;
  options.device = 0;
  const StepCost s2 = breakdown(m, options).steps.at(1);  // a copy: the result is a temporary
  EXPECT_EQ(s2.of(StepCategory::kKernel), 80 * kUs);
  EXPECT_EQ(s2.of(StepCategory::kOther), 40 * kUs);
  EXPECT_EQ(sum(s2), 130 * kUs);
}

TEST(StepBreakdown, StepSelectionKeepsOnlyThoseSteps) {
  const TraceModel m = load(two_steps());
  AnalysisOptions options;
  options.first_step = 2;
  const StepBreakdownResult r = breakdown(m, options);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].number, 2);
  EXPECT_DOUBLE_EQ(r.average_duration_ns, 130.0 * kUs);
}

TEST(StepBreakdown, TraceWithoutStepsIsOnePseudoStep) {
  // No ProfilerStep: the window is the span of every event, [0,60). aten::add [0,50) holds a launch
  // [10,20) of a kernel [15,60). Kernel 45; Runtime [10,15) = 5; CPU Exec [0,10) = 10; Other 0.
  const TraceModel m =
      load({span("cpu_op", "aten::add", 0, 50), launch(10, 10, 1), kernel("add_kernel", 15, 45, 0, 7, 1)});
  const StepBreakdownResult r = breakdown(m);
  EXPECT_FALSE(r.has_steps);
  ASSERT_EQ(r.steps.size(), 1u);
  const StepCost& s = r.steps[0];
  EXPECT_EQ(s.number, -1);
  EXPECT_EQ(s.start_ns, 0);
  EXPECT_EQ(s.duration_ns, 60 * kUs);
  EXPECT_EQ(s.of(StepCategory::kKernel), 45 * kUs);
  EXPECT_EQ(s.of(StepCategory::kRuntime), 5 * kUs);
  EXPECT_EQ(s.of(StepCategory::kCpuExec), 10 * kUs);
  EXPECT_EQ(s.of(StepCategory::kOther), 0);
}

TEST(StepBreakdown, EmptyTraceHasNoSteps) {
  const TraceModel m = load({});
  const StepBreakdownResult r = breakdown(m);
  EXPECT_TRUE(r.steps.empty());
  EXPECT_EQ(r.average_duration_ns, 0);
}

TEST(StepBreakdown, CategoryNamesAreStable) {
  EXPECT_STREQ(step_category_label(StepCategory::kCpuExec), "CPU Exec");
  EXPECT_STREQ(step_category_key(StepCategory::kCpuExec), "cpu_exec");
  EXPECT_STREQ(step_category_key(StepCategory::kDataLoader), "dataloader");
}

// The TensorBoard plugin's golden output for this trace (MANIFEST.md, "Reference figures"), in us:
// average step 177,592: Kernel 98,589, Memcpy 1,915, Memset 89, Runtime 2,908, DataLoader 59,262,
// CPU Exec 13,674, Other 1,156. Step 5: 187,948 total, Kernel 98,598, Memcpy 1,941, Memset 90,
// Runtime 2,796, DataLoader 69,317. Each category must be within 0.5% of the step time.
TEST(CorpusResNet50, MatchesPluginReference) {
  FERRET_REQUIRE_CORPUS(path, "resnet50-v100-torch19-dataloader.pt.trace.json.gz");
  const TraceModel m = load_trace(path);
  const StepBreakdownResult r = breakdown(m);
  ASSERT_TRUE(r.has_steps);
  ASSERT_FALSE(r.steps.empty());

  const double avg_us = r.average_duration_ns / kUs;
  EXPECT_NEAR(avg_us, 177592, 0.005 * 177592);
  const double tolerance_us = 0.005 * 177592;
  auto avg = [&](StepCategory c) { return r.average_of(c) / kUs; };
  EXPECT_NEAR(avg(StepCategory::kKernel), 98589, tolerance_us);
  EXPECT_NEAR(avg(StepCategory::kMemcpy), 1915, tolerance_us);
  EXPECT_NEAR(avg(StepCategory::kMemset), 89, tolerance_us);
  EXPECT_NEAR(avg(StepCategory::kCommunication), 0, tolerance_us);
  EXPECT_NEAR(avg(StepCategory::kRuntime), 2908, tolerance_us);
  EXPECT_NEAR(avg(StepCategory::kDataLoader), 59262, tolerance_us);
  EXPECT_NEAR(avg(StepCategory::kCpuExec), 13674, tolerance_us);
  EXPECT_NEAR(avg(StepCategory::kOther), 1156, tolerance_us);
  EXPECT_NEAR(r.average_pct_of(StepCategory::kKernel), 55.51, 0.5);
  EXPECT_NEAR(r.average_pct_of(StepCategory::kDataLoader), 33.37, 0.5);

  const StepCost& s5 = r.steps.front();
  ASSERT_EQ(s5.number, 5);
  const double step5_tolerance_us = 0.005 * 187948;
  EXPECT_NEAR(s5.duration_ns / kUs, 187948, step5_tolerance_us);
  EXPECT_NEAR(s5.of(StepCategory::kKernel) / kUs, 98598, step5_tolerance_us);
  EXPECT_NEAR(s5.of(StepCategory::kMemcpy) / kUs, 1941, step5_tolerance_us);
  EXPECT_NEAR(s5.of(StepCategory::kMemset) / kUs, 90, step5_tolerance_us);
  EXPECT_NEAR(s5.of(StepCategory::kRuntime) / kUs, 2796, step5_tolerance_us);
  EXPECT_NEAR(s5.of(StepCategory::kDataLoader) / kUs, 69317, step5_tolerance_us);
  for (const StepCost& s : r.steps) EXPECT_EQ(sum(s), s.duration_ns) << "step " << s.number;
}

}  // namespace step_breakdown_test
}  // namespace
}  // namespace ferret
