#include "report/format.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>

#include <fmt/format.h>

namespace ferret {

std::string human_bytes(std::uint64_t b) {
  if (b >= (1ull << 30)) return fmt::format("{:.2f} GiB", static_cast<double>(b) / double(1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(b) / double(1ull << 20));
  if (b >= (1ull << 10)) return fmt::format("{:.1f} KiB", static_cast<double>(b) / double(1ull << 10));
  return fmt::format("{} B", b);
}

std::string human_duration(std::int64_t ns) {
  const double v = static_cast<double>(ns);
  const std::int64_t mag = ns < 0 ? -ns : ns;
  if (mag >= 1000000000) return fmt::format("{:.3f} s", v / 1e9);
  if (mag >= 1000000) return fmt::format("{:.3f} ms", v / 1e6);
  if (mag >= 1000) return fmt::format("{:.3f} us", v / 1e3);
  return fmt::format("{} ns", ns);
}

std::string fit_width(std::string_view text, std::size_t width) {
  if (text.size() <= width) return std::string(text);
  if (width <= 3) return std::string(text.substr(0, width));
  // Do not cut inside a UTF-8 sequence.
  std::size_t cut = width - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "...";
}

std::string escape_markdown(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '|': out += "\\|"; break;
      case '\n':
      case '\r': out += ' '; break;
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

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string wrap(std::string_view text, std::size_t width, const std::string& indent) {
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
