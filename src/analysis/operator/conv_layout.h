// The memory format the convolutions run in: whether the model is already channels-last, so that
// no rule asks for it again. Two clues, the first that answers wins:
//   strides  "Input Strides" (torch 2.1+ with record_shapes) of each convolution call's input:
//            channels-last when the channel dimension is the innermost (stride 1, with C > 1 and
//            the width's stride C), NCHW otherwise;
//   kernels  without strides, convolution kernels that name an NHWC layout ("..._nhwckrsc_nhwc_",
//            MIOpen's "igemm_fwd_gtcx3_nhwc_") with no layout transposes beside them: cuDNN and
//            MIOpen transpose NCHW inputs around NHWC kernels (nchwToNhwcKernel,
//            transpose_NCHW2CNHW), so NHWC kernels alone mean NHWC tensors.
#pragma once

#include <cstdint>
#include <string>

#include "model/trace_model.h"

namespace ferret {

struct ConvolutionLayout {
  // Outermost convolution op calls whose input's 4-D or 5-D shape and strides were recorded, and
  // of those the channels-last ones.
  std::uint64_t calls = 0;
  std::uint64_t channels_last_calls = 0;
  std::string example;  // a call of the majority's layout: "aten::convolution input [10, 256, 14, 14], strides [...]"
  std::int64_t nhwc_kernel_ns = 0;  // convolution kernels naming an NHWC layout
  std::uint64_t transposes = 0;     // NCHW <-> NHWC layout transpose kernels
  std::int64_t transpose_ns = 0;
  std::string nhwc_kernel;  // the first NHWC kernel seen

  bool by_strides() const { return calls > 0; }
  // The model runs channels-last: by strides where recorded, else by kernels.
  bool channels_last() const {
    return by_strides() ? channels_last_calls * 2 > calls : nhwc_kernel_ns > 0 && transposes == 0;
  }
  // Evidence in words: "inputs are channels-last (...)", "inputs are NCHW (...)", "convolution
  // kernels run NHWC (...) with no layout transposes"; empty when neither clue is in the trace.
  std::string evidence() const;
};

// The layout of the trace's convolutions (all devices, the whole trace: a model's memory format
// does not change between steps).
ConvolutionLayout convolution_layout(const TraceModel& model);

// NCHW <-> NHWC transpose kernels of cuDNN (nchwToNhwcKernel, nhwcToNchwKernel) and MIOpen
// (transpose_NCHW2CNHW, transpose_CNHW2NCHW, transpose_NHWC2NCHW, ...).
bool is_layout_transpose_kernel(std::string_view kernel_name);

}  // namespace ferret
