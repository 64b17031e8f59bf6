#include "report/format.h"

#include <algorithm>
#include <cmath>

#include <unistd.h>

#include <cctype>
#include <cstdlib>

#include <fmt/format.h>

#include "base/terminal_text.h"

namespace ferret {

namespace {

std::size_t backtick_run(std::string_view text, std::size_t at) {
  std::size_t n = 0;
  while (at + n < text.size() && text[at + n] == '`') ++n;
  return n;
}

// Where the run of exactly `length` backticks that closes a span opened before `from` starts;
// npos when there is none.
std::size_t closing_run(std::string_view text, std::size_t from, std::size_t length) {
  while (from < text.size()) {
    if (text[from] != '`') {
      ++from;
      continue;
    }
    const std::size_t run = backtick_run(text, from);
    if (run == length) return from;
    from += run;
  }
  return std::string_view::npos;
}

// Markdown's code span of already terminal-safe text.
std::string code_span(std::string_view text, bool in_table) {
  std::size_t longest = 0;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t run = backtick_run(text, i);
    longest = std::max(longest, run);
    i += run > 0 ? run : 1;
  }
  const std::string fence(longest + 1, '`');
  const bool pad = !text.empty() && (text.front() == '`' || text.back() == '`');
  std::string out = fence + (pad ? " " : "");
  for (char c : text) {
    if (c == '|' && in_table) out += '\\';
    out += c;
  }
  return out + (pad ? " " : "") + fence;
}

}  // namespace

std::string markdown_code(std::string_view untrusted, bool in_table) {
  return code_span(terminal_safe(untrusted), in_table);
}

std::string escape_markdown(std::string_view untrusted, bool in_table) {
  // Control characters first: their escapes' backslashes are then escaped for Markdown, so
  // "\x1b" is what the rendered page shows.
  const std::string text = terminal_safe(untrusted);
  std::string out;
  out.reserve(text.size() + 8);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '`') {
      const std::size_t run = backtick_run(text, i);
      const std::size_t close = closing_run(text, i + run, run);
      if (close != std::string_view::npos) {
        out += code_span(std::string_view(text).substr(i + run, close - i - run), in_table);
        i = close + run - 1;
        continue;
      }
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '|': out += "\\|"; break;
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':
      case ']':
      case '#':
      case '~':
      case '!':
        out += '\\';
        out += c;
        break;
      default: out += c;
    }
  }
  return out;
}

Style style_for_fd(int fd) {
  Style s;
  const char* no_color = std::getenv("NO_COLOR");
  s.enabled = ::isatty(fd) && !(no_color && *no_color);
  return s;
}

double round2(double v) { return std::round(v * 100.0) / 100.0; }
double round3(double v) { return std::round(v * 1000.0) / 1000.0; }

std::string percent_text(double fraction) {
  return std::isfinite(fraction) ? fmt::format("{:.1f}%", fraction * 100) : std::string("n/a");
}

std::string p_value_text(double p) {
  if (std::isnan(p)) return "-";
  // Below 0.0001 "{:.2g}" would switch to an exponent ("1.2e-05").
  if (p < 0.0001) return "< 0.0001";
  return fmt::format("{:.2g}", p);
}

std::string p_equals_text(double p) {
  const std::string value = p_value_text(p);
  return value.front() == '<' ? "p " + value : "p = " + value;
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string finish_text(std::string_view report, const Style& st) {
  return terminal_safe(report, {.keep_line_breaks = true, .keep_colour = st.enabled});
}

std::string finish_text(std::string_view report) { return terminal_safe(report, {.keep_line_breaks = true}); }

std::string wrap(std::string_view untrusted, std::size_t width, const std::string& indent) {
  const std::string safe = terminal_safe(untrusted, {.keep_colour = true});
  const std::string_view text = safe;
  std::string out, line;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t next = text.find(' ', pos);
    if (next == std::string_view::npos) next = text.size();
    std::string_view word = text.substr(pos, next - pos);
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
      out += indent + line + "\n";
      line.clear();
    }
    // A word longer than a whole line (a kernel's template arguments) is cut into lines of the
    // width, unless it holds a colour code (which takes bytes but no columns).
    const std::size_t room = width > indent.size() + 8 ? width - indent.size() : 8;
    while (line.empty() && word.size() > room && word.find('\033') == std::string_view::npos) {
      std::size_t cut = room;
      while (cut > 1 && (static_cast<unsigned char>(word[cut]) & 0xC0) == 0x80) --cut;  // not inside UTF-8
      out += indent + std::string(word.substr(0, cut)) + "\n";
      word.remove_prefix(cut);
    }
    if (!line.empty()) line += ' ';
    line += word;
    pos = next + 1;
  }
  if (!line.empty()) out += indent + line + "\n";
  return out;
}

}  // namespace ferret

namespace ferret {

std::string human_number(double v) {
  if (!std::isfinite(v)) return "n/a";
  const double a = std::fabs(v);
  if (a == 0) return "0";
  if (a < 0.001) return v < 0 ? "-<0.001" : "<0.001";
  if (a >= 100 || (a < 1e15 && v == std::round(v))) return fmt::format("{:.0f}", v);
  if (a >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.3g}", v);  // 0.001 <= a < 10: no exponent at 3 digits
}

std::string evidence_value_text(double value, std::string_view unit) {
  if (!std::isfinite(value)) return "n/a";
  if (unit == "count") return human_number(std::round(value));
  if (unit == "bytes") return value < 0 ? human_number(value) : human_bytes(static_cast<std::uint64_t>(value));
  double ns_per_unit = 0;
  if (unit == "ms") ns_per_unit = 1e6;
  if (unit == "us") ns_per_unit = 1e3;
  if (unit == "s") ns_per_unit = 1e9;
  if (ns_per_unit > 0) return human_duration(static_cast<std::int64_t>(std::llround(value * ns_per_unit)));
  if (unit == "%") return fmt::format("{:.1f}%", value);
  if (unit == "GB/s") return fmt::format("{:.1f} GB/s", value);
  if (unit.empty()) return human_number(value);
  return human_number(value) + " " + std::string(unit);
}

namespace {

// A cut that does not split a UTF-8 sequence: moved back to the sequence's first byte.
std::size_t char_boundary(std::string_view text, std::size_t at) {
  while (at > 0 && at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) --at;
  return at;
}

std::size_t common_prefix(std::string_view a, std::string_view b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// `name` in `width` columns showing its head and the text from `differs` on, where it first
// differs from a name that would otherwise print the same. The shown part starts at the token
// holding the difference (after the last ' ', ',', '<', '(' or '[' within 24 bytes).
std::string fit_around(std::string_view name, std::size_t differs, std::size_t width) {
  constexpr std::string_view kCut = "...";
  std::size_t from = differs;
  for (std::size_t back = 0; back < 24 && from > 0; ++back) {
    const char c = name[from - 1];
    if (c == ' ' || c == ',') break;
    if (c == '<' || c == '(' || c == '[') {
      --from;  // the bracket opens the part shown: "...[16, 128]"
      break;
    }
    --from;
  }
  from = char_boundary(name, from);
  const std::string_view tail = name.substr(from);
  const std::size_t min_head = std::min<std::size_t>(width / 3, from);
  if (tail.size() + kCut.size() + min_head <= width) {
    const std::size_t head = char_boundary(name, width - kCut.size() - tail.size());
    return std::string(name.substr(0, head)) + std::string(kCut) + std::string(tail);
  }
  const std::size_t head = char_boundary(name, min_head);
  const std::size_t room = width - head - 2 * kCut.size();
  return std::string(name.substr(0, head)) + std::string(kCut) +
         std::string(tail.substr(0, char_boundary(tail, room))) + std::string(kCut);
}

}  // namespace

std::vector<std::string> fit_names(const std::vector<std::string>& names, std::size_t width) {
  std::vector<std::string> safe, out;
  safe.reserve(names.size());
  out.reserve(names.size());
  for (const std::string& n : names) {
    safe.push_back(terminal_safe(n, {.keep_colour = true}));
    out.push_back(fit_width(safe.back(), width));
  }
  if (width < 16) return out;  // too narrow to show two parts
  const std::vector<std::string> plain = out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (safe[i].size() <= width) continue;
    std::size_t differs = 0;  // where it first differs from the nearest name that cuts the same
    bool clash = false;
    for (std::size_t j = 0; j < names.size(); ++j) {
      if (j == i || plain[j] != plain[i] || safe[j] == safe[i]) continue;
      clash = true;
      differs = std::max(differs, common_prefix(safe[i], safe[j]));
    }
    if (clash) out[i] = fit_around(safe[i], differs, width);
  }
  return out;
}

}  // namespace ferret
