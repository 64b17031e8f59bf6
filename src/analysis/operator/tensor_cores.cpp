#include "analysis/operator/tensor_cores.h"

#include <initializer_list>
#include <string>

#include "base/text.h"

namespace ferret {

namespace {

bool has_any(std::string_view hay, std::initializer_list<std::string_view> needles) {
  for (std::string_view n : needles)
    if (contains(hay, n)) return true;
  return false;
}

// Tensile / hipBLASLt kernels name their matrix-instruction shape in a "_MI<m>x<n>..." field
// ("Cijk_Ailk_Bljk_BBS_BH_MT64x64x64_MI16x16x16x1_SN_..."); kernels on the vector ALUs have none.
// Case matters: the field is upper-case, and lower-case "_mi" occurs in ordinary words.
bool has_tensile_mi_field(std::string_view name) {
  for (std::size_t at = name.find("_MI"); at != std::string_view::npos; at = name.find("_MI", at + 1))
    if (at + 3 < name.size() && name[at + 3] >= '0' && name[at + 3] <= '9') return true;
  return false;
}

// "conv" as convolution, not as in "convert" (type-conversion kernels are everywhere).
bool has_convolution(std::string_view s) {
  for (std::size_t at = s.find("conv"); at != std::string_view::npos; at = s.find("conv", at + 1))
    if (s.substr(at, 7) != "convert") return true;
  return false;
}

bool is_gemm_like(std::string_view s) {  // s is lower-case
  return contains(s, "gemm") || has_convolution(s) || has_any(s, {"fprop", "dgrad", "wgrad", "wrw_"});
}

}  // namespace

bool is_tensor_core_kernel(std::string_view kernel_name) {
  const std::string s = ascii_lower(kernel_name);
  // SIMT contrast (NVIDIA kernel naming): FP32 FFMA GEMMs ("volta_sgemm_*", "cutlass_*_simt_sgemm_*",
  // "sm80_xmma_gemm_f32f32_..._ffma_...") and matrix-vector kernels never use Tensor Cores.
  if (has_any(s, {"sgemm", "simt", "ffma", "gemv"})) return false;
  // xFormers / PyTorch memory-efficient attention in fp32 runs on SIMT ("fmha_cutlassF_f32_...").
  if (contains(s, "fmha") && contains(s, "_f32_")) return false;
  // MMA instruction shapes and generic Tensor Core markers: Volta h884/s884/i884, Turing *1688,
  // Ampere 16816 / i8816 (the TensorBoard plugin's list), HMMA/IMMA wrappers (xmma), warp-level
  // wmma, Hopper warp-group gmma/wgmma, CUTLASS tensorop and 3.x kernels, cuBLASLt nvjet.
  // "tensorop" only as CUTLASS spells it ("cutlass_80_tensorop_...", "OpClassTensorOp"): MIOpen's
  // "SubTensorOpWithScalar1d" is a plain element-wise kernel.
  if (has_any(s, {"h884", "s884", "i884", "1688", "16816", "8816", "hmma", "xmma", "wmma", "gmma", "_tensorop",
                  "opclasstensorop", "cutlass3x", "nvjet", "tensor16x8"}))
    return true;
  // cuDNN Volta Tensor Core convolutions named in the plugin's list (from NVIDIA PyProf).
  if (has_any(s, {"dgrad_1x1_stride_2x2", "first_layer_wgrad_kernel", "conv1x1", "conv2d_c1_k1", "direct_group"}))
    return true;
  // TF32 is a Tensor Core format; FP8 (e4m3, e5m2) and FP4 (e2m1) products are computed only by
  // Tensor Cores. Only in matrix kernels: "scaled_fp8_quant_kernel<Float8_e4m3fn>" is element-wise.
  if (has_any(s, {"tfloat32", "tf32", "e4m3", "e5m2", "e2m1"}) && (is_gemm_like(s) || has_any(s, {"bmm", "matmul"})))
    return true;
  // Architecture-tagged GEMM / convolution kernels from Ampere on (sm80_*, *_sm90_*, sm100).
  if (has_any(s, {"sm80", "sm86", "sm89", "sm90", "sm100", "sm120"}) && is_gemm_like(s)) return true;
  // Fused attention: FlashAttention, fmha (cuDNN, TRT-LLM, xFormers), cuDNN sdpa.
  if (has_any(s, {"flash_fwd", "flash_bwd", "flash::", "flash_attn", "fmha", "sdpa"})) return true;
  // AMD matrix cores: MFMA instructions, Composable Kernel xdl/xdlops, MIOpen igemm "gtcx"
  // (the xdlops variant of its generic tensor contraction), Tensile MI field, RDNA wmma above.
  if (has_any(s, {"mfma", "xdl", "gtcx"})) return true;
  return has_tensile_mi_field(kernel_name);
}

bool is_matmul_or_conv_kernel(std::string_view kernel_name) {
  const std::string s = ascii_lower(kernel_name);
  if (contains(s, "gemv")) return true;  // matrix-vector: still a matmul
  if (is_gemm_like(s)) return true;
  // cuDNN convolution engines that do not say "conv": "volta_scudnn_128x64_relu_interior_nn_v1",
  // winograd transforms; cuBLASLt nvjet; Tensile "Cijk_" GEMMs; batched GEMM "bmm_" kernels.
  if (has_any(s, {"scudnn", "hcudnn", "winograd", "nvjet", "cijk_", "bmm_", "matmul"})) return true;
  return is_tensor_core_kernel(kernel_name);
}

namespace {

// `word` in s not followed by a digit ("fp6" but not "fp64").
bool has_format_word(std::string_view s, std::string_view word) {
  for (std::size_t at = s.find(word); at != std::string_view::npos; at = s.find(word, at + 1)) {
    const std::size_t end = at + word.size();
    if (end >= s.size() || s[end] < '0' || s[end] > '9') return true;
  }
  return false;
}

}  // namespace

KernelFormats matrix_kernel_formats(std::string_view kernel_name) {
  KernelFormats f;
  const std::string s = ascii_lower(kernel_name);
  // Fused mixture-of-experts kernels ("fused_moe_kernel") are grouped GEMMs that do not say so.
  if (!contains(s, "moe") && !is_matmul_or_conv_kernel(kernel_name)) return f;
  f.fp4 = has_any(s, {"e2m1", "mxfp4", "nvfp4"}) || has_format_word(s, "fp4");
  f.fp6 = has_any(s, {"e2m3", "e3m2", "mxfp6"}) || has_format_word(s, "fp6");
  f.fp8 = has_any(s, {"e4m3", "e5m2", "mxfp8", "float8"}) || has_format_word(s, "fp8");
  f.half = has_any(s, {"bf16", "bfloat16", "fp16", "half"});
  return f;
}

bool is_tensor_core_eligible_op(std::string_view op_name) {
  std::string s = ascii_lower(op_name);
  // Autograd wraps each backward node: "autograd::engine::evaluate_function: MmBackward0".
  constexpr std::string_view kEvaluate = "autograd::engine::evaluate_function: ";
  if (s.rfind(kEvaluate, 0) == 0) s.erase(0, kEvaluate.size());
  constexpr std::string_view kAten = "aten::";
  if (s.rfind(kAten, 0) == 0) s.erase(0, kAten.size());
  // Backward nodes: "AddmmBackward0", "CudnnConvolutionBackward" -> "addmm", "cudnnconvolution".
  if (const std::size_t at = s.find("backward"); at != std::string::npos && at > 0) {
    const std::string_view tail = std::string_view(s).substr(at + 8);
    bool digits_only = true;
    for (char c : tail) digits_only = digits_only && c >= '0' && c <= '9';
    if (digits_only) s.erase(at);
  }
  // Every convolution flavour: conv1d/2d/3d, conv_transpose*, conv_tbc, (cudnn_|miopen_)convolution*,
  // _convolution, convolution_backward, the autograd nodes "ConvolutionBackward0".
  if (contains(s, "convolution") || s.rfind("conv1d", 0) == 0 || s.rfind("conv2d", 0) == 0 ||
      s.rfind("conv3d", 0) == 0 || s.rfind("conv_transpose", 0) == 0 || s == "conv_tbc")
    return true;
  // Matrix products (the plugin's TC_OP_Allowlist plus the ops PyTorch added since: _scaled_mm,
  // einsum, _addmm_activation, the fused attention ops).
  static constexpr std::string_view kMatmulOps[] = {"mm",
                                                    "bmm",
                                                    "addmm",
                                                    "addmm_",
                                                    "_addmm_activation",
                                                    "addbmm",
                                                    "baddbmm",
                                                    "matmul",
                                                    "linear",
                                                    "mv",
                                                    "addmv",
                                                    "addr",
                                                    "chain_matmul",
                                                    "linalg_multi_dot",
                                                    "einsum",
                                                    "_scaled_mm",
                                                    "_int_mm",
                                                    "scaled_dot_product_attention",
                                                    "_scaled_dot_product_flash_attention",
                                                    "_scaled_dot_product_efficient_attention",
                                                    "_scaled_dot_product_cudnn_attention",
                                                    "_flash_attention_forward",
                                                    "_efficient_attention_forward",
                                                    "_thnn_fused_lstm_cell",
                                                    "_thnn_fused_gru_cell",
                                                    "lstm_cell",
                                                    "gru_cell",
                                                    "rnn_tanh_cell",
                                                    "rnn_relu_cell",
                                                    "_cudnn_rnn",
                                                    "lstm",
                                                    "gru"};
  for (std::string_view op : kMatmulOps)
    if (s == op) return true;
  // Autograd node names drop underscores and the aten spelling: "ScaledDotProductFlashAttentionBackward0".
  return contains(s, "scaleddotproduct") || contains(s, "flashattention") || contains(s, "efficientattention");
}

}  // namespace ferret
