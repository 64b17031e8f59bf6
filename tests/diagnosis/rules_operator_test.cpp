// The operator-layer rules that read the roofline (rules_operator.cpp), on hand-made H100 traces
// whose figures are worked out in the comments.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/operator/roofline.h"
#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace rules_operator_test {

using test::span;

// H100 SXM5: bf16 matrix peak 989.5 TFLOP/s = 989.5e3 FLOP/ns, HBM 3.35 TB/s = 3350 B/ns.
constexpr const char* kH100 =
    R"({"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85018279936, "computeMajor": 9,
        "computeMinor": 0, "numSms": 132})";
constexpr const char* kGemmKernel = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_kernel";

std::string doc(const std::vector<std::string>& events) {
  std::string out = std::string(R"({"deviceProperties": [)") + kH100 + R"(], "traceEvents": [)";
  for (std::size_t i = 0; i < events.size(); ++i) out += (i ? "," : "") + events[i];
  return out + "]}";
}

std::string bf16_mm_args(long m, long k, long n) {
  return "\"Input Dims\": [[" + std::to_string(m) + ", " + std::to_string(k) + "], [" + std::to_string(k) + ", " +
         std::to_string(n) + "]], \"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\"]";
}

// One op call at `ts` launching one kernel of `kernel_us` on stream 7; correlation `c`.
void gemm_call(std::vector<std::string>& ev, double ts, const std::string& args, double kernel_us, int c,
               bool with_shapes = true) {
  ev.push_back(span("cpu_op", "aten::mm", 1, 1, ts, 10, with_shapes ? args : ""));
  ev.push_back(span("cuda_runtime", "cudaLaunchKernel", 1, 1, ts + 2, 5, "\"correlation\": " + std::to_string(c)));
  ev.push_back(span("kernel", kGemmKernel, 0, 7, ts + 10, kernel_us,
                    "\"correlation\": " + std::to_string(c) + ", \"grid\": [264, 1, 1]"));
}

// One 10 ms step. Each of 4 rounds runs (kernels back to back from the launch):
//   misaligned mm [4096, 4095] @ [4095, 4097], 500 us
//   aligned    mm [4096, 4096] @ [4096, 4096], 200 us
//   decode     mm [1, 4096]    @ [4096, 4096],  40 us
std::string shape_trace(bool with_shapes = true) {
  std::vector<std::string> ev = {span("user_annotation", "ProfilerStep#1", 1, 1, 0, 10'000)};
  int c = 1;
  for (int round = 0; round < 4; ++round) {
    const double t = 100 + round * 2'000;
    gemm_call(ev, t, bf16_mm_args(4096, 4095, 4097), 500, c++, with_shapes);
    gemm_call(ev, t + 600, bf16_mm_args(4096, 4096, 4096), 200, c++, with_shapes);
    gemm_call(ev, t + 900, bf16_mm_args(1, 4096, 4096), 40, c++, with_shapes);
  }
  return doc(ev);
}

const Finding* find(const Diagnosis& d, const std::string& id) {
  for (const Finding& f : d.findings)
    if (f.id == id) return &f;
  return nullptr;
}

double evidence(const Finding& f, const std::string& name) {
  for (const Evidence& e : f.evidence)
    if (e.name == name) return e.value;
  return -1;
}

TEST(GemmShape, MisalignedAndDecodeGemmsAreHeldToTheirRoofline) {
  const TraceModel m = load_trace_text(shape_trace());
  const TraceAnalysis a = analyze_trace(m, {});
  // Misaligned: 2 x 4096 x 4097 x 4095 = 137,438,945,280 FLOP -> 138,897.4 ns at 989.5e3 FLOP/ns;
  // bytes (4096·4095 + 4095·4097 + 4096·4097) x 2 = 100,663,294 -> 30,048.7 ns: compute-bound,
  // 138.897 us of each 500 us call (27.8%).
  const double misaligned_ideal = 137'438'945'280.0 / 989.5e3;
  // Decode: 2 x 4096 x 4096 = 33,554,432 FLOP -> 33.9 ns; bytes (4096 + 4096·4096 + 4096) x 2 =
  // 33,570,816 -> 10,021.1 ns: memory-bound, 10.021 us of each 40 us call (25.1%).
  const double decode_ideal = 33'570'816.0 / 3350;
  for (const RooflineGroup& g : a.roofline.groups) {
    if (g.input_dims.find("4095") != std::string::npos) {
      EXPECT_NEAR(g.roofline_ns, 4 * misaligned_ideal, 1);
    }
    if (g.input_dims.find("[1, 4096]") != std::string::npos) {
      EXPECT_NEAR(g.roofline_ns, 4 * decode_ideal, 1);
    }
  }
  const Diagnosis d = diagnose(a);
  const Finding* f = find(d, "gemm-shape");
  ASSERT_NE(f, nullptr);
  // The aligned 4096^3 GEMM reaches 138.9 / 200 = 69% of its roofline and has no shape cause: it
  // is not counted. Excess: 4 x (500 - 138.897) + 4 x (40 - 10.021) us over the 10 ms step.
  const double excess_us = 4 * (500 - misaligned_ideal / 1e3) + 4 * (40 - decode_ideal / 1e3);
  EXPECT_NEAR(f->time_share, excess_us / 10'000, 1e-6);
  EXPECT_NEAR(f->max_speedup, 1 / (1 - excess_us / 10'000), 1e-6);
  EXPECT_EQ(evidence(*f, "groups"), 2);
  EXPECT_EQ(evidence(*f, "gemm_k"), 4095);  // the largest excess leads
  EXPECT_NEAR(evidence(*f, "roofline_efficiency_pct"), 100 * misaligned_ideal / 500e3, 1e-6);
  EXPECT_NE(f->title.find("M x N x K = 4096 x 4097 x 4095"), std::string::npos) << f->title;
  bool pads = false, batches = false;
  for (const std::string& fix : fix_texts(*f)) {
    pads = pads || fix.find("multiples of 8 elements") != std::string::npos;
    batches = batches || fix.find("batch requests") != std::string::npos;
  }
  EXPECT_TRUE(pads);
  EXPECT_TRUE(batches);
}

TEST(GemmShape, NoShapesNoFinding) {
  const TraceModel m = load_trace_text(shape_trace(false));
  EXPECT_EQ(find(diagnose(analyze_trace(m, {})), "gemm-shape"), nullptr);
}

TEST(GemmShape, WellShapedSlowGemmsAreNotBlamedOnTheirShape) {
  // Only the aligned 4096^3 GEMM, now at 1000 us (13.9% of its roofline): slow, but its shape is
  // not why. No gemm-shape.
  std::vector<std::string> ev = {span("user_annotation", "ProfilerStep#1", 1, 1, 0, 10'000)};
  for (int i = 0; i < 4; ++i) gemm_call(ev, 100 + i * 2'000, bf16_mm_args(4096, 4096, 4096), 1000, i + 1);
  const TraceModel m = load_trace_text(doc(ev));
  EXPECT_EQ(find(diagnose(analyze_trace(m, {})), "gemm-shape"), nullptr);
}

// An op at `ts` launching one kernel `name` of `kernel_us` at `kernel_ts` on stream 7.
void op_kernel(std::vector<std::string>& ev, const std::string& op, const std::string& name, double ts,
               double kernel_ts, double kernel_us, int c) {
  ev.push_back(span("cpu_op", op, 1, 1, ts, 8));
  ev.push_back(span("cuda_runtime", "cudaLaunchKernel", 1, 1, ts + 1, 5, "\"correlation\": " + std::to_string(c)));
  ev.push_back(span("kernel", name, 0, 7, kernel_ts, kernel_us, "\"correlation\": " + std::to_string(c)));
}

// A 10 ms step of 10 rounds: mm 200 us, then add 30 us, gelu 20 us, mul 40 us (`chain` of them,
// or given names), closed by one more mm. Kernels back to back on stream 7.
std::string chain_trace(const std::vector<std::pair<std::string, std::string>>& chain) {
  std::vector<std::string> ev = {span("user_annotation", "ProfilerStep#1", 1, 1, 0, 10'000)};
  const double durations[] = {30, 20, 40, 25};
  int c = 1;
  double host = 10, gpu = 100;
  for (int round = 0; round <= 10; ++round) {
    op_kernel(ev, "aten::mm", kGemmKernel, host, gpu, 200, c++);
    host += 10;
    gpu += 200;
    if (round == 10) break;
    for (std::size_t k = 0; k < chain.size(); ++k) {
      op_kernel(ev, chain[k].first, chain[k].second, host, gpu, durations[k], c++);
      host += 10;
      gpu += durations[k];
    }
  }
  return doc(ev);
}

const std::vector<std::pair<std::string, std::string>> kAddGeluMul = {
    {"aten::add", "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>"},
    {"aten::gelu", "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>"},
    {"aten::mul", "void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>>"}};

TEST(ElementwiseChain, RunsBetweenGemmsAreFoundAndTheirFusionBounded) {
  const TraceModel m = load_trace_text(chain_trace(kAddGeluMul));
  const TraceAnalysis a = analyze_trace(m, {});
  const ElementwiseChainsResult& c = a.elementwise_chains;
  // 10 runs of add 30 + gelu 20 + mul 40 = 90 us; fused (30 + 40) / 2 = 35 us each.
  EXPECT_EQ(c.chains, 10u);
  EXPECT_EQ(c.kernels, 30u);
  EXPECT_EQ(c.kernel_ns, 900'000);
  EXPECT_EQ(c.fused_ns, 350'000);
  EXPECT_FALSE(c.compiled);
  ASSERT_EQ(c.patterns.size(), 1u);
  EXPECT_EQ(c.patterns[0].ops, "aten::add > aten::gelu > aten::mul");
  EXPECT_EQ(c.patterns[0].occurrences, 10u);
  const Diagnosis d = diagnose(a);  // f points into d
  const Finding* f = find(d, "elementwise-chain");
  ASSERT_NE(f, nullptr);
  // Saved 10 x 55 us = 550 us of the 10 ms step.
  EXPECT_NEAR(f->time_share, 0.055, 1e-9);
  EXPECT_NEAR(f->max_speedup, 1 / (1 - 0.055), 1e-9);
  EXPECT_NE(f->detail.find("aten::add > aten::gelu > aten::mul"), std::string::npos) << f->detail;
}

TEST(ElementwiseChain, TwoKernelsAreNoChainAndFusedKernelsBreakOne) {
  // Two kernels between GEMMs: an epilogue's worth, no chain.
  const auto two = std::vector<std::pair<std::string, std::string>>(kAddGeluMul.begin(), kAddGeluMul.begin() + 2);
  const TraceModel m2 = load_trace_text(chain_trace(two));
  EXPECT_EQ(analyze_trace(m2, {}).elementwise_chains.chains, 0u);
  // An Inductor kernel in the middle: add > triton > mul is two runs of one, and the window is
  // compiled.
  auto fused = kAddGeluMul;
  fused[1] = {"triton_poi_fused_gelu_0", "triton_poi_fused_gelu_0"};
  const TraceModel m3 = load_trace_text(chain_trace(fused));
  const ElementwiseChainsResult c = analyze_trace(m3, {}).elementwise_chains;
  EXPECT_EQ(c.chains, 0u);
  EXPECT_TRUE(c.compiled);
}

TEST(ElementwiseChain, KernelsWithoutOpsAreClassifiedByName) {
  // The same run launched from ops without a cost model (a custom module's forward): PyTorch's
  // elementwise kernel names still mark them memory-bound.
  auto unnamed = kAddGeluMul;
  for (auto& [op, kernel] : unnamed) op = "MyBlock.forward";
  const TraceModel m = load_trace_text(chain_trace(unnamed));
  const ElementwiseChainsResult c = analyze_trace(m, {}).elementwise_chains;
  EXPECT_EQ(c.chains, 10u);
  EXPECT_EQ(c.fused_ns, 350'000);
}

// 12 fp32 GEMMs [64, 4096] @ [4096, 4096] on CUDA cores (an sgemm kernel), 60 us each, in a 10 ms
// step. After the precision step (bf16 on Tensor Cores, half the bytes) each has the roofline
// max(2·64·4096·4096 / 989.5e3, (64·4096 + 4096·4096 + 64·4096)·4 / 2 / 3350) ns
//   = max(2,170.3, 10,329.3) ns = 10.329 us: memory-bound once on Tensor Cores.
std::string fp32_gemm_trace() {
  std::vector<std::string> ev = {span("user_annotation", "ProfilerStep#1", 1, 1, 0, 10'000)};
  const std::string args = R"("Input Dims": [[64, 4096], [4096, 4096]], "Input type": ["float", "float"])";
  for (int i = 0; i < 12; ++i) {
    const double t = 100 + i * 500;
    ev.push_back(span("cpu_op", "aten::mm", 1, 1, t, 10, args));
    ev.push_back(span("cuda_runtime", "cudaLaunchKernel", 1, 1, t + 2, 5, "\"correlation\": " + std::to_string(i + 1)));
    ev.push_back(span("kernel", "ampere_sgemm_64x64_nn", 0, 7, t + 10, 60,
                      "\"correlation\": " + std::to_string(i + 1) + ", \"grid\": [256, 1, 1]"));
  }
  return doc(ev);
}

TEST(RooflineGains, NoTensorCoresIsBoundedByThePrecisionStepsRoofline) {
  const TraceModel m = load_trace_text(fp32_gemm_trace());
  const TraceAnalysis a = analyze_trace(m, {});
  const double floor_us = (64.0 * 4096 + 4096.0 * 4096 + 64.0 * 4096) * 4 / 2 / 3350 / 1e3;
  ASSERT_EQ(a.roofline.groups.size(), 1u);
  EXPECT_NEAR(precision_step_roofline_ns(a.roofline, a.roofline.groups[0]), 12 * floor_us * 1e3, 1);
  const Diagnosis d = diagnose(a);
  const Finding* f = find(d, "no-tensor-cores");
  ASSERT_NE(f, nullptr);
  // 12 x (60 - 10.329) us of the 10 ms step. The peak ratio alone said 12 x 60 x (1 - 1/14.8) us.
  const double share = 12 * (60 - floor_us) / 10'000;
  EXPECT_NEAR(f->time_share, share, 1e-9);
  EXPECT_NEAR(f->max_speedup, 1 / (1 - share), 1e-9);
  EXPECT_NEAR(evidence(*f, "roofline_modelled_pct"), 100, 1e-9);
  // hot-operator: aten::mm is all the GPU time; the roofline bounds its gain the same way.
  const Finding* hot = find(d, "hot-operator");
  ASSERT_NE(hot, nullptr);
  EXPECT_NEAR(hot->time_share, share, 1e-9);
  EXPECT_NEAR(evidence(*hot, "above_roofline_ms"), 12 * (60 - floor_us) / 1e3, 1e-9);
}

TEST(RooflineGains, WithoutShapesTheBoundsStayAsBefore) {
  std::string text = fp32_gemm_trace();
  const std::string shapes = R"("Input Dims": [[64, 4096], [4096, 4096]], "Input type": ["float", "float"])";
  for (std::size_t at; (at = text.find(shapes)) != std::string::npos;) text.replace(at, shapes.size(), R"("x": 1)");
  const TraceModel m = load_trace_text(text);
  const Diagnosis d = diagnose(analyze_trace(m, {}));
  const Finding* f = find(d, "no-tensor-cores");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->time_share, 12 * 60 * (1 - 1 / 14.8) / 10'000, 1e-9);  // the H100 peak ratio
  const Finding* hot = find(d, "hot-operator");
  ASSERT_NE(hot, nullptr);
  EXPECT_EQ(hot->max_speedup, 1.0);  // nothing places it: no bound
}

// 150 bf16 adds of 1024 elements in a 2 ms step: each op holds a 10 us launch call and launches a
// 2 us kernel, so the GPU idles while the host launches. The roofline puts the adds' kernels
// (mean 2 us < 5 us) in the latency band: launch-bound names them.
TEST(LatencyBound, LaunchBoundNamesTheLatencyBoundOperators) {
  std::vector<std::string> ev = {span("user_annotation", "ProfilerStep#1", 1, 1, 0, 2'000)};
  const std::string args = R"("Input Dims": [[1024], [1024]], "Input type": ["c10::BFloat16", "c10::BFloat16"])";
  for (int i = 0; i < 150; ++i) {
    const double t = 10 + 13 * i;
    ev.push_back(span("cpu_op", "aten::add", 1, 1, t, 12, args));
    ev.push_back(
        span("cuda_runtime", "cudaLaunchKernel", 1, 1, t + 1, 10, "\"correlation\": " + std::to_string(i + 1)));
    ev.push_back(span("kernel", "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor>", 0, 7,
                      t + 12, 2, "\"correlation\": " + std::to_string(i + 1) + ", \"grid\": [2, 1, 1]"));
  }
  const TraceModel m = load_trace_text(doc(ev));
  const TraceAnalysis a = analyze_trace(m, {});
  ASSERT_EQ(a.roofline.groups.size(), 1u);
  EXPECT_EQ(a.roofline.groups[0].bound, Bound::kLatency);
  const Diagnosis d = diagnose(a);
  const Finding* f = find(d, "launch-bound");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(evidence(*f, "latency_bound_gpu_pct"), 100, 1e-9);
  EXPECT_NE(f->detail.find("aten::add (150 calls, 2.0 us a kernel)"), std::string::npos) << f->detail;
  // The gain from launch time: the step re-timed without the launch calls' host time.
  EXPECT_GT(f->predicted_speedup, 1.0);
}

// Qwen1.5-0.5B inference on an H100 in eager bf16: each of its 24 decoder layers has two RMSNorms
// written op by op in Python (Hugging Face's Qwen2RMSNorm: to(float32), pow, mean, add eps,
// rsqrt, mul, to(bf16), mul weight), each after a residual add - about 48 runs of 9 kernels between
// GEMMs per forward.
TEST(CorpusQwen, EagerRmsNormChainsAreTheVerdict) {
  FERRET_REQUIRE_CORPUS(path, "h100-qwen0.5b-inference-torch2.json.gz");
  const TraceModel m = load_trace(path);
  const TraceAnalysis a = analyze_trace(m, {});
  const ElementwiseChainsResult& c = a.elementwise_chains;
  EXPECT_GE(c.chains, 40u);
  EXPECT_LE(c.chains, 60u);
  ASSERT_FALSE(c.patterns.empty());
  EXPECT_NE(c.patterns[0].ops.find("aten::pow > aten::mean > aten::add > aten::rsqrt"), std::string::npos)
      << c.patterns[0].ops;
  const Diagnosis d = diagnose(a);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings.front().id, "elementwise-chain");
  bool rms_fix = false;
  for (const std::string& fix : fix_texts(d.findings.front()))
    rms_fix = rms_fix || fix.find("rms_norm") != std::string::npos;
  EXPECT_TRUE(rms_fix);
}

}  // namespace rules_operator_test
}  // namespace
}  // namespace ferret
