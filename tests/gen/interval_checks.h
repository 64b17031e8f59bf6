// Interval arithmetic for the generator tests, written independently of src/gen (the tests check
// the generators' ground truth against the events, so they must not reuse the generators' code).
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <utility>
#include <vector>

namespace ferret::test {

using Interval = std::pair<std::int64_t, std::int64_t>;

// Total length of the union of intervals.
inline std::int64_t union_length(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::int64_t total = 0, start = 0, end = INT64_MIN;
  for (const auto& [s, e] : v) {
    if (s > end) {
      if (end > start) total += end - start;
      start = s;
      end = e;
    } else {
      end = std::max(end, e);
    }
  }
  if (end > start) total += end - start;
  return total;
}

// Length of the intersection of the unions of `a` and `b`.
inline std::int64_t overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> both = a;
  both.insert(both.end(), b.begin(), b.end());
  return union_length(a) + union_length(b) - union_length(both);
}

}  // namespace ferret::test
