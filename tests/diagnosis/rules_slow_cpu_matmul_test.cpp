// slow-cpu-matmul: a CPU-only trace whose GEMMs run far below any optimised BLAS, by hand; the
// same trace at an optimised rate is matmul-dominated instead.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace rules_slow_cpu_matmul_test {

// Four steps of 800 ms (us). Each holds four aten::mm of [512, 1024] x [1024, 1024] fp32 (2 x 512 x
// 1024 x 1024 = 1.0737 GFLOP each) at +10, +200, +390, +580, `mm_us` long.
//   mm_us 185,000: 1.0737e9 / 185e6 ns = 5.80 GFLOP/s < 10: slow. GEMMs 740 of 800 ms (92.5%).
//   At 40 GFLOP/s they would save 740 x (1 - 5.80 / 40) = 632.7 ms of each step: 800 / 167.3 = 4.78x.
//   mm_us 20,000: 53.7 GFLOP/s: an optimised BLAS; GEMMs 10% of the step, not dominant either.
std::string cpu_steps(double mm_us) {
  std::vector<std::string> ev;
  for (int k = 0; k < 4; ++k) {
    const double s = k * 800'000.0;
    ev.push_back(test::span("user_annotation", fmt::format("ProfilerStep#{}", k), 1, 1, s, 800'000));
    for (int i = 0; i < 4; ++i)
      ev.push_back(test::span("cpu_op", "aten::mm", 1, 1, s + 10 + 190'000.0 * i, mm_us,
                              R"("Input Dims": [[512, 1024], [1024, 1024]], "Input type": ["float", "float"])"));
  }
  return test::trace(ev);
}

constexpr double kGflop = 2.0 * 512 * 1024 * 1024 / 1e9;

TEST(SlowCpuMatmul, ReferenceBlasRateByHand) {
  const TraceModel m = load_trace_text(cpu_steps(185'000));
  const TraceAnalysis a = analyze_trace(m, {});
  EXPECT_EQ(a.cpu_gemm.calls, 16u);
  EXPECT_EQ(a.cpu_gemm.ns, 16 * 185'000'000ll);
  EXPECT_NEAR(a.cpu_gemm.gflops(), kGflop / 0.185, 1e-9);
  EXPECT_EQ(a.cpu_gemm.top_op, "aten::mm");
  const Diagnosis d = diagnose(a);
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings.front();
  EXPECT_EQ(f.id, "slow-cpu-matmul") << f.title;
  EXPECT_NE(f.title.find("5.8 GFLOP/s (fp32)"), std::string::npos) << f.title;
  const double saved = 740.0 * (1 - (kGflop / 0.185) / 40.0);
  EXPECT_NEAR(f.time_share, saved / 800.0, 1e-6);
  EXPECT_NEAR(f.predicted_speedup, 800.0 / (800.0 - saved), 0.02 * 800.0 / (800.0 - saved)) << f.title;
  EXPECT_NE(f.fixes.front().find("torch.__config__.show()"), std::string::npos);
  // The precision step is not the first fix over a slow library.
  for (const Finding& g : d.findings) EXPECT_NE(g.id, "matmul-dominated") << g.title;
}

TEST(SlowCpuMatmul, AnOptimisedRateIsNoFinding) {
  const TraceModel m = load_trace_text(cpu_steps(20'000));
  const TraceAnalysis a = analyze_trace(m, {});
  EXPECT_NEAR(a.cpu_gemm.gflops(), kGflop / 0.020, 1e-9);
  for (const Finding& f : diagnose(a).findings) EXPECT_NE(f.id, "slow-cpu-matmul") << f.title;
}

}  // namespace rules_slow_cpu_matmul_test
}  // namespace
}  // namespace ferret
