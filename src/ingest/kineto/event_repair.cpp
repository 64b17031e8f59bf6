#include "ingest/kineto/event_repair.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "ingest/kineto/decimal.h"

namespace ferret {

namespace {

bool is_number_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '+' || c == '-';
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if ((a[i] | 0x20) != b[i]) return false;
  return true;
}

// A bare token outside strings in standard JSON form, or "" when it is not a number JSON forbids.
std::string standard_number(std::string_view token) {
  std::string_view t = token;
  const bool negative = !t.empty() && t[0] == '-';
  if (!t.empty() && (t[0] == '-' || t[0] == '+')) t.remove_prefix(1);
  std::size_t digits = 0;
  while (digits < t.size() && t[digits] >= '0' && t[digits] <= '9') ++digits;
  std::string_view int_part = t.substr(0, digits), rest = t.substr(digits);
  while (int_part.size() > 1 && int_part[0] == '0') int_part.remove_prefix(1);
  std::string out = negative ? "-" : "";
  out += int_part.empty() ? "0" : std::string(int_part);
  if (!rest.empty() && rest[0] == '.') {
    std::size_t frac = 1;
    while (frac < rest.size() && rest[frac] >= '0' && rest[frac] <= '9') ++frac;
    out += frac == 1 ? ".0" : std::string(rest.substr(0, frac));
    rest.remove_prefix(frac);
  }
  out += rest;  // an exponent, or junk that the parser will reject anyway
  return out;
}

}  // namespace

// In-place repairs that keep the event's length: raw control characters become spaces (outside
// strings they were whitespace anyway) and bytes of invalid UTF-8 sequences become '?'.
void repair_bytes(char* p, std::size_t n, bool& changed_control, bool& changed_utf8) {
  auto* s = reinterpret_cast<unsigned char*>(p);
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x20) {
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') changed_control = true;
      // Newlines/tabs inside strings are invalid too: a space is safe in both places.
      if (c == '\n' || c == '\r' || c == '\t') {
        ++i;
        continue;
      }
      s[i++] = ' ';
      continue;
    }
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0)
      len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0)
      len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0)
      len = 4, cp = c & 0x07;
    bool ok = len != 0 && i + len <= n;
    for (std::size_t k = 1; ok && k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80)
        ok = false;
      else
        cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (ok) {
      // Reject overlong forms, surrogates and values past U+10FFFF as simdjson does.
      if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
          (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        ok = false;
    }
    if (!ok) {
      s[i++] = '?';
      changed_utf8 = true;
      continue;
    }
    i += len;
  }
}

// Rewrites what JSON forbids but a hand-edited or foreign writer's trace may hold into strict JSON:
// NaN/Infinity become null, non-standard numbers their standard form, and a missing comma between
// fields or elements is put in. Runs only after an event failed to parse, so clean traces never
// pay for it. Strings are copied untouched.
std::string lenient_rewrite(std::string_view in, LenientFixes& fixes) {
  std::string out;
  out.reserve(in.size() + 16);
  std::vector<char> open;  // '{' or '['
  char last = 0;           // '{', '[', ',', ':', 'k' (a key ended), 'v' (a value ended)
  std::string_view key;
  auto value_starts = [&] {
    if (last == 'v' && !open.empty()) {
      out += ',';
      ++fixes.missing_commas;
      last = ',';
    }
  };
  std::size_t i = 0;
  while (i < in.size()) {
    const char c = in[i];
    if (c == '"') {
      value_starts();
      const bool is_key = !open.empty() && open.back() == '{' && (last == '{' || last == ',');
      std::size_t j = i + 1;
      while (j < in.size() && in[j] != '"') j += in[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, in.size());
      out.append(in.substr(i, j - i));
      if (is_key) key = in.substr(i + 1, j - i - 2 < in.size() ? j - i - 2 : 0);
      last = is_key ? 'k' : 'v';
      i = j;
    } else if (is_number_char(c)) {
      value_starts();
      std::size_t j = i;
      while (j < in.size() && is_number_char(in[j])) ++j;
      std::string_view token = in.substr(i, j - i), unsigned_token = token;
      if (token[0] == '-' || token[0] == '+') unsigned_token.remove_prefix(1);
      if (equals_ignoring_case(unsigned_token, "nan") || equals_ignoring_case(unsigned_token, "inf") ||
          equals_ignoring_case(unsigned_token, "infinity")) {
        out += "null";
        ++(key == "correlation" || key == "External id" || key == "external id" ? fixes.nan_ids : fixes.nan_values);
      } else if (token == "true" || token == "false" || token == "null" || !is_lenient_number(token)) {
        out.append(token);
      } else {
        out += standard_number(token);
        ++fixes.numbers;
      }
      last = 'v';
      i = j;
    } else {
      if (c == '{' || c == '[') {
        value_starts();
        open.push_back(c);
        last = c;
      } else if (c == '}' || c == ']') {
        if (!open.empty()) open.pop_back();
        last = 'v';
      } else if (c == ',' || c == ':') {
        last = c;
      }
      out += c;
      ++i;
    }
  }
  return out;
}

// Raw newlines inside strings are invalid JSON; after the first failed parse, turn every
// remaining control character (including \n, \r, \t) into a space.
void blank_all_controls(char* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (static_cast<unsigned char>(p[i]) < 0x20) p[i] = ' ';
}

std::string unknown_phase_reason(char ph, bool one_char) {
  // One reason per printable character at most, so hostile phases cannot grow the tally.
  if (one_char && ph > ' ' && ph < 0x7f)
    return fmt::format("unknown \"ph\" '{}': event kept as kind other (no analysis reads it)", ph);
  return "unknown \"ph\" (empty, several characters or not printable): event kept as kind other (no analysis "
         "reads it)";
}

}  // namespace ferret
