// Issue 14, point 8: how the text and Markdown reports present what the analyses computed:
// layout width, table names that truncate alike, code spans in Markdown, human numbers, and
// shares that name their denominators.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ingest/trace_loader.h"
#include "report/format.h"
#include "report/trace/analyze_report.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace presentation_test {

// The text with its line breaks and indents read as single spaces, to find a phrase however it
// was wrapped.
std::string joined(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n') {
      out += text[i];
      continue;
    }
    out += ' ';
    while (i + 1 < text.size() && text[i + 1] == ' ') ++i;
  }
  return out;
}

// ---- names that truncate to the same text ---------------------------------------------------------

const std::string kKernelA =
    "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::"
    "BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, "
    "A const&)::{lambda(int)#1}>(int, A)";
const std::string kKernelB =
    "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::"
    "BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, "
    "B const&)::{lambda(int)#1}>(int, B)";

TEST(FitNames, NamesThatCutAlikeShowWhatTellsThemApart) {
  // Both names share their first 220 bytes: fit_width gives them the same 46 columns.
  ASSERT_EQ(fit_width(kKernelA, 46), fit_width(kKernelB, 46));
  const std::vector<std::string> fitted = fit_names({kKernelA, kKernelB, "aten::mm"}, 46);
  ASSERT_EQ(fitted.size(), 3u);
  EXPECT_NE(fitted[0], fitted[1]);
  for (const std::string& f : fitted) EXPECT_LE(f.size(), 46u) << f;
  // The head stays, then "...", then the token where they differ ("A const&" / "B const&").
  EXPECT_TRUE(fitted[0].starts_with("void at::native")) << fitted[0];
  EXPECT_NE(fitted[0].find("...A const&"), std::string::npos) << fitted[0];
  EXPECT_NE(fitted[1].find("...B const&"), std::string::npos) << fitted[1];
  EXPECT_EQ(fitted[2], "aten::mm");  // short names untouched
}

TEST(FitNames, DifferenceAtTheEndAndDistinctCutsStayAsFitWidth) {
  // Same 60-byte head, differing in the last shape: the tail is shown whole.
  const std::string head(60, 'x');
  const std::vector<std::string> fitted = fit_names({head + "[8, 128]", head + "[16, 128]"}, 30);
  EXPECT_TRUE(fitted[0].ends_with("...[8, 128]")) << fitted[0];
  EXPECT_TRUE(fitted[1].ends_with("...[16, 128]")) << fitted[1];
  EXPECT_EQ(fitted[0].size(), 30u);
  // Names that already cut differently keep fit_width's cut; identical names are not told apart.
  const std::vector<std::string> plain = fit_names({"alpha" + head, "beta" + head, "beta" + head}, 30);
  EXPECT_EQ(plain[0], fit_width("alpha" + head, 30));
  EXPECT_EQ(plain[1], fit_width("beta" + head, 30));
  EXPECT_EQ(plain[2], plain[1]);
}

// ---- Markdown code spans ---------------------------------------------------------------------------

TEST(MarkdownEscaping, CodeSpansStayCode) {
  EXPECT_EQ(escape_markdown("set `torch.backends.cuda.matmul.allow_tf32 = True` (a_b)"),
            "set `torch.backends.cuda.matmul.allow_tf32 = True` (a\\_b)");
  // A table cell's '|' is escaped even inside code (GFM splits cells on it); HTML is inert there.
  EXPECT_EQ(escape_markdown("`a|b` <i>"), "`a\\|b` &lt;i&gt;");
  // In prose (a fix in a list item) a backslash in code would show: '|' stays as is there.
  EXPECT_EQ(escape_markdown("run `nvidia-smi -q | grep Gen` now", /*in_table=*/false),
            "run `nvidia-smi -q | grep Gen` now");
  EXPECT_EQ(escape_markdown("a|b", /*in_table=*/false), "a\\|b");  // outside code "\|" shows "|"
  // A backtick that is never closed is literal; a double fence closes only on a double run.
  EXPECT_EQ(escape_markdown("it`s *x*"), "it\\`s \\*x\\*");
  EXPECT_EQ(escape_markdown("``a`b`` c_d"), "``a`b`` c\\_d");
}

TEST(MarkdownEscaping, TraceTextCannotCloseItsCodeSpan) {
  EXPECT_EQ(markdown_code("aten::mm"), "`aten::mm`");
  EXPECT_EQ(markdown_code("a`b"), "``a`b``");          // fence longer than the run inside
  EXPECT_EQ(markdown_code("x``y`"), "``` x``y` ```");  // padded: the text ends with a backtick
  EXPECT_EQ(markdown_code("a|b"), "`a\\|b`");
  EXPECT_EQ(markdown_code("a|b", /*in_table=*/false), "`a|b`");
}

// ---- numbers -----------------------------------------------------------------------------------------

TEST(HumanNumbers, NoExponentsAndUnitsForPeople) {
  EXPECT_EQ(human_number(12345.0), "12345");
  EXPECT_EQ(human_number(2.5e7), "25000000");
  EXPECT_EQ(human_number(3.0), "3");
  EXPECT_EQ(human_number(0.25), "0.25");
  EXPECT_EQ(human_number(12.345), "12.3");
  EXPECT_EQ(human_number(0.00001), "<0.001");
  EXPECT_EQ(evidence_value_text(12345, "count"), "12345");  // {:.4g} printed 1.234e+04count
  EXPECT_EQ(evidence_value_text(704, "bytes"), "704 B");
  EXPECT_EQ(evidence_value_text(3.0 * 1024 * 1024, "bytes"), "3.0 MiB");
  EXPECT_EQ(evidence_value_text(146.2, "ms"), "146.200 ms");
  EXPECT_EQ(evidence_value_text(25000, "ms"), "25.000 s");
  EXPECT_EQ(evidence_value_text(62.04, "%"), "62.0%");
  EXPECT_EQ(evidence_value_text(12.5, "GB/s"), "12.5 GB/s");
}

TEST(HumanNumbers, FindingEvidenceInTextHasNoExponent) {
  Finding f;
  f.id = "x";
  f.title = "t";
  f.evidence = {{"calls", 123456, "count"}, {"bytes", 5.0 * (1ull << 30), "bytes"}, {"stall", 146.0, "ms"}};
  const std::string text = findings_text({f}, Style{}, 80);
  EXPECT_NE(text.find("evidence: calls=123456, bytes=5.00 GiB, stall=146.000 ms"), std::string::npos) << text;
  EXPECT_EQ(text.find("e+"), std::string::npos) << text;
}

// ---- layout width and denominators ---------------------------------------------------------------------

// Three steps of 1000 us; kernels A and B (names alike for 220 bytes) run 300 us and 200 us of
// each step, so the GPU is busy 1500 of the 3000 us window: 50%.
std::string two_kernel_trace() {
  std::vector<std::string> events;
  for (int s = 0; s < 3; ++s) {
    const double t0 = 1000.0 * s;
    events.push_back(test::span("user_annotation", "ProfilerStep#" + std::to_string(s + 1), 1, 1, t0, 1000));
    events.push_back(test::span("kernel", kKernelA, 0, 7, t0 + 100, 300));
    events.push_back(test::span("kernel", kKernelB, 0, 7, t0 + 500, 200));
  }
  return test::trace(events);
}

TEST(AnalyzeText, FitsTheWidthAndNamesDenominators) {
  const TraceModel model = load_trace_text(two_kernel_trace());
  const TraceAnalysis analysis = analyze_trace(model, {});
  const Diagnosis diagnosis = diagnose(analysis);
  for (std::size_t width : {60u, 80u, 160u}) {
    SCOPED_TRACE(width);
    Style st;
    st.width = width;
    const std::string wrapped = analyze_text(analysis, diagnosis, st);
    EXPECT_LE(test::longest_line(wrapped), width) << wrapped;
    const std::string text = joined(wrapped);
    EXPECT_NE(text.find("utilization: kernels busy 50.0% of the 3.000 ms window (3 steps)"), std::string::npos) << text;
    // The trace names no device, so no matrix units are named (AnalyzeReport.GpuSectionUses...).
    EXPECT_NE(text.find("occupancy n/a of kernel time"), std::string::npos) << text;
    EXPECT_NE(text.find("from the first GPU activity to the last"), std::string::npos) << text;
    // The two kernels' rows differ: each shows its own "A const&" / "B const&".
    EXPECT_NE(text.find("A const&"), std::string::npos) << text;
    EXPECT_NE(text.find("B const&"), std::string::npos) << text;
  }
  Style wide;
  wide.width = 160;
  EXPECT_GT(test::longest_line(analyze_text(analysis, diagnosis, wide)), 80u);  // the name column grew
}

}  // namespace presentation_test
}  // namespace
// p-values print in two significant digits and never as an exponent, whatever their size
// (diff and compare reports both use p_value_text).
TEST(Presentation, PValuesNeverUseAnExponent) {
  EXPECT_EQ(p_value_text(0.034), "0.034");
  EXPECT_EQ(p_value_text(0.5), "0.5");
  EXPECT_EQ(p_value_text(0.00012), "0.00012");
  EXPECT_EQ(p_value_text(1.2e-5), "< 0.0001");
  EXPECT_EQ(p_value_text(1e-300), "< 0.0001");
  EXPECT_EQ(p_value_text(std::nan("")), "-");
  EXPECT_EQ(p_equals_text(0.034), "p = 0.034");
  EXPECT_EQ(p_equals_text(1.2e-5), "p < 0.0001");  // never "p = < 0.0001"
}

}  // namespace ferret
