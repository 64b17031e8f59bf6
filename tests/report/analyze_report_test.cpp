// Reports render what the analyses computed; trace text that reaches Markdown stays text.
#include "report/trace/analyze_report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace analyze_report_test {

// One step of 100 us; a kernel with a hostile name runs 60 us of it (launched by an op whose
// name is hostile too).
const char* kHostileTrace = R"({"traceEvents":[
 {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":100},
 {"ph":"X","cat":"cpu_op","name":"op<img src=x onerror=alert(1)>","pid":1,"tid":1,"ts":1,"dur":20,"args":{"External id":1}},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":2,"dur":5,"args":{"External id":1,"correlation":7}},
 {"ph":"X","cat":"kernel","name":"<script>alert(1)</script>|*x*","pid":0,"tid":7,"ts":10,"dur":60,"args":{"correlation":7,"stream":7,"device":0}}
]})";

TEST(AnalyzeReport, MarkdownEscapesTraceText) {
  const TraceModel model = load_trace_text(kHostileTrace);
  const TraceAnalysis analysis = analyze_trace(model, {});
  const Diagnosis diagnosis = diagnose(analysis);
  const std::string md = analyze_markdown(analysis, diagnosis);
  EXPECT_EQ(md.find("<script>"), std::string::npos) << md;
  EXPECT_EQ(md.find("<img"), std::string::npos) << md;
  EXPECT_NE(md.find("op&lt;img src=x onerror=alert(1)&gt;"), std::string::npos) << md;
}

TEST(AnalyzeReport, NamesCannotColourUncolouredText) {
  // Found by analyze_fuzzer: a device and an op named with the very sequences Style writes
  // (ESC [ 1 m, ESC [ 33 m) passed the renderers, which keep those for ferret's own colour. With
  // colour off the library's text holds no ESC at all; with colour on, ferret's own do.
  std::string trace = kHostileTrace;
  trace.replace(trace.find("op<img"), 3, "op\\u001b[33m");
  trace.insert(trace.find("\"traceEvents\""), R"("deviceProperties":[{"id":0,"name":"H100\u001b[1m"}],)");
  const TraceModel model = load_trace_text(trace);
  const TraceAnalysis analysis = analyze_trace(model, {});
  const Diagnosis diagnosis = diagnose(analysis);
  ASSERT_EQ(model.info.devices.size(), 1u);
  const std::string plain = analyze_text(analysis, diagnosis, Style{});
  EXPECT_EQ(plain.find('\033'), std::string::npos) << plain;
  EXPECT_NE(plain.find("H100\\x1b[1m"), std::string::npos) << plain;
  EXPECT_EQ(analyze_markdown(analysis, diagnosis).find('\033'), std::string::npos);
  const std::string coloured = analyze_text(analysis, diagnosis, Style{.enabled = true});
  EXPECT_NE(coloured.find("\033[1m"), std::string::npos);
}

TEST(AnalyzeReport, JsonHasTheDocumentedKeys) {
  const TraceModel model = load_trace_text(kHostileTrace);
  const TraceAnalysis analysis = analyze_trace(model, {});
  const nlohmann::ordered_json j = analyze_json(analysis, diagnose(analysis));
  EXPECT_EQ(j["steps"]["count"], 1);
  EXPECT_DOUBLE_EQ(j["steps"]["avg_us"].get<double>(), 100.0);  // the step span; GPU work ends at 70 us
  double sum = 0;
  for (const char* key :
       {"kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other"}) {
    ASSERT_TRUE(j["breakdown_us"].contains(key)) << key;
    ASSERT_TRUE(j["breakdown_pct"].contains(key)) << key;
    sum += j["breakdown_us"][key].get<double>();
  }
  EXPECT_NEAR(sum, 100.0, 1e-6);                                      // categories sum to the step
  EXPECT_DOUBLE_EQ(j["breakdown_us"]["kernel"].get<double>(), 60.0);  // the kernel's 60 us
  ASSERT_EQ(j["gpus"].size(), 1u);
  EXPECT_DOUBLE_EQ(j["gpus"][0]["utilization_pct"].get<double>(), 60.0);
  for (const char* key : {"idle_us", "compute_us", "non_compute_us", "span_us"})
    EXPECT_TRUE(j["temporal"].contains(key));
  for (const char* key : {"headline", "dimension", "max_speedup"}) EXPECT_TRUE(j["verdict"].contains(key));
  EXPECT_TRUE(j["findings"].is_array());
  EXPECT_EQ(j["hot_spots"]["kernels"][0]["name"], "<script>alert(1)</script>|*x*");  // JSON keeps text as is
}

TEST(AnalyzeReport, SetAsideEventsAreNotedInEveryFormat) {
  // Nine kernels of 10 us in one step of 1000 us (every 100 us from 0); a tenth 115 days later
  // (9,936,000 s = 9.936e12 us) is set aside: all three reports say so, with its name.
  std::vector<std::string> events = {test::span("user_annotation", "ProfilerStep#1", 1, 1, 0, 1000)};
  for (int k = 0; k < 9; ++k) events.push_back(test::span("kernel", "gemm", 0, 7, 100.0 * k, 10));
  events.push_back(test::span("kernel", "late", 0, 7, 9.936e12, 10));
  const TraceModel model = load_trace_text(test::trace(events));
  const TraceAnalysis analysis = analyze_trace(model, {});
  const Diagnosis diagnosis = diagnose(analysis);
  const std::string md = analyze_markdown(analysis, diagnosis);
  const std::string text = analyze_text(analysis, diagnosis, Style{});
  const nlohmann::ordered_json j = analyze_json(analysis, diagnosis);
  EXPECT_NE(md.find("**Input**: 0 repaired, 1 skipped"), std::string::npos) << md;
  EXPECT_NE(md.find("- skipped 1 x event far in time from every other event of its kind and process"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("&quot;late&quot; (kernel, device 0)"), std::string::npos) << md;  // quotes escaped
  EXPECT_NE(text.find("skipped 1 x event far in time"), std::string::npos) << text;
  ASSERT_EQ(j["input"]["skips"].size(), 1u);
  EXPECT_EQ(j["input"]["skips"][0]["count"], 1);
  EXPECT_DOUBLE_EQ(j["steps"]["avg_us"].get<double>(), 1000.0);
}

TEST(AnalyzeReport, TextFitsEightyColumns) {
  const TraceModel model = load_trace_text(kHostileTrace);
  const TraceAnalysis analysis = analyze_trace(model, {});
  const std::string text = analyze_text(analysis, diagnose(analysis), Style{});
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    EXPECT_LE(end - start, 80u) << text.substr(start, end - start);
    start = end + 1;
  }
  EXPECT_EQ(text.find('\033'), std::string::npos);  // no colour codes when colour is off
}

}  // namespace analyze_report_test
}  // namespace
}  // namespace ferret

namespace ferret::test {
namespace {
namespace analyze_report_test {

// The TensorBoard plugin's sample (MANIFEST.md): its first recommendation is data loading (33.4%
// of the step in the DataLoader); removing a 33.37% wait bounds the gain at 1/(1-0.3337) = 1.50x.
TEST(AnalyzeReportCorpus, ResNet50VerdictIsInputBound) {
  FERRET_REQUIRE_CORPUS(path, "resnet50-v100-torch19-dataloader.pt.trace.json.gz");
  const TraceModel model = load_trace(path);
  const TraceAnalysis analysis = analyze_trace(model, {});
  const Diagnosis d = diagnose(analysis);
  EXPECT_EQ(d.verdict.finding_id, "input-bound") << d.verdict.headline;
  EXPECT_NEAR(d.verdict.max_speedup, 1.50, 0.005);
  EXPECT_NE(d.verdict.headline.find("33%"), std::string::npos) << d.verdict.headline;
}

// The GPU section names matrix units as the vendor does: Tensor Cores on NVIDIA, Matrix Cores on
// AMD, none on devices whose units ferret does not know (MTIA); an unnamed device reads as such.
TEST(AnalyzeReport, GpuSectionUsesTheVendorsWordForMatrixUnits) {
  // One 100 us step; a 60 us kernel on device 0, whose properties name it (or do not).
  auto gpu_section = [](const std::string& name, int compute_major) {
    const std::string props =
        name.empty() && compute_major < 0
            ? std::string()
            : fmt::format(R"("deviceProperties":[{{"id":0,"name":"{}","computeMajor":{},"computeMinor":0}}],)", name,
                          compute_major);
    const std::string trace = "{" + props + R"("traceEvents":[
 {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":100},
 {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":20,"args":{"External id":1}},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":2,"dur":5,"args":{"External id":1,"correlation":7}},
 {"ph":"X","cat":"kernel","name":"gemm_kernel","pid":0,"tid":7,"ts":10,"dur":60,"args":{"correlation":7,"stream":7,"device":0}}
]})";
    const TraceModel model = load_trace_text(trace);
    const TraceAnalysis analysis = analyze_trace(model, {});
    const Diagnosis diagnosis = diagnose(analysis);
    Style wide;
    wide.width = 200;  // one line per sentence
    const std::string text = analyze_text(analysis, diagnosis, wide);
    const std::string md = analyze_markdown(analysis, diagnosis);
    const std::size_t t = text.find("GPU\n"), m = md.find("| GPU");
    return (t == std::string::npos ? text : text.substr(t)) + "\n" + (m == std::string::npos ? md : md.substr(m));
  };
  const std::string nvidia = gpu_section("NVIDIA H100 80GB HBM3", 9);
  EXPECT_NE(nvidia.find("Tensor Cores 0.0% of kernel time"), std::string::npos) << nvidia;
  EXPECT_NE(nvidia.find("| 0.0% (Tensor Cores) |"), std::string::npos) << nvidia;
  const std::string amd = gpu_section("AMD Instinct MI300X", 9);
  EXPECT_NE(amd.find("Matrix Cores 0.0% of kernel time"), std::string::npos) << amd;
  EXPECT_EQ(amd.find("Tensor Cores"), std::string::npos) << amd;
  // The hot aten::mm's precision fixes: TF32 is NVIDIA's; nothing CUDA-specific for unknown units.
  EXPECT_NE(nvidia.find("allow_tf32"), std::string::npos) << nvidia;
  EXPECT_EQ(amd.find("allow_tf32"), std::string::npos) << amd;
  EXPECT_NE(amd.find("bf16 on Matrix Cores"), std::string::npos) << amd;
  for (const std::string name : {"MTIA v2", ""}) {
    const std::string other = gpu_section(name, -1);
    EXPECT_EQ(other.find("Tensor Cores"), std::string::npos) << other;
    EXPECT_EQ(other.find("Matrix Cores"), std::string::npos) << other;
    EXPECT_NE(other.find("n/a (units unknown)"), std::string::npos) << other;
    EXPECT_EQ(other.find("allow_tf32"), std::string::npos) << other;
    EXPECT_EQ(other.find("autocast(\"cuda\""), std::string::npos) << other;
  }
  EXPECT_NE(gpu_section("", -1).find("device 0 unknown device"), std::string::npos);
}

}  // namespace analyze_report_test
}  // namespace
}  // namespace ferret::test
