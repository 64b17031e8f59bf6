#include "base/terminal_text.h"

#include <cstdint>

namespace ferret {

namespace {

constexpr char kHex[] = "0123456789abcdef";

void append_byte_escape(std::string& out, unsigned char byte) {
  switch (byte) {
    case '\n': out += "\\n"; return;
    case '\r': out += "\\r"; return;
    case '\t': out += "\\t"; return;
    default:
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
  }
}

void append_code_point_escape(std::string& out, std::uint32_t code_point) {
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(code_point >> shift) & 0xf];
}

// Length of the valid UTF-8 sequence at text[pos] (2 to 4) and its code point; 0 when the bytes
// there are not one (stray continuation, overlong form, surrogate, beyond U+10FFFF, cut short).
std::size_t decode_utf8(std::string_view text, std::size_t pos, std::uint32_t& code_point) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  std::size_t length;
  std::uint32_t min;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, min = 0x80, code_point = lead & 0x1f;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, min = 0x800, code_point = lead & 0x0f;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, min = 0x10000, code_point = lead & 0x07;
  } else {
    return 0;
  }
  if (pos + length > text.size()) return 0;
  for (std::size_t i = 1; i < length; ++i) {
    const auto c = static_cast<unsigned char>(text[pos + i]);
    if ((c & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (c & 0x3f);
  }
  if (code_point < min || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) return 0;
  return length;
}

bool is_c1_control(std::uint32_t cp) { return cp >= 0x80 && cp <= 0x9F; }
bool is_bidi_control(std::uint32_t cp) { return (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069); }

// Length of the Style colour sequence at text[pos] (ESC [ 0|1|2|31|32|33|36 m), or 0.
std::size_t style_sequence_length(std::string_view text, std::size_t pos) {
  for (std::string_view known : {"\x1b[0m", "\x1b[1m", "\x1b[2m", "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[36m"})
    if (text.substr(pos, known.size()) == known) return known.size();
  return 0;
}

}  // namespace

std::string terminal_safe(std::string_view text, TerminalTextRules rules) {
  std::string out;
  std::size_t copied = 0;  // text[copied, pos) is still to be appended verbatim
  std::size_t pos = 0;
  auto flush = [&](std::size_t upto) {
    if (out.empty()) out.reserve(text.size() + 16);
    out.append(text.data() + copied, upto - copied);
  };
  while (pos < text.size()) {
    const auto byte = static_cast<unsigned char>(text[pos]);
    if (byte >= 0x20 && byte < 0x7f) {
      ++pos;
      continue;
    }
    if (byte < 0x80) {  // C0 control or DEL
      if (rules.keep_line_breaks && (byte == '\n' || byte == '\t')) {
        ++pos;
        continue;
      }
      if (rules.keep_colour && byte == 0x1b) {
        if (const std::size_t sgr = style_sequence_length(text, pos); sgr > 0) {
          pos += sgr;
          continue;
        }
      }
      flush(pos);
      append_byte_escape(out, byte);
      copied = ++pos;
      continue;
    }
    std::uint32_t code_point = 0;
    const std::size_t length = decode_utf8(text, pos, code_point);
    if (length > 0 && !is_c1_control(code_point) && !is_bidi_control(code_point)) {
      pos += length;
      continue;
    }
    flush(pos);
    if (length == 0) {
      append_byte_escape(out, byte);
      copied = ++pos;
    } else {
      append_code_point_escape(out, code_point);
      copied = pos += length;
    }
  }
  if (copied == 0) return std::string(text);
  flush(text.size());
  return out;
}

}  // namespace ferret
