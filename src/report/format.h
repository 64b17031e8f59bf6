// Formatting shared by the renderers: units, truncation to a width, Markdown escaping, colour.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/text.h"
#include "base/units.h"

namespace ferret {

std::string upper(std::string_view text);  // ASCII upper case

// JSON numbers carry 2 or 3 decimals: enough for microseconds and percentages, and stable
// across platforms in the tests' byte comparisons.
double round2(double v);
double round3(double v);
// "12.3%" of a fraction (0.123), "n/a" when it is NaN or infinite.
std::string percent_text(double fraction);
// Wraps `text` at spaces to `width` columns, each line prefixed by `indent` and ending in '\n'.
// fit_width (base/text.h) and wrap are the text renderers' entry points for names and sentences
// holding names: both escape control characters first (base/terminal_text.h), keeping only
// Style's own colours, so a name cannot act on the terminal or start a report line of its own.
std::string wrap(std::string_view text, std::size_t width, const std::string& indent);

// Escapes trace text for Markdown (and the HTML it becomes): a kernel named "<script>" or
// "a|b*c" stays literal text and cannot break a table; control characters become visible escapes
// (base/terminal_text.h), so a '\n' cannot end a table row.
std::string escape_markdown(std::string_view text);

// ANSI styles, empty strings when colour is off (not a terminal, or NO_COLOR is set).
struct Style {
  bool enabled = false;
  const char* bold() const { return enabled ? "\033[1m" : ""; }
  const char* dim() const { return enabled ? "\033[2m" : ""; }
  const char* red() const { return enabled ? "\033[31m" : ""; }
  const char* yellow() const { return enabled ? "\033[33m" : ""; }
  const char* green() const { return enabled ? "\033[32m" : ""; }
  const char* cyan() const { return enabled ? "\033[36m" : ""; }
  const char* reset() const { return enabled ? "\033[0m" : ""; }
};
// Colour on when `fd` is a terminal and NO_COLOR is unset (https://no-color.org).
Style style_for_fd(int fd);

}  // namespace ferret
