// Kernels that both `ferret gen` simulators launch, as the libraries name them on an H100 with
// CUDA 12 and with the launch configuration CUPTI reports. One definition each, so the scenarios
// and the job write the same kernel the same way.
#pragma once

#include <string_view>

#include "gen/kineto_emitter.h"

namespace ferret::kineto::kernels {

// cuBLAS bf16 Tensor Core GEMMs; the grid depends on the problem, so only the names are shared.
inline constexpr std::string_view kBf16GemmTN =
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_"
    "cublas";
inline constexpr std::string_view kBf16GemmNN =
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_"
    "cublas";
inline constexpr std::string_view kBf16GemmNT =
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_"
    "cublas";

// fp32 log_softmax over the logits (the grid is one block per row).
inline constexpr std::string_view kLogSoftmaxFwdName =
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous "
    "namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)";

inline constexpr KernelShape kLayerNormFwd{
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, "
    "c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
    {16384, 1, 1},
    {256, 1, 1},
    32,
    0,
    80};
inline constexpr KernelShape kLayerNormBwdInput{
    "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>(c10::"
    "BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16 const*, c10::BFloat16*, int)",
    {16384, 1, 1},
    {256, 1, 1},
    40,
    0,
    76};
inline constexpr KernelShape kNllLossFwd{
    "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, "
    "float*, float const*, long const*, float const*, bool, long, long, long, long)",
    {1, 1, 1},
    {32, 1, 1},
    24,
    0,
    1};
// torch.optim's foreach Adam and AdamW.
inline constexpr KernelShape kAdamForeach{
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
    "TensorListMetadata<4>, at::native::(anonymous namespace)::PointwiseOpScalarListFunctor<float, 4, 3, 0>, std::"
    "multiplies<float>>(at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::"
    "PointwiseOpScalarListFunctor<float, 4, 3, 0>, std::multiplies<float>)",
    {1920, 1, 1},
    {512, 1, 1},
    40,
    0,
    82};

// The DataLoader's __next__ span when the main process loads the batch itself (num_workers=0).
inline constexpr std::string_view kSingleProcessLoader = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";

}  // namespace ferret::kineto::kernels
