#include "ingest/kineto/decimal.h"

namespace ferret {

namespace {

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Splits a JSON number into sign, digit string (integer+fraction, no dot) and a decimal exponent
// so that value = digits * 10^exponent. Returns false if the text is not a number.
struct DecimalParts {
  bool negative = false;
  std::string_view int_digits;
  std::string_view frac_digits;
  std::int64_t exponent = 0;  // from an 'e' suffix
};

bool split_number(std::string_view s, DecimalParts& out) {
  // Trailing whitespace comes with raw tokens.
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t'))
    s.remove_suffix(1);
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) {
    out.negative = s[i] == '-';
    ++i;
  }
  std::size_t start = i;
  while (i < s.size() && is_digit(s[i])) ++i;
  out.int_digits = s.substr(start, i - start);
  if (i < s.size() && s[i] == '.') {
    ++i;
    start = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    out.frac_digits = s.substr(start, i - start);
  }
  if (out.int_digits.empty() && out.frac_digits.empty()) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) exp_negative = s[i++] == '-';
    if (i >= s.size() || !is_digit(s[i])) return false;
    std::int64_t e = 0;
    while (i < s.size() && is_digit(s[i])) {
      if (e < 100000) e = e * 10 + (s[i] - '0');
      ++i;
    }
    out.exponent = exp_negative ? -e : e;
  }
  return i == s.size();
}

// Accumulates digits*10^(shift) into an unsigned integer with rounding of dropped digits.
DecimalStatus to_integer(const DecimalParts& p, std::int64_t shift, std::uint64_t limit, std::uint64_t& out) {
  // Position of the decimal point after shifting: keep (int_digits + shift) leading digits.
  std::uint64_t value = 0;
  bool rounded = false;
  const std::int64_t total = static_cast<std::int64_t>(p.int_digits.size() + p.frac_digits.size());
  const std::int64_t keep = static_cast<std::int64_t>(p.int_digits.size()) + shift;
  auto digit_at = [&](std::int64_t k) -> int {
    if (k < 0 || k >= total) return 0;
    const std::size_t idx = static_cast<std::size_t>(k);
    return idx < p.int_digits.size() ? p.int_digits[idx] - '0' : p.frac_digits[idx - p.int_digits.size()] - '0';
  };
  if (keep > 40) {
    // More than 40 integer digits: overflow unless every digit is zero.
    for (std::int64_t k = 0; k < total; ++k)
      if (digit_at(k) != 0) return DecimalStatus::kOverflow;
    out = 0;
    return DecimalStatus::kOk;
  }
  for (std::int64_t k = 0; k < keep; ++k) {
    const int d = digit_at(k);
    if (value > (limit - d) / 10) return DecimalStatus::kOverflow;
    value = value * 10 + d;
  }
  // Round half away from zero on the first dropped digit; note any other dropped non-zero digit.
  const std::int64_t first_dropped = keep < 0 ? 0 : keep;
  if (keep >= 0 && digit_at(keep) >= 5) {
    if (value == limit) return DecimalStatus::kOverflow;
    ++value;
  }
  for (std::int64_t k = first_dropped; k < total; ++k) {
    if (digit_at(k) != 0) {
      rounded = true;
      break;
    }
  }
  out = value;
  return rounded ? DecimalStatus::kRounded : DecimalStatus::kOk;
}

}  // namespace

DecimalStatus parse_micros_to_nanos(std::string_view text, std::int64_t& nanos) {
  // Fast path for what profilers write: up to 16 integer digits, up to 3 fractional ones.
  {
    std::size_t i = 0;
    std::uint64_t whole = 0;
    while (i < text.size() && i < 16 && is_digit(text[i])) whole = whole * 10 + (text[i++] - '0');
    if (i > 0 && (i == text.size() || !is_digit(text[i])) && whole <= 9223372036854774ull) {
      std::uint64_t frac = 0;
      int frac_len = 0;
      if (i < text.size() && text[i] == '.') {
        ++i;
        while (i < text.size() && frac_len < 3 && is_digit(text[i])) {
          frac = frac * 10 + (text[i++] - '0');
          ++frac_len;
        }
      }
      std::size_t j = i;
      while (j < text.size() && (text[j] == ' ' || text[j] == '\n' || text[j] == '\r' || text[j] == '\t')) ++j;
      if (j == text.size() && (frac_len > 0 || i == 0 || text[i - 1] != '.')) {
        for (int k = frac_len; k < 3; ++k) frac *= 10;
        nanos = static_cast<std::int64_t>(whole * 1000 + frac);
        return DecimalStatus::kOk;
      }
    }
  }
  DecimalParts parts;
  if (!split_number(text, parts)) return DecimalStatus::kInvalid;
  std::uint64_t magnitude = 0;
  const std::uint64_t limit = parts.negative ? std::uint64_t{1} << 63 : INT64_MAX;
  const DecimalStatus st = to_integer(parts, parts.exponent + 3, limit, magnitude);
  if (st == DecimalStatus::kOverflow || st == DecimalStatus::kInvalid) return st;
  nanos = parts.negative ? static_cast<std::int64_t>(0 - magnitude) : static_cast<std::int64_t>(magnitude);
  return st;
}

DecimalStatus parse_int64(std::string_view text, std::int64_t& value) {
  // Fast path: up to 18 plain digits always fit.
  if (!text.empty() && text.size() <= 18) {
    std::int64_t v = 0;
    std::size_t i = 0;
    while (i < text.size() && is_digit(text[i])) v = v * 10 + (text[i++] - '0');
    if (i == text.size()) {
      value = v;
      return DecimalStatus::kOk;
    }
  }
  if (text.size() >= 2 && text.front() == '"') {
    text.remove_prefix(1);
    const std::size_t q = text.find('"');
    if (q == std::string_view::npos) return DecimalStatus::kInvalid;
    text = text.substr(0, q);
  }
  DecimalParts parts;
  if (!split_number(text, parts)) return DecimalStatus::kInvalid;
  std::uint64_t magnitude = 0;
  const std::uint64_t limit = parts.negative ? std::uint64_t{1} << 63 : UINT64_MAX;
  const DecimalStatus st = to_integer(parts, parts.exponent, limit, magnitude);
  if (st == DecimalStatus::kOverflow || st == DecimalStatus::kInvalid) return st;
  value = parts.negative ? static_cast<std::int64_t>(0 - magnitude) : static_cast<std::int64_t>(magnitude);
  return st;
}

bool is_lenient_number(std::string_view t) {
  std::size_t i = 0;
  if (i < t.size() && t[i] == '+') return true;
  if (i < t.size() && t[i] == '-') ++i;
  if (i < t.size() && t[i] == '.') return true;
  if (i + 1 < t.size() && t[i] == '0' && is_digit(t[i + 1])) return true;
  const std::size_t dot = t.find('.', i);
  return dot != std::string_view::npos && (dot + 1 == t.size() || !is_digit(t[dot + 1]));
}

}  // namespace ferret
