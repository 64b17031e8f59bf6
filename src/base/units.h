// Human-readable sizes and durations, for every stage that writes a sentence (findings, notes,
// reports).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ferret {

std::string human_bytes(std::uint64_t bytes);  // "1.5 GiB"

// Sums of sizes read from untrusted files: at the int64 limits instead of overflowing.
inline std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}
inline std::int64_t saturating_sub(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? INT64_MAX : INT64_MIN;
  return r;
}
std::string human_duration(std::int64_t ns);  // "12.345 ms"

// Parses a size such as "1GiB", "500M", "64k", "4096" (K/M/G/T are binary multiples, as are
// KiB/MiB/GiB/TiB; KB/MB/GB/TB are decimal). Throws std::invalid_argument on bad text.
std::uint64_t parse_size(std::string_view text);

// Time is kept in integer nanoseconds and shares as fractions; these give the units findings and
// reports print. Plain divisions (no rounding): rounding is the printer's business.
constexpr double ns_to_ms(double ns) { return ns / 1e6; }
constexpr double ns_to_us(double ns) { return ns / 1e3; }
constexpr double share_to_pct(double share) { return share * 100.0; }
// Bytes in binary units, as PyTorch and nvidia-smi print them.
constexpr double bytes_to_mib(double bytes) { return bytes / (1024.0 * 1024.0); }
constexpr double bytes_to_gib(double bytes) { return bytes / (1024.0 * 1024.0 * 1024.0); }

}  // namespace ferret
