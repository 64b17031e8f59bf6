// `ferret analyze`'s options are defined once (ferret::AnalyzeOptions, mapped by
// analysis_options_from): the same options through the C++ API (analyze_paths) and through the
// command line's flags print the same bytes, and each option changes what is printed.
#include <ferret/ferret.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"

namespace ferret {
namespace {
namespace analyze_options_test {

// Three steps, each an aten::mm [256,256] x [256,256] bf16 on GPU 0 and an aten::add on GPU 1;
// step k's GEMM lasts 10·(k+1) us, so that --steps and --time select different kernels, and the
// two operators and devices give --top and --device something to cut.
std::string three_step_gemm_trace() {
  std::vector<std::string> events;
  for (int k = 0; k < 3; ++k) {
    const double t0 = 1000.0 * k;
    const std::string corr = "\"correlation\": " + std::to_string(k + 1);
    events.push_back(test::span("user_annotation", "ProfilerStep#" + std::to_string(k + 1), 1, 1, t0, 900));
    events.push_back(
        test::span("cpu_op", "aten::mm", 1, 1, t0 + 10, 50,
                   R"("Input Dims": [[256, 256], [256, 256]], "Input type": ["c10::BFloat16", "c10::BFloat16"])"));
    events.push_back(test::span("cuda_runtime", "cudaLaunchKernel", 1, 1, t0 + 20, 2, corr));
    events.push_back(test::span("kernel", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_kernel", 0, 7,
                                t0 + 30, 10.0 * (k + 1), corr + ", \"grid\": [1000, 1, 1]"));
    const std::string add_corr = "\"correlation\": " + std::to_string(k + 101);
    events.push_back(test::span("cpu_op", "aten::add", 1, 1, t0 + 100, 20));
    events.push_back(test::span("cuda_runtime", "cudaLaunchKernel", 1, 1, t0 + 105, 2, add_corr));
    events.push_back(test::span("kernel", "vectorized_elementwise_kernel", 1, 7, t0 + 110, 5, add_corr));
  }
  return test::trace(events);
}

struct Case {
  std::string flags;       // on the command line
  AnalyzeOptions options;  // the same through the API
};

std::vector<Case> cases(const std::string& peaks) {
  std::vector<Case> out;
  out.push_back({"", {}});
  Case c;
  c = {"--peaks " + peaks, {}};
  c.options.peaks = peaks;
  out.push_back(c);
  c = {"--steps 2-3", {}};
  c.options.steps = "2-3";
  out.push_back(c);
  c = {"--time 1-", {}};
  c.options.time = "1-";
  out.push_back(c);
  c = {"--top 1 --device 0", {}};
  c.options.top = 1;
  c.options.device = 0;
  out.push_back(c);
  c = {"--timeline-definition hta --peaks " + peaks, {}};
  c.options.hta_timeline = true;
  c.options.peaks = peaks;
  out.push_back(c);
  return out;
}

TEST(AnalyzeOptions, ApiAndCommandLinePrintTheSameBytesForEveryOption) {
  const std::string trace = test::temp_path("analyze-options-trace.json");
  test::write_file(trace, three_step_gemm_trace());
  const std::string peaks = test::temp_path("analyze-options-peaks.json");
  test::write_file(peaks, R"({"hbm_tb_per_s": 1, "matrix_tflop_per_s": {"bf16": 100}})");
  std::vector<std::string> seen;
  for (const Case& c : cases(peaks)) {
    SCOPED_TRACE(c.flags);
    for (const bool json : {true, false}) {
      const test::CommandResult cli =
          test::run_ferret(std::string("analyze ") + (json ? "--json " : "") + c.flags + " " + trace);
      ASSERT_EQ(cli.exit_code, 0) << cli.err;
      const std::string api = analyze_paths({trace}, c.options, json ? Format::kJson : Format::kText);
      EXPECT_EQ(api, cli.out);
      if (json) seen.push_back(api);
    }
  }
  // Each option changes the document: a mapping that dropped one would print the default's.
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_NE(seen[i], seen[0]) << cases(peaks)[i].flags;
}

TEST(AnalyzeOptions, ABadPeaksFileIsTheSameErrorThroughTheApi) {
  const std::string trace = test::temp_path("analyze-options-trace2.json");
  test::write_file(trace, three_step_gemm_trace());
  AnalyzeOptions options;
  options.peaks = "/no/such/peaks.json";
  const test::CommandResult cli = test::run_ferret("analyze --peaks /no/such/peaks.json " + trace);
  EXPECT_NE(cli.exit_code, 0);
  try {
    analyze_paths({trace}, options, Format::kJson);
    FAIL() << "a missing --peaks file was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("/no/such/peaks.json"), std::string::npos) << e.what();
    EXPECT_NE(cli.err.find(e.what()), std::string::npos) << cli.err << " / " << e.what();
  }
}

}  // namespace analyze_options_test
}  // namespace
}  // namespace ferret
