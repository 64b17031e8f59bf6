// Text helpers every stage uses.
#pragma once

#include <string>
#include <string_view>

namespace ferret {

// Cut with "..." to fit `width` bytes, never inside a UTF-8 sequence.
std::string fit_width(std::string_view text, std::size_t width);

}  // namespace ferret
