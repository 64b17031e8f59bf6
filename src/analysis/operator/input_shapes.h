// The shapes and dtypes torch.profiler records on an operator (record_shapes=True), parsed from
// their JSON text: "Input Dims" [[16, 5185, 64], [16, 64, 5185], []] and "Input type"
// ["c10::BFloat16", "float", "Scalar"]. One entry per input, in order; a non-tensor input is an
// empty shape (and its type is whatever torch wrote: "Scalar", "ScalarList", "").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ferret {

using Shape = std::vector<std::int64_t>;

// nullopt when the text is not a list of lists of non-negative integers (a trace from a torch that
// writes something else, or damage): the caller then knows nothing of the shapes, never a guess.
std::optional<std::vector<Shape>> parse_input_dims(std::string_view text);
// The strings of "Input type"; nullopt when the text is not a list of strings.
std::optional<std::vector<std::string>> parse_input_types(std::string_view text);

// (Bytes per element of a dtype: dtype_size in analysis/timeline/communication.h.)
std::int64_t element_count(const Shape& shape);  // 1 for a 0-d tensor; saturates at INT64_MAX

}  // namespace ferret
