// Which unit a kernel used and which operators could have used Tensor Cores, told from names.
//
// A trace records no instruction mix, so the kernel name is the only clue: cuBLAS, cuDNN, CUTLASS,
// Tensile and Composable Kernel encode the MMA instruction shape or the word "tensorop" in their
// kernel names (NVIDIA and AMD kernel naming; the TensorBoard plugin's allow-list, which
// came from NVIDIA PyProf). The lists cover Volta to Blackwell and AMD CDNA.
#pragma once

#include <string_view>

namespace ferret {

// True when the kernel name shows Tensor Core (NVIDIA) or matrix core (AMD MFMA) use:
// h884/s884/i8816/1688/16816, hmma/xmma/wmma/gmma/wgmma, tensorop, nvjet, cutlass3x, sm80+ GEMM and
// convolution names, TF32/FP8/FP4 GEMMs, flash/fmha/sdpa attention, Tensile `_MI<m>x<n>` fields,
// mfma, xdl/xdlops, MIOpen gtcx. SIMT names (sgemm, simt, ffma, gemv) are never Tensor Core.
bool is_tensor_core_kernel(std::string_view kernel_name);

// True for GEMM, convolution and attention kernels by name, whatever unit they run on
// (volta_sgemm, implicit_convolve_sgemm, cudnn winograd/scudnn, Tensile Cijk_, nvjet, ...).
bool is_matmul_or_conv_kernel(std::string_view kernel_name);

// True for operators whose work Tensor Cores can do: convolutions, mm, bmm, addmm, addbmm, baddbmm,
// matmul, linear, einsum, scaled dot-product attention, RNN cells, and their autograd backwards
// ("ConvolutionBackward0", "autograd::engine::evaluate_function: AddmmBackward0",
// "aten::cudnn_convolution_backward_weight"). Names without the "aten::" prefix are accepted.
bool is_tensor_core_eligible_op(std::string_view op_name);

// The number formats a matrix kernel's name spells (TensorRT-LLM "MxE2m1", CUTLASS "e4m3",
// Triton "mxfp4", "nvfp4", "bf16xbf16"): the only record of a narrow format where the op that
// launched the kernel is a custom op or passes packed weights as bytes. All false for a kernel that
// is not a matrix product, and for 64-bit formats ("fp64" is not "fp6").
struct KernelFormats {
  bool fp4 = false;   // e2m1, mxfp4, nvfp4
  bool fp6 = false;   // e2m3, e3m2, mxfp6
  bool fp8 = false;   // e4m3, e5m2, fp8, mxfp8
  bool half = false;  // bf16 or fp16 named beside them
  bool narrow() const { return fp4 || fp6 || fp8; }
};
KernelFormats matrix_kernel_formats(std::string_view kernel_name);

}  // namespace ferret
