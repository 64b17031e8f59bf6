// Scanning NCCL's text: the string_view helpers the line parser and the message handlers share.
// Internal to ingest/nccl/ (in nccl_scan, and its users are outside the unity build, so that these
// short names meet no other file's).
#pragma once

#include <charconv>
#include <string_view>
#include <vector>

#include "base/text.h"

namespace ferret::nccl_scan {

// ---- string_view scanning -----------------------------------------------------------------------

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }
inline bool is_decimal_digit(char c) { return c >= '0' && c <= '9'; }

// Removes `prefix` (after leading blanks) from `s`; false when it is not there.
inline bool consume(std::string_view& s, std::string_view prefix) {
  std::string_view t = s;
  while (!t.empty() && is_space(t.front())) t.remove_prefix(1);
  if (!t.starts_with(prefix)) return false;
  s = t.substr(prefix.size());
  return true;
}

inline void skip_blanks(std::string_view& s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
}

// A signed decimal integer at the front of `s` (after blanks).
inline bool take_int(std::string_view& s, int& out) {
  skip_blanks(s);
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, out);
  if (ec != std::errc{} || ptr == s.data()) return false;
  s.remove_prefix(static_cast<std::size_t>(ptr - s.data()));
  return true;
}

inline bool take_double(std::string_view& s, double& out) {
  skip_blanks(s);
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, out, std::chars_format::general);
  if (ec != std::errc{} || ptr == s.data()) return false;
  s.remove_prefix(static_cast<std::size_t>(ptr - s.data()));
  return true;
}

// The next blank-separated token.
inline std::string_view take_token(std::string_view& s) {
  skip_blanks(s);
  std::size_t n = 0;
  while (n < s.size() && !is_space(s[n])) ++n;
  std::string_view token = s.substr(0, n);
  s.remove_prefix(n);
  return token;
}

// The last blank-separated token of `s`, removed from it.
// A launcher prefix without its trailing separators ("[1,0]<stdout>:" -> "[1,0]<stdout>"), so
// that bare lines ("[1,0]<stdout>:NCCL version ...") and prefixed ones compare equal.
inline std::string_view launcher_prefix(std::string_view s) {
  s = trim(s);
  while (!s.empty() && (s.back() == ':' || is_space(s.back()))) s.remove_suffix(1);
  return s;
}

inline std::string_view pop_last_token(std::string_view& s) {
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  std::size_t n = s.size();
  while (n > 0 && !is_space(s[n - 1])) --n;
  std::string_view token = s.substr(n);
  s = s.substr(0, n);
  return token;
}

inline bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_decimal_digit(c)) return false;
  return true;
}

// The whole token as an int: "1e9" or "8x" is not 1 or 8 (from_chars alone reads a prefix).
inline int to_int(std::string_view s, int fallback = -1) {
  int v = fallback;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc{} && ptr == s.data() + s.size() ? v : fallback;
}

// "`[3]`" -> 3 (NCCL prints the CUDA device in brackets).
inline bool bracketed_int(std::string_view token, int& out) {
  if (token.size() < 3 || token.front() != '[' || token.back() != ']') return false;
  std::string_view inner = token.substr(1, token.size() - 2);
  if (!inner.empty() && inner.front() == '-') inner.remove_prefix(1);
  if (!all_digits(inner)) return false;
  out = to_int(token.substr(1, token.size() - 2));
  return true;
}

// "host:pid:tid", possibly glued to a launcher prefix ("[1,0]<stdout>:host:12:34"): host is the
// text between the third-to-last ':' (or the start) and pid; `outer` gets what precedes it.
inline bool split_host_pid_tid(std::string_view token, std::string_view& host, int& pid, int& tid,
                               std::string_view& outer) {
  const std::size_t tid_colon = token.rfind(':');
  if (tid_colon == std::string_view::npos || tid_colon == 0) return false;
  const std::string_view tid_text = token.substr(tid_colon + 1);
  const std::size_t pid_colon = token.rfind(':', tid_colon - 1);
  if (pid_colon == std::string_view::npos || pid_colon == 0) return false;
  const std::string_view pid_text = token.substr(pid_colon + 1, tid_colon - pid_colon - 1);
  if (!all_digits(tid_text) || !all_digits(pid_text)) return false;
  const std::size_t host_colon = token.rfind(':', pid_colon - 1);
  const std::size_t host_start = host_colon == std::string_view::npos ? 0 : host_colon + 1;
  host = token.substr(host_start, pid_colon - host_start);
  if (host.empty()) return false;
  outer = host_colon == std::string_view::npos ? std::string_view() : token.substr(0, host_colon);
  pid = to_int(pid_text);
  tid = to_int(tid_text);
  return true;
}

// ---- transports -----------------------------------------------------------------------------------

inline std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

}  // namespace ferret::nccl_scan
