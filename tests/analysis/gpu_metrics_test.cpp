// GPU metrics on hand-made traces (expected values worked out by hand in the comment above each
// test; trace times are microseconds) and on real traces against the TensorBoard plugin's golden
// output (../shared/corpus/MANIFEST.md). Also the kernel-name and operator classifiers.
#include "analysis/operator/gpu_metrics.h"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "analysis/operator/tensor_cores.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace gpu_metrics_test {

std::string span(const char* cat, const std::string& name, double ts, double dur, int pid = 1, int tid = 1,
                 const std::string& args = "{}") {
  return fmt::format(
      R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {}}})", cat, name,
      pid, tid, ts, dur, args);
}
std::string step(int n, double ts, double dur) {
  return span("user_annotation", fmt::format("ProfilerStep#{}", n), ts, dur);
}
std::string launch(double ts, double dur, int c) {
  return span("cuda_runtime", "cudaLaunchKernel", ts, dur, 1, 1, fmt::format(R"({{"correlation": {}}})", c));
}
std::string kernel(const std::string& name, double ts, double dur, const std::string& args = "{}", int device = 0,
                   int stream = 7) {
  return span("kernel", name, ts, dur, device, stream, args);
}
std::string device_properties(int num_sms, int major, const char* name) {
  return fmt::format(
      R"("deviceProperties": [{{"id": 0, "name": "{}", "computeMajor": {}, "computeMinor": 0, "numSms": {}}}])", name,
      major, num_sms);
}

TraceModel load(const std::vector<std::string>& events, const std::string& header = "") {
  std::string text = "{";
  if (!header.empty()) text += header + ",";
  text += R"("traceEvents": [)";
  for (std::size_t i = 0; i < events.size(); ++i) text += (i ? ",\n" : "\n") + events[i];
  return load_trace_text(text + "]}");
}

GpuMetricsResult metrics(const TraceModel& m, AnalysisOptions options = {}) {
  return analyze_gpu_metrics(m, make_analysis_context(m, options));
}

// Device with 10 SMs; step [0,100).
//   A [0,40)  blocks per SM 0.5, occupancy 20%
//   B [20,60) blocks per SM 2.0, occupancy 60% (stream 8, overlapping A)
//   C [80,90) grid 3 blocks, no "blocks per SM": derived 3 / 10 SMs = 0.3; no occupancy
// Utilization: union [0,60) + [80,90) = 70 of 100 -> 70%.
// SM efficiency: [0,20) 0.5 -> 10; [20,40) min(1, 2.5) -> 20; [40,60) min(1, 2.0) -> 20;
//   [80,90) 0.3 -> 3. Total 53 of 100 -> 53%.
// Occupancy: (20 x 40 + 60 x 40) / 80 = 40%.
TEST(GpuMetrics, SmEfficiencyIsCappedAtOneWhileKernelsOverlap) {
  const TraceModel m = load(
      {step(1, 0, 100),
       kernel("kernel_a", 0, 40,
              R"({"grid": [5, 1, 1], "block": [128, 1, 1], "blocks per SM": 0.5, "est. achieved occupancy %": 20})"),
       kernel("kernel_b", 20, 40,
              R"({"grid": [20, 1, 1], "block": [128, 1, 1], "blocks per SM": 2.0, "est. achieved occupancy %": 60})", 0,
              8),
       kernel("kernel_c", 80, 10, R"({"grid": [3, 1, 1], "block": [64, 1, 1]})")},
      device_properties(10, 8, "Test GPU"));
  const GpuMetricsResult r = metrics(m);
  ASSERT_EQ(r.devices.size(), 1u);
  const DeviceMetrics& d = r.devices[0];
  EXPECT_EQ(d.device, 0);
  EXPECT_EQ(d.name, "Test GPU");
  EXPECT_EQ(d.num_sms, 10);
  EXPECT_EQ(d.kernels, 3u);
  EXPECT_EQ(d.window_ns, 100000);
  EXPECT_EQ(d.kernel_busy_ns, 70000);
  EXPECT_EQ(d.kernel_ns, 90000);  // 40 + 40 + 10
  EXPECT_NEAR(d.utilization_pct, 70.0, 1e-9);
  EXPECT_NEAR(d.sm_efficiency_pct, 53.0, 1e-4);
  EXPECT_NEAR(d.achieved_occupancy_pct, 40.0, 1e-9);
}

TEST(GpuMetrics, KernelsOutsideTheStepsAreClipped) {
  // Step [0,100); a kernel [90,130) with 1 block per SM counts only its [90,100) part:
  // utilization 10%, SM efficiency 10%, kernel time 10 us.
  const TraceModel m =
      load({step(1, 0, 100), kernel("k", 90, 40, R"({"blocks per SM": 1.0, "est. achieved occupancy %": 50})")});
  const DeviceMetrics d = metrics(m).devices.at(0);  // a copy: the result is a temporary
  EXPECT_EQ(d.kernel_ns, 10000);
  EXPECT_NEAR(d.utilization_pct, 10.0, 1e-9);
  EXPECT_NEAR(d.sm_efficiency_pct, 10.0, 1e-4);
  EXPECT_NEAR(d.achieved_occupancy_pct, 50.0, 1e-9);
}

TEST(GpuMetrics, UnknownLaunchSizeLeavesSmEfficiencyUnknown) {
  // No blocks per SM, no grid, no SM count: nothing to estimate from.
  const TraceModel m = load({step(1, 0, 100), kernel("k", 0, 50)});
  const DeviceMetrics d = metrics(m).devices.at(0);  // a copy: the result is a temporary
  EXPECT_NEAR(d.utilization_pct, 50.0, 1e-9);
  EXPECT_EQ(d.sm_efficiency_pct, -1);
  EXPECT_EQ(d.achieved_occupancy_pct, -1);
}

// V100-like device, step [0,200):
//   aten::conv2d [0,50) > aten::cudnn_convolution [5,45) launches [10,12) ->
//     "volta_scudnn_128x64_relu_interior_nn_v1" [20,60)            40 us, eligible, no TC, conv
//   "autograd::engine::evaluate_function: MmBackward0" [50,100) > aten::copy_ [52,58) launches
//     [55,57) -> "volta_h884gemm_64x64_ldg8_nn" [60,80)             20 us, eligible by its parent, TC
//   aten::add [100,110) launches [101,102) -> "elementwise_add" [80,100)  20 us, not eligible
//   "ncclKernel_AllReduce_RING_LL_Sum_float" [100,120), no launch   20 us, communication
// Kernel time 100: Tensor Cores 20 (20%); eligible 40 + 20 = 60 (60%); eligible without TC 40
// (40%). Compute (non-NCCL) kernel time 80, GEMM/conv 40 + 20 = 60 -> 75%. Utilization:
// union [20,120) = 100 of 200 -> 50%.
TEST(GpuMetrics, TensorCoreSharesFollowKernelNamesAndLaunchingOps) {
  const TraceModel m = load(
      {step(1, 0, 200), span("cpu_op", "aten::conv2d", 0, 50), span("cpu_op", "aten::cudnn_convolution", 5, 40),
       launch(10, 2, 1), kernel("volta_scudnn_128x64_relu_interior_nn_v1", 20, 40, R"({"correlation": 1})"),
       span("cpu_op", "autograd::engine::evaluate_function: MmBackward0", 50, 50), span("cpu_op", "aten::copy_", 52, 6),
       launch(55, 2, 2), kernel("volta_h884gemm_64x64_ldg8_nn", 60, 20, R"({"correlation": 2})"),
       span("cpu_op", "aten::add", 100, 10), launch(101, 1, 3),
       kernel("elementwise_add", 80, 20, R"({"correlation": 3})"),
       kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 100, 20, "{}", 0, 20)},
      device_properties(80, 7, "Tesla V100-SXM2-32GB"));
  const DeviceMetrics d = metrics(m).devices.at(0);  // a copy: the result is a temporary
  EXPECT_EQ(d.compute_major, 7);
  EXPECT_EQ(d.kernel_ns, 100000);
  EXPECT_EQ(d.compute_kernel_ns, 80000);
  EXPECT_EQ(d.tensor_core_ns, 20000);
  EXPECT_NEAR(d.tensor_core_pct, 20.0, 1e-9);
  EXPECT_EQ(d.tc_eligible_ns, 60000);
  EXPECT_NEAR(d.tc_eligible_pct, 60.0, 1e-9);
  EXPECT_EQ(d.tc_eligible_without_tc_ns, 40000);
  EXPECT_NEAR(d.tc_eligible_without_tc_pct, 40.0, 1e-9);
  EXPECT_EQ(d.matmul_conv_ns, 60000);
  EXPECT_NEAR(d.matmul_conv_pct, 75.0, 1e-9);
  EXPECT_NEAR(d.utilization_pct, 50.0, 1e-9);
}

TEST(GpuMetrics, OneRowPerDeviceAndTheDeviceOption) {
  // Step [0,100); device 0 runs [0,30), device 1 runs [0,60).
  const TraceModel m = load({step(1, 0, 100), kernel("a", 0, 30, "{}", 0), kernel("b", 0, 60, "{}", 1)});
  const GpuMetricsResult all = metrics(m);
  ASSERT_EQ(all.devices.size(), 2u);
  EXPECT_EQ(all.devices[0].device, 0);
  EXPECT_NEAR(all.devices[0].utilization_pct, 30.0, 1e-9);
  EXPECT_EQ(all.devices[1].device, 1);
  EXPECT_NEAR(all.devices[1].utilization_pct, 60.0, 1e-9);
  AnalysisOptions only_1;
  only_1.device = 1;
  const GpuMetricsResult one = metrics(m, only_1);
  ASSERT_EQ(one.devices.size(), 1u);
  EXPECT_EQ(one.devices[0].device, 1);
}

TEST(GpuMetrics, NoKernelsNoDevices) {
  const TraceModel m = load({step(1, 0, 100), span("cpu_op", "aten::add", 0, 10)});
  EXPECT_TRUE(metrics(m).devices.empty());
}

TEST(TensorCoreNames, KernelsThatUseTensorCores) {
  // Real names from the corpus traces and the vendor datasheets, Volta to Blackwell and AMD.
  for (const char* name : {
           "volta_h884gemm_64x64_ldg8_nn",
           "volta_fp16_s884cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc2nchw_tn_v1",
           "turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn",
           "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_tn",
           "void "
           "cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>(cutlass_80_tensorop_s1688gemm_256x64_"
           "16x4_nn_align4::Params)",
           "sm80_xmma_dgrad_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_stage4_warpsize2x2x1",
           "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_"
           "kernel__5x_cublas",
           "void "
           "cutlass::device_kernel<cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnn_align8_"
           "warpspecialized_cooperative_epi_tma>",
           "nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT",
           "nvjet_sm100_tst_128x256_64x4_2x1_2cta_h_bz_TNN",
           "fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext",
           "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
           "cutlass::bfloat16_t>>",
           "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_transOut_"
           "schedP2x1x2",
           "Cijk_Ailk_Bljk_BBS_BH_MT64x64x64_MI16x16x16x1_SN_1LDSB0_APM1_ABV0_ACED0",
           "_ZN2ck16tensor_operation6device37kernel_batched_gemm_xdlops_bwd_weightINS_47GridwiseGemm",
           "igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2",
       })
    EXPECT_TRUE(is_tensor_core_kernel(name)) << name;
}

TEST(TensorCoreNames, KernelsThatDoNot) {
  for (const char* name : {
           "volta_sgemm_64x64_nt",
           "ampere_sgemm_128x128_tn",
           "volta_scudnn_128x64_relu_interior_nn_v1",
           "void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, true>(int, int, int)",
           "cutlass_80_simt_sgemm_128x128_8x4_nn_align1",
           "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_"
           "kernel__5x_cublas",
           "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false>",
           "SubTensorOpWithCastTensor1d",
           "SubTensorOpWithScalar1d",
           "void vllm::scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*)",
           "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>",
           "Cijk_Ailk_Bljk_SB_MT64x64x8_SN_1LDSB0_APM1",
           "ncclKernel_AllReduce_RING_LL_Sum_float",
       })
    EXPECT_FALSE(is_tensor_core_kernel(name)) << name;
}

TEST(TensorCoreNames, MatmulAndConvolutionKernels) {
  EXPECT_TRUE(is_matmul_or_conv_kernel("volta_sgemm_64x64_nt"));
  EXPECT_TRUE(is_matmul_or_conv_kernel("volta_scudnn_128x64_relu_interior_nn_v1"));
  EXPECT_TRUE(is_matmul_or_conv_kernel("void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>"));
  EXPECT_TRUE(is_matmul_or_conv_kernel("Cijk_Ailk_Bljk_SB_MT64x64x8_SN_1LDSB0_APM1"));
  EXPECT_TRUE(is_matmul_or_conv_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"));
  EXPECT_FALSE(
      is_matmul_or_conv_kernel("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>"));
  EXPECT_FALSE(is_matmul_or_conv_kernel("void at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)"));
  EXPECT_FALSE(is_matmul_or_conv_kernel("convert_element_type_kernel"));
}

TEST(TensorCoreNames, NarrowFormatsAMatrixKernelSpells) {
  const KernelFormats trtllm = matrix_kernel_formats("bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_sm100f");
  EXPECT_TRUE(trtllm.fp4 && trtllm.fp8 && !trtllm.fp6 && !trtllm.half);
  const KernelFormats triton = matrix_kernel_formats("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x256x128x1");
  EXPECT_TRUE(triton.fp4 && triton.half && !triton.fp8);
  EXPECT_TRUE(matrix_kernel_formats("fused_moe_kernel_mxfp6").fp6);  // a MoE kernel is a grouped GEMM
  EXPECT_TRUE(matrix_kernel_formats("sm90_xmma_gemm_e4m3f32_e4m3f32_f32_tn_n_tilesize128x128x64").fp8);
  EXPECT_TRUE(matrix_kernel_formats("nvjet_sm100_ootst_128x256_bz_NVFP4_TNT").fp4);
  // fp64 is not fp6; an element-wise FP8 quantization kernel is not a matrix product.
  EXPECT_FALSE(matrix_kernel_formats("cutlass_80_tensorop_d884gemm_fp64_128x64").narrow());
  EXPECT_FALSE(matrix_kernel_formats("scaled_fp8_quant_kernel<c10::Float8_e4m3fn>").narrow());
  EXPECT_FALSE(matrix_kernel_formats("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64").narrow());
}

TEST(TensorCoreNames, EligibleOperators) {
  for (const char* op :
       {"aten::conv2d", "aten::convolution", "aten::cudnn_convolution", "aten::convolution_backward",
        "aten::cudnn_convolution_backward_weight", "CudnnConvolutionBackward", "ConvolutionBackward0", "aten::mm",
        "aten::bmm", "aten::addmm", "aten::linear", "aten::matmul", "aten::baddbmm", "MmBackward0", "AddmmBackward0",
        "autograd::engine::evaluate_function: BmmBackward0", "aten::_scaled_dot_product_flash_attention",
        "aten::conv_transpose2d", "aten::miopen_convolution"})
    EXPECT_TRUE(is_tensor_core_eligible_op(op)) << op;
  for (const char* op : {"aten::add", "aten::copy_", "aten::convert_element_type", "aten::batch_norm",
                         "aten::cudnn_batch_norm", "aten::relu_", "ProfilerStep#5", "aten::to", "UnsafeViewBackward0"})
    EXPECT_FALSE(is_tensor_core_eligible_op(op)) << op;
}

// MANIFEST.md, TensorBoard plugin on this trace: GPU 0 (Tesla V100-DGXS-32GB, CC 7.0): utilization
// 55.51%, est. SM efficiency 54.68%, est. achieved occupancy 49.13%, Tensor Cores 0.0%; its
// mixed-precision advice: 68% of kernel time launched by Tensor-Core-eligible operators.
TEST(CorpusResNet50, GpuMetricsMatchPluginReference) {
  FERRET_REQUIRE_CORPUS(path, "resnet50-v100-torch19-dataloader.pt.trace.json.gz");
  const TraceModel m = load_trace(path);
  const GpuMetricsResult r = metrics(m);
  ASSERT_EQ(r.devices.size(), 1u);
  const DeviceMetrics& d = r.devices[0];
  EXPECT_EQ(d.device, 0);
  EXPECT_EQ(d.name, "Tesla V100-DGXS-32GB");
  EXPECT_EQ(d.compute_major, 7);
  EXPECT_NEAR(d.utilization_pct, 55.51, 0.5);
  EXPECT_NEAR(d.sm_efficiency_pct, 54.68, 0.5);
  EXPECT_NEAR(d.achieved_occupancy_pct, 49.13, 0.5);
  EXPECT_NEAR(d.tensor_core_pct, 0.0, 0.5);
  EXPECT_NEAR(d.tc_eligible_pct, 68.0, 1.0);  // the plugin prints a rounded integer
  EXPECT_NEAR(d.tc_eligible_without_tc_pct, 68.0, 1.0);
}

// Hopper inference in bf16 (MANIFEST.md): sm90 xmma / cutlass tensorop GEMMs and flash attention.
TEST(CorpusH100, TensorCoreShareIsNonZero) {
  for (const char* name : {"h100-qwen0.5b-inference-torch2.json.gz", "h100-image-classifier-inference.json.gz"}) {
    FERRET_REQUIRE_CORPUS(path, name);
    const TraceModel m = load_trace(path);
    const GpuMetricsResult r = metrics(m);
    ASSERT_FALSE(r.devices.empty()) << name;
    EXPECT_EQ(r.devices[0].compute_major, 9) << name;
    EXPECT_GT(r.devices[0].tensor_core_pct, 10.0) << name;
    EXPECT_LT(r.devices[0].tc_eligible_without_tc_pct, 5.0) << name;  // bf16: eligible work is on Tensor Cores
  }
}

}  // namespace gpu_metrics_test
}  // namespace
}  // namespace ferret
