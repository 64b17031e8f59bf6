#include "base/units.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdint>
#include <stdexcept>

namespace ferret {

std::string human_bytes(std::uint64_t b) {
  if (b >= (1ull << 30)) return fmt::format("{:.2f} GiB", static_cast<double>(b) / double(1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(b) / double(1ull << 20));
  if (b >= (1ull << 10)) return fmt::format("{:.1f} KiB", static_cast<double>(b) / double(1ull << 10));
  return fmt::format("{} B", b);
}

std::string human_duration(std::int64_t ns) {
  const double v = static_cast<double>(ns);
  const std::int64_t mag = ns < 0 ? -ns : ns;
  if (mag >= 1000000000) return fmt::format("{:.3f} s", v / 1e9);
  if (mag >= 1000000) return fmt::format("{:.3f} ms", v / 1e6);
  if (mag >= 1000) return fmt::format("{:.3f} us", v / 1e3);
  return fmt::format("{} ns", ns);
}

std::uint64_t parse_size(std::string_view text) {
  const std::string original(text);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) throw std::invalid_argument(fmt::format("not a size: \"{}\" (expected e.g. 512M, 1GiB)", original));
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < digits; ++i) {
    if (value > (UINT64_MAX - 9) / 10) throw std::invalid_argument(fmt::format("size too large: \"{}\"", original));
    value = value * 10 + static_cast<std::uint64_t>(text[i] - '0');
  }
  std::string unit(text.substr(digits));
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() == 3 && unit[1] == 'I' && unit[2] == 'B') unit.resize(1);  // KiB, MiB, ...: binary, as K, M
  std::uint64_t multiplier = 1;
  if (unit.empty() || unit == "B")
    multiplier = 1;
  else if (unit == "K")
    multiplier = 1ull << 10;
  else if (unit == "M")
    multiplier = 1ull << 20;
  else if (unit == "G")
    multiplier = 1ull << 30;
  else if (unit == "T")
    multiplier = 1ull << 40;
  else if (unit == "KB")
    multiplier = 1000ull;
  else if (unit == "MB")
    multiplier = 1000ull * 1000;
  else if (unit == "GB")
    multiplier = 1000ull * 1000 * 1000;
  else if (unit == "TB")
    multiplier = 1000ull * 1000 * 1000 * 1000;
  else
    throw std::invalid_argument(
        fmt::format("unknown size unit in \"{}\" (use K, M, G, KiB, MiB, GiB, KB, MB, GB)", original));
  if (value > UINT64_MAX / multiplier) throw std::invalid_argument(fmt::format("size too large: \"{}\"", original));
  return value * multiplier;
}

}  // namespace ferret
