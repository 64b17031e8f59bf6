#include "base/text.h"

namespace ferret {

std::string fit_width(std::string_view text, std::size_t width) {
  if (text.size() <= width) return std::string(text);
  if (width <= 3) return std::string(text.substr(0, width));
  // Do not cut inside a UTF-8 sequence.
  std::size_t cut = width - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "...";
}

}  // namespace ferret
