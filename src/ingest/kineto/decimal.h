// Exact decimal-text to integer conversions for trace timestamps and ids.
//
// Timestamps are microseconds written as decimals ("1712195495505582.988"): 16 integer digits and
// 3 fractional ones exceed a double's 53-bit mantissa, so they are converted digit by digit into
// int64 nanoseconds, never through a double.
#pragma once

#include <cstdint>
#include <string_view>

namespace ferret {

enum class DecimalStatus { kOk, kRounded, kInvalid, kOverflow };

// Parses a JSON number given in microseconds into nanoseconds. Digits beyond nanoseconds are
// rounded half away from zero (status kRounded). Accepts an exponent ("1.5e3").
DecimalStatus parse_micros_to_nanos(std::string_view text, std::int64_t& nanos);

// Parses an integer JSON number (or numeric string). Values in (INT64_MAX, UINT64_MAX] are kept as
// their two's-complement bit pattern (ids are compared, never added). "3.0" is accepted as 3.
DecimalStatus parse_int64(std::string_view text, std::int64_t& value);
// The text of a raw JSON token (simdjson's raw_json_token()): trailing whitespace dropped, and the
// quotes of a string (its escapes left as written). Inline: the parser reads every id through it.
inline std::string_view json_token_text(std::string_view t) {
  while (!t.empty() && (t.back() == ' ' || t.back() == '\n' || t.back() == '\r' || t.back() == '\t'))
    t.remove_suffix(1);
  if (t.size() >= 2 && t.front() == '"' && t.back() == '"') t = t.substr(1, t.size() - 2);
  return t;
}

// True for number text that JSON forbids but the conversions above read by its digits: a leading
// zero ("01", "-01"), a '+' sign, or a dot without a digit on one side ("1.", ".5").
bool is_lenient_number(std::string_view text);

// Cheap pre-check for is_lenient_number: false for every number a profiler writes ("123.456").
inline bool may_be_lenient_number(std::string_view text) {
  return !text.empty() && (text.front() < '1' || text.back() == '.');
}

}  // namespace ferret
