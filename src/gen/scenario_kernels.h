// The kernels the `ferret gen scenario` models launch, as cuDNN, cuBLAS, ATen and NCCL print them
// on an H100 with CUDA 12, with the launch configuration CUPTI reports. Kernels the job simulator
// launches too come from gen/h100_kernels.h.
#pragma once

#include "gen/h100_kernels.h"
#include "gen/kineto_emitter.h"

namespace ferret::scenario::kernels {

using kineto::KernelShape;

// Shared with the job generator; references keep one address per kernel (backward_kernel_of).
inline constexpr const KernelShape& kLayerNorm = kineto::kernels::kLayerNormFwd;
inline constexpr const KernelShape& kLayerNormBwd = kineto::kernels::kLayerNormBwdInput;
inline constexpr const KernelShape& kNllLoss = kineto::kernels::kNllLossFwd;
using kineto::kernels::kAdamForeach;
inline constexpr KernelShape kConvFprop{
    "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_"
    "execute_segment_k_off_kernel__5x_cudnn",
    {392, 1, 1},
    {384, 1, 1},
    168,
    213248,
    18};
inline constexpr KernelShape kConvDgrad{
    "sm90_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_"
    "execute_segment_k_off_kernel__5x_cudnn",
    {392, 1, 1},
    {384, 1, 1},
    168,
    213248,
    18};
inline constexpr KernelShape kConvWgrad{
    "sm90_xmma_wgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_"
    "execute_segment_k_off_kernel__5x_cudnn",
    {132, 1, 1},
    {384, 1, 1},
    168,
    213248,
    18};
inline constexpr KernelShape kBatchNormFwd{
    "void cudnn::bn_fw_tr_1C11_kernel_NCHW<__nv_bfloat16, float, 512, true, 1>(cudnnTensorStruct, __nv_bfloat16 "
    "const*, cudnnTensorStruct, __nv_bfloat16*, float const*, float const*, float, float, float*, float*, float*, "
    "float*, float, float)",
    {256, 1, 1},
    {512, 1, 1},
    32,
    4096,
    94};
inline constexpr KernelShape kBatchNormBwd{
    "void cudnn::bn_bw_1C11_kernel_new<__nv_bfloat16, float, float2, 512, true, 1>(float, float, float, float, "
    "cudnnTensorStruct, __nv_bfloat16 const*, cudnnTensorStruct, __nv_bfloat16 const*, cudnnTensorStruct, "
    "__nv_bfloat16*, float const*, float*, float*, float const*, float const*, float)",
    {256, 1, 1},
    {512, 1, 1},
    40,
    4096,
    90};
inline constexpr KernelShape kReluFwd{
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::clamp_min_scalar_kernel_"
    "impl(at::TensorIteratorBase&, c10::Scalar)::{lambda()#1}::operator()() const::{lambda()#14}::operator()() "
    "const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::(anonymous namespace)::clamp_min_"
    "scalar_kernel_impl(at::TensorIteratorBase&, c10::Scalar)::{lambda()#1}::operator()() const::{lambda()#14}::"
    "operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)",
    {98304, 1, 1},
    {128, 1, 1},
    26,
    0,
    88};
inline constexpr KernelShape kReluBwd{
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::threshold_kernel_impl<c10::"
    "BFloat16>(at::TensorIteratorBase&, c10::BFloat16, c10::BFloat16)::{lambda(c10::BFloat16, c10::BFloat16)#1}, "
    "std::array<char*, 3ul> >(int, at::native::(anonymous namespace)::threshold_kernel_impl<c10::BFloat16>(at::"
    "TensorIteratorBase&, c10::BFloat16, c10::BFloat16)::{lambda(c10::BFloat16, c10::BFloat16)#1}, std::array<char*, "
    "3ul>)",
    {98304, 1, 1},
    {128, 1, 1},
    28,
    0,
    87};
inline constexpr KernelShape kLogSoftmax{kineto::kernels::kLogSoftmaxFwdName, {64, 1, 1}, {1024, 1, 1}, 38, 0, 48};
inline constexpr KernelShape kSgdForeach{
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
    "TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<"
    "float>, float>(at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::"
    "BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float)",
    {2688, 1, 1},
    {512, 1, 1},
    30,
    0,
    85};

// Tiny kernels of an unfused small model (launch-bound).
inline constexpr KernelShape kSmallGemm{
    "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize64x64x32_warpgroupsize1x1x1_execute_"
    "segment_k_off_kernel__5x_cublas",
    {4, 2, 1},
    {128, 1, 1},
    128,
    49152,
    6};
inline constexpr KernelShape kSmallAdd{
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
    {16, 1, 1},
    {128, 1, 1},
    20,
    0,
    12};
inline constexpr KernelShape kSmallMul{
    "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, "
    "float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >"
    "(int, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::"
    "MulFunctor<float> >, std::array<char*, 3ul>)",
    {16, 1, 1},
    {128, 1, 1},
    20,
    0,
    12};
inline constexpr KernelShape kSmallGelu{
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::"
    "TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()"
    "#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::"
    "GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::"
    "operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<"
    "char*, 2ul>)",
    {16, 1, 1},
    {128, 1, 1},
    24,
    0,
    12};
inline constexpr KernelShape kSmallLayerNorm{
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>"
    "(int, float, float const*, float const*, float const*, float*, float*, float*)",
    {64, 1, 1},
    {256, 1, 1},
    32,
    0,
    9};
inline constexpr KernelShape kSmallDropout{
    "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, "
    "unsigned int, 1, 4, bool>(at::cuda::detail::TensorInfo<float const, unsigned int>, "
    "at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<bool, "
    "unsigned int>, unsigned int, float, at::PhiloxCudaState)",
    {16, 1, 1},
    {256, 1, 1},
    30,
    0,
    12};
inline constexpr KernelShape kSmallReduce{
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::"
    "func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::"
    "TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::"
    "ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, "
    "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, "
    "float, 4>)",
    {8, 1, 1},
    {512, 1, 1},
    32,
    16,
    6};

// fp32 GEMMs on CUDA cores: cuBLAS picks its SIMT sgemm when TF32 is off (the default for matmul).
inline constexpr KernelShape kSgemmNN{"ampere_sgemm_128x64_nn", {64, 32, 1}, {128, 1, 1}, 122, 12544, 24};
inline constexpr KernelShape kSgemmNT{"ampere_sgemm_128x64_nt", {64, 32, 1}, {128, 1, 1}, 122, 12544, 24};
inline constexpr KernelShape kSgemmTN{"ampere_sgemm_128x64_tn", {64, 32, 1}, {128, 1, 1}, 122, 12544, 24};
inline constexpr KernelShape kGeluFwd{kSmallGelu.name, {65536, 1, 1}, {128, 1, 1}, 24, 0, 90};
inline constexpr KernelShape kGeluBwd{
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl("
    "at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()"
    "#2}::operator()() const::{lambda(float, float)#1}, std::array<char*, 3ul> >(int, at::"
    "native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()"
    "#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float, float)#1}, std::"
    "array<char*, 3ul>)",
    {65536, 1, 1},
    {128, 1, 1},
    28,
    0,
    89};
inline constexpr KernelShape kBiasReduce{kSmallReduce.name, {128, 1, 1}, {512, 1, 1}, 32, 16, 45};
inline constexpr KernelShape kMseLoss{
    "void at::native::vectorized_elementwise_kernel<4, at::native::mse_kernel_cuda(at::"
    "TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#1}::operator()() const::"
    "{lambda(float, float)#1}, std::array<char*, 3ul> >(int, at::native::mse_kernel_cuda(at::"
    "TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#1}::operator()() const::"
    "{lambda(float, float)#1}, std::array<char*, 3ul>)",
    {2048, 1, 1},
    {128, 1, 1},
    24,
    0,
    70};

// bf16 Tensor Core GEMMs (communication-heavy and fragmented-memory models use AMP).
inline constexpr KernelShape kBf16Gemm{kineto::kernels::kBf16GemmTN, {128, 8, 1}, {384, 1, 1}, 168, 213248, 19};
inline constexpr KernelShape kBf16GemmNN{kineto::kernels::kBf16GemmNN, {128, 8, 1}, {384, 1, 1}, 168, 213248, 19};
inline constexpr KernelShape kSoftmax{
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, c10::"
    "BFloat16, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::BFloat16*, c10::"
    "BFloat16 const*, int)",
    {65536, 1, 1},
    {1024, 1, 1},
    40,
    0,
    60};
inline constexpr KernelShape kSoftmaxBwd{
    "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<8, c10::BFloat16, float, "
    "c10::BFloat16, at::native::(anonymous namespace)::SoftMaxBackwardEpilogue>(c10::BFloat16*, "
    "c10::BFloat16 const*, c10::BFloat16 const*, int)",
    {65536, 1, 1},
    {1024, 1, 1},
    40,
    0,
    58};
inline constexpr KernelShape kNcclAllReduce{
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", {32, 1, 1}, {640, 1, 1}, 96, 87568, 0};

}  // namespace ferret::scenario::kernels
