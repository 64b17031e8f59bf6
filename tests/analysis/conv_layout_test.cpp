#include "analysis/operator/conv_layout.h"

#include <gtest/gtest.h>

#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {

using test::span;

// aten::conv2d > aten::convolution > aten::cudnn_convolution, each recording the same input.
std::vector<std::string> conv_call(double ts, const std::string& dims, const std::string& strides) {
  const std::string args = R"("Input Dims": [)" + dims + R"(, [64, 64, 3, 3]], "Input Strides": [)" + strides +
                           R"(, [576, 9, 3, 1]], "Input type": ["c10::BFloat16", "c10::BFloat16"])";
  return {span("cpu_op", "aten::conv2d", 1, 1, ts, 30, args),
          span("cpu_op", "aten::convolution", 1, 1, ts + 1, 28, args),
          span("cpu_op", "aten::cudnn_convolution", 1, 1, ts + 2, 26, args)};
}

std::vector<std::string> join(std::vector<std::vector<std::string>> parts) {
  std::vector<std::string> out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(ConvolutionLayout, StridesTellChannelsLastFromNchw) {
  // [8, 64, 56, 56]: NCHW strides 64·56·56, 56·56, 56, 1; channels-last 56·56·64, 1, 56·64, 64.
  const std::string nchw = "[200704, 3136, 56, 1]", cl = "[200704, 1, 3584, 64]", dims = "[8, 64, 56, 56]";
  const TraceModel two_cl = load_trace_text(
      test::trace(join({conv_call(0, dims, cl), conv_call(100, dims, cl), conv_call(200, dims, nchw)})));
  const ConvolutionLayout l = convolution_layout(two_cl);
  EXPECT_EQ(l.calls, 3u);  // the outermost op of each call only
  EXPECT_EQ(l.channels_last_calls, 2u);
  EXPECT_TRUE(l.channels_last());
  EXPECT_EQ(l.evidence(),
            "2 of 3 convolution calls take channels-last inputs (aten::conv2d input [8, 64, 56, 56], strides "
            "[200704, 1, 3584, 64])");

  const TraceModel all_nchw = load_trace_text(test::trace(join({conv_call(0, dims, nchw)})));
  const ConvolutionLayout n = convolution_layout(all_nchw);
  EXPECT_FALSE(n.channels_last());
  EXPECT_EQ(n.evidence(),
            "1 of 1 convolution calls take NCHW inputs (aten::conv2d input [8, 64, 56, 56], strides [200704, 3136, "
            "56, 1])");
  // One channel (or a 1x1 image) looks the same in both layouts: not counted.
  const TraceModel gray = load_trace_text(test::trace(join({conv_call(0, "[8, 1, 28, 28]", "[784, 784, 28, 1]")})));
  EXPECT_EQ(convolution_layout(gray).calls, 0u);
  EXPECT_EQ(convolution_layout(gray).evidence(), "");
}

TEST(ConvolutionLayout, WithoutStridesNhwcKernelsAloneMeanChannelsLast) {
  const std::string nhwc_kernel =
      "sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_stage4_warpsize2x2x1";
  const TraceModel nhwc = load_trace_text(test::trace({span("kernel", nhwc_kernel, 0, 7, 10, 40, test::corr(1))}));
  const ConvolutionLayout l = convolution_layout(nhwc);
  EXPECT_FALSE(l.by_strides());
  EXPECT_EQ(l.nhwc_kernel_ns, 40'000);
  EXPECT_TRUE(l.channels_last());
  EXPECT_EQ(l.evidence(),
            "the convolution kernels run NHWC (" + nhwc_kernel.substr(0, 100) + ") with no layout transposes");
  // cuDNN (or MIOpen) transposing NCHW tensors around the same kernel: not channels-last.
  for (const char* transpose : {"void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (int)0>(...)",
                                "transpose_NCHW2CNHW_V2_2D_WG_off64"}) {
    const TraceModel t = load_trace_text(test::trace({span("kernel", transpose, 0, 7, 0, 5, test::corr(2)),
                                                      span("kernel", nhwc_kernel, 0, 7, 10, 40, test::corr(1))}));
    const ConvolutionLayout c = convolution_layout(t);
    EXPECT_EQ(c.transposes, 1u) << transpose;
    EXPECT_FALSE(c.channels_last()) << transpose;
    EXPECT_EQ(c.evidence(), "") << transpose;
  }
}

}  // namespace
}  // namespace ferret
