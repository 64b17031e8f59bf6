// Text helpers every stage uses.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ferret {

// Without leading and trailing ASCII whitespace (space, \t, \n, \v, \f, \r).
std::string_view trim(std::string_view text);

// Whether `part` occurs in `text` (std::string_view::contains is C++23).
inline bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

// Cut with "..." to fit `width` bytes, never inside a UTF-8 sequence. Control characters are
// escaped first (base/terminal_text.h; Style's colours kept): fit_width is how the text reports
// show names, and a name must not act on the terminal or start a line of its own.
std::string fit_width(std::string_view text, std::size_t width);

// The candidate nearest to `word` by edit distance (Levenshtein, case-sensitive), when it is
// close enough to be a typo: at most max(2, size / 3) edits, or `word` is a prefix of it. ""
// when none is ("analyz" -> "analyze").
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace ferret
