#include "analysis/operator/conv_layout.h"

#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "analysis/operator/tensor_cores.h"
#include "base/text.h"

namespace ferret {

namespace {

bool is_convolution_op_name(std::string_view n) {
  return contains(n, "convolution") || contains(n, "conv1d") || contains(n, "conv2d") || contains(n, "conv3d") ||
         contains(n, "conv_transpose");
}

// The first argument's dims and strides, when both are a flat list of 4 or 5 integers.
bool first_input(std::string_view dims_text, std::string_view strides_text, std::vector<std::int64_t>& dims,
                 std::vector<std::int64_t>& strides) {
  const nlohmann::json d = nlohmann::json::parse(dims_text, nullptr, false);
  const nlohmann::json s = nlohmann::json::parse(strides_text, nullptr, false);
  if (!d.is_array() || !s.is_array() || d.empty() || s.empty() || !d[0].is_array() || !s[0].is_array()) return false;
  dims.clear();
  strides.clear();
  for (const nlohmann::json& v : d[0])
    if (v.is_number_integer()) dims.push_back(v.get<std::int64_t>());
  for (const nlohmann::json& v : s[0])
    if (v.is_number_integer()) strides.push_back(v.get<std::int64_t>());
  return (dims.size() == 4 || dims.size() == 5) && strides.size() == dims.size() && dims.size() == d[0].size() &&
         strides.size() == s[0].size();
}

}  // namespace

bool is_layout_transpose_kernel(std::string_view k) {
  return contains(k, "nchwToNhwc") || contains(k, "nhwcToNchw") || contains(k, "transpose_NCHW2") ||
         contains(k, "transpose_CNHW2") || contains(k, "transpose_NHWC2");
}

ConvolutionLayout convolution_layout(const TraceModel& model) {
  ConvolutionLayout out;
  // Per interned name: 0 unseen, 1 a convolution op, 2 other; for kernels 3 an NHWC convolution,
  // 4 a layout transpose, 5 other.
  std::vector<std::uint8_t> name_class(model.strings.size(), 0);
  auto op_class = [&](StrId id) {
    std::uint8_t& c = name_class[id];
    if (c == 0) c = is_convolution_op_name(model.strings.view(id)) ? 1 : 2;
    return c;
  };
  const Relations& rel = model.relations;
  std::string cl_example, nchw_example;
  std::vector<std::int64_t> dims, strides;
  for (std::size_t i = 0; i < model.op_args.size(); ++i) {
    const OpArgs& args = model.op_args[i];
    const EventIndex e = args.event;
    if (e >= model.size() || model.kind[e] != EventKind::kCpuOp || args.input_strides == kEmptyStr) continue;
    if (op_class(model.name[e]) != 1) continue;
    // The outermost convolution of a call (aten::conv2d > convolution > _convolution > cudnn_convolution).
    const EventIndex p = rel.built && e < rel.parent.size() ? rel.parent[e] : kNoEvent;
    if (p != kNoEvent && model.kind[p] == EventKind::kCpuOp && op_class(model.name[p]) == 1) continue;
    if (!first_input(model.strings.view(args.input_dims), model.strings.view(args.input_strides), dims, strides))
      continue;
    const std::size_t last = dims.size() - 1;
    const std::int64_t channels = dims[1];
    // Channels innermost; with one channel, or a 1x1 spatial extent, both layouts look alike.
    std::int64_t spatial = 1;
    for (std::size_t k = 2; k < dims.size(); ++k) spatial *= dims[k];
    if (channels <= 1 || spatial <= 1) continue;
    const bool channels_last = strides[1] == 1 && strides[last] == channels;
    ++out.calls;
    out.channels_last_calls += channels_last;
    std::string& example = channels_last ? cl_example : nchw_example;
    if (example.empty())
      example = fmt::format("{} input [{}], strides [{}]", model.strings.view(model.name[e]), fmt::join(dims, ", "),
                            fmt::join(strides, ", "));
  }
  out.example = out.channels_last() ? cl_example : nchw_example;

  std::vector<std::uint8_t> kernel_class(model.strings.size(), 0);
  for (std::size_t e = 0; e < model.size(); ++e) {
    if (model.kind[e] != EventKind::kKernel) continue;
    std::uint8_t& c = kernel_class[model.name[e]];
    if (c == 0) {
      const std::string_view n = model.strings.view(model.name[e]);
      c = is_layout_transpose_kernel(n) ? 4 : contains(ascii_lower(n), "nhwc") && is_matmul_or_conv_kernel(n) ? 3 : 5;
    }
    const std::int64_t d = std::max<std::int64_t>(0, model.dur_ns[e]);
    if (c == 3) {
      out.nhwc_kernel_ns += d;
      if (out.nhwc_kernel.empty()) out.nhwc_kernel = std::string(model.strings.view(model.name[e]).substr(0, 100));
    } else if (c == 4) {
      ++out.transposes;
      out.transpose_ns += d;
    }
  }
  return out;
}

std::string ConvolutionLayout::evidence() const {
  if (by_strides())
    return fmt::format("{} of {} convolution calls take {} inputs ({})",
                       channels_last() ? channels_last_calls : calls - channels_last_calls, calls,
                       channels_last() ? "channels-last" : "NCHW", example);
  if (nhwc_kernel_ns > 0 && transposes == 0)
    return fmt::format("the convolution kernels run NHWC ({}) with no layout transposes", nhwc_kernel);
  return {};
}

}  // namespace ferret
