#include "analysis/operator/roofline.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>

#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace roofline_test {

using test::span;

constexpr const char* kH100 =
    R"({"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85018279936, "computeMajor": 9,
        "computeMinor": 0, "numSms": 132})";

std::string doc(const std::vector<std::string>& events, const char* device = kH100) {
  std::string out = R"({"deviceProperties": [)";
  out += device != nullptr ? device : "";
  out += R"(], "traceEvents": [)";
  for (std::size_t i = 0; i < events.size(); ++i) out += (i ? "," : "") + events[i];
  return out + "]}";
}

std::string launch(double ts, int c) {
  return span("cuda_runtime", "cudaLaunchKernel", 1, 1, ts, 2, "\"correlation\": " + std::to_string(c));
}
std::string kernel(const std::string& name, double ts, double dur, int c, int grid = 264) {
  return span("kernel", name, 0, 7, ts, dur,
              "\"correlation\": " + std::to_string(c) + ", \"grid\": [" + std::to_string(grid) + ", 1, 1]");
}

constexpr const char* kAddmmArgs =
    R"("Input Dims": [[768], [788, 768], [768, 768], [], []],
       "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"])";
constexpr const char* kMmArgs =
    R"("Input Dims": [[8944, 1024], [1024, 2816]], "Input type": ["c10::BFloat16", "c10::BFloat16"])";
constexpr const char* kGemmKernel = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_kernel";

// Thread 1:
//   aten::linear [0,100) > aten::addmm [10,90) > launch c1 -> GEMM kernel 10 us   (twice: ts 0 and 200)
//   aten::mm [400,500) > launch c3 -> memset 1 us (c3) + GEMM kernel 83 us (c4 in the same op)
//   aten::gelu [600,620) > launch c5 -> 3 us elementwise kernel
//   my::op [700,720) > launch c6 -> 20 us kernel (no cost model)
//   record_param_comms [800,820) > launch c7 -> 500 us NCCL kernel (communication: not on the roofline)
std::vector<std::string> events() {
  return {
      span("cpu_op", "aten::linear", 1, 1, 0, 100, ""),
      span("cpu_op", "aten::addmm", 1, 1, 10, 80, kAddmmArgs),
      launch(20, 1),
      kernel(kGemmKernel, 30, 10, 1),
      span("cpu_op", "aten::linear", 1, 1, 200, 100, ""),
      span("cpu_op", "aten::addmm", 1, 1, 210, 80, kAddmmArgs),
      launch(220, 2),
      kernel(kGemmKernel, 230, 10, 2),
      span("cpu_op", "aten::mm", 1, 1, 400, 100, kMmArgs),
      span("cuda_runtime", "cudaMemsetAsync", 1, 1, 405, 2, "\"correlation\": 3"),
      span("gpu_memset", "Memset (Device)", 0, 7, 410, 1, "\"correlation\": 3"),
      launch(420, 4),
      kernel(kGemmKernel, 430, 83, 4),
      span("cpu_op", "aten::gelu", 1, 1, 600, 20,
           R"("Input Dims": [[4, 197, 3072], []], "Input type": ["c10::BFloat16", ""])"),
      launch(605, 5),
      kernel("vectorized_elementwise_kernel_gelu", 610, 3, 5),
      span("cpu_op", "my::op", 1, 1, 700, 20, R"("Input Dims": [[4]], "Input type": ["float"])"),
      launch(705, 6),
      kernel("my_kernel", 710, 20, 6),
      span("cpu_op", "record_param_comms", 1, 1, 800, 20, ""),
      launch(805, 7),
      kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 810, 500, 7),
  };
}

const RooflineGroup* find(const RooflineResult& r, const std::string& op) {
  for (const RooflineGroup& g : r.groups)
    if (g.op == op) return &g;
  return nullptr;
}

TEST(Roofline, GroupsAttributeKernelsOnceAndPlaceThemOnTheH100Roofline) {
  const TraceModel m = load_trace_text(doc(events()));
  const RooflineResult r = analyze_roofline(m, make_analysis_context(m, {}));
  EXPECT_EQ(r.device, 0);
  EXPECT_TRUE(r.device_known);
  EXPECT_EQ(r.peaks.model, "H100 SXM5");
  // 10 + 10 + 1 + 83 + 3 + 20 us of GPU work, each counted once.
  EXPECT_EQ(r.kernel_ns, 127'000);
  EXPECT_EQ(r.modelled_ns, 107'000);
  EXPECT_EQ(find(r, "aten::linear"), nullptr);  // the addmm inside it has the cost model
  EXPECT_EQ(find(r, "record_param_comms"), nullptr);

  // addmm: 2 calls, 20 us. Per call 930,167,808 FLOPs and 3,601,920 B (op_cost_test).
  // 2·930,167,808 / 20,000 ns = 93.0168 TFLOP/s; 2·3,601,920 / 20,000 ns = 0.360192 TB/s.
  // Intensity 258.2 FLOP/B < ridge 989.5 / 3.35 = 295.4 -> memory-bound at 0.360192 / 3.35 = 10.75%.
  const RooflineGroup* addmm = find(r, "aten::addmm");
  ASSERT_NE(addmm, nullptr);
  EXPECT_EQ(addmm->calls, 2u);
  EXPECT_EQ(addmm->kernel_ns, 20'000);
  EXPECT_EQ(addmm->dtype, Dtype::kBf16);
  EXPECT_TRUE(addmm->matrix_units);
  EXPECT_NEAR(addmm->tflops_per_s, 93.0168, 1e-3);
  EXPECT_NEAR(addmm->tb_per_s, 0.360192, 1e-6);
  EXPECT_EQ(addmm->bound, Bound::kMemory);
  EXPECT_NEAR(addmm->peak_pct, 100 * 0.360192 / 3.35, 1e-6);
  EXPECT_NE(addmm->peak_source.find("HBM"), std::string::npos);

  // mm: memset 1 us + kernel 83 us = 84 us (as TraceLens counts the op's memsets).
  // 51,581,550,592 / 84,000 ns = 614.066 TFLOP/s; intensity 692.8 >= 295.4 -> compute-bound at
  // 614.066 / 989.5 = 62.06% of the bf16 matrix peak.
  const RooflineGroup* mm = find(r, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->kernel_ns, 84'000);
  EXPECT_EQ(mm->kernels, 2u);
  EXPECT_NEAR(mm->tflops_per_s, 51'581'550'592.0 / 84'000 / 1e3, 1e-6);
  EXPECT_EQ(mm->bound, Bound::kCompute);
  EXPECT_NEAR(mm->peak_pct, 100 * (51'581'550'592.0 / 84'000 / 1e3) / 989.5, 1e-6);
  EXPECT_NE(mm->peak_source.find("bf16 matrix"), std::string::npos);

  // gelu: one 3 us kernel < 5 us -> latency. Roofline at its intensity: 8 FLOP/elem over 4 B/elem
  // = 2 FLOP/B -> min(67 fp32 vector (opmath), 2 · 3.35 = 6.7) = 6.7 TFLOP/s attainable.
  // Achieved 19,365,888 / 3,000 ns = 6.455 TFLOP/s -> 96.35%.
  const RooflineGroup* gelu = find(r, "aten::gelu");
  ASSERT_NE(gelu, nullptr);
  EXPECT_EQ(gelu->bound, Bound::kLatency);
  EXPECT_FALSE(gelu->matrix_units);
  EXPECT_NEAR(gelu->peak_pct, 100 * (19'365'888.0 / 3'000 / 1e3) / 6.7, 1e-6);

  // An op without a cost model: its time is shown, its bound unknown.
  const RooflineGroup* custom = find(r, "my::op");
  ASSERT_NE(custom, nullptr);
  EXPECT_EQ(custom->bound, Bound::kUnknown);
  EXPECT_LT(custom->flops_per_call, 0);
  EXPECT_LT(custom->peak_pct, 0);

  // Sorted by kernel time.
  ASSERT_EQ(r.groups.size(), 4u);
  EXPECT_EQ(r.groups[0].op, "aten::mm");
  EXPECT_EQ(r.groups[1].op, "aten::addmm");
}

TEST(Roofline, SmallGridIsLatencyBound) {
  // The mm above with a 64-block grid on 132 SMs (under half): latency, whatever its length; with
  // 120 blocks (a persistent kernel's one block per SM, less a few) it is compute-bound as before.
  std::vector<std::string> e = {span("cpu_op", "aten::mm", 1, 1, 400, 100, kMmArgs), launch(420, 4),
                                kernel(kGemmKernel, 430, 83, 4, 64)};
  const TraceModel m = load_trace_text(doc(e));
  const RooflineResult r = analyze_roofline(m, make_analysis_context(m, {}));
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].bound, Bound::kLatency);
  EXPECT_EQ(r.groups[0].max_grid_blocks, 64);
  e[2] = kernel(kGemmKernel, 430, 83, 4, 120);
  const TraceModel persistent = load_trace_text(doc(e));
  EXPECT_EQ(analyze_roofline(persistent, make_analysis_context(persistent, {})).groups[0].bound, Bound::kCompute);
}

TEST(Roofline, Fp32GemmOnTensorCoresUsesTheTf32Ceiling) {
  // mm [256,256] x [256,256] fp32 on an sm80 tensorop kernel, 10 us.
  // 2·256³ = 33,554,432 FLOPs; 3·65,536·4 = 786,432 B; intensity 42.7 < ridge 494.5 / 3.35 = 147.6 -> memory.
  std::vector<std::string> e = {span("cpu_op", "aten::mm", 1, 1, 0, 50,
                                     R"("Input Dims": [[256, 256], [256, 256]], "Input type": ["float", "float"])"),
                                launch(10, 1),
                                kernel("cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align4", 20, 10, 1)};
  const TraceModel m = load_trace_text(doc(e));
  const RooflineResult r = analyze_roofline(m, make_analysis_context(m, {}));
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_TRUE(r.groups[0].matrix_units);
  EXPECT_EQ(r.groups[0].bound, Bound::kMemory);
  // On SIMT (sgemm) kernels the fp32 vector ceiling: ridge 67 / 3.35 = 20 < 42.7 -> compute-bound,
  // 33,554,432 / 10,000 ns = 3.355 TFLOP/s = 5.01% of 67.
  e[2] = kernel("volta_sgemm_128x64_nn", 20, 10, 1);
  const TraceModel simt = load_trace_text(doc(e));
  const RooflineResult s = analyze_roofline(simt, make_analysis_context(simt, {}));
  EXPECT_FALSE(s.groups[0].matrix_units);
  EXPECT_EQ(s.groups[0].bound, Bound::kCompute);
  EXPECT_NEAR(s.groups[0].peak_pct, 100 * 3.3554432 / 67, 1e-6);
  EXPECT_NE(s.groups[0].peak_source.find("fp32 vector"), std::string::npos);
}

TEST(Roofline, UnknownDeviceKeepsTheCostsAndSaysUnknown) {
  const TraceModel m = load_trace_text(doc(events(), R"({"id": 0, "name": "Mystery GPU", "computeMajor": 1})"));
  const RooflineResult r = analyze_roofline(m, make_analysis_context(m, {}));
  EXPECT_FALSE(r.device_known);
  const RooflineGroup* mm = find(r, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->bound, Bound::kUnknown);
  EXPECT_DOUBLE_EQ(mm->flops_per_call, 51'581'550'592);
  EXPECT_GT(mm->tflops_per_s, 0);
  EXPECT_NE(mm->note.find("unknown"), std::string::npos);
  // With measured ceilings from --peaks the same trace gets its bounds.
  AnalysisOptions o;
  o.peaks = parse_peaks_json(R"({"hbm_tb_per_s": 3.0, "matrix_tflop_per_s": {"bf16": 800}})", "mine.json");
  const RooflineResult p = analyze_roofline(m, make_analysis_context(m, o));
  const RooflineGroup* mm2 = find(p, "aten::mm");
  EXPECT_EQ(mm2->bound, Bound::kCompute);
  EXPECT_NEAR(mm2->peak_pct, 100 * (51'581'550'592.0 / 84'000 / 1e3) / 800, 1e-6);
  EXPECT_NE(mm2->peak_source.find("mine.json"), std::string::npos);
}

// Kernels that name narrow formats where the op records none (a custom MoE op, packed weights).
constexpr const char* kB200 =
    R"({"id": 0, "name": "NVIDIA B200", "totalGlobalMem": 191000000000, "computeMajor": 10,
        "computeMinor": 0, "numSms": 148})";
constexpr const char* kMI300X =
    R"({"id": 0, "name": "AMD Instinct MI300X", "totalGlobalMem": 206141652992, "computeMajor": 9,
        "computeMinor": 4, "numSms": 304})";
constexpr const char* kMI355X =
    R"({"id": 0, "name": "AMD Instinct MI355X", "totalGlobalMem": 309237645312, "computeMajor": 9,
        "computeMinor": 5, "numSms": 256})";

RooflineGroup one_group(const char* device, const std::string& op_args, const std::string& kernel_name) {
  const TraceModel m = load_trace_text(
      doc({span("cpu_op", "my::moe", 1, 1, 0, 50, op_args), launch(10, 1), kernel(kernel_name, 20, 30, 1)}, device));
  const RooflineResult r = analyze_roofline(m, make_analysis_context(m, {}));
  EXPECT_EQ(r.groups.size(), 1u);
  return r.groups.empty() ? RooflineGroup{} : r.groups[0];
}

TEST(Roofline, NarrowFormatsFromKernelNames) {
  constexpr const char* kBf16Args = R"("Input Dims": [[16, 2880]], "Input type": ["c10::BFloat16"])";
  constexpr const char* kBytes = R"("Input Dims": [[16, 1440]], "Input type": ["unsigned char"])";
  // mxfp4 weights against mxfp8 activations (TensorRT-LLM's batched GEMM): the fp8 rate.
  const RooflineGroup mixed =
      one_group(kB200, kBytes, "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_sm100f");
  EXPECT_EQ(mixed.dtype, Dtype::kFp8);
  EXPECT_TRUE(mixed.matrix_units);
  EXPECT_NE(mixed.note.find("fp4 and fp8"), std::string::npos) << mixed.note;
  // fp4 alone on a device with fp4 units: fp4.
  EXPECT_EQ(one_group(kB200, kBytes, "bmm_Bfloat16_E2m1E2m1_Fp32_t128x8x512_sm100a").dtype, Dtype::kFp4);
  EXPECT_EQ(one_group(kMI355X, kBytes, "_matmul_ogs_NNT_mxfp4xmxfp4_128x128x256").dtype, Dtype::kFp4);
  // The same on the MI300X, which has no fp4 Matrix Cores: the weights are widened to the op's bf16.
  const RooflineGroup widened = one_group(kMI300X, kBf16Args, "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x256x128x1");
  EXPECT_EQ(widened.dtype, Dtype::kBf16);
  EXPECT_NE(widened.note.find("MI300X has no matrix units"), std::string::npos) << widened.note;
  EXPECT_NE(widened.note.find("widened to bf16"), std::string::npos) << widened.note;
  // Not a matrix kernel (fp8 quantization is element-wise), and fp64 is not fp6: the op's dtype
  // stays what its cost model says (none for a custom op).
  EXPECT_EQ(one_group(kB200, kBf16Args, "scaled_fp8_quant_kernel<c10::Float8_e4m3fn>").dtype, Dtype::kUnknown);
  EXPECT_EQ(one_group(kB200, kBf16Args, "cutlass_80_tensorop_d884gemm_fp64_128x64").dtype, Dtype::kUnknown);
}

TEST(Roofline, PackedFp4ScaledMmCountsBothValuesOfEachByte) {
  // torch._scaled_mm on float4_e2m1fn_x2 operands [4096, 2048] x [2048, 8192] (K = 4,096 values):
  // 2 * 4096 * 8192 * 4096 = 274,877,906,944 FLOPs in 100 us = 2,748.8 TFLOP/s, 30.5% of the
  // B200's 9,000 dense fp4. Bytes: 8 MiB + 16 MiB + 4096 * 8192 * 2 (bf16 out) = 92,274,688 B;
  // intensity 2,979 FLOP/B > ridge 9,000 / 8 = 1,125 -> compute-bound.
  const std::string args =
      R"("Input Dims": [[4096, 2048], [2048, 8192], [], [], [], [], []],
         "Input type": ["c10::Float4_e2m1fn_x2", "c10::Float4_e2m1fn_x2", "c10::Float8_e8m0fnu",
                        "c10::Float8_e8m0fnu", "", "", "ScalarType"])";
  const TraceModel m = load_trace_text(doc({span("cpu_op", "aten::_scaled_mm", 1, 1, 0, 150, args), launch(10, 1),
                                            kernel("nvjet_sm100_ootst_128x256_bz_NVFP4_TNT", 20, 100, 1)},
                                           kB200));
  const RooflineResult r = analyze_roofline(m, make_analysis_context(m, {}));
  ASSERT_EQ(r.groups.size(), 1u);
  const RooflineGroup& g = r.groups[0];
  EXPECT_EQ(g.dtype, Dtype::kFp4);
  EXPECT_DOUBLE_EQ(g.flops_per_call, 2.0 * 4096 * 8192 * 4096);
  EXPECT_DOUBLE_EQ(g.gemm_k, 4096);
  EXPECT_EQ(g.bound, Bound::kCompute);
  EXPECT_NEAR(g.peak_pct, 100 * (2.0 * 4096 * 8192 * 4096 / 100'000 / 1e3) / 9000, 1e-6);
  EXPECT_NE(g.peak_source.find("fp4 matrix"), std::string::npos) << g.peak_source;
}

TEST(Roofline, NoGpuWorkNoGroups) {
  const TraceModel m = load_trace_text(doc({span("cpu_op", "aten::mm", 1, 1, 0, 10, kMmArgs)}));
  const RooflineResult r = analyze_roofline(m, make_analysis_context(m, {}));
  EXPECT_EQ(r.device, -1);
  EXPECT_TRUE(r.groups.empty());
}

// ---- TraceLens's GEMM sheet for the two H100 traces: same GFLOPs per call, TFLOP/s within 5% ----

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::string no_spaces(std::string s) {
  std::erase(s, ' ');
  return s;
}

void check_against_tracelens(const std::string& trace_path, const std::string& csv_path) {
  const std::string csv = test::read_file(csv_path);
  ASSERT_FALSE(csv.empty()) << csv_path;
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);
  const std::vector<std::string> header = csv_fields(line);
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const char* k : {"name", "GFLOPS_first", "TFLOPS/s_mean", "Input Dims_first"}) ASSERT_TRUE(col.count(k)) << k;

  const TraceModel m = load_trace(trace_path);
  const RooflineResult r = analyze_roofline(m, make_analysis_context(m, {}));
  EXPECT_EQ(r.peaks.model, "H100 SXM5");
  int rows = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> f = csv_fields(line);
    ASSERT_GT(f.size(), col["Input Dims_first"]);
    const std::string& op = f[col["name"]];
    const std::string dims = no_spaces(f[col["Input Dims_first"]]);
    const double gflops = std::stod(f[col["GFLOPS_first"]]);
    const double tflops = std::stod(f[col["TFLOPS/s_mean"]]);
    const RooflineGroup* best = nullptr;
    for (const RooflineGroup& g : r.groups)
      if (g.op == op && no_spaces(g.input_dims) == dims && (best == nullptr || g.calls > best->calls)) best = &g;
    ASSERT_NE(best, nullptr) << op << " " << dims;
    ++rows;
    EXPECT_NEAR(best->flops_per_call / 1e9, gflops, gflops * 1e-9) << op << " " << dims;
    EXPECT_NEAR(best->tflops_per_s, tflops, 0.05 * tflops) << op << " " << dims;
  }
  EXPECT_GT(rows, 0);
}

TEST(CorpusRoofline, MatchesTraceLensGemmSheetViT) {
  FERRET_REQUIRE_CORPUS(trace, "h100-image-classifier-inference.json.gz");
  FERRET_REQUIRE_CORPUS(csv, "reference-tracelens/h100-image-classifier-inference/GEMM.csv");
  check_against_tracelens(trace, csv);
}

TEST(CorpusRoofline, MatchesTraceLensGemmSheetQwen) {
  FERRET_REQUIRE_CORPUS(trace, "h100-qwen0.5b-inference-torch2.json.gz");
  FERRET_REQUIRE_CORPUS(csv, "reference-tracelens/h100-qwen0.5b-inference-torch2/GEMM.csv");
  check_against_tracelens(trace, csv);
}

}  // namespace roofline_test
}  // namespace
}  // namespace ferret
