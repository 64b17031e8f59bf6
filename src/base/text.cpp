#include "base/text.h"

#include "base/terminal_text.h"

namespace ferret {

namespace {
bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }
}  // namespace

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_ascii_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ascii_space(s.back())) s.remove_suffix(1);
  return s;
}

std::string fit_width(std::string_view untrusted, std::size_t width) {
  const std::string safe = terminal_safe(untrusted, {.keep_colour = true});
  const std::string_view text = safe;
  if (text.size() <= width) return safe;
  if (width <= 3) return std::string(text.substr(0, width));
  // Do not cut inside a UTF-8 sequence.
  std::size_t cut = width - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "...";
}

}  // namespace ferret
