#include "analysis/operator/input_shapes.h"

#include <limits>

namespace ferret {

namespace {

// A cursor over the JSON text; every step checks the end, so damaged text fails, never overruns.
struct Cursor {
  std::string_view text;
  std::size_t at = 0;
  void skip_spaces() {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\n' || text[at] == '\t' || text[at] == '\r')) ++at;
  }
  bool take(char c) {
    skip_spaces();
    if (at < text.size() && text[at] == c) {
      ++at;
      return true;
    }
    return false;
  }
  bool done() {
    skip_spaces();
    return at == text.size();
  }
};

// Dims beyond 2^62 are not shapes a profiler records: refused rather than overflowed.
constexpr std::int64_t kMaxDim = std::int64_t{1} << 62;

bool parse_shape(Cursor& c, Shape& out) {
  if (!c.take('[')) return false;
  if (c.take(']')) return true;
  while (true) {
    c.skip_spaces();
    std::int64_t value = 0;
    const std::size_t start = c.at;
    while (c.at < c.text.size() && c.text[c.at] >= '0' && c.text[c.at] <= '9') {
      // Checked before the multiply, which would overflow an int64 past this.
      if (value > (std::numeric_limits<std::int64_t>::max() - 9) / 10) return false;
      value = value * 10 + (c.text[c.at] - '0');
      if (value > kMaxDim) return false;
      ++c.at;
    }
    if (c.at == start) return false;
    out.push_back(value);
    if (c.take(']')) return true;
    if (!c.take(',')) return false;
  }
}

bool parse_string(Cursor& c, std::string& out) {
  if (!c.take('"')) return false;
  while (c.at < c.text.size()) {
    const char ch = c.text[c.at++];
    if (ch == '"') return true;
    if (ch == '\\') {
      if (c.at == c.text.size()) return false;
      out += c.text[c.at++];
      continue;
    }
    out += ch;
  }
  return false;
}

// "[item, item, ...]" with nothing after it, each item read by `parse_item`.
template <class Item, class ParseItem>
std::optional<std::vector<Item>> parse_list(std::string_view text, ParseItem parse_item) {
  Cursor c{text};
  std::vector<Item> items;
  if (!c.take('[')) return std::nullopt;
  if (!c.take(']')) {
    while (true) {
      Item item;
      if (!parse_item(c, item)) return std::nullopt;
      items.push_back(std::move(item));
      if (c.take(']')) break;
      if (!c.take(',')) return std::nullopt;
    }
  }
  if (!c.done()) return std::nullopt;
  return items;
}

}  // namespace

std::optional<std::vector<Shape>> parse_input_dims(std::string_view text) {
  return parse_list<Shape>(text, parse_shape);
}

std::optional<std::vector<std::string>> parse_input_types(std::string_view text) {
  return parse_list<std::string>(text, parse_string);
}

std::int64_t element_count(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / d) return std::numeric_limits<std::int64_t>::max();
    n *= d;
  }
  return n;
}

}  // namespace ferret
