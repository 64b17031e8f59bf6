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
// `dtype` is the operands' recorded type: "float", or "c10::BFloat16" as under CPU autocast.
std::string cpu_steps(double mm_us, const std::string& dtype = "float") {
  std::vector<std::string> ev;
  for (int k = 0; k < 4; ++k) {
    const double s = k * 800'000.0;
    ev.push_back(test::span("user_annotation", fmt::format("ProfilerStep#{}", k), 1, 1, s, 800'000));
    for (int i = 0; i < 4; ++i)
      ev.push_back(
          test::span("cpu_op", "aten::mm", 1, 1, s + 10 + 190'000.0 * i, mm_us,
                     fmt::format(R"("Input Dims": [[512, 1024], [1024, 1024]], "Input type": ["{0}", "{0}"])", dtype)));
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
  EXPECT_NE(f.fixes.front().text.find("torch.__config__.show()"), std::string::npos);
  // The precision step is not the first fix over a slow library.
  for (const Finding& g : d.findings) EXPECT_NE(g.id, "matmul-dominated") << g.title;
}

TEST(SlowCpuMatmul, AnOptimisedRateIsNoFinding) {
  const TraceModel m = load_trace_text(cpu_steps(20'000));
  const TraceAnalysis a = analyze_trace(m, {});
  EXPECT_NEAR(a.cpu_gemm.gflops(), kGflop / 0.020, 1e-9);
  for (const Finding& f : diagnose(a).findings) EXPECT_NE(f.id, "slow-cpu-matmul") << f.title;
}

TEST(SlowCpuMatmul, GemmsAlreadyInBf16GetNoPrecisionStep) {
  // The GEMMs take 4 x 150 of 800 ms (75%), all bf16 (CPU autocast): compute-bound, but the
  // precision step is taken. No gain is bounded, and autocast is a fix left out with its reason.
  const TraceModel m = load_trace_text(cpu_steps(150'000, "c10::BFloat16"));
  const TraceAnalysis a = analyze_trace(m, {});
  EXPECT_EQ(a.cpu_gemm.all_gemm_ns, 16 * 150'000'000ll);
  EXPECT_EQ(a.cpu_gemm.reduced_precision_ns, a.cpu_gemm.all_gemm_ns);
  EXPECT_EQ(a.cpu_gemm.calls, 0u);  // the rate is measured on fp32/fp64 only
  const Diagnosis d = diagnose(a);
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings.front();
  EXPECT_EQ(f.id, "matmul-dominated") << f.title;
  EXPECT_NE(f.title.find("take 75% of the time (aten::mm leads), already in bf16"), std::string::npos) << f.title;
  EXPECT_EQ(f.max_speedup, 1.0);
  EXPECT_TRUE(f.predicted_speedup < 0 || f.predicted_speedup == 1.0) << f.predicted_speedup;
  for (const std::string& fix : fix_texts(f)) EXPECT_EQ(fix.find("autocast(\"cpu\""), std::string::npos) << fix;
  ASSERT_EQ(f.fixes_left_out.size(), 1u);
  EXPECT_NE(f.fixes_left_out.front().fix.find("autocast(\"cpu\""), std::string::npos);
  EXPECT_EQ(f.fixes_left_out.front().because, "the trace shows 100% of the GEMM time in bf16 already");
  // The same GEMMs in fp32 (150 ms: 7.2 GFLOP/s, a slow library) are slow-cpu-matmul instead.
  const TraceModel fp32 = load_trace_text(cpu_steps(150'000));
  EXPECT_EQ(diagnose(analyze_trace(fp32, {})).findings.front().id, "slow-cpu-matmul");
}

}  // namespace rules_slow_cpu_matmul_test
}  // namespace
}  // namespace ferret
