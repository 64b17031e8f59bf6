#include "analysis/operator/op_cost.h"

#include <gtest/gtest.h>

namespace ferret {
namespace {
namespace op_cost_test {

OpCost cost(std::string_view name, std::string_view dims, std::string_view types, std::string_view concrete = "") {
  return op_cost({name, dims, types, concrete});
}

// ---- GEMM-likes: 2·M·N·K (+ M·N bias); bytes (M·K + K·N + M·N [+ bias]) · element size ----

TEST(OpCost, AddmmMatchesTraceLensConvention) {
  // TraceLens GEMM sheet, H100 ViT: addmm M=788 N=768 K=768 bias, GFLOPS 0.930167808, 3.43505859375 MiB.
  // 2·788·768·768 = 929,562,624, + 788·768 = 605,184 -> 930,167,808 FLOPs.
  // (768 + 788·768 + 768·768 + 788·768) · 2 = (768 + 605,184 + 589,824 + 605,184) · 2 = 3,601,920 B.
  const OpCost c = cost("aten::addmm", "[[768], [788, 768], [768, 768], [], []]",
                        R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"])");
  EXPECT_EQ(c.kind, OpKind::kGemm);
  EXPECT_EQ(c.dtype, Dtype::kBf16);
  EXPECT_DOUBLE_EQ(c.flops, 930'167'808);
  EXPECT_DOUBLE_EQ(c.bytes, 3'601'920);
}

TEST(OpCost, Mm) {
  // 2·8944·2816·1024 = 51,581,550,592 (TraceLens: 51.581550592 GFLOPs);
  // (8944·1024 + 1024·2816 + 8944·2816) · 2 = (9,158,656 + 2,883,584 + 25,186,304) · 2 = 74,457,088 B (71.0078 MiB).
  const OpCost c = cost("aten::mm", "[[8944, 1024], [1024, 2816]]", R"(["c10::BFloat16", "c10::BFloat16"])");
  EXPECT_DOUBLE_EQ(c.flops, 51'581'550'592);
  EXPECT_DOUBLE_EQ(c.bytes, 74'457'088);
}

TEST(OpCost, BmmAndBaddbmm) {
  // bmm [2,3,4] x [2,4,5] fp32: 2·2·3·5·4 = 240; (24 + 40 + 30) · 4 = 376.
  const OpCost b = cost("aten::bmm", "[[2, 3, 4], [2, 4, 5]]", R"(["float", "float"])");
  EXPECT_DOUBLE_EQ(b.flops, 240);
  EXPECT_DOUBLE_EQ(b.bytes, 376);
  // baddbmm C [2,3,5] fp16: 240 + 2·3·5 = 270; (30 + 24 + 40 + 30) · 2 = 248.
  const OpCost bb = cost("aten::baddbmm", "[[2, 3, 5], [2, 3, 4], [2, 4, 5], [], []]",
                         R"(["c10::Half", "c10::Half", "c10::Half", "Scalar", "Scalar"])");
  EXPECT_EQ(bb.dtype, Dtype::kFp16);
  EXPECT_DOUBLE_EQ(bb.flops, 270);
  EXPECT_DOUBLE_EQ(bb.bytes, 248);
}

TEST(OpCost, MatmulBroadcastsAndVectors) {
  // [8,3,4] @ [4,5]: batch 8, 2·8·3·5·4 = 960; (96 + 20 + 8·3·5) · 4 = 944.
  const OpCost c = cost("aten::matmul", "[[8, 3, 4], [4, 5]]", R"(["float", "float"])");
  EXPECT_DOUBLE_EQ(c.flops, 960);
  EXPECT_DOUBLE_EQ(c.bytes, 944);
  // [4] @ [4,5]: M = 1: 2·1·5·4 = 40; (4 + 20 + 5) · 4 = 116.
  const OpCost v = cost("matmul", "[[4], [4, 5]]", R"(["float", "float"])");
  EXPECT_DOUBLE_EQ(v.flops, 40);
  EXPECT_DOUBLE_EQ(v.bytes, 116);
}

TEST(OpCost, Linear) {
  // input [2,10,16], weight [32,16], bias [32] bf16: M = 20, K = 16, N = 32.
  // 2·20·32·16 + 20·32 = 20,480 + 640 = 21,120; (320 + 512 + 640 + 32) · 2 = 3,008.
  const OpCost c =
      cost("aten::linear", "[[2, 10, 16], [32, 16], [32]]", R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"])");
  EXPECT_DOUBLE_EQ(c.flops, 21'120);
  EXPECT_DOUBLE_EQ(c.bytes, 3'008);
}

TEST(OpCost, ScaledMmAssumesBf16OutputAndSaysSo) {
  // fp8 [16,32] @ [32,64]: 2·16·64·32 = 65,536; 512 + 2,048 + 16·64·2 = 4,608.
  const OpCost c = cost("aten::_scaled_mm", "[[16, 32], [32, 64], [], [], [], [], []]",
                        R"(["c10::Float8_e4m3fn", "c10::Float8_e4m3fn", "float", "float", "", "", "Scalar"])");
  EXPECT_EQ(c.dtype, Dtype::kFp8);
  EXPECT_DOUBLE_EQ(c.flops, 65'536);
  EXPECT_DOUBLE_EQ(c.bytes, 4'608);
  EXPECT_NE(c.note.find("assumed"), std::string::npos);
}

TEST(OpCost, GemmWithDisagreeingShapesIsUnknown) {
  const OpCost c = cost("aten::mm", "[[4, 3], [4, 5]]", R"(["float", "float"])");
  EXPECT_LT(c.flops, 0);
  EXPECT_LT(c.bytes, 0);
  EXPECT_FALSE(c.note.empty());
}

// ---- convolution: 2·N·Cout·out_spatial·(Cin/groups)·kernel (+ bias) ----

TEST(OpCost, ConvolutionFromConcreteInputs) {
  // ViT patch embedding: [4,3,224,224] * [768,3,16,16], stride 16, pad 0: out (224 - 15 - 1)/16 + 1 = 14.
  // out = 4·768·14·14 = 602,112; 2·602,112·3·256 + 602,112 = 925,446,144.
  // bytes (602,112 + 589,824 + 602,112 + 768) · 2 = 3,589,632.
  const OpCost c = cost("aten::convolution", "[[4, 3, 224, 224], [768, 3, 16, 16], [768], [], [], [], [], [], []]",
                        R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "ScalarList", "ScalarList",
                            "ScalarList", "Scalar", "ScalarList", "Scalar"])",
                        R"(["", "", "", "[16, 16]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"])");
  EXPECT_EQ(c.kind, OpKind::kConvolution);
  EXPECT_DOUBLE_EQ(c.flops, 925'446'144);
  EXPECT_DOUBLE_EQ(c.bytes, 3'589'632);
}

TEST(OpCost, CudnnConvolutionHasPaddingBeforeStride) {
  // cudnn_convolution(input, weight, padding, stride, dilation, groups, ...): [1,8,10,10] * [16,8,3,3],
  // padding 1, stride 2: out (10 + 2 - 2 - 1)/2 + 1 = 5 -> 16·25 = 400; 2·400·8·9 = 57,600 (no bias).
  // bytes (800 + 1,152 + 400) · 4 = 9,408.
  const OpCost c = cost("aten::cudnn_convolution", "[[1, 8, 10, 10], [16, 8, 3, 3], [], [], [], [], [], [], []]",
                        R"(["float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", "Scalar",
                            "Scalar"])",
                        R"(["", "", "[1, 1]", "[2, 2]", "[1, 1]", "1", "False", "False", "True"])");
  EXPECT_DOUBLE_EQ(c.flops, 57'600);
  EXPECT_DOUBLE_EQ(c.bytes, 9'408);
}

TEST(OpCost, ConvolutionWithoutStrideIsUnknown) {
  const OpCost c = cost("aten::conv2d", "[[1, 8, 10, 10], [16, 8, 3, 3], [], [], [], [], []]",
                        R"(["float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Scalar"])");
  EXPECT_LT(c.flops, 0);
  EXPECT_NE(c.note.find("stride"), std::string::npos);
}

// ---- attention: 2·B·H·Lq·Lk·(D + Dv), halved when causal ----

TEST(OpCost, ScaledDotProductAttention) {
  // TraceLens SDPA sheet, H100 ViT: B 4, H 12, L 197, d 64: 2·4·12·197·197·128 = 476,884,992 (0.476884992 GFLOPs);
  // q + k + v + out = 4 · 605,184 · 2 B = 4,841,472 (4.6171875 MiB).
  const char* dims = "[[4, 12, 197, 64], [4, 12, 197, 64], [4, 12, 197, 64], [], [], [], []]";
  const char* types = R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar", "Scalar", "Scalar"])";
  const OpCost flash = cost("aten::_scaled_dot_product_flash_attention", dims, types,
                            R"(["", "", "", "0.", "False", "False", "0.125"])");
  EXPECT_EQ(flash.kind, OpKind::kAttention);
  EXPECT_DOUBLE_EQ(flash.flops, 476'884'992);
  EXPECT_DOUBLE_EQ(flash.bytes, 4'841'472);
  EXPECT_TRUE(flash.note.empty());
  const OpCost causal =
      cost("aten::_scaled_dot_product_flash_attention", dims, types, R"(["", "", "", "0.", "True", "False", "0.125"])");
  EXPECT_DOUBLE_EQ(causal.flops, 476'884'992 / 2);
  const OpCost unknown_causal = cost("aten::scaled_dot_product_attention", dims, types);
  EXPECT_DOUBLE_EQ(unknown_causal.flops, 476'884'992);
  EXPECT_NE(unknown_causal.note.find("non-causal assumed"), std::string::npos);
}

// ---- normalisations, softmax, elementwise, reductions ----

TEST(OpCost, Norms) {
  // layer_norm [4,197,768] bf16 with weight and bias: n = 605,184; 8 FLOPs each = 4,841,472;
  // read + write 2·n·2 = 2,420,736, + (768 + 768)·2 = 3,072 -> 2,423,808.
  const OpCost ln = cost("aten::native_layer_norm", "[[4, 197, 768], [], [768], [768], []]",
                         R"(["c10::BFloat16", "ScalarList", "c10::BFloat16", "c10::BFloat16", "Scalar"])");
  EXPECT_EQ(ln.kind, OpKind::kNorm);
  EXPECT_DOUBLE_EQ(ln.flops, 4'841'472);
  EXPECT_DOUBLE_EQ(ln.bytes, 2'423'808);
  // rms_norm [2,4,8] fp32, weight [8]: n = 64; 4·64 = 256; 2·64·4 + 8·4 = 544.
  const OpCost rms =
      cost("aten::rms_norm", "[[2, 4, 8], [], [8], []]", R"(["float", "ScalarList", "float", "Scalar"])");
  EXPECT_DOUBLE_EQ(rms.flops, 256);
  EXPECT_DOUBLE_EQ(rms.bytes, 544);
}

TEST(OpCost, Softmax) {
  // [2,3,4] fp16: 5·24 = 120 FLOPs; 2·24·2 = 96 B.
  const OpCost c = cost("aten::_softmax", "[[2, 3, 4], [], []]", R"(["c10::Half", "Scalar", "Scalar"])");
  EXPECT_EQ(c.kind, OpKind::kSoftmax);
  EXPECT_DOUBLE_EQ(c.flops, 120);
  EXPECT_DOUBLE_EQ(c.bytes, 96);
}

TEST(OpCost, Elementwise) {
  // add [4,197,768] + [1,197,768] bf16: out 605,184 -> 605,184 FLOPs; (605,184 + 151,296 + 605,184)·2 = 2,723,328.
  const OpCost add =
      cost("aten::add", "[[4, 197, 768], [1, 197, 768], []]", R"(["c10::BFloat16", "c10::BFloat16", "Scalar"])");
  EXPECT_EQ(add.kind, OpKind::kElementwise);
  EXPECT_DOUBLE_EQ(add.flops, 605'184);
  EXPECT_DOUBLE_EQ(add.bytes, 2'723'328);
  const OpCost add_ =
      cost("aten::add_", "[[4, 197, 768], [1, 197, 768], []]", R"(["c10::BFloat16", "c10::BFloat16", "Scalar"])");
  EXPECT_DOUBLE_EQ(add_.bytes, 2'723'328);
  // mul by a Scalar [5,5] fp32: 25 FLOPs; 25·4 read + 25·4 written = 200.
  const OpCost mul = cost("aten::mul", "[[5, 5], []]", R"(["float", "Scalar"])");
  EXPECT_DOUBLE_EQ(mul.flops, 25);
  EXPECT_DOUBLE_EQ(mul.bytes, 200);
  // gelu [4,197,3072] bf16: n = 2,420,736; 8n = 19,365,888; 2n·2 = 9,682,944.
  const OpCost gelu = cost("aten::gelu", "[[4, 197, 3072], []]", R"(["c10::BFloat16", ""])");
  EXPECT_DOUBLE_EQ(gelu.flops, 19'365'888);
  EXPECT_DOUBLE_EQ(gelu.bytes, 9'682'944);
  // silu [10] fp32: 4·10 = 40; 80.
  EXPECT_DOUBLE_EQ(cost("aten::silu", "[[10]]", R"(["float"])").flops, 40);
  // copy_ bf16 [10,10] <- fp32 [10,10]: 0 FLOPs; 200 written + 400 read = 600.
  const OpCost copy = cost("aten::copy_", "[[10, 10], [10, 10], []]", R"(["c10::BFloat16", "float", "Scalar"])");
  EXPECT_DOUBLE_EQ(copy.flops, 0);
  EXPECT_DOUBLE_EQ(copy.bytes, 600);
  // to [10] fp32: output dtype not recorded: 40 + 40, said.
  const OpCost to = cost("aten::to", "[[10], [], [], []]", R"(["float", "Scalar", "Scalar", "Scalar"])");
  EXPECT_DOUBLE_EQ(to.bytes, 80);
  EXPECT_NE(to.note.find("assumed"), std::string::npos);
}

TEST(OpCost, Reductions) {
  // sum [8,16] fp32 over dim 1: 128 FLOPs; (128 + 8)·4 = 544.
  const OpCost dim = cost("aten::sum", "[[8, 16], [], [], []]", R"(["float", "ScalarList", "Scalar", ""])",
                          R"(["", "[1]", "False", ""])");
  EXPECT_EQ(dim.kind, OpKind::kReduction);
  EXPECT_DOUBLE_EQ(dim.flops, 128);
  EXPECT_DOUBLE_EQ(dim.bytes, 544);
  // sum(x) over everything: out 1 -> (128 + 1)·4 = 516.
  EXPECT_DOUBLE_EQ(cost("aten::sum", "[[8, 16], []]", R"(["float", ""])", R"(["", ""])").bytes, 516);
  // mean over dim -1 of [8,16]: out 8, as above.
  EXPECT_DOUBLE_EQ(cost("aten::mean", "[[8, 16], [], [], []]", R"(["float", "ScalarList", "Scalar", ""])",
                        R"(["", "[-1]", "True", ""])")
                       .bytes,
                   544);
  // dims not recorded (no Concrete Inputs): the input only, said.
  const OpCost lower = cost("aten::sum", "[[8, 16], [], [], []]", R"(["float", "ScalarList", "Scalar", ""])");
  EXPECT_DOUBLE_EQ(lower.bytes, 512);
  EXPECT_FALSE(lower.note.empty());
}

TEST(OpCost, InductorKernelsUseTheirOwnEstimate) {
  OpCostInput in{"triton_poi_fused_add_0", "[[16, 16], [16, 16]]", R"(["c10::BFloat16", "c10::BFloat16"])", ""};
  in.inductor_flop = 1000;
  in.inductor_num_gb = 0.5e-6;
  const OpCost c = op_cost(in);
  EXPECT_EQ(c.kind, OpKind::kInductor);
  EXPECT_EQ(c.dtype, Dtype::kBf16);
  EXPECT_DOUBLE_EQ(c.flops, 1000);
  EXPECT_DOUBLE_EQ(c.bytes, 500);
}

TEST(OpCost, MalformedOrMissingTextIsUnknownNeverACrash) {
  for (const char* dims :
       {"", "[[1, 2", "nonsense", "[[-1, 3], [3, 4]]", "[[1.5, 2], [2, 3]]", "{}", "[[[2,3]], [3]]"}) {
    const OpCost c = cost("aten::mm", dims, R"(["float", "float"])");
    EXPECT_LT(c.flops, 0) << dims;
    EXPECT_LT(c.bytes, 0) << dims;
    EXPECT_FALSE(c.note.empty()) << dims;
  }
  EXPECT_LT(cost("aten::mm", "[[2, 3], [3, 4]]", "not json").flops, 0);  // types unknown: no element size
  EXPECT_LT(cost("aten::convolution", "[[1, 8, 10, 10], [16, 8, 3, 3]]", R"(["float", "float"])",
                 "[\"\", \"\", \"\", \"[x]\"]")
                .flops,
            0);
  const OpCost none = cost("aten::my_custom_op", "[[2]]", R"(["float"])");
  EXPECT_EQ(none.kind, OpKind::kNone);
  EXPECT_LT(none.flops, 0);
}

}  // namespace op_cost_test
}  // namespace
}  // namespace ferret
