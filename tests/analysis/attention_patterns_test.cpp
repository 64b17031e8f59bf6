// Unfused attention recognised from operator shapes on hand-made traces; times by hand.
#include "analysis/operator/attention_patterns.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace attention_patterns_test {

using test::corr;
using test::span;

std::string dims(const std::string& d, const std::string& type = "c10::BFloat16") {
  return R"("Input Dims": )" + d + R"(, "Input type": [")" + type + R"("])";
}

// One op on thread 1 launching one kernel on stream 7: op [ts, ts + op_dur), launch at ts + 1,
// kernel [kernel_ts, kernel_ts + kernel_dur).
void op_with_kernel(std::vector<std::string>& ev, const std::string& name, const std::string& args, double ts,
                    double op_dur, double kernel_ts, double kernel_dur, int& c) {
  ev.push_back(span("cpu_op", name, 1, 1, ts, op_dur, args));
  ev.push_back(span("cuda_runtime", "cudaLaunchKernel", 1, 1, ts + 1, 2, corr(c)));
  ev.push_back(span("kernel", name + "_kernel", 0, 7, kernel_ts, kernel_dur, corr(c)));
  ++c;
}

// Three steps of 2000 us. Each: Q @ K^T (aten::matmul, 300 us kernel), a scale (aten::div, 50 us),
// softmax (100 us), P @ V (aten::matmul, 300 us); then a 200 us unrelated kernel. Scores
// [16, 128, 128] from [16, 128, 64] @ [16, 64, 128]. Pattern = 750 us a step, matmuls 600 us.
std::string attention_trace(bool with_sdpa_math = false) {
  std::vector<std::string> ev;
  int c = 1;
  for (int s = 0; s < 3; ++s) {
    const double t = 2000.0 * s;
    ev.push_back(span("user_annotation", "ProfilerStep#" + std::to_string(s + 1), 1, 1, t, 2000));
    if (with_sdpa_math) ev.push_back(span("cpu_op", "aten::_scaled_dot_product_attention_math", 1, 1, t + 5, 400));
    op_with_kernel(ev, "aten::matmul", dims("[[16, 128, 64], [16, 64, 128]]"), t + 10, 50, t + 100, 300, c);
    op_with_kernel(ev, "aten::div", dims("[[16, 128, 128], []]"), t + 70, 20, t + 400, 50, c);
    op_with_kernel(ev, "aten::softmax", dims("[[16, 128, 128], [], []]"), t + 100, 40, t + 450, 100, c);
    op_with_kernel(ev, "aten::matmul", dims("[[16, 128, 128], [16, 128, 64]]"), t + 150, 50, t + 550, 300, c);
    op_with_kernel(ev, "aten::relu", dims("[[16, 128, 64]]"), t + 500, 20, t + 900, 200, c);
  }
  return test::trace(ev);
}

TEST(AttentionPatterns, MatmulSoftmaxMatmulIsOneGroup) {
  const TraceModel model = load_trace_text(attention_trace());
  const TraceAnalysis a = analyze_trace(model, {});
  const AttentionPatternsResult& r = a.attention;
  EXPECT_TRUE(r.on_gpu);
  ASSERT_EQ(r.groups.size(), 1u);
  const UnfusedAttentionGroup& g = r.groups[0];
  EXPECT_EQ(g.score_op, "aten::matmul");
  EXPECT_EQ(g.softmax_op, "aten::softmax");
  EXPECT_EQ(g.dtype, "c10::BFloat16");
  EXPECT_EQ(g.calls, 3u);
  EXPECT_EQ(g.batch, 16);
  EXPECT_EQ(g.query_len, 128);
  EXPECT_EQ(g.key_len, 128);
  EXPECT_EQ(g.head_dim, 64);
  EXPECT_EQ(g.value_dim, 64);
  EXPECT_FALSE(g.inside_sdpa_math);
  EXPECT_EQ(g.pattern_ns, 3 * 750'000);  // 300 + 50 + 100 + 300 us per step; relu is after
  EXPECT_EQ(g.matmul_ns, 3 * 600'000);
  EXPECT_EQ(r.fused_calls, 0u);

  // The finding: 2250 us of the 6000 us window (37.5%); the bound removes the 150 us a step
  // between the matmuls: s = 450 / 6000 = 0.075, 1 / (1 - 0.075) = 1.081x.
  const Diagnosis d = diagnose(a);
  const Finding* f = nullptr;
  for (const Finding& x : d.findings)
    if (x.id == "unfused-attention") f = &x;
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->time_share, 0.075, 1e-9);
  EXPECT_NEAR(f->max_speedup, 1.0 / 0.925, 1e-9);
  EXPECT_NE(f->title.find("38%"), std::string::npos) << f->title;
  EXPECT_NE(f->fixes.front().text.find("scaled_dot_product_attention"), std::string::npos);
}

TEST(AttentionPatterns, OnAKnownGpuTheGainIsBoundedByTheFusedKernelsRoofline) {
  // The same trace on an H100 SXM5 (bf16 matrix peak 989.5 TFLOP/s, HBM 3.35 TB/s). A fused kernel
  // per call: 2·16·128·128·(64 + 64) = 67,108,864 FLOP -> 67.8 ns; q, k, v and out, 16·128·64
  // elements each at 2 bytes = 1,048,576 B -> 313.0 ns: 313.0 ns a call, memory-bound. The bound
  // is the pattern's 2250 us less 3 x 313.0 ns, of the 6000 us window.
  std::string text = attention_trace();
  text.replace(0, 1,
               R"({"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, )"
               R"("computeMinor": 0, "numSms": 132, "totalGlobalMem": 85018279936}], )");
  const TraceModel model = load_trace_text(text);
  const Diagnosis d = diagnose(analyze_trace(model, {}));
  const Finding* f = nullptr;
  for (const Finding& x : d.findings)
    if (x.id == "unfused-attention") f = &x;
  ASSERT_NE(f, nullptr);
  const double fused_ns = 3 * 1'048'576.0 / 3350;
  EXPECT_NEAR(f->time_share, (2'250'000 - fused_ns) / 6'000'000, 1e-9);
  EXPECT_NEAR(f->max_speedup, 1 / (1 - (2'250'000 - fused_ns) / 6'000'000), 1e-9);
}

TEST(AttentionPatterns, SdpaMathFallbackIsNamed) {
  const TraceModel model = load_trace_text(attention_trace(true));
  const TraceAnalysis a = analyze_trace(model, {});
  ASSERT_EQ(a.attention.groups.size(), 1u);
  EXPECT_TRUE(a.attention.groups[0].inside_sdpa_math);
  const Diagnosis d = diagnose(a);
  for (const Finding& f : d.findings)
    if (f.id == "unfused-attention") {
      EXPECT_NE(f.title.find("math path"), std::string::npos) << f.title;
      EXPECT_NE(f.fixes.front().text.find("SDPBackend.FLASH_ATTENTION"), std::string::npos) << f.fixes.front().text;
    }
}

TEST(AttentionPatterns, NestedMatmulCountsOnceAndShapesMustChain) {
  std::vector<std::string> ev;
  int c = 1;
  // aten::matmul wrapping aten::bmm (the same product), then softmax, then a matmul: one pattern.
  ev.push_back(span("cpu_op", "aten::matmul", 1, 1, 0, 60, dims("[[4, 32, 16], [4, 16, 32]]")));
  op_with_kernel(ev, "aten::bmm", dims("[[4, 32, 16], [4, 16, 32]]"), 10, 40, 100, 30, c);
  op_with_kernel(ev, "aten::_softmax", dims("[[4, 32, 32], [], []]"), 70, 10, 140, 10, c);
  op_with_kernel(ev, "aten::bmm", dims("[[4, 32, 32], [4, 32, 8]]"), 90, 10, 160, 20, c);
  // A classifier head: logits [8, 10] from [8, 512] @ [512, 10], softmax, then a matmul of other
  // shapes: not attention.
  op_with_kernel(ev, "aten::mm", dims("[[8, 512], [512, 10]]"), 200, 10, 300, 10, c);
  op_with_kernel(ev, "aten::softmax", dims("[[8, 10], [], []]"), 220, 10, 320, 10, c);
  op_with_kernel(ev, "aten::mm", dims("[[8, 512], [512, 512]]"), 240, 10, 340, 10, c);
  // Damaged shapes: nothing recognised, nothing thrown.
  op_with_kernel(ev, "aten::bmm", dims("[[4, 32, oops"), 400, 10, 500, 10, c);
  op_with_kernel(ev, "aten::softmax", dims("[[4, 32, 32]]"), 420, 10, 520, 10, c);
  op_with_kernel(ev, "aten::bmm", dims("[[4, 32, 32], [4, 32, 8]]"), 440, 10, 540, 10, c);
  const TraceModel model = load_trace_text(test::trace(ev));
  const TraceAnalysis a = analyze_trace(model, {});
  ASSERT_EQ(a.attention.groups.size(), 1u);
  const UnfusedAttentionGroup& g = a.attention.groups[0];
  EXPECT_EQ(g.score_op, "aten::matmul");
  EXPECT_EQ(g.softmax_op, "aten::_softmax");
  EXPECT_EQ(g.calls, 1u);
  EXPECT_EQ(g.head_dim, 16);
  EXPECT_EQ(g.value_dim, 8);
  EXPECT_EQ(g.pattern_ns, 60'000);  // 30 + 10 + 20 us
  EXPECT_EQ(g.matmul_ns, 50'000);
}

TEST(AttentionPatterns, CpuOnlyTraceUsesHostTimeAndFusedCallsAreCounted) {
  std::vector<std::string> ev;
  ev.push_back(span("cpu_op", "aten::bmm", 1, 1, 0, 400, dims("[[8, 64, 32], [8, 32, 64]]", "float")));
  ev.push_back(span("cpu_op", "aten::softmax", 1, 1, 450, 100, dims("[[8, 64, 64], [], []]", "float")));
  ev.push_back(span("cpu_op", "aten::bmm", 1, 1, 600, 400, dims("[[8, 64, 64], [8, 64, 32]]", "float")));
  ev.push_back(span("cpu_op", "aten::scaled_dot_product_attention", 1, 1, 1100, 100));
  ev.push_back(span("cpu_op", "aten::_scaled_dot_product_flash_attention_for_cpu", 1, 1, 1110, 80));
  const TraceModel model = load_trace_text(test::trace(ev));
  const TraceAnalysis a = analyze_trace(model, {});
  EXPECT_FALSE(a.attention.on_gpu);
  ASSERT_EQ(a.attention.groups.size(), 1u);
  EXPECT_EQ(a.attention.groups[0].pattern_ns, 1'000'000);  // 0 .. 1000 us
  EXPECT_EQ(a.attention.groups[0].matmul_ns, 800'000);
  EXPECT_EQ(a.attention.groups[0].dtype, "float");
  EXPECT_EQ(a.attention.fused_calls, 1u);
}

// Traces whose attention is already fused (scaled_dot_product_attention -> flash) have no
// pattern; a real one from the corpus checks the negative on a real model.
TEST(AttentionPatterns, FusedAttentionInARealTraceIsNotReported) {
  FERRET_REQUIRE_CORPUS(path, "h100-qwen0.5b-inference-torch2.json.gz");
  const TraceModel model = load_trace(path);
  const TraceAnalysis a = analyze_trace(model, {});
  EXPECT_TRUE(a.attention.groups.empty());
  EXPECT_GT(a.attention.fused_calls, 0u);
}

}  // namespace attention_patterns_test
}  // namespace
}  // namespace ferret

namespace ferret {
namespace {
namespace attention_patterns_test {

// A real trace (torch 1.13 on CPU, training nn.TransformerEncoderLayer, 4 steps): its legacy
// export records no shapes, so the sequence alone is read. A second, simpler reader checks the
// pattern's time: on the forward thread, sorted by start, each aten::bmm -> aten::softmax ->
// aten::bmm run, from the first bmm's start to the second's end.
TEST(AttentionPatterns, RealTorch113TransformerLayerWithoutShapes) {
  const std::string path = std::string(FERRET_SOURCE_DIR) + "/examples/traces/cpu-unfused-attention.json.gz";
  const TraceModel model = load_trace(path);
  const TraceAnalysis a = analyze_trace(model, {});
  ASSERT_EQ(a.attention.groups.size(), 1u);
  const UnfusedAttentionGroup& g = a.attention.groups[0];
  EXPECT_EQ(g.calls, 4u);  // one attention per step
  EXPECT_EQ(g.query_len, -1);

  std::vector<std::tuple<std::int64_t, std::int64_t, std::string>> ops;  // ts, end (us), name
  const test::CommandResult unzipped = test::run_shell("zcat " + path);
  ASSERT_EQ(unzipped.exit_code, 0) << unzipped.err;
  const nlohmann::json doc = nlohmann::json::parse(unzipped.out);
  for (const nlohmann::json& e : doc) {
    const std::string name = e.value("name", "");
    if (e.value("ph", "") != "X" || (name != "aten::bmm" && name != "aten::softmax")) continue;
    const std::int64_t ts = e["ts"].get<std::int64_t>();
    ops.emplace_back(ts, ts + e["dur"].get<std::int64_t>(), name);
  }
  std::sort(ops.begin(), ops.end());
  std::int64_t expected_us = 0;
  int runs = 0;
  for (std::size_t i = 0; i + 2 < ops.size(); ++i)
    if (std::get<2>(ops[i]) == "aten::bmm" && std::get<2>(ops[i + 1]) == "aten::softmax" &&
        std::get<2>(ops[i + 2]) == "aten::bmm") {
      expected_us += std::get<1>(ops[i + 2]) - std::get<0>(ops[i]);
      ++runs;
    }
  EXPECT_EQ(runs, 4);
  EXPECT_EQ(g.pattern_ns, expected_us * 1000);
  const Diagnosis d = diagnose(a);
  EXPECT_TRUE(
      std::any_of(d.findings.begin(), d.findings.end(), [](const Finding& f) { return f.id == "unfused-attention"; }));
}

}  // namespace attention_patterns_test
}  // namespace
}  // namespace ferret
