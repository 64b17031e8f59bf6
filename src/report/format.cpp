#include "report/format.h"

#include <cmath>

#include <unistd.h>

#include <cctype>
#include <cstdlib>

#include <fmt/format.h>

#include "base/terminal_text.h"

namespace ferret {

std::string escape_markdown(std::string_view untrusted) {
  // Control characters first: their escapes' backslashes are then escaped for Markdown, so
  // "\x1b" is what the rendered page shows.
  const std::string text = terminal_safe(untrusted);
  std::string out;
  out.reserve(text.size() + 8);
  for (char c : text) {
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

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string wrap(std::string_view untrusted, std::size_t width, const std::string& indent) {
  const std::string safe = terminal_safe(untrusted, {.keep_colour = true});
  const std::string_view text = safe;
  std::string out, line;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t next = text.find(' ', pos);
    if (next == std::string_view::npos) next = text.size();
    const std::string_view word = text.substr(pos, next - pos);
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
      out += indent + line + "\n";
      line.clear();
    }
    if (!line.empty()) line += ' ';
    line += word;
    pos = next + 1;
  }
  if (!line.empty()) out += indent + line + "\n";
  return out;
}

}  // namespace ferret
