// The median of integer nanoseconds, as the job analyses use it: the middle value, or the lower
// middle plus half the gap for an even count (rounded toward the lower value), 0 when empty.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ferret {

inline std::int64_t median_ns(std::vector<std::int64_t> v) {
  if (v.empty()) return 0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const std::int64_t upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  const std::int64_t lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return lower + (upper - lower) / 2;
}

}  // namespace ferret
