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

// With the host recorded (ferret run on Debian's torch: the reference BLAS, 1 thread of 2 CPUs,
// AVX2 FMA at 3 GHz): the title names the library, the swap leads the fixes, the "see which BLAS"
// fix goes (the run answered it), and the gain is credited at half the ceiling: 1 x 32 x 3.0 = 96
// GFLOP/s, so 48, not one core's conservative 40.
TEST(SlowCpuMatmul, TheRecordedHostNamesTheLibraryAndSetsTheTarget) {
  const TraceModel m = load_trace_text(cpu_steps(185'000));
  AnalysisOptions o;
  o.host = parse_host_facts(R"({"blas_info": "generic", "threads": 1, "cpus": 2, "cpu_mhz": 3000,
      "cpu_flags": ["fma", "avx2"], "blas_libraries": ["/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0"]})");
  const TraceAnalysis a = analyze_trace(m, o);
  const Diagnosis d = diagnose(a);
  const Finding& f = d.findings.front();
  ASSERT_EQ(f.id, "slow-cpu-matmul") << f.title;
  EXPECT_NE(f.title.find("torch calls the reference BLAS (netlib), the cost"), std::string::npos) << f.title;
  const double saved = 740.0 * (1 - (kGflop / 0.185) / 48.0);
  EXPECT_NEAR(f.time_share, saved / 800.0, 1e-6);
  EXPECT_EQ(f.fixes.front().text.rfind("Use the PyPI wheel", 0), 0u) << f.fixes.front().text;
  EXPECT_EQ(f.fixes.front().because, std::vector<std::string>{"torch calls the reference BLAS (netlib)"});
  for (const std::string& fix : fix_texts(f)) EXPECT_EQ(fix.find("See which BLAS"), std::string::npos);
  bool threads_fix = false;
  for (const Fix& fix : f.fixes)
    if (fix.text.find("set_num_threads") != std::string::npos) {
      threads_fix = true;
      EXPECT_EQ(fix.because, std::vector<std::string>{"torch uses 1 thread of 2 CPUs"});
    }
  EXPECT_TRUE(threads_fix);
  ASSERT_EQ(f.fixes_left_out.size(), 1u);
  EXPECT_EQ(f.fixes_left_out.front().because, "the run recorded it: torch calls the reference BLAS (netlib)");

  // MKL on every CPU: the threads fix goes too (torch uses them all), and nothing blames a reference BLAS.
  o.host = parse_host_facts(
      R"({"blas_info": "mkl", "threads": 2, "cpus": 2, "cpu_mhz": 3000, "cpu_flags": ["fma", "avx2"]})");
  const TraceAnalysis b = analyze_trace(m, o);
  const Finding g = diagnose(b).findings.front();
  EXPECT_NE(g.title.find("torch calls MKL"), std::string::npos) << g.title;
  for (const std::string& fix : fix_texts(g)) EXPECT_EQ(fix.find("set_num_threads"), std::string::npos) << fix;
}

// The run's live measurement of the BLAS (512 x 512 fp32 products after the trace) answers the
// library question both ways.
TEST(SlowCpuMatmul, TheMeasuredLibraryDecidesTheCause) {
  // Slow GEMMs in the trace (5.80 GFLOP/s) under a library measured at 60 GFLOP/s: not the library.
  // The target is the measured rate: 740 x (1 - 5.80 / 60) of each 800 ms step.
  const TraceModel m = load_trace_text(cpu_steps(185'000));
  AnalysisOptions o;
  o.host = parse_host_facts(R"({"blas_info": "mkl", "threads": 1, "cpus": 2, "cpu_mhz": 3000,
      "cpu_flags": ["fma", "avx2"], "matmul_gflops": 60.0, "matmul_size": 512})");
  const Finding f = diagnose(analyze_trace(m, o)).findings.front();
  ASSERT_EQ(f.id, "slow-cpu-matmul") << f.title;
  EXPECT_NE(f.title.find("while the run measured torch's BLAS at 60.0 GFLOP/s on 512x512 fp32 matmuls: not the "
                         "library"),
            std::string::npos)
      << f.title;
  EXPECT_NEAR(f.time_share, 740.0 * (1 - (kGflop / 0.185) / 60.0) / 800.0, 1e-6);
  for (const std::string& fix : fix_texts(f)) EXPECT_EQ(fix.find("Use the PyPI wheel"), std::string::npos) << fix;
  bool wheel_left_out = false;
  for (const Finding::LeftOut& l : f.fixes_left_out)
    wheel_left_out = wheel_left_out || (l.fix.rfind("Use the PyPI wheel", 0) == 0 &&
                                        l.because ==
                                            "the run measured torch's BLAS at 60.0 GFLOP/s on 512x512 "
                                            "fp32 matmuls");
  EXPECT_TRUE(wheel_left_out);

  // Without shapes, a library measured at 4.2 GFLOP/s is the cause though the build names no
  // reference BLAS; its measured rate, not the slow bar, is what the gain counts from:
  // 740 x (1 - 4.2 / 48) of 800 ms (48: half of 1 thread x 32 x 3.0 GHz).
  std::string text = cpu_steps(185'000);
  for (std::size_t at = text.find("\"Input Dims\""); at != std::string::npos; at = text.find("\"Input Dims\"", at + 1))
    text.replace(at, 12, "\"Other Dims\"");
  const TraceModel no_shapes = load_trace_text(text);
  AnalysisOptions slow;
  slow.host = parse_host_facts(R"({"blas_info": "generic", "threads": 1, "cpus": 2, "cpu_mhz": 3000,
      "cpu_flags": ["fma", "avx2"], "matmul_gflops": 4.2, "matmul_size": 512})");
  const Finding lib = diagnose(analyze_trace(no_shapes, slow)).findings.front();
  ASSERT_EQ(lib.id, "slow-cpu-matmul") << lib.title;
  EXPECT_NE(lib.title.find("torch calls the system BLAS (libblas.so.3) measured at 4.2 GFLOP/s"), std::string::npos)
      << lib.title;
  EXPECT_NEAR(lib.time_share, 740.0 * (1 - 4.2 / 48) / 800.0, 1e-6);
  EXPECT_EQ(lib.fixes.front().text.rfind("Use the PyPI wheel", 0), 0u);
  EXPECT_EQ(lib.fixes.front().because,
            (std::vector<std::string>{"the run measured torch's BLAS at 4.2 GFLOP/s on 512x512 fp32 matmuls",
                                      "torch calls the system BLAS (libblas.so.3)"}));
}

// matmul-dominated on a CPU the run recorded without bf16 instructions: no precision step, no
// bound; with AVX-512 BF16 the bf16 fix says so.
TEST(SlowCpuMatmul, NoBf16StepOnACpuWithoutBf16) {
  AnalysisOptions o;
  o.host = parse_host_facts(R"({"blas_info": "mkl", "threads": 1, "cpus": 4, "cpu_flags": ["fma", "avx2"]})");
  // GEMMs holding 92.5% of each step, without recorded shapes (no rate: the library is not judged).
  std::string text = cpu_steps(185'000);
  for (std::size_t at = text.find("\"Input Dims\""); at != std::string::npos; at = text.find("\"Input Dims\"", at + 1))
    text.replace(at, 12, "\"Other Dims\"");
  const TraceModel no_shapes = load_trace_text(text);
  const Finding f = diagnose(analyze_trace(no_shapes, o)).findings.front();
  ASSERT_EQ(f.id, "matmul-dominated") << f.title;
  {
    // The same trace from a run that recorded the reference BLAS: the library is the cause though no
    // rate is measured; the gain counts its rate at the slow bar (10 GFLOP/s, more than it reaches)
    // against half the ceiling (1 thread x 32 x 3.0 GHz / 2 = 48): 740 x (1 - 10 / 48) of 800 ms.
    AnalysisOptions netlib;
    netlib.host = parse_host_facts(R"({"blas_info": "generic", "threads": 1, "cpus": 2, "cpu_mhz": 3000,
        "cpu_flags": ["fma", "avx2"], "blas_libraries": ["/usr/lib/x86_64-linux-gnu/blas/libblas.so.3"]})");
    const Finding lib = diagnose(analyze_trace(no_shapes, netlib)).findings.front();
    ASSERT_EQ(lib.id, "slow-cpu-matmul") << lib.title;
    EXPECT_NE(lib.title.find("torch calls the reference BLAS (netlib) and GEMM calls take 92% of the window"),
              std::string::npos)
        << lib.title;
    EXPECT_NEAR(lib.time_share, 740.0 * (1 - 10.0 / 48) / 800.0, 1e-6);
    // Without the host, the trace alone cannot name the library: no finding blames it.
    EXPECT_EQ(diagnose(analyze_trace(no_shapes, {})).findings.front().id, "matmul-dominated");
  }
  EXPECT_EQ(f.max_speedup, 1.0);
  for (const std::string& fix : fix_texts(f)) EXPECT_EQ(fix.find("autocast(\"cpu\""), std::string::npos) << fix;
  bool said = false;
  for (const Finding::LeftOut& l : f.fixes_left_out)
    said = said || l.because == "this CPU has no bf16 instructions (neither AVX-512 BF16 nor AMX)";
  EXPECT_TRUE(said);
  o.host =
      parse_host_facts(R"({"blas_info": "mkl", "threads": 1, "cpus": 4, "cpu_flags": ["fma", "avx2", "avx512_bf16"]})");
  const Finding g = diagnose(analyze_trace(no_shapes, o)).findings.front();
  ASSERT_EQ(g.id, "matmul-dominated");
  EXPECT_NEAR(g.max_speedup, 1.0 / (1 - 0.925 / 2), 0.01);
  bool bf16 = false;
  for (const Fix& fix : g.fixes)
    if (fix.text.find("autocast(\"cpu\"") != std::string::npos) {
      bf16 = true;
      EXPECT_EQ(fix.because, std::vector<std::string>{"this CPU has AVX-512 BF16"});
    }
  EXPECT_TRUE(bf16);
}

}  // namespace rules_slow_cpu_matmul_test
}  // namespace
}  // namespace ferret
