#include "base/units.h"

#include <fmt/format.h>

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

}  // namespace ferret
