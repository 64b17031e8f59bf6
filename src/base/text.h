// Text helpers every stage uses.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ferret {

// Without leading and trailing ASCII whitespace (space, \t, \n, \v, \f, \r).
std::string_view trim(std::string_view text);

// ASCII letters lowered, other bytes as they are (names and units, never locale-dependent).
std::string ascii_lower(std::string_view text);

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

// Whether a byte of JSON text, fed one at a time, lies inside a string (its quotes included): the
// escape rule every scanner of raw JSON text needs, in one place.
struct JsonStringState {
  bool in_string = false;
  bool escaped = false;
  bool feed(char c) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      return true;
    }
    if (c == '"') in_string = true;
    return in_string;
  }
};

// How deeply the arrays and objects of JSON text nest (brackets inside strings not counted),
// without recursion; counting stops past `limit`. Checked before a document is parsed into a tree
// that code walks recursively: a 40,000-deep list would overflow the stack.
std::size_t json_nesting_depth(std::string_view json, std::size_t limit);

// A JSON string's text as written (without its quotes) decoded, when every escape in it stands
// for printable ASCII (\" \\ \/ and \u0020-\u007e); nullopt otherwise (a control character, a
// code point past ASCII, a broken escape): such a key matches no name ferret looks for.
std::optional<std::string> decode_json_key(std::string_view raw);

}  // namespace ferret
