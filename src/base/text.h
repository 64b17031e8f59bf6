// Text helpers every stage uses.
#pragma once

#include <string>
#include <string_view>

namespace ferret {

// Cut with "..." to fit `width` bytes, never inside a UTF-8 sequence. Control characters are
// escaped first (base/terminal_text.h; Style's colours kept): fit_width is how the text reports
// show names, and a name must not act on the terminal or start a line of its own.
std::string fit_width(std::string_view text, std::size_t width);

}  // namespace ferret
