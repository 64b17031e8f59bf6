#include "base/text.h"

#include <algorithm>

#include "base/terminal_text.h"

namespace ferret {

namespace {
bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }
}  // namespace

std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

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

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  if (word.empty() || word.size() > 256) return "";
  const std::size_t allowed = std::max<std::size_t>(2, word.size() / 3);
  std::string best;
  std::size_t best_distance = allowed + 1;
  for (const std::string& c : candidates) {
    const std::size_t d = c.starts_with(word) ? 1 : edit_distance(word, c);
    if (d < best_distance) best_distance = d, best = c;
  }
  return best;
}

std::size_t json_nesting_depth(std::string_view json, std::size_t limit) {
  std::size_t depth = 0, deepest = 0;
  JsonStringState strings;
  for (const char c : json) {
    if (strings.feed(c)) continue;
    if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

std::optional<std::string> decode_json_key(std::string_view raw) {
  std::string out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i >= raw.size()) return std::nullopt;
    const char e = raw[i];
    if (e == '"' || e == '\\' || e == '/') {
      out += e;
      continue;
    }
    if (e != 'u' || raw.size() - i - 1 < 4) return std::nullopt;
    unsigned code = 0;
    for (std::size_t k = 1; k <= 4; ++k) {
      const char h = raw[i + k];
      const int v = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
      if (v < 0) return std::nullopt;
      code = code * 16 + static_cast<unsigned>(v);
    }
    if (code < 0x20 || code > 0x7e) return std::nullopt;
    out += static_cast<char>(code);
    i += 4;
  }
  return out;
}

}  // namespace ferret
