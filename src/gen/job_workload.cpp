#include "gen/job_workload.h"

namespace ferret::jobsim {

using kineto::KernelShape;
using kineto::Range;
using kineto::shapes;
using kineto::us;

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

namespace {

constexpr std::string_view kBf16x3 = "[\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\"]";

// Linear layer backward: input gradient, weight gradient, bias gradient.
BackwardNode addmm_backward(const KernelShape* dgrad, const KernelShape* wgrad, Range gemm, Range bias) {
  return {
      "AddmmBackward0",
      {{"aten::mm", {{dgrad, gemm}}}, {"aten::mm", {{wgrad, gemm}}}, {"aten::sum", {{&kernels::kBiasReduce, bias}}}}};
}

}  // namespace

const std::vector<ForwardOp>& layer_forward() {
  static const std::vector<ForwardOp> kOps = {
      {{"aten::layer_norm", "aten::native_layer_norm"},
       shapes("[[16, 1024, 768], [], [768], [768], [], []]",
              "[\"c10::BFloat16\", \"\", \"float\", \"float\", \"\", \"\"]"),
       &kernels::kLayerNormFwd,
       {us(22), us(28)}},
      {{"aten::linear", "aten::addmm"},
       shapes("[[16, 1024, 768], [2304, 768], [2304]]", kBf16x3),
       &kernels::kQkvFwd,
       {us(95), us(110)}},
      {{"aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
        "aten::_flash_attention_forward"},
       shapes("[[16, 12, 1024, 64], [16, 12, 1024, 64], [16, 12, 1024, 64], [], [], [], []]",
              "[\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\", \"\", \"\", \"\", \"\"]"),
       &kernels::kFlashFwd,
       {us(60), us(75)}},
      {{"aten::linear", "aten::addmm"},
       shapes("[[16, 1024, 768], [768, 768], [768]]", kBf16x3),
       &kernels::kProjFwd,
       {us(34), us(40)}},
      {{"aten::add"},
       shapes("[[16, 1024, 768], [16, 1024, 768], []]", "[\"c10::BFloat16\", \"c10::BFloat16\", \"Scalar\"]"),
       &kernels::kAdd,
       {us(26), us(32)}},
      {{"aten::layer_norm", "aten::native_layer_norm"},
       shapes("[[16, 1024, 768], [], [768], [768], [], []]",
              "[\"c10::BFloat16\", \"\", \"float\", \"float\", \"\", \"\"]"),
       &kernels::kLayerNormFwd,
       {us(22), us(28)}},
      {{"aten::linear", "aten::addmm"},
       shapes("[[16, 1024, 768], [3072, 768], [3072]]", kBf16x3),
       &kernels::kFc1Fwd,
       {us(125), us(140)}},
      {{"aten::gelu"},
       shapes("[[16, 1024, 3072], []]", "[\"c10::BFloat16\", \"\"]"),
       &kernels::kGeluFwd,
       {us(75), us(85)}},
      {{"aten::linear", "aten::addmm"},
       shapes("[[16, 1024, 3072], [768, 3072], [768]]", kBf16x3),
       &kernels::kFc2Fwd,
       {us(125), us(140)}},
      {{"aten::add"},
       shapes("[[16, 1024, 768], [16, 1024, 768], []]", "[\"c10::BFloat16\", \"c10::BFloat16\", \"Scalar\"]"),
       &kernels::kAdd,
       {us(26), us(32)}},
  };
  return kOps;
}

const std::vector<ForwardOp>& prologue_forward() {
  static const std::vector<ForwardOp> kOps = {
      {{"aten::embedding", "aten::index_select"},
       shapes("[[50257, 768], [16, 1024], [], [], []]", "[\"float\", \"long int\", \"\", \"\", \"\"]"),
       &kernels::kEmbeddingFwd,
       {us(18), us(24)}},
      {{"aten::embedding", "aten::index_select"},
       shapes("[[1024, 768], [1024], [], [], []]", "[\"float\", \"long int\", \"\", \"\", \"\"]"),
       &kernels::kEmbeddingFwd,
       {us(4), us(6)}},
      {{"aten::add"},
       shapes("[[16, 1024, 768], [1024, 768], []]", "[\"float\", \"float\", \"Scalar\"]"),
       &kernels::kAdd,
       {us(40), us(48)}},
  };
  return kOps;
}

const std::vector<ForwardOp>& epilogue_forward() {
  static const std::vector<ForwardOp> kOps = {
      {{"aten::layer_norm", "aten::native_layer_norm"},
       shapes("[[16, 1024, 768], [], [768], [768], [], []]",
              "[\"c10::BFloat16\", \"\", \"float\", \"float\", \"\", \"\"]"),
       &kernels::kLayerNormFwd,
       {us(22), us(28)}},
      {{"aten::linear", "aten::matmul", "aten::mm"},
       shapes("[[16, 1024, 768], [50257, 768], []]", "[\"c10::BFloat16\", \"c10::BFloat16\", \"\"]"),
       &kernels::kLmHeadFwd,
       {us(2000), us(2200)}},
  };
  return kOps;
}

const std::vector<ForwardOp>& loss_forward() {
  static const std::vector<ForwardOp> kOps = {
      {{"aten::log_softmax", "aten::_log_softmax"},
       shapes("[[16384, 50257], [], []]", "[\"float\", \"\", \"\"]"),
       &kernels::kLogSoftmaxFwd,
       {us(1800), us(2000)}},
      {{"aten::nll_loss_nd", "aten::nll_loss_forward"},
       shapes("[[16384, 50257], [16384], [], [], []]", "[\"float\", \"long int\", \"\", \"\", \"\"]"),
       &kernels::kNllLossFwd,
       {us(15), us(25)}},
  };
  return kOps;
}

const BackwardNode& layer_norm_backward() {
  static const BackwardNode kNode{
      "NativeLayerNormBackward0",
      {{"aten::native_layer_norm_backward",
        {{&kernels::kLayerNormBwdInput, {us(38), us(45)}}, {&kernels::kLayerNormBwdGammaBeta, {us(18), us(24)}}}}}};
  return kNode;
}

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
          {{&kernels::kFlashBwdDotDoO, {us(12), us(16)}},
           {&kernels::kFlashBwd, {us(170), us(190)}},
           {&kernels::kFlashBwdConvertDq, {us(8), us(12)}}}}}}},
      {kQkv, addmm_backward(&kernels::kQkvDgrad, &kernels::kQkvWgrad, {us(95), us(110)}, {us(18), us(24)})},
      {kLn1, layer_norm_backward()},
  };
  return kNodes;
}

const OuterBackward& outer_backward() {
  static const OuterBackward kNodes{
      {"NllLossBackward0", {{"aten::nll_loss_backward", {{&kernels::kNllLossBwd, {us(15), us(25)}}}}}},
      {"LogSoftmaxBackward0",
       {{"aten::_log_softmax_backward_data", {{&kernels::kLogSoftmaxBwd, {us(1900), us(2100)}}}}}},
      {"MmBackward0",
       {{"aten::mm", {{&kernels::kLmHeadDgrad, {us(2000), us(2200)}}}},
        {"aten::mm", {{&kernels::kLmHeadWgrad, {us(2000), us(2200)}}}}}},
      {"AddBackward0", {}},
      {"EmbeddingBackward0",
       {{"aten::embedding_dense_backward",
         {{&kernels::kEmbeddingGradWeight, {us(50), us(70)}}, {&kernels::kEmbeddingSumScatter, {us(40), us(60)}}}}}},
      {"EmbeddingBackward0",
       {{"aten::embedding_dense_backward",
         {{&kernels::kEmbeddingGradWeight, {us(150), us(200)}},
          {&kernels::kEmbeddingSumScatter, {us(100), us(150)}}}}}},
  };
  return kNodes;
}

}  // namespace ferret::jobsim
