// Formatting shared by the renderers: units, truncation to a width, Markdown escaping, colour.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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
// A p-value in two significant digits, never an exponent: "0.034", "< 0.0001"; "-" for NaN.
std::string p_value_text(double p);
// The same as a statement: "p = 0.034", "p < 0.0001".
std::string p_equals_text(double p);
// Wraps `text` at spaces to `width` columns, each line prefixed by `indent` and ending in '\n'.
// fit_width (base/text.h) and wrap are the text renderers' entry points for names and sentences
// holding names: both escape control characters first (base/terminal_text.h), keeping only
// Style's own colours, so a name cannot act on the terminal or start a report line of its own.
std::string wrap(std::string_view text, std::size_t width, const std::string& indent);

// Escapes trace text for Markdown (and the HTML it becomes): a kernel named "<script>" or
// "a|b*c" stays literal text and cannot break a table; control characters become visible escapes
// (base/terminal_text.h), so a '\n' cannot end a table row. Backtick code spans stay code (a fix
// such as `` `torch.backends.cuda.matmul.allow_tf32 = True` `` is not escaped inside): a span
// is a run of N backticks closed by the next run of exactly N (CommonMark); its text is written
// with markdown_code. A backtick with no closing run is escaped. `in_table`: the text goes into a
// table cell, where GFM splits cells on '|' even inside code, so it is escaped there too; in
// prose (paragraphs, list items) a backslash in code would show, so '|' in code stays as is.
std::string escape_markdown(std::string_view text, bool in_table = true);
// `text` as one Markdown code span, whatever it holds: the fence is one backtick longer than the
// longest backtick run inside (so the text cannot close it), padded with a space when the text
// starts or ends with a backtick; '|' escaped when `in_table`.
std::string markdown_code(std::string_view text, bool in_table = true);

// A number for people: no exponent ("12345", "0.25", "<0.001"), integers without decimals.
std::string human_number(double v);
// A finding's evidence value in its unit: counts as integers, "bytes" via human_bytes, "ms" /
// "us" / "s" via human_duration, "%" and "GB/s" with one decimal.
std::string evidence_value_text(double value, std::string_view unit);

// Names for one table column `width` wide: each cut to the width as fit_width does, except
// that names which would cut to the same text keep their head and the part that tells them
// apart ("void at::native::elementwise_kernel<128, 4, ...A>" / "...B>"), joined by "...".
std::vector<std::string> fit_names(const std::vector<std::string>& names, std::size_t width);

// The text reports' layout width when neither --width nor COLUMNS says otherwise.
inline constexpr std::size_t kDefaultTextWidth = 80;
// The narrowest and widest layouts the text reports accept (--width is checked against them).
inline constexpr std::size_t kMinTextWidth = 40;
inline constexpr std::size_t kMaxTextWidth = 1000;

// How a text report is laid out: ANSI styles (empty strings when colour is off: not a terminal,
// or NO_COLOR is set) and the width in columns that lines wrap and tables fit to.
struct Style {
  bool enabled = false;
  std::size_t width = kDefaultTextWidth;
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

// The last step of every text and Markdown report the library returns. wrap, fit_width and the
// tables keep Style's colour sequences wherever they appear, so a name holding "ESC [ 1 m" would
// pass them too; with colour off no ESC belongs in the report, and this pass escapes every one
// left. The CLI's stdout sink does the same; this makes the library's own output safe for a
// caller that prints it.
std::string finish_text(std::string_view report, const Style& st);
std::string finish_text(std::string_view report);  // uncoloured text and Markdown

}  // namespace ferret
