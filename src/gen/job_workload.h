// The workload `ferret gen job` simulates, as data apart from the simulator (job_simulation.cpp):
// GPT-2 small (124M parameters) trained with bf16 autocast at batch 16 x 1024 tokens, hidden 768,
// 12 heads, vocabulary 50257. Its kernels as cuBLAS, FlashAttention (torch's copy), ATen and NCCL
// 2.18 name them on an H100 with CUDA 12 (with the launch configuration CUPTI reports), its
// forward ops (op chain > one kernel) and backward nodes (autograd node > ops > kernels) in the
// order they run, and the gradient buckets its collectives carry.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "gen/h100_kernels.h"
#include "gen/kineto_emitter.h"

namespace ferret::jobsim {

inline constexpr int kLayers = 12;

// DDP's gradient buckets of the simulated model (fp32 gradients): one bucket per transformer layer
// (filled when that layer's backward is done, last layer first), then the token+position
// embeddings when backward ends.
struct GradientBucket {
  std::int64_t elements = 0;
  std::int64_t bytes() const { return elements * 4; }
};
const std::vector<GradientBucket>& gradient_buckets();

namespace kernels {

using kineto::KernelShape;

using kineto::kernels::kAdamForeach;
using kineto::kernels::kLayerNormBwdInput;
using kineto::kernels::kLayerNormFwd;
using kineto::kernels::kNllLossFwd;
inline constexpr std::string_view kGemmTN = kineto::kernels::kBf16GemmTN;
inline constexpr std::string_view kGemmNN = kineto::kernels::kBf16GemmNN;
inline constexpr std::string_view kGemmNT = kineto::kernels::kBf16GemmNT;
// 16384 tokens x (output features / 128) tiles.
inline constexpr KernelShape kQkvFwd{kGemmTN, {18, 128, 1}, {384, 1, 1}, 168, 213248, 19};
inline constexpr KernelShape kQkvDgrad{kGemmNN, {6, 128, 1}, {384, 1, 1}, 168, 213248, 19};
inline constexpr KernelShape kQkvWgrad{kGemmNT, {6, 18, 1}, {384, 1, 1}, 168, 213248, 12};
inline constexpr KernelShape kProjFwd{kGemmTN, {6, 128, 1}, {384, 1, 1}, 168, 213248, 19};
inline constexpr KernelShape kProjDgrad{kGemmNN, {6, 128, 1}, {384, 1, 1}, 168, 213248, 19};
inline constexpr KernelShape kProjWgrad{kGemmNT, {6, 6, 1}, {384, 1, 1}, 168, 213248, 8};
inline constexpr KernelShape kFc1Fwd{kGemmTN, {24, 128, 1}, {384, 1, 1}, 168, 213248, 19};
inline constexpr KernelShape kFc1Dgrad{kGemmNN, {6, 128, 1}, {384, 1, 1}, 168, 213248, 19};
inline constexpr KernelShape kFc1Wgrad{kGemmNT, {6, 24, 1}, {384, 1, 1}, 168, 213248, 14};
inline constexpr KernelShape kFc2Fwd{kGemmTN, {6, 128, 1}, {384, 1, 1}, 168, 213248, 19};
inline constexpr KernelShape kFc2Dgrad{kGemmNN, {24, 128, 1}, {384, 1, 1}, 168, 213248, 19};
inline constexpr KernelShape kFc2Wgrad{kGemmNT, {24, 6, 1}, {384, 1, 1}, 168, 213248, 14};
inline constexpr KernelShape kLmHeadFwd{kGemmTN, {393, 128, 1}, {384, 1, 1}, 168, 213248, 19};
inline constexpr KernelShape kLmHeadDgrad{kGemmNN, {6, 128, 1}, {384, 1, 1}, 168, 213248, 19};
inline constexpr KernelShape kLmHeadWgrad{kGemmNT, {6, 393, 1}, {384, 1, 1}, 168, 213248, 19};

inline constexpr KernelShape kFlashFwd{
    "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
    "cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, true, false, "
    "false, false, true, true, false>(pytorch_flash::Flash_fwd_params)",
    {8, 16, 12},
    {128, 1, 1},
    255,
    49152,
    12};
inline constexpr KernelShape kFlashBwdDotDoO{
    "void pytorch_flash::flash_bwd_dot_do_o_kernel<true, pytorch_flash::Flash_bwd_kernel_traits<64, 128, 128, 8, 2, 4, "
    "2, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 8, cutlass::bfloat16_t> > "
    ">(pytorch_flash::Flash_bwd_params)",
    {8, 16, 12},
    {256, 1, 1},
    32,
    0,
    72};
inline constexpr KernelShape kFlashBwd{
    "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<pytorch_flash::Flash_bwd_kernel_traits<64, 128, "
    "128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 8, "
    "cutlass::bfloat16_t> >, true, false, false, false, false, true>(pytorch_flash::Flash_bwd_params)",
    {8, 16, 12},
    {256, 1, 1},
    255,
    81920,
    12};
inline constexpr KernelShape kFlashBwdConvertDq{
    "void pytorch_flash::flash_bwd_convert_dq_kernel<pytorch_flash::Flash_bwd_kernel_traits<64, 128, 128, 8, 2, 4, 2, "
    "false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 8, cutlass::bfloat16_t> > "
    ">(pytorch_flash::Flash_bwd_params, int)",
    {8, 16, 12},
    {256, 1, 1},
    40,
    16384,
    60};

inline constexpr KernelShape kLayerNormBwdGammaBeta{
    "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<c10::BFloat16, float>(long, long, "
    "c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16*, c10::BFloat16*)",
    {24, 1, 1},
    {32, 32, 1},
    64,
    8448,
    42};
inline constexpr KernelShape kAdd{
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, "
    "3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
    {12288, 1, 1},
    {128, 1, 1},
    24,
    0,
    86};
inline constexpr KernelShape kGeluFwd{
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::"
    "BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::"
    "GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, "
    "std::array<char*, 2ul>)",
    {49152, 1, 1},
    {128, 1, 1},
    24,
    0,
    90};
inline constexpr KernelShape kGeluBwd{
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, "
    "c10::BFloat16)#1}, std::array<char*, 3ul> >(int, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, "
    "c10::BFloat16)#1}, std::array<char*, 3ul>)",
    {49152, 1, 1},
    {128, 1, 1},
    28,
    0,
    89};
inline constexpr KernelShape kBiasReduce{
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<float, "
    "at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()(at::TensorIterator&)::{lambda(float, "
    "float)#1}>, unsigned int, c10::BFloat16, 4> >(at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<"
    "float, at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()(at::TensorIterator&)::{lambda("
    "float, float)#1}>, unsigned int, c10::BFloat16, 4>)",
    {96, 1, 1},
    {512, 1, 1},
    32,
    16,
    45};
inline constexpr KernelShape kEmbeddingFwd{
    "void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned int, 2, 2, -2, "
    "true>(at::cuda::"
    "detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<float const, unsigned int>, at::cuda::"
    "detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)",
    {1056, 1, 1},
    {128, 1, 1},
    26,
    0,
    84};
inline constexpr KernelShape kEmbeddingGradWeight{
    "void at::native::(anonymous namespace)::compute_grad_weight<float, long>(long const*, float const*, long const*, "
    "long, long, long const*, long const*, at::acc_type<float, true>*, long)",
    {4096, 1, 1},
    {128, 1, 1},
    40,
    0,
    70};
inline constexpr KernelShape kEmbeddingSumScatter{
    "void at::native::(anonymous namespace)::sum_and_scatter<float, float, long>(long const*, float*, long, long "
    "const*, "
    "long const*, at::acc_type<float, true> const*, long const*, long const*, long)",
    {4096, 1, 1},
    {128, 1, 1},
    40,
    0,
    68};
inline constexpr KernelShape kLogSoftmaxFwd{
    kineto::kernels::kLogSoftmaxFwdName, {16384, 1, 1}, {1024, 1, 1}, 38, 0, 48};
inline constexpr KernelShape kLogSoftmaxBwd{
    "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, at::native::(anonymous "
    "namespace)::LogSoftMaxBackwardEpilogue>(float*, float const*, float const*, long)",
    {16384, 1, 1},
    {1024, 1, 1},
    40,
    0,
    46};
inline constexpr KernelShape kNllLossBwd{
    "void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, long>(float*, float "
    "const*, "
    "long const*, float const*, float const*, bool, int, int, long, long)",
    {1, 1, 1},
    {32, 1, 1},
    24,
    0,
    1};
inline constexpr KernelShape kNcclAllReduce{
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
    {24, 1, 1},
    {640, 1, 1},
    96,
    87568,
    0};
inline constexpr KernelShape kNcclReduceScatter{
    "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
    {24, 1, 1},
    {640, 1, 1},
    96,
    87568,
    0};
inline constexpr KernelShape kNcclAllGather{
    "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", {24, 1, 1}, {640, 1, 1}, 96, 87568, 0};
}  // namespace kernels

struct ForwardOp {
  std::vector<std::string_view> ops;  // outermost first
  kineto::Args shapes;
  const kineto::KernelShape* kernel;
  kineto::Range ns;
};

struct BackwardOp {
  std::string_view op;
  std::vector<std::pair<const kineto::KernelShape*, kineto::Range>> kernels;
};

struct BackwardNode {
  std::string_view node;
  std::vector<BackwardOp> ops;
};

// One transformer layer's forward ops, by slot in forward order.
enum LayerSlot { kLn1, kQkv, kAttention, kProj, kAttnResidual, kLn2, kFc1, kGelu, kFc2, kMlpResidual, kLayerSlots };
const std::vector<ForwardOp>& layer_forward();

// Token and position embeddings and their sum, before the layers.
enum { kWte, kWpe, kEmbeddingSum, kPrologueOps };
const std::vector<ForwardOp>& prologue_forward();

// After the layers: ln_f and the tied lm_head.
enum { kLnF, kLmHead, kEpilogueOps };
const std::vector<ForwardOp>& epilogue_forward();

// Inside aten::cross_entropy_loss (outside DDP.forward: the model returns logits).
enum { kLogSoftmax, kNllLoss, kLossOps };
const std::vector<ForwardOp>& loss_forward();

// A LayerNorm's backward node (the layers' ln_1 and ln_2, and ln_f).
const BackwardNode& layer_norm_backward();

// One layer's backward, in the order autograd runs it, with the forward slot each node belongs to.
const std::vector<std::pair<int, BackwardNode>>& layer_backward();

// The nodes around the layers: loss and lm_head before them, the embeddings after.
struct OuterBackward {
  BackwardNode nll, log_softmax, lm_head, embedding_sum, wpe, wte;
};
const OuterBackward& outer_backward();

}  // namespace ferret::jobsim
