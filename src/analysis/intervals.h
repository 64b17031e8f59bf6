// Interval arithmetic on [start, end) nanosecond ranges: the core of every time breakdown.
#pragma once

#include <cstdint>
#include <vector>

namespace ferret {

struct Interval {
  std::int64_t start = 0;
  std::int64_t end = 0;  // exclusive
  std::int64_t length() const { return end > start ? end - start : 0; }
};

// Sorts and merges overlapping or touching intervals in place; drops empty ones.
void merge_intervals(std::vector<Interval>& intervals);
// Total length of the union (input need not be sorted or merged).
std::int64_t union_length(std::vector<Interval> intervals);
// Length of the part of `merged` (sorted, disjoint) inside [start, end).
std::int64_t covered_length(const std::vector<Interval>& merged, std::int64_t start, std::int64_t end);
// Intersection of two merged interval lists (result merged).
std::vector<Interval> intersect(const std::vector<Interval>& a, const std::vector<Interval>& b);
// Parts of `merged` not covered by `minus` (both merged; result merged).
std::vector<Interval> subtract(const std::vector<Interval>& merged, const std::vector<Interval>& minus);
// Clips a merged list to [start, end).
std::vector<Interval> clip(const std::vector<Interval>& merged, std::int64_t start, std::int64_t end);
std::int64_t total_length(const std::vector<Interval>& merged);

}  // namespace ferret
