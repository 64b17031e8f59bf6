#include "report/trace/roofline_report.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace ferret {
namespace {
namespace roofline_report_test {

RooflineResult sample() {
  RooflineResult r;
  r.device = 0;
  r.device_known = true;
  r.peaks.device = "NVIDIA H100 80GB HBM3";
  r.peaks.model = "H100 SXM5";
  r.peaks.hbm_tb_per_s = 3.35;
  r.peaks.matrix_tflops[static_cast<std::size_t>(Dtype::kBf16)] = 989.5;
  r.kernel_ns = 104'000;
  r.modelled_ns = 84'000;
  RooflineGroup mm;
  mm.op = "aten::mm";
  mm.input_dims = "[[8944, 1024], [1024, 2816]]";
  mm.dtype = Dtype::kBf16;
  mm.kind = OpKind::kGemm;
  mm.calls = 1;
  mm.kernels = 2;
  mm.kernel_ns = 84'000;
  mm.flops_per_call = 51'581'550'592;
  mm.bytes_per_call = 74'457'088;
  mm.tflops_per_s = 614.066;
  mm.tb_per_s = 0.886;
  mm.matrix_units = true;
  mm.bound = Bound::kCompute;
  mm.peak_pct = 62.06;
  mm.peak_source = "H100 SXM5 bf16 matrix (datasheet)";
  RooflineGroup custom;
  custom.op = "my|op";
  custom.calls = 3;
  custom.kernels = 3;
  custom.kernel_ns = 20'000;
  custom.note = "no cost model for this op";
  r.groups = {mm, custom};
  return r;
}

TEST(RooflineReport, JsonHasTheIssueFields) {
  const nlohmann::ordered_json j = roofline_json(sample());
  EXPECT_EQ(j["device"], 0);
  EXPECT_EQ(j["ceilings"]["model"], "H100 SXM5");
  EXPECT_DOUBLE_EQ(j["ceilings"]["matrix_tflop_per_s"]["bf16"].get<double>(), 989.5);
  EXPECT_TRUE(j["ceilings"]["matrix_tflop_per_s"]["fp32"].is_null());
  const auto& g = j["groups"][0];
  for (const char* key : {"op", "input_dims", "dtype", "calls", "flops_per_call", "bytes_per_call", "kernel_us",
                          "tflops_per_s", "tb_per_s", "bound", "peak_pct", "peak_source"})
    EXPECT_TRUE(g.contains(key)) << key;
  EXPECT_EQ(g["bound"], "compute");
  EXPECT_EQ(g["dtype"], "bf16");
  EXPECT_DOUBLE_EQ(g["kernel_us"].get<double>(), 84);
  const auto& u = j["groups"][1];
  EXPECT_EQ(u["bound"], "unknown");
  EXPECT_TRUE(u["flops_per_call"].is_null());
  EXPECT_TRUE(u["peak_pct"].is_null());
}

TEST(RooflineReport, TextFitsTheWidth) {
  for (std::size_t width : {60u, 80u, 120u}) {
    Style st;
    st.width = width;
    const std::string text = roofline_text(sample(), 10, st);
    EXPECT_LE(test::longest_line(text), width) << text;
    EXPECT_NE(text.find("Operators against the roofline"), std::string::npos);
    EXPECT_NE(text.find("compute"), std::string::npos) << text;
    EXPECT_NE(text.find("62%"), std::string::npos) << text;
  }
  Style wide;
  wide.width = 120;
  EXPECT_NE(roofline_text(sample(), 10, wide).find("aten::mm [[8944, 1024], [1024, 2816]]"), std::string::npos);
  EXPECT_EQ(roofline_text(sample(), 1, wide).find("my|op"), std::string::npos);  // top 1
  EXPECT_EQ(roofline_text(RooflineResult{}, 10, wide), "");
}

TEST(RooflineReport, MarkdownEscapesTraceText) {
  const std::string md = roofline_markdown(sample(), 10);
  EXPECT_NE(md.find("my\\|op"), std::string::npos) << md;
  EXPECT_NE(md.find("| aten::mm |"), std::string::npos) << md;
}

}  // namespace roofline_report_test
}  // namespace
}  // namespace ferret
