// gradients-zeroed: hand-made traces of four steps (us) whose optimizer.zero_grad zeroes the
// gradients (set_to_none=False), drops them (set_to_none=True), or holds only the zero_ that torch
// 1.x's record_function made for its own handle. Expected numbers are worked out by hand below.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "diagnosis/rule_registry.h"
#include "diagnosis/rules.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace rules_zero_grad_test {

using test::corr;
using test::span;

enum class ZeroGrad { kZeroes, kDropsToNone, kProfilerHandleOnly };

// Four 100 ms CPU training steps: an aten::mm of 30 ms at +5 ms, its backward of 10 ms at +36 ms, an
// optimizer step of 2 ms at +46 ms, then at +50 ms an Optimizer.zero_grad span
// holding `zeroes` aten::zero_ calls of `zero_us` each (each calling aten::fill_), or nothing, or
// torch 1.x record_function's aten::zeros -> aten::zero_.
std::string cpu_steps(ZeroGrad how, int zeroes, double zero_us) {
  std::vector<std::string> ev;
  for (int k = 0; k < 4; ++k) {
    const double s = k * 100'000.0;
    ev.push_back(span("user_annotation", fmt::format("ProfilerStep#{}", k), 1, 1, s, 100'000));
    ev.push_back(span("cpu_op", "aten::mm", 1, 1, s + 5'000, 30'000));
    ev.push_back(span("cpu_op", "autograd::engine::evaluate_function: MmBackward0", 1, 1, s + 36'000, 10'000));
    ev.push_back(span("user_annotation", "Optimizer.step#SGD.step", 1, 1, s + 46'000, 2'000));
    const double zg = s + 50'000;
    ev.push_back(span("user_annotation", "Optimizer.zero_grad#SGD.zero_grad", 1, 1, zg, zeroes * (zero_us + 10) + 20));
    if (how == ZeroGrad::kProfilerHandleOnly) {
      ev.push_back(span("cpu_op", "aten::zeros", 1, 1, zg + 2, 8));
      ev.push_back(span("cpu_op", "aten::zero_", 1, 1, zg + 4, 4));
      continue;
    }
    if (how == ZeroGrad::kDropsToNone) continue;
    for (int z = 0; z < zeroes; ++z) {
      const double t = zg + 10 + z * (zero_us + 10);
      ev.push_back(span("cpu_op", "aten::zero_", 1, 1, t, zero_us));
      ev.push_back(span("cpu_op", "aten::fill_", 1, 1, t + 1, zero_us - 2));
    }
  }
  return test::trace(ev);
}

const Finding* find(const std::vector<Finding>& findings, const std::string& id) {
  for (const Finding& f : findings)
    if (f.id == id) return &f;
  return nullptr;
}

double evidence(const Finding& f, const std::string& name) {
  for (const Evidence& e : f.evidence)
    if (e.name == name) return e.value;
  ADD_FAILURE() << "no evidence " << name;
  return -1;
}

TEST(RulesZeroGrad, ZeroingOnTheHostByHand) {
  // 10 zero_ of 500 us per step: 20 ms of 400 ms, 5% (the fill_ inside each is not counted again).
  const TraceModel m = load_trace_text(cpu_steps(ZeroGrad::kZeroes, 10, 500));
  const TraceAnalysis a = analyze_trace(m, {});
  ASSERT_EQ(a.context.steps.size(), 4u);
  const Diagnosis d = diagnose(a);
  const Finding* f = find(d.findings, "gradients-zeroed");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->time_share, 20.0 / 400.0, 1e-9);
  EXPECT_NEAR(f->max_speedup, 400.0 / 380.0, 1e-9);
  EXPECT_EQ(evidence(*f, "zeroing_calls"), 40);
  EXPECT_NEAR(evidence(*f, "zeroing_host_ms"), 20.0, 1e-9);
  EXPECT_EQ(evidence(*f, "zeroing_gpu_ms"), 0);
  EXPECT_NE(f->title.find("40 calls (10 per step)"), std::string::npos) << f->title;
  ASSERT_FALSE(f->fixes.empty()) << f->detail;
  EXPECT_NE(f->fixes.front().text.find("set_to_none=True"), std::string::npos);
  // The what-if takes the calls off the host: each step is the host's own time, so 400 ms become
  // 400 - 20 x 0.999 ms.
  EXPECT_NEAR(f->predicted_speedup, 400.0 / (400.0 - 20 * 0.999), 0.002) << f->title;
  EXPECT_EQ(f->layer, Layer::kFramework);
}

TEST(RulesZeroGrad, NothingToFixIsNoFinding) {
  for (const ZeroGrad how : {ZeroGrad::kDropsToNone, ZeroGrad::kProfilerHandleOnly}) {
    const TraceModel m = load_trace_text(cpu_steps(how, 10, 500));
    std::vector<Finding> out;
    run_rule_families(analyze_trace(m, {}), out);
    EXPECT_EQ(find(out, "gradients-zeroed"), nullptr) << static_cast<int>(how);
  }
  // Below the 1% floor: 2 x 400 us per step is 3.2 ms of 400 ms (0.8%).
  const TraceModel small = load_trace_text(cpu_steps(ZeroGrad::kZeroes, 2, 400));
  std::vector<Finding> out;
  run_rule_families(analyze_trace(small, {}), out);
  EXPECT_EQ(find(out, "gradients-zeroed"), nullptr);
}

// Four 10 ms training steps on a GPU: an aten::mm launching an 8 ms kernel, a backward op and an
// optimizer step on the host, then zero_grad's 4 aten::zero_
// of 200 us, each launching a 50 us fill kernel. Host 16 x 200 us = 3.2 ms, GPU 16 x 50 us = 0.8 ms
// of 40 ms: the bound is the host's 8%; the prediction re-times only the kernels.
TEST(RulesZeroGrad, ZeroingOnAGpuCountsBothSidesByHand) {
  std::vector<std::string> ev;
  int c = 0;
  for (int k = 0; k < 4; ++k) {
    const double s = k * 10'000.0;
    ev.push_back(span("user_annotation", fmt::format("ProfilerStep#{}", k), 1, 1, s, 10'000));
    ev.push_back(span("cpu_op", "aten::mm", 1, 1, s + 10, 40));
    ev.push_back(span("cuda_runtime", "cudaLaunchKernel", 1, 1, s + 20, 10, corr(++c)));
    ev.push_back(span("kernel", "ampere_sgemm_128x64_nn", 0, 7, s + 100, 8'000, corr(c)));
    ev.push_back(span("cpu_op", "autograd::engine::evaluate_function: MmBackward0", 1, 1, s + 100, 50));
    ev.push_back(span("user_annotation", "Optimizer.step#SGD.step", 1, 1, s + 7'000, 50));
    ev.push_back(span("user_annotation", "Optimizer.zero_grad#SGD.zero_grad", 1, 1, s + 8'000, 900));
    for (int z = 0; z < 4; ++z) {
      const double t = s + 8'010 + z * 210;
      ev.push_back(span("cpu_op", "aten::zero_", 1, 1, t, 200));
      ev.push_back(span("cuda_runtime", "cudaLaunchKernel", 1, 1, t + 100, 10, corr(++c)));
      ev.push_back(span("kernel", "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
                        0, 7, s + 8'120 + z * 60, 50, corr(c)));
    }
  }
  const TraceModel m = load_trace_text(test::trace(ev));
  const TraceAnalysis a = analyze_trace(m, {});
  ASSERT_EQ(a.context.steps.size(), 4u);
  std::vector<Finding> out;
  run_rule_families(a, out);
  const Finding* f = find(out, "gradients-zeroed");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(evidence(*f, "zeroing_calls"), 16);
  EXPECT_NEAR(evidence(*f, "zeroing_host_ms"), 3.2, 1e-9);
  EXPECT_NEAR(evidence(*f, "zeroing_gpu_ms"), 0.8, 1e-9);
  EXPECT_NEAR(f->time_share, 3.2 / 40.0, 1e-9);
  EXPECT_NE(f->detail.find("16 kernels with 800"), std::string::npos) << f->detail;
  ASSERT_EQ(f->fix.speedups.size(), 1u);
  ASSERT_TRUE(f->fix.speedups.front().events);
  EXPECT_EQ(f->fix.speedups.front().events->size(), 16u);
}

// A real torch 1.9 ResNet-50 trace (V100) zeroes its 161 gradients in each of 6 steps. A second
// reader (a Python scan of the JSON: aten::zero_ inside the Optimizer.zero_grad spans, the kernels
// their runtime calls launched by correlation id) counts 966 calls, 27.270 ms of host time and 966
// kernels of 1.026 ms.
TEST(RulesZeroGrad, ResNet50Torch19CorpusTraceMatchesASecondReader) {
  const std::string path = test::corpus_path("resnet50-v100-torch19-dataloader.pt.trace.json.gz");
  if (path.empty()) GTEST_SKIP() << "corpus trace resnet50-v100-torch19-dataloader.pt.trace.json.gz absent";
  const TraceModel m = load_trace(path);
  const Diagnosis d = diagnose(analyze_trace(m, {}));
  const Finding* f = find(d.findings, "gradients-zeroed");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(evidence(*f, "zeroing_calls"), 966);
  EXPECT_NEAR(evidence(*f, "zeroing_host_ms"), 27.270, 1e-9);
  EXPECT_NEAR(evidence(*f, "zeroing_gpu_ms"), 1.026, 1e-9);
  // The GPU waits on the DataLoader, not on the zeroing: its kernels gone, no step is shorter.
  EXPECT_NE(d.verdict.finding_id, "gradients-zeroed");
  EXPECT_LT(f->predicted_speedup, 1.005);
}

// The rule is registered by its own file: its row, its family, and a cause that explains the host
// symptoms, as docs/RULES.md lists it.
TEST(RulesZeroGrad, RegisteredByItsOwnFile) {
  const RuleInfo* rule = find_rule("gradients-zeroed");
  ASSERT_NE(rule, nullptr);
  EXPECT_EQ(rule->role, RuleRole::kCause);
  EXPECT_TRUE(explains(*rule, "cpu-bound"));
  bool family = false;
  for (const RuleFamily* f : rule_families())
    for (const RuleInfo& r : f->rules) family = family || (r.id == "gradients-zeroed" && f->order == 115);
  EXPECT_TRUE(family);
}

}  // namespace rules_zero_grad_test
}  // namespace
}  // namespace ferret
