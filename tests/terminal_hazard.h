// What a terminal would act on in ferret's output, for the tests of terminal safety (the CLI
// tests and the broken-input suite).
#pragma once

#include <string>
#include <string_view>

namespace ferret::test {

// What in `text` a terminal would act on, or "" when nothing: a C0 control other than '\n' and
// '\t', DEL, a C1 control (U+0080-U+009F), a bidi control (U+202A-U+202E, U+2066-U+2069), a byte
// that is not valid UTF-8 (a lone 0x9b is CSI to an 8-bit terminal), or a line that starts (after
// indentation, '|', '>', '-' or '*') with `forged`. The description names the byte and its
// offset, or the line.
inline std::string terminal_hazard(const std::string& text, const std::string& forged = "FORGED") {
  auto hazard = [](unsigned char byte, std::size_t at) {
    return "raw byte 0x" + std::string(1, "0123456789abcdef"[byte >> 4]) + "0123456789abcdef"[byte & 0xf] +
           " at offset " + std::to_string(at);
  };
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) return hazard(c, i);
      ++i;
      continue;
    }
    // A UTF-8 sequence: its length from the lead byte, then continuation bytes 10xxxxxx.
    const std::size_t length = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    bool valid = length > 0 && i + length <= text.size();
    for (std::size_t k = 1; valid && k < length; ++k) valid = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
    if (!valid) return hazard(c, i);  // e.g. a lone 0x9b, CSI to an 8-bit terminal
    if (c == 0xc2 && static_cast<unsigned char>(text[i + 1]) <= 0x9f)
      return "C1 control at offset " + std::to_string(i);
    const std::string_view sequence(text.data() + i, length);
    for (const char* bidi : {"\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"})
      if (sequence == bidi) return "bidi control at offset " + std::to_string(i);
    i += length;
  }
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    const std::size_t first = line.find_first_not_of(" \t|>-*");
    if (first != std::string::npos && line.compare(first, forged.size(), forged) == 0) return "forged line: " + line;
    start = end + 1;
  }
  return "";
}

}  // namespace ferret::test
