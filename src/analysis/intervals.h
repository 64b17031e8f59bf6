// Interval arithmetic on [start, end) nanosecond ranges: the core of every time breakdown.
#pragma once

#include <cstddef>
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

// Where a cause happened: its longest occurrences (by start time) and how many there were in all.
// Findings carry one so that the HTML timeline and `ferret annotate` can mark them in place.
struct Occurrences {
  std::vector<Interval> longest;  // sorted by start
  std::uint64_t count = 0;
};

// Keeps the `capacity` longest intervals offered (ties: the earliest) in O(log capacity) each, so
// a cause seen a million times costs a few kB; zero-length intervals count and are kept as instants.
inline constexpr std::size_t kOccurrencesKept = 64;
class LongestIntervals {
 public:
  explicit LongestIntervals(std::size_t capacity = kOccurrencesKept) : capacity_(capacity) {}
  void offer(Interval i);
  std::uint64_t offered() const { return offered_; }
  Occurrences take() const;

 private:
  std::size_t capacity_;
  std::uint64_t offered_ = 0;
  std::vector<Interval> heap_;  // min-heap on (length, -start): the first to drop on top
};

}  // namespace ferret
