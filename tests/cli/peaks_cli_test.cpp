// `ferret analyze --peaks FILE`: measured ceilings replace the datasheet's in traces[].roofline,
// and a bad file is an error that names the file and the key.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace ferret {
namespace {
namespace peaks_cli_test {

// One aten::mm [256,256] x [256,256] bf16 on an unnamed device: 2·256³ = 33,554,432 FLOPs,
// 3·65,536·2 = 393,216 B; its 10 us kernel (1,000-block grid) reaches 3.3554 TFLOP/s.
std::string one_gemm_trace() {
  return test::trace({
      test::span("cpu_op", "aten::mm", 1, 1, 0, 50,
                 R"("Input Dims": [[256, 256], [256, 256]], "Input type": ["c10::BFloat16", "c10::BFloat16"])"),
      test::span("cuda_runtime", "cudaLaunchKernel", 1, 1, 10, 2, "\"correlation\": 1"),
      test::span("kernel", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_kernel", 0, 7, 20, 10,
                 "\"correlation\": 1, \"grid\": [1000, 1, 1]"),
  });
}

TEST(PeaksCli, MeasuredCeilingsPlaceAnUnknownDevice) {
  const std::string trace = test::temp_path("peaks-cli-trace.json");
  test::write_file(trace, one_gemm_trace());
  const std::string peaks = test::temp_path("peaks-cli.json");
  // Ridge 100 / 1 = 100 FLOP/B; intensity 33,554,432 / 393,216 = 85.3 < 100 -> memory-bound:
  // 393,216 B / 10,000 ns = 0.0393 TB/s = 3.93% of 1 TB/s.
  test::write_file(peaks, R"({"hbm_tb_per_s": 1, "matrix_tflop_per_s": {"bf16": 100}})");
  const test::CommandResult r = test::run_ferret("analyze --json --peaks " + peaks + " " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json roof = nlohmann::json::parse(r.out).at("traces")[0].at("roofline");
  EXPECT_EQ(roof["ceilings"]["peaks_file"], peaks);
  const nlohmann::json& g = roof["groups"][0];
  EXPECT_EQ(g["op"], "aten::mm");
  EXPECT_EQ(g["bound"], "memory");
  EXPECT_NEAR(g["peak_pct"].get<double>(), 3.93, 0.01);
  EXPECT_NE(g["peak_source"].get<std::string>().find(peaks), std::string::npos);
  // Without the file the device is unknown: the costs stay, the bound is unknown.
  const test::CommandResult plain = test::run_ferret("analyze --json " + trace);
  const nlohmann::json g0 = nlohmann::json::parse(plain.out).at("traces")[0].at("roofline")["groups"][0];
  EXPECT_EQ(g0["bound"], "unknown");
  EXPECT_DOUBLE_EQ(g0["flops_per_call"].get<double>(), 33'554'432);
}

TEST(PeaksCli, BadFileNamesTheFileAndTheKey) {
  const std::string trace = test::temp_path("peaks-cli-trace2.json");
  test::write_file(trace, one_gemm_trace());
  const std::string peaks = test::temp_path("peaks-bad.json");
  test::write_file(peaks, R"({"matrix_tflop_per_s": {"bf17": 100}})");
  const test::CommandResult r = test::run_ferret("analyze --peaks " + peaks + " " + trace);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(peaks), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bf17"), std::string::npos) << r.err;
  const test::CommandResult missing = test::run_ferret("analyze --peaks /no/such/peaks.json " + trace);
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("/no/such/peaks.json"), std::string::npos) << missing.err;
}

}  // namespace peaks_cli_test
}  // namespace
}  // namespace ferret
