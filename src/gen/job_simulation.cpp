#include "gen/job_simulation.h"

#include <array>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "gen/trace_writer.h"

namespace ferret::jobsim {

const char* straggler_cause_name(StragglerCause cause) {
  switch (cause) {
    case StragglerCause::kCompute: return "compute";
    case StragglerCause::kInput: return "input";
    case StragglerCause::kSync: return "sync";
  }
  return "compute";
}

std::int64_t JobPlan::link_busbw_gbps() const {
  if (hosts <= 1) return kNvlinkBusbwGBps;
  return slow_link_host >= 0 && slow_link_host < hosts ? kSlowLinkBusbwGBps : kInfinibandBusbwGBps;
}

const char* JobPlan::link_name() const {
  if (hosts <= 1) return "nvlink";
  return slow_link_host >= 0 && slow_link_host < hosts ? "socket" : "infiniband";
}

std::int64_t JobPlan::alpha_ns() const {
  const std::int64_t hop_ns = hosts > 1 ? 1500 : 500;
  return 8000 + 2 * static_cast<std::int64_t>(world_size - 1) * hop_ns;
}

std::int64_t JobPlan::transfer_ns(std::int64_t bytes) const {
  const std::int64_t n = world_size;
  const std::int64_t bus_bytes_times_n = bytes * 2 * (n - 1);  // bus bytes x n, kept exact
  const std::int64_t bytes_per_ns_times_n = link_busbw_gbps() * n;
  return (bus_bytes_times_n + bytes_per_ns_times_n - 1) / bytes_per_ns_times_n + alpha_ns();
}

const std::vector<GradientBucket>& gradient_buckets() {
  // GPT-2 small: per layer ln_1 (1536) + c_attn (768x2304 + 2304) + c_proj (768x768 + 768) + ln_2
  // (1536) + c_fc (768x3072 + 3072) + mlp c_proj (3072x768 + 768) = 7,087,872 parameters. The
  // final ln_f (1536) is ready with the last layer; wte (50257x768) + wpe (1024x768) come last.
  static const std::vector<GradientBucket> kBuckets = [] {
    std::vector<GradientBucket> b;
    for (int layer = kLayers - 1; layer >= 0; --layer) b.push_back({7087872 + (layer == kLayers - 1 ? 1536 : 0)});
    b.push_back({50257LL * 768 + 1024LL * 768});
    return b;
  }();
  return kBuckets;
}

std::vector<std::int64_t> host_clock_offsets(std::uint64_t seed, int hosts, std::int64_t skew_ns) {
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(std::max(hosts, 0)), 0);
  Random rng(seed * 0x9E3779B97F4A7C15ULL + 0xC10CC10CULL);
  for (std::size_t h = 1; h < offsets.size(); ++h) offsets[h] = skew_ns > 0 ? rng.between(-skew_ns, skew_ns) : 0;
  return offsets;
}

namespace {

constexpr std::int64_t us(std::int64_t n) { return n * 1000; }

struct Range {
  std::int64_t lo, hi;
};

// ---------------------------------------------------------------------------------------------
// Kernels as cuBLAS, FlashAttention (torch's copy), ATen and NCCL 2.18 name them on an H100 with
// CUDA 12, with the launch configuration CUPTI reports.
struct KernelShape {
  std::string_view name;
  std::array<std::int64_t, 3> grid;
  std::array<std::int64_t, 3> block;
  std::int64_t registers;
  std::int64_t shared_memory;
  std::int64_t occupancy_pct;
};

namespace kernels {
constexpr std::string_view kGemmTN =
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_"
    "cublas";
constexpr std::string_view kGemmNN =
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_"
    "cublas";
constexpr std::string_view kGemmNT =
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_"
    "cublas";
// 16384 tokens x (output features / 128) tiles.
const KernelShape kQkvFwd{kGemmTN, {18, 128, 1}, {384, 1, 1}, 168, 213248, 19};
const KernelShape kQkvDgrad{kGemmNN, {6, 128, 1}, {384, 1, 1}, 168, 213248, 19};
const KernelShape kQkvWgrad{kGemmNT, {6, 18, 1}, {384, 1, 1}, 168, 213248, 12};
const KernelShape kProjFwd{kGemmTN, {6, 128, 1}, {384, 1, 1}, 168, 213248, 19};
const KernelShape kProjDgrad{kGemmNN, {6, 128, 1}, {384, 1, 1}, 168, 213248, 19};
const KernelShape kProjWgrad{kGemmNT, {6, 6, 1}, {384, 1, 1}, 168, 213248, 8};
const KernelShape kFc1Fwd{kGemmTN, {24, 128, 1}, {384, 1, 1}, 168, 213248, 19};
const KernelShape kFc1Dgrad{kGemmNN, {6, 128, 1}, {384, 1, 1}, 168, 213248, 19};
const KernelShape kFc1Wgrad{kGemmNT, {6, 24, 1}, {384, 1, 1}, 168, 213248, 14};
const KernelShape kFc2Fwd{kGemmTN, {6, 128, 1}, {384, 1, 1}, 168, 213248, 19};
const KernelShape kFc2Dgrad{kGemmNN, {24, 128, 1}, {384, 1, 1}, 168, 213248, 19};
const KernelShape kFc2Wgrad{kGemmNT, {24, 6, 1}, {384, 1, 1}, 168, 213248, 14};
const KernelShape kLmHeadFwd{kGemmTN, {393, 128, 1}, {384, 1, 1}, 168, 213248, 19};
const KernelShape kLmHeadDgrad{kGemmNN, {6, 128, 1}, {384, 1, 1}, 168, 213248, 19};
const KernelShape kLmHeadWgrad{kGemmNT, {6, 393, 1}, {384, 1, 1}, 168, 213248, 19};

const KernelShape kFlashFwd{
    "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
    "cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, true, false, "
    "false, false, true, true, false>(pytorch_flash::Flash_fwd_params)",
    {8, 16, 12}, {128, 1, 1}, 255, 49152, 12};
const KernelShape kFlashBwdDotDoO{
    "void pytorch_flash::flash_bwd_dot_do_o_kernel<true, pytorch_flash::Flash_bwd_kernel_traits<64, 128, 128, 8, 2, 4, "
    "2, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 8, cutlass::bfloat16_t> > "
    ">(pytorch_flash::Flash_bwd_params)",
    {8, 16, 12}, {256, 1, 1}, 32, 0, 72};
const KernelShape kFlashBwd{
    "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<pytorch_flash::Flash_bwd_kernel_traits<64, 128, "
    "128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 8, "
    "cutlass::bfloat16_t> >, true, false, false, false, false, true>(pytorch_flash::Flash_bwd_params)",
    {8, 16, 12}, {256, 1, 1}, 255, 81920, 12};
const KernelShape kFlashBwdConvertDq{
    "void pytorch_flash::flash_bwd_convert_dq_kernel<pytorch_flash::Flash_bwd_kernel_traits<64, 128, 128, 8, 2, 4, 2, "
    "false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 8, cutlass::bfloat16_t> > "
    ">(pytorch_flash::Flash_bwd_params, int)",
    {8, 16, 12}, {256, 1, 1}, 40, 16384, 60};

const KernelShape kLayerNormFwd{
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, "
    "c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
    {16384, 1, 1}, {256, 1, 1}, 32, 0, 80};
const KernelShape kLayerNormBwdInput{
    "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>(c10::"
    "BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16 const*, c10::BFloat16*, int)",
    {16384, 1, 1}, {256, 1, 1}, 40, 0, 76};
const KernelShape kLayerNormBwdGammaBeta{
    "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<c10::BFloat16, float>(long, long, "
    "c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16*, c10::BFloat16*)",
    {24, 1, 1}, {32, 32, 1}, 64, 8448, 42};
const KernelShape kAdd{
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, "
    "3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
    {12288, 1, 1}, {128, 1, 1}, 24, 0, 86};
const KernelShape kGeluFwd{
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::"
    "BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::"
    "GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, "
    "std::array<char*, 2ul>)",
    {49152, 1, 1}, {128, 1, 1}, 24, 0, 90};
const KernelShape kGeluBwd{
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, "
    "c10::BFloat16)#1}, std::array<char*, 3ul> >(int, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, "
    "c10::BFloat16)#1}, std::array<char*, 3ul>)",
    {49152, 1, 1}, {128, 1, 1}, 28, 0, 89};
const KernelShape kBiasReduce{
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<float, "
    "at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()(at::TensorIterator&)::{lambda(float, "
    "float)#1}>, unsigned int, c10::BFloat16, 4> >(at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<"
    "float, at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()(at::TensorIterator&)::{lambda("
    "float, float)#1}>, unsigned int, c10::BFloat16, 4>)",
    {96, 1, 1}, {512, 1, 1}, 32, 16, 45};
const KernelShape kEmbeddingFwd{
    "void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned int, 2, 2, -2, true>(at::cuda::"
    "detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<float const, unsigned int>, at::cuda::"
    "detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)",
    {1056, 1, 1}, {128, 1, 1}, 26, 0, 84};
const KernelShape kEmbeddingGradWeight{
    "void at::native::(anonymous namespace)::compute_grad_weight<float, long>(long const*, float const*, long const*, "
    "long, long, long const*, long const*, at::acc_type<float, true>*, long)",
    {4096, 1, 1}, {128, 1, 1}, 40, 0, 70};
const KernelShape kEmbeddingSumScatter{
    "void at::native::(anonymous namespace)::sum_and_scatter<float, float, long>(long const*, float*, long, long const*, "
    "long const*, at::acc_type<float, true> const*, long const*, long const*, long)",
    {4096, 1, 1}, {128, 1, 1}, 40, 0, 68};
const KernelShape kLogSoftmaxFwd{
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous "
    "namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)",
    {16384, 1, 1}, {1024, 1, 1}, 38, 0, 48};
const KernelShape kLogSoftmaxBwd{
    "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, at::native::(anonymous "
    "namespace)::LogSoftMaxBackwardEpilogue>(float*, float const*, float const*, long)",
    {16384, 1, 1}, {1024, 1, 1}, 40, 0, 46};
const KernelShape kNllLossFwd{
    "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, "
    "float*, float const*, long const*, float const*, bool, long, long, long, long)",
    {1, 1, 1}, {32, 1, 1}, 24, 0, 1};
const KernelShape kNllLossBwd{
    "void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, long>(float*, float const*, "
    "long const*, float const*, float const*, bool, int, int, long, long)",
    {1, 1, 1}, {32, 1, 1}, 24, 0, 1};
const KernelShape kAdamWForeach{
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
    "TensorListMetadata<4>, at::native::(anonymous namespace)::PointwiseOpScalarListFunctor<float, 4, 3, 0>, std::"
    "multiplies<float>>(at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::"
    "PointwiseOpScalarListFunctor<float, 4, 3, 0>, std::multiplies<float>)",
    {1920, 1, 1}, {512, 1, 1}, 40, 0, 82};
const KernelShape kNcclAllReduce{"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
                                 {24, 1, 1}, {640, 1, 1}, 96, 87568, 0};
}  // namespace kernels

std::string triplet(const std::array<std::int64_t, 3>& v) { return fmt::format("[{}, {}, {}]", v[0], v[1], v[2]); }

// "Input Dims" / "Input type" members as record_shapes=True writes them.
std::string shapes(std::string_view dims, std::string_view types) {
  return fmt::format("\"Input Dims\": {}, \"Input type\": {}", dims, types);
}

// ---------------------------------------------------------------------------------------------
// The model, as tables: forward ops (op chain > one kernel), backward nodes (autograd node > ops >
// kernels). Batch 16 x 1024 tokens, hidden 768, 12 heads, vocabulary 50257, bf16 autocast.
struct ForwardOp {
  std::vector<std::string_view> ops;  // outermost first
  std::string shapes;
  const KernelShape* kernel;
  Range ns;
};

struct BackwardOp {
  std::string_view op;
  std::vector<std::pair<const KernelShape*, Range>> kernels;
};

struct BackwardNode {
  std::string_view node;
  std::vector<BackwardOp> ops;
};

constexpr std::string_view kBf16x3 = "[\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\"]";

// Layer slots, in forward order.
enum LayerSlot { kLn1, kQkv, kAttention, kProj, kAttnResidual, kLn2, kFc1, kGelu, kFc2, kMlpResidual, kLayerSlots };

const std::vector<ForwardOp>& layer_forward() {
  static const std::vector<ForwardOp> kOps = {
      {{"aten::layer_norm", "aten::native_layer_norm"},
       shapes("[[16, 1024, 768], [], [768], [768], [], []]", "[\"c10::BFloat16\", \"\", \"float\", \"float\", \"\", \"\"]"),
       &kernels::kLayerNormFwd, {us(22), us(28)}},
      {{"aten::linear", "aten::addmm"}, shapes("[[16, 1024, 768], [2304, 768], [2304]]", kBf16x3), &kernels::kQkvFwd,
       {us(95), us(110)}},
      {{"aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention", "aten::_flash_attention_forward"},
       shapes("[[16, 12, 1024, 64], [16, 12, 1024, 64], [16, 12, 1024, 64], [], [], [], []]",
              "[\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\", \"\", \"\", \"\", \"\"]"),
       &kernels::kFlashFwd, {us(60), us(75)}},
      {{"aten::linear", "aten::addmm"}, shapes("[[16, 1024, 768], [768, 768], [768]]", kBf16x3), &kernels::kProjFwd,
       {us(34), us(40)}},
      {{"aten::add"}, shapes("[[16, 1024, 768], [16, 1024, 768], []]", "[\"c10::BFloat16\", \"c10::BFloat16\", \"Scalar\"]"),
       &kernels::kAdd, {us(26), us(32)}},
      {{"aten::layer_norm", "aten::native_layer_norm"},
       shapes("[[16, 1024, 768], [], [768], [768], [], []]", "[\"c10::BFloat16\", \"\", \"float\", \"float\", \"\", \"\"]"),
       &kernels::kLayerNormFwd, {us(22), us(28)}},
      {{"aten::linear", "aten::addmm"}, shapes("[[16, 1024, 768], [3072, 768], [3072]]", kBf16x3), &kernels::kFc1Fwd,
       {us(125), us(140)}},
      {{"aten::gelu"}, shapes("[[16, 1024, 3072], []]", "[\"c10::BFloat16\", \"\"]"), &kernels::kGeluFwd, {us(75), us(85)}},
      {{"aten::linear", "aten::addmm"}, shapes("[[16, 1024, 3072], [768, 3072], [768]]", kBf16x3), &kernels::kFc2Fwd,
       {us(125), us(140)}},
      {{"aten::add"}, shapes("[[16, 1024, 768], [16, 1024, 768], []]", "[\"c10::BFloat16\", \"c10::BFloat16\", \"Scalar\"]"),
       &kernels::kAdd, {us(26), us(32)}},
  };
  return kOps;
}

// Token and position embeddings, their sum; after the layers ln_f and the tied lm_head.
enum { kWte, kWpe, kEmbeddingSum, kPrologueOps };
const std::vector<ForwardOp>& prologue_forward() {
  static const std::vector<ForwardOp> kOps = {
      {{"aten::embedding", "aten::index_select"}, shapes("[[50257, 768], [16, 1024], [], [], []]",
                                                          "[\"float\", \"long int\", \"\", \"\", \"\"]"),
       &kernels::kEmbeddingFwd, {us(18), us(24)}},
      {{"aten::embedding", "aten::index_select"}, shapes("[[1024, 768], [1024], [], [], []]",
                                                          "[\"float\", \"long int\", \"\", \"\", \"\"]"),
       &kernels::kEmbeddingFwd, {us(4), us(6)}},
      {{"aten::add"}, shapes("[[16, 1024, 768], [1024, 768], []]", "[\"float\", \"float\", \"Scalar\"]"), &kernels::kAdd,
       {us(40), us(48)}},
  };
  return kOps;
}

enum { kLnF, kLmHead, kEpilogueOps };
const std::vector<ForwardOp>& epilogue_forward() {
  static const std::vector<ForwardOp> kOps = {
      {{"aten::layer_norm", "aten::native_layer_norm"},
       shapes("[[16, 1024, 768], [], [768], [768], [], []]", "[\"c10::BFloat16\", \"\", \"float\", \"float\", \"\", \"\"]"),
       &kernels::kLayerNormFwd, {us(22), us(28)}},
      {{"aten::linear", "aten::matmul", "aten::mm"}, shapes("[[16, 1024, 768], [50257, 768], []]",
                                                             "[\"c10::BFloat16\", \"c10::BFloat16\", \"\"]"),
       &kernels::kLmHeadFwd, {us(2000), us(2200)}},
  };
  return kOps;
}

// Inside aten::cross_entropy_loss (outside DDP.forward: the model returns logits).
enum { kLogSoftmax, kNllLoss, kLossOps };
const std::vector<ForwardOp>& loss_forward() {
  static const std::vector<ForwardOp> kOps = {
      {{"aten::log_softmax", "aten::_log_softmax"}, shapes("[[16384, 50257], [], []]", "[\"float\", \"\", \"\"]"),
       &kernels::kLogSoftmaxFwd, {us(1800), us(2000)}},
      {{"aten::nll_loss_nd", "aten::nll_loss_forward"},
       shapes("[[16384, 50257], [16384], [], [], []]", "[\"float\", \"long int\", \"\", \"\", \"\"]"),
       &kernels::kNllLossFwd, {us(15), us(25)}},
  };
  return kOps;
}

// Linear layer backward: input gradient, weight gradient, bias gradient.
BackwardNode addmm_backward(const KernelShape* dgrad, const KernelShape* wgrad, Range gemm, Range bias) {
  return {"AddmmBackward0",
          {{"aten::mm", {{dgrad, gemm}}}, {"aten::mm", {{wgrad, gemm}}}, {"aten::sum", {{&kernels::kBiasReduce, bias}}}}};
}

const BackwardNode& layer_norm_backward() {
  static const BackwardNode kNode{
      "NativeLayerNormBackward0",
      {{"aten::native_layer_norm_backward",
        {{&kernels::kLayerNormBwdInput, {us(38), us(45)}}, {&kernels::kLayerNormBwdGammaBeta, {us(18), us(24)}}}}}};
  return kNode;
}

// One layer's backward, in the order autograd runs it, with the forward slot each node belongs to.
const std::vector<std::pair<int, BackwardNode>>& layer_backward() {
  static const std::vector<std::pair<int, BackwardNode>> kNodes = {
      {kMlpResidual, {"AddBackward0", {}}},
      {kFc2, addmm_backward(&kernels::kFc2Dgrad, &kernels::kFc2Wgrad, {us(125), us(140)}, {us(15), us(20)})},
      {kGelu, {"GeluBackward0", {{"aten::gelu_backward", {{&kernels::kGeluBwd, {us(90), us(100)}}}}}}},
      {kFc1, addmm_backward(&kernels::kFc1Dgrad, &kernels::kFc1Wgrad, {us(125), us(140)}, {us(30), us(40)})},
      {kLn2, layer_norm_backward()},
      {kAttnResidual, {"AddBackward0", {}}},
      {kProj, addmm_backward(&kernels::kProjDgrad, &kernels::kProjWgrad, {us(34), us(40)}, {us(15), us(20)})},
      {kAttention,
       {"ScaledDotProductFlashAttentionBackward0",
        {{"aten::_scaled_dot_product_flash_attention_backward",
          {{&kernels::kFlashBwdDotDoO, {us(12), us(16)}}, {&kernels::kFlashBwd, {us(170), us(190)}},
           {&kernels::kFlashBwdConvertDq, {us(8), us(12)}}}}}}},
      {kQkv, addmm_backward(&kernels::kQkvDgrad, &kernels::kQkvWgrad, {us(95), us(110)}, {us(18), us(24)})},
      {kLn1, layer_norm_backward()},
  };
  return kNodes;
}

// The nodes around the layers: loss and lm_head before them, the embeddings after.
struct OuterBackward {
  BackwardNode nll, log_softmax, lm_head, embedding_sum, wpe, wte;
};
const OuterBackward& outer_backward() {
  static const OuterBackward kNodes{
      {"NllLossBackward0", {{"aten::nll_loss_backward", {{&kernels::kNllLossBwd, {us(15), us(25)}}}}}},
      {"LogSoftmaxBackward0", {{"aten::_log_softmax_backward_data", {{&kernels::kLogSoftmaxBwd, {us(1900), us(2100)}}}}}},
      {"MmBackward0",
       {{"aten::mm", {{&kernels::kLmHeadDgrad, {us(2000), us(2200)}}}},
        {"aten::mm", {{&kernels::kLmHeadWgrad, {us(2000), us(2200)}}}}}},
      {"AddBackward0", {}},
      {"EmbeddingBackward0",
       {{"aten::embedding_dense_backward",
         {{&kernels::kEmbeddingGradWeight, {us(50), us(70)}}, {&kernels::kEmbeddingSumScatter, {us(40), us(60)}}}}}},
      {"EmbeddingBackward0",
       {{"aten::embedding_dense_backward",
         {{&kernels::kEmbeddingGradWeight, {us(150), us(200)}}, {&kernels::kEmbeddingSumScatter, {us(100), us(150)}}}}}},
  };
  return kNodes;
}

constexpr std::string_view kDataLoader = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
constexpr int kSyncPointsPerStep = 4;  // sync straggler: after layers 2, 5, 8, 11
constexpr std::int64_t kNoneIndex = -1;

}  // namespace

// ---------------------------------------------------------------------------------------------
struct RankSimulator::Impl {
  JobPlan plan;
  int rank;
  bool record;
  Random rng;
  std::int32_t pid = 0, main_tid = 0, autograd_tid = 0, device = 0;
  bool straggler = false;

  // Ids that run across the whole trace, as the profiler assigns them.
  std::int64_t correlation = 0, external = 1, event_index = 0, sequence = 0, collective_seq = 1;

  std::int64_t now = 0;
  std::int32_t tid = 0;
  struct Open {
    TraceEvent event;
    std::int64_t external_id = 0;
  };
  std::vector<Open> open;
  std::vector<TraceEvent> events;
  struct GpuSpan {
    std::int64_t start, end;
    bool nccl;
  };
  std::vector<GpuSpan> gpu;
  std::int64_t compute_free = 0, nccl_free = 0;

  struct Pending {
    std::int64_t kernel_event = kNoneIndex, flow_event = kNoneIndex;
  };
  std::vector<Pending> pending;
  std::vector<CollectiveArrival> arrivals;
  RankStepRecord step;
  std::int64_t next_step_start = 0;
  std::vector<std::int64_t> forward_ns;       // this step's forward kernel durations
  std::vector<std::int64_t> forward_sequence;  // autograd Sequence number of each forward op
  std::size_t forward_cursor = 0;
  std::vector<std::string> bucket_args;  // collective args up to "Process Group Ranks"

  Impl(const JobPlan& p, int r, bool rec)
      : plan(p), rank(r), record(rec), rng(p.seed * 0x9E3779B97F4A7C15ULL + 0x5EED0000ULL + static_cast<std::uint64_t>(r)) {
    pid = static_cast<std::int32_t>(rng.between(10000, 99999));
    main_tid = pid;
    autograd_tid = pid + static_cast<std::int32_t>(rng.between(50, 120));
    device = plan.local_rank(rank);
    straggler = plan.straggler == rank;
    correlation = rng.between(20000, 40000);
    next_step_start = kTraceStartNs + us(400) + rng.between(0, us(300));  // profilers start within ~0.3 ms
    if (record) {
      std::string ranks = "[";
      for (int i = 0; i < plan.world_size; ++i) ranks += fmt::format("{}{}", i ? ", " : "", i);
      ranks += "]";
      for (const GradientBucket& b : gradient_buckets()) {
        std::string a = "\"Collective name\": \"allreduce\", \"dtype\": \"Float\", \"In msg nelems\": ";
        append_int(a, b.elements);
        a += ", \"Out msg nelems\": ";
        append_int(a, b.elements);
        a += ", \"Group size\": ";
        append_int(a, plan.world_size);
        a += ", \"In split size\": \"[]\", \"Out split size\": \"[]\", \"Process Group Name\": \"0\", "
             "\"Process Group Description\": \"default_pg\", \"Process Group Ranks\": ";
        append_json_string(a, ranks);
        bucket_args.push_back(std::move(a));
      }
    }
  }

  void advance(std::int64_t ns) { now += ns; }

  std::int64_t innermost_external_id() const { return open.empty() ? 0 : open.back().external_id; }

  // Opens a host span with Kineto's External id, the given args members, and Ev Idx.
  void open_span(std::string_view category, std::string_view name, std::string_view extra = {},
                 std::int64_t sequence_number = -1, bool backward_node = false) {
    Open o;
    o.external_id = external++;
    const std::int64_t ev_idx = event_index++;
    o.event.ts = now;
    if (record) {
      o.event.category = category;
      o.event.name = std::string(name);
      o.event.pid = pid;
      o.event.tid = tid;
      std::string& a = o.event.args;
      a = "\"External id\": ";
      append_int(a, o.external_id);
      if (!extra.empty()) {
        a += ", ";
        a += extra;
      }
      if (sequence_number >= 0) {
        a += ", \"Sequence number\": ";
        append_int(a, sequence_number);
      }
      if (backward_node) a += ", \"Fwd thread id\": 1";
      a += ", \"Ev Idx\": ";
      append_int(a, ev_idx);
    }
    open.push_back(std::move(o));
  }

  void close() {
    if (open.empty()) throw std::logic_error("job simulation: close without open");
    TraceEvent e = std::move(open.back().event);
    open.pop_back();
    e.dur = now - e.ts;
    if (e.dur <= 0) throw std::logic_error("job simulation: host span of zero length: " + e.name);
    if (record) events.push_back(std::move(e));
  }

  std::int64_t push(TraceEvent&& e) {
    events.push_back(std::move(e));
    return static_cast<std::int64_t>(events.size()) - 1;
  }

  void runtime_event(std::string_view api, std::int64_t dur, std::int64_t corr, std::int64_t ext, std::int64_t cbid) {
    if (!record) return;
    TraceEvent e;
    e.category = "cuda_runtime";
    e.name = std::string(api);
    e.pid = pid;
    e.tid = tid;
    e.ts = now;
    e.dur = dur;
    e.args = "\"External id\": ";
    append_int(e.args, ext);
    e.args += ", \"cbid\": ";
    append_int(e.args, cbid);
    e.args += ", \"correlation\": ";
    append_int(e.args, corr);
    push(std::move(e));
  }

  std::int64_t flow(char phase, std::int64_t id, std::int32_t flow_pid, std::int32_t flow_tid, std::int64_t ts) {
    if (!record) return kNoneIndex;
    TraceEvent e;
    e.phase = phase;
    e.flow_id = id;
    e.pid = flow_pid;
    e.tid = flow_tid;
    e.ts = ts;
    return push(std::move(e));
  }

  std::string kernel_args(const KernelShape& k, std::int64_t ext, std::int32_t stream, std::int64_t corr) const {
    const std::int64_t blocks = k.grid[0] * k.grid[1] * k.grid[2];
    const std::int64_t warps_per_block = (k.block[0] * k.block[1] * k.block[2] + 31) / 32;
    std::string a = "\"External id\": ";
    append_int(a, ext);
    a += ", \"queued\": 0, \"device\": ";
    append_int(a, device);
    a += ", \"context\": 1, \"stream\": ";
    append_int(a, stream);
    a += ", \"correlation\": ";
    append_int(a, corr);
    a += ", \"registers per thread\": ";
    append_int(a, k.registers);
    a += ", \"shared memory\": ";
    append_int(a, k.shared_memory);
    a += ", \"blocks per SM\": ";
    append_ratio(a, static_cast<std::uint64_t>(blocks), kNumSms, 6);
    a += ", \"warps per SM\": ";
    append_ratio(a, static_cast<std::uint64_t>(blocks * warps_per_block), kNumSms, 6);
    a += ", \"grid\": " + triplet(k.grid) + ", \"block\": " + triplet(k.block) + ", \"est. achieved occupancy %\": ";
    append_int(a, k.occupancy_pct);
    return a;
  }

  TraceEvent kernel_event(const KernelShape& k, std::int32_t stream, std::int64_t corr, std::int64_t ext,
                          std::int64_t start, std::int64_t dur) const {
    TraceEvent e;
    e.category = "kernel";
    e.name = std::string(k.name);
    e.pid = device;
    e.tid = stream;
    e.ts = start;
    e.dur = dur;
    e.args = kernel_args(k, ext, stream, corr);
    return e;
  }

  // cudaLaunchKernel from the innermost open op: the runtime span, the kernel on the compute
  // stream when the stream is free (and not before `not_before`), and the ac2g flow.
  void launch(const KernelShape& k, std::int64_t kernel_ns, std::int64_t launch_ns, std::int64_t not_before = 0) {
    const std::int64_t corr = correlation++;
    const std::int64_t ext = innermost_external_id();
    runtime_event("cudaLaunchKernel", launch_ns, corr, ext, 211);
    flow('s', corr, pid, tid, now);
    const std::int64_t queue_gap = rng.between(800, 2000);
    const std::int64_t launch_latency = rng.between(1500, 4000);
    const std::int64_t start = std::max({compute_free + queue_gap, now + launch_ns + launch_latency, not_before});
    if (record) {
      push(kernel_event(k, kComputeStream, corr, ext, start, kernel_ns));
      flow('f', corr, device, kComputeStream, start);
    }
    compute_free = start + kernel_ns;
    now += launch_ns;
    gpu.push_back({start, start + kernel_ns, false});
  }

  // One op chain launching one kernel, with eager PyTorch's host overheads around the launch.
  void op_kernel(const ForwardOp& op, std::int64_t kernel_ns, std::int64_t sequence_number) {
    const std::int64_t overhead_ns = rng.between(us(12), us(25));
    const std::int64_t launch_ns = rng.between(5000, 8000);
    bool outer = true;
    for (std::string_view name : op.ops) {
      open_span("cpu_op", name, outer ? std::string_view(op.shapes) : std::string_view(), outer ? sequence_number : -1);
      outer = false;
      advance(overhead_ns / static_cast<std::int64_t>(op.ops.size()) + rng.between(200, 800));
    }
    launch(*op.kernel, kernel_ns, launch_ns);
    for (std::size_t i = 0; i < op.ops.size(); ++i) {
      advance(rng.between(500, 1500));
      close();
    }
  }

  // evaluate_function: Node > Node > ops, each op launching its kernels.
  void backward_node(const BackwardNode& node, std::int64_t sequence_number) {
    const std::int64_t overhead_ns = rng.between(us(10), us(20));
    std::string evaluate;
    if (record) evaluate = fmt::format("autograd::engine::evaluate_function: {}", node.node);
    open_span("cpu_op", evaluate, {}, sequence_number, true);
    advance(overhead_ns / 3 + rng.between(200, 600));
    open_span("cpu_op", node.node, {}, sequence_number, true);
    advance(overhead_ns / 3 + rng.between(200, 600));
    for (const BackwardOp& op : node.ops) {
      open_span("cpu_op", op.op);
      advance(overhead_ns / 3 + rng.between(200, 600));
      for (const auto& [kernel, range] : op.kernels) {
        // Two draws, sequenced (argument evaluation order is unspecified).
        const std::int64_t kernel_ns = rng.between(range.lo, range.hi);
        const std::int64_t launch_ns = rng.between(5000, 8000);
        launch(*kernel, kernel_ns, launch_ns);
        advance(rng.between(500, 1500));
      }
      advance(rng.between(500, 1500));
      close();
    }
    for (int i = 0; i < 2; ++i) {
      advance(rng.between(500, 1500));
      close();
    }
  }

  // cudaMemcpyAsync and its copy on the compute stream; `host_waits`: pageable memory makes the
  // call return only after the copy.
  void memcpy(std::string_view name, std::int64_t bytes, std::int64_t copy_ns, bool host_waits) {
    const std::int64_t corr = correlation++;
    const std::int64_t ext = innermost_external_id();
    const std::int64_t queue_gap = rng.between(800, 2000), issue_latency = rng.between(2000, 4000);
    const std::int64_t start = std::max(compute_free + queue_gap, now + issue_latency);
    const std::int64_t tail = rng.between(2000, 5000), async_call = rng.between(6000, 10000);
    const std::int64_t call_ns = host_waits ? start + copy_ns + tail - now : async_call;
    runtime_event("cudaMemcpyAsync", call_ns, corr, ext, 51);
    flow('s', corr, pid, tid, now);
    if (record) {
      TraceEvent copy;
      copy.category = "gpu_memcpy";
      copy.name = std::string(name);
      copy.pid = device;
      copy.tid = kComputeStream;
      copy.ts = start;
      copy.dur = copy_ns;
      std::string& a = copy.args;
      a = "\"External id\": ";
      append_int(a, ext);
      a += ", \"device\": ";
      append_int(a, device);
      a += ", \"context\": 1, \"stream\": ";
      append_int(a, kComputeStream);
      a += ", \"correlation\": ";
      append_int(a, corr);
      a += ", \"bytes\": ";
      append_int(a, bytes);
      a += ", \"memory bandwidth (GB/s)\": ";
      append_ratio(a, static_cast<std::uint64_t>(bytes), static_cast<std::uint64_t>(copy_ns), 6);
      push(std::move(copy));
      flow('f', corr, device, kComputeStream, start);
    }
    compute_free = start + copy_ns;
    now += call_ns;
  }

  void runtime(std::string_view api, std::int64_t dur, std::int64_t cbid) {
    runtime_event(api, dur, correlation++, innermost_external_id(), cbid);
    now += dur;
  }

  // cudaStreamSynchronize on the compute stream: the host waits until it drains. CUPTI's
  // cuda_sync activity ("Stream Sync") shows the wait on the GPU side.
  void stream_synchronize() {
    const std::int64_t corr = correlation++;
    const std::int64_t least = rng.between(2000, 4000), after_drain = rng.between(2000, 5000);
    const std::int64_t dur = std::max(least, compute_free + after_drain - now);
    runtime_event("cudaStreamSynchronize", dur, corr, innermost_external_id(), 131);
    if (record) {
      TraceEvent e;
      e.category = "cuda_sync";
      e.name = "Stream Sync";
      e.pid = device;
      e.tid = kComputeStream;
      e.ts = now + 1000;
      e.dur = dur - 1500;
      e.args = "\"External id\": ";
      append_int(e.args, innermost_external_id());
      e.args += ", \"cuda_sync_kind\": \"Stream Sync\", \"stream\": ";
      append_int(e.args, kComputeStream);
      e.args += ", \"correlation\": ";
      append_int(e.args, corr);
      e.args += ", \"device\": ";
      append_int(e.args, device);
      e.args += ", \"context\": 1";
      push(std::move(e));
    }
    now += dur;
  }

  // tensor.item(): a 4-byte copy to pageable memory, which waits for everything queued.
  void item() {
    const std::string_view scalar = "\"Input Dims\": [[]], \"Input type\": [\"float\"]";
    open_span("cpu_op", "aten::item", scalar);
    advance(rng.between(2000, 4000));
    open_span("cpu_op", "aten::_local_scalar_dense", scalar);
    advance(rng.between(3000, 6000));
    memcpy("Memcpy DtoH (Device -> Pageable)", 4, rng.between(1200, 1800), true);
    advance(rng.between(1000, 3000));
    close();
    advance(rng.between(1000, 2000));
    close();
  }

  // The straggler's host syncs (cause "sync"): a metrics read-out that synchronizes the stream,
  // reads a scalar, then works on the host for `host_work_ns` while the GPU has nothing queued.
  void sync_point(std::int64_t host_work_ns) {
    stream_synchronize();
    advance(rng.between(2000, 4000));
    item();
    advance(host_work_ns);
  }

  // DDP's reducer launching one bucket's all-reduce from the autograd thread:
  // record_param_comms > nccl:all_reduce > event record, stream wait, cudaLaunchKernelExC of the
  // NCCL kernel on the NCCL stream. The kernel's start is settled across ranks (finish_step).
  void all_reduce(std::size_t bucket) {
    const std::int64_t seq = collective_seq++;
    std::string args;
    if (record) {
      args = bucket_args[bucket];
      if (plan.distributed_info) {
        args += ", \"Rank\": ";
        append_int(args, rank);
      }
      if (plan.seq) {
        args += ", \"Seq\": ";
        append_int(args, seq);
      }
    }
    open_span("cpu_op", "record_param_comms", args);
    advance(rng.between(us(3), us(6)));
    open_span("user_annotation", "nccl:all_reduce");
    advance(rng.between(us(2), us(4)));
    runtime("cudaEventRecord", rng.between(1500, 3000), 135);
    runtime("cudaStreamWaitEvent", rng.between(1200, 2500), 147);
    // The NCCL stream waits for the gradients computed so far on the compute stream.
    const std::int64_t gradients_ready = compute_free;
    const std::int64_t launch_ns = rng.between(9000, 14000);
    const std::int64_t corr = correlation++;
    const std::int64_t ext = innermost_external_id();
    runtime_event("cudaLaunchKernelExC", launch_ns, corr, ext, 430);
    flow('s', corr, pid, tid, now);
    const std::int64_t launch_latency = rng.between(1500, 4000);
    CollectiveArrival arrival;
    arrival.ready_ns = std::max(now + launch_ns + launch_latency, gradients_ready);
    arrival.queue_gap_ns = rng.between(800, 2000);
    Pending p;
    if (record) {
      TraceEvent kernel = kernel_event(kernels::kNcclAllReduce, kNcclStream, corr, ext, 0, 0);
      kernel.args += ", ";
      kernel.args += args;
      p.kernel_event = push(std::move(kernel));
      p.flow_event = flow('f', corr, device, kNcclStream, 0);
    }
    pending.push_back(p);
    arrivals.push_back(arrival);
    now += launch_ns;
    advance(rng.between(us(2), us(4)));
    close();
    advance(rng.between(us(2), us(5)));
    close();
  }

  void forward(std::int64_t sync_work_ns_total) {
    const auto& prologue = prologue_forward();
    const auto& layer = layer_forward();
    const auto& epilogue = epilogue_forward();
    const auto& loss = loss_forward();
    // Kernel durations are drawn up front so that a compute straggler's extra time can be spread
    // over them exactly.
    forward_ns.clear();
    const auto draw = [&](const std::vector<ForwardOp>& ops) {
      for (const ForwardOp& op : ops) forward_ns.push_back(rng.between(op.ns.lo, op.ns.hi));
    };
    draw(prologue);
    for (int l = 0; l < kLayers; ++l) draw(layer);
    draw(epilogue);
    draw(loss);
    if (straggler && plan.straggler_cause == StragglerCause::kCompute) {
      // A slower GPU: every forward kernel longer in proportion, X in all (the rest to the last).
      std::int64_t total = 0;
      for (std::int64_t ns : forward_ns) total += ns;
      std::int64_t given = 0;
      for (std::int64_t& ns : forward_ns) {
        const std::int64_t extra = plan.straggler_delay_ns * ns / total;
        ns += extra;
        given += extra;
      }
      forward_ns.back() += plan.straggler_delay_ns - given;
    }
    forward_sequence.assign(forward_ns.size(), -1);
    forward_cursor = 0;
    const auto run = [&](const ForwardOp& op) {
      forward_sequence[forward_cursor] = sequence++;
      op_kernel(op, forward_ns[forward_cursor], forward_sequence[forward_cursor]);
      ++forward_cursor;
    };

    open_span("user_annotation", "DistributedDataParallel.forward");
    advance(rng.between(us(30), us(60)));
    for (const ForwardOp& op : prologue) run(op);
    int sync_points_left = kSyncPointsPerStep;
    for (int l = 0; l < kLayers; ++l) {
      for (const ForwardOp& op : layer) run(op);
      if (sync_work_ns_total > 0 && l % 3 == 2) {
        const std::int64_t share = sync_work_ns_total / kSyncPointsPerStep;
        --sync_points_left;
        sync_point(sync_points_left == 0 ? sync_work_ns_total - share * (kSyncPointsPerStep - 1) : share);
      }
    }
    for (const ForwardOp& op : epilogue) run(op);
    advance(rng.between(us(10), us(20)));
    close();
    open_span("cpu_op", "aten::cross_entropy_loss",
              shapes("[[16384, 50257], [16384], [], [], [], []]", "[\"float\", \"long int\", \"\", \"\", \"\", \"\"]"));
    advance(rng.between(us(3), us(6)));
    for (const ForwardOp& op : loss) run(op);
    advance(rng.between(us(2), us(4)));
    close();
  }

  // Index of a forward op in forward_sequence.
  static std::size_t layer_op_index(int layer, int slot) {
    return kPrologueOps + static_cast<std::size_t>(layer) * kLayerSlots + static_cast<std::size_t>(slot);
  }

  void backward() {
    const std::size_t epilogue_at = kPrologueOps + static_cast<std::size_t>(kLayers) * kLayerSlots;
    const std::size_t loss_at = epilogue_at + kEpilogueOps;
    advance(rng.between(us(20), us(40)));
    tid = autograd_tid;
    const OuterBackward& outer = outer_backward();
    backward_node(outer.nll, forward_sequence[loss_at + kNllLoss]);
    backward_node(outer.log_softmax, forward_sequence[loss_at + kLogSoftmax]);
    backward_node(outer.lm_head, forward_sequence[epilogue_at + kLmHead]);
    backward_node(layer_norm_backward(), forward_sequence[epilogue_at + kLnF]);
    std::size_t bucket = 0;
    for (int l = kLayers - 1; l >= 0; --l) {
      for (const auto& [slot, node] : layer_backward()) backward_node(node, forward_sequence[layer_op_index(l, slot)]);
      all_reduce(bucket++);  // the layer's gradients are all computed: its bucket is ready
    }
    backward_node(outer.embedding_sum, forward_sequence[kEmbeddingSum]);
    backward_node(outer.wpe, forward_sequence[kWpe]);
    backward_node(outer.wte, forward_sequence[kWte]);
    all_reduce(bucket);
    advance(rng.between(us(10), us(20)));
    tid = main_tid;
  }

  const std::vector<CollectiveArrival>& begin_step(int index) {
    events.clear();
    gpu.clear();
    pending.clear();
    arrivals.clear();
    step = RankStepRecord{};
    now = next_step_start;
    tid = main_tid;
    step.start_ns = now;
    open_span("user_annotation", record ? fmt::format("ProfilerStep#{}", kFirstStepNumber + index) : std::string());
    advance(rng.between(us(10), us(25)));

    // The next batch, loaded in the main process (num_workers=0) while the GPU has nothing queued.
    open_span("user_annotation", kDataLoader);
    std::int64_t load_ns = rng.between(us(200), us(350));
    if (straggler && plan.straggler_cause == StragglerCause::kInput) load_ns += plan.straggler_delay_ns;
    advance(load_ns);
    open_span("cpu_op", "aten::stack", "\"Input Dims\": [[], []], \"Input type\": [\"TensorList\", \"\"]");
    advance(rng.between(us(40), us(70)));
    close();
    advance(rng.between(us(8), us(15)));
    close();
    advance(rng.between(us(5), us(10)));

    // Token ids and targets to the GPU from pinned memory.
    for (int i = 0; i < 2; ++i) {
      open_span("cpu_op", "aten::to", "\"Input Dims\": [[16, 1024], [], [], [], [], []], \"Input type\": [\"long int\", \"\", \"\", \"\", \"\", \"\"]");
      advance(rng.between(2000, 5000));
      open_span("cpu_op", "aten::_to_copy");
      advance(rng.between(3000, 6000));
      open_span("cpu_op", "aten::copy_");
      advance(rng.between(3000, 6000));
      memcpy("Memcpy HtoD (Pinned -> Device)", 16 * 1024 * 8, rng.between(5000, 7000), false);
      for (int j = 0; j < 3; ++j) {
        advance(rng.between(1000, 3000));
        close();
      }
    }
    const bool sync_straggler = straggler && plan.straggler_cause == StragglerCause::kSync;
    forward(sync_straggler ? plan.straggler_delay_ns : 0);
    backward();
    return arrivals;
  }

  void finish_step(std::span<const std::int64_t> collective_end_ns) {
    if (collective_end_ns.size() != arrivals.size())
      throw std::logic_error("job simulation: one collective end per bucket expected");
    std::int64_t previous_end = nccl_free;
    for (std::size_t k = 0; k < arrivals.size(); ++k) {
      const std::int64_t start = collective_start(arrivals[k], previous_end);
      const std::int64_t end = collective_end_ns[k];
      if (end <= start) throw std::logic_error("job simulation: a collective ends before it starts");
      if (record) {
        TraceEvent& kernel = events[static_cast<std::size_t>(pending[k].kernel_event)];
        kernel.ts = start;
        kernel.dur = end - start;
        events[static_cast<std::size_t>(pending[k].flow_event)].ts = start;
      }
      gpu.push_back({start, end, true});
      step.collective_start_ns.push_back(start);
      previous_end = end;
    }
    nccl_free = previous_end;

    // DDP's finalize makes the compute stream wait for the NCCL stream; AdamW (foreach) follows.
    advance(rng.between(us(8), us(15)));
    runtime("cudaStreamWaitEvent", rng.between(1500, 3000), 147);
    const std::int64_t after_nccl = nccl_free + rng.between(1000, 2000);
    open_span("user_annotation", "Optimizer.step#AdamW.step");
    advance(rng.between(us(20), us(40)));
    for (std::string_view op : {"aten::_foreach_mul_", "aten::_foreach_lerp_", "aten::_foreach_mul_",
                                "aten::_foreach_addcmul_", "aten::_foreach_sqrt", "aten::_foreach_div_",
                                "aten::_foreach_add_", "aten::_foreach_addcdiv_"}) {
      open_span("cpu_op", op);
      advance(rng.between(us(8), us(16)));
      const std::int64_t kernel_ns = rng.between(us(250), us(400));
      launch(kernels::kAdamWForeach, kernel_ns, rng.between(6000, 9000), after_nccl);
      advance(rng.between(1000, 3000));
      close();
    }
    advance(rng.between(us(5), us(10)));
    close();
    open_span("user_annotation", "Optimizer.zero_grad#AdamW.zero_grad");
    advance(rng.between(us(15), us(30)));
    close();
    item();  // loss.item() for logging: the host waits for the step's GPU work
    advance(rng.between(us(10), us(30)));
    close();  // ProfilerStep
    if (!open.empty()) throw std::logic_error("job simulation: spans left open at the end of a step");
    step.end_ns = now;
    for (const GpuSpan& g : gpu)
      if (g.end > step.end_ns) throw std::logic_error("job simulation: GPU work outlives its step");
    next_step_start = now + rng.between(us(5), us(15));
    measure_communication();
    if (record) {
      // Written in time order, enclosing spans before the spans they contain.
      std::stable_sort(events.begin(), events.end(), [](const TraceEvent& a, const TraceEvent& b) {
        return a.ts != b.ts ? a.ts < b.ts : a.dur > b.dur;
      });
    }
  }

  // Union of NCCL kernels, union of compute kernels, and the NCCL time no compute overlaps.
  void measure_communication() {
    std::vector<std::pair<std::int64_t, std::int64_t>> nccl, compute;
    for (const GpuSpan& g : gpu) (g.nccl ? nccl : compute).emplace_back(g.start, g.end);
    const auto merged = [](std::vector<std::pair<std::int64_t, std::int64_t>>& v) {
      std::sort(v.begin(), v.end());
      std::vector<std::pair<std::int64_t, std::int64_t>> out;
      for (const auto& iv : v) {
        if (!out.empty() && iv.first <= out.back().second) out.back().second = std::max(out.back().second, iv.second);
        else out.push_back(iv);
      }
      return out;
    };
    const auto a = merged(nccl), b = merged(compute);
    std::int64_t comm = 0, busy = 0, overlap = 0;
    for (const auto& [s, e] : a) comm += e - s;
    for (const auto& [s, e] : b) busy += e - s;
    for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
      const std::int64_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
      if (hi > lo) overlap += hi - lo;
      if (a[i].second < b[j].second) ++i;
      else ++j;
    }
    step.comm_ns = comm;
    step.compute_ns = busy;
    step.exposed_ns = comm - overlap;
  }
};

RankSimulator::RankSimulator(const JobPlan& plan, int rank, bool record_events)
    : impl_(std::make_unique<Impl>(plan, rank, record_events)) {}
RankSimulator::~RankSimulator() = default;

const std::vector<RankSimulator::CollectiveArrival>& RankSimulator::begin_step(int index) {
  return impl_->begin_step(index);
}
void RankSimulator::finish_step(std::span<const std::int64_t> collective_end_ns) { impl_->finish_step(collective_end_ns); }
const RankStepRecord& RankSimulator::step_record() const { return impl_->step; }
std::vector<TraceEvent>& RankSimulator::step_events() { return impl_->events; }
std::int32_t RankSimulator::host_pid() const { return impl_->pid; }
std::int32_t RankSimulator::main_tid() const { return impl_->main_tid; }
std::int32_t RankSimulator::autograd_tid() const { return impl_->autograd_tid; }
std::int32_t RankSimulator::device() const { return impl_->device; }

}  // namespace ferret::jobsim
