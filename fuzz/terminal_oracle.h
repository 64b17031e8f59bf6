// The fuzzers' terminal-safety oracle: text and Markdown that ferret renders without colour may
// hold '\n' and '\t' and nothing else a terminal acts on (docs/RELIABILITY.md, terminal safety).
// A violation aborts, so libFuzzer keeps the input as a crash.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace ferret::fuzz {

inline void require_terminal_safe(std::string_view out, const char* what) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto c = static_cast<unsigned char>(out[i]);
    const bool c0 = c < 0x20 && c != '\n' && c != '\t';
    const bool c1 = c == 0xc2 && i + 1 < out.size() && static_cast<unsigned char>(out[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(out[i + 1]) <= 0x9f;
    if (c0 || c == 0x7f || c1) {
      std::fprintf(stderr, "%s: raw control byte 0x%02x at offset %zu\n", what, c1 ? out[i + 1] & 0xff : c, i);
      std::abort();
    }
  }
}

}  // namespace ferret::fuzz
