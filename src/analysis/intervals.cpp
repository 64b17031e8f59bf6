#include "analysis/intervals.h"

#include <algorithm>

namespace ferret {

void merge_intervals(std::vector<Interval>& v) {
  std::erase_if(v, [](const Interval& i) { return i.end <= i.start; });
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::size_t out = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (out > 0 && v[i].start <= v[out - 1].end) {
      v[out - 1].end = std::max(v[out - 1].end, v[i].end);
    } else {
      v[out++] = v[i];
    }
  }
  v.resize(out);
}

namespace {
// Heap order for LongestIntervals: `a` ranks below `b` when shorter, or as long and later.
bool ranks_below(const Interval& a, const Interval& b) {
  if (a.length() != b.length()) return a.length() < b.length();
  return a.start > b.start;
}
// std::push_heap keeps the greatest on top; inverting the order keeps the lowest-ranked there.
bool heap_order(const Interval& a, const Interval& b) { return ranks_below(b, a); }
}  // namespace

void LongestIntervals::offer(Interval i) {
  if (i.end < i.start) i.end = i.start;
  ++offered_;
  if (capacity_ == 0) return;
  if (heap_.size() < capacity_) {
    heap_.push_back(i);
    std::push_heap(heap_.begin(), heap_.end(), heap_order);
  } else if (ranks_below(heap_.front(), i)) {
    std::pop_heap(heap_.begin(), heap_.end(), heap_order);
    heap_.back() = i;
    std::push_heap(heap_.begin(), heap_.end(), heap_order);
  }
}

Occurrences LongestIntervals::take() const {
  Occurrences o;
  o.longest = heap_;
  std::sort(o.longest.begin(), o.longest.end(), [](const Interval& a, const Interval& b) {
    return a.start != b.start ? a.start < b.start : a.end < b.end;
  });
  o.count = offered_;
  return o;
}

std::int64_t total_length(const std::vector<Interval>& merged) {
  std::int64_t total = 0;
  for (const Interval& i : merged) total += i.length();
  return total;
}

std::int64_t union_length(std::vector<Interval> intervals) {
  merge_intervals(intervals);
  return total_length(intervals);
}

std::int64_t covered_length(const std::vector<Interval>& merged, std::int64_t start, std::int64_t end) {
  if (end <= start) return 0;
  auto it = std::lower_bound(merged.begin(), merged.end(), start,
                             [](const Interval& i, std::int64_t t) { return i.end <= t; });
  std::int64_t total = 0;
  for (; it != merged.end() && it->start < end; ++it) total += std::min(end, it->end) - std::max(start, it->start);
  return total;
}

std::vector<Interval> intersect(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const std::int64_t s = std::max(a[i].start, b[j].start);
    const std::int64_t e = std::min(a[i].end, b[j].end);
    if (s < e) out.push_back({s, e});
    if (a[i].end < b[j].end)
      ++i;
    else
      ++j;
  }
  return out;
}

std::vector<Interval> subtract(const std::vector<Interval>& merged, const std::vector<Interval>& minus) {
  std::vector<Interval> out;
  std::size_t j = 0;
  for (Interval cur : merged) {
    while (j < minus.size() && minus[j].end <= cur.start) ++j;
    std::size_t k = j;
    while (k < minus.size() && minus[k].start < cur.end) {
      if (minus[k].start > cur.start) out.push_back({cur.start, minus[k].start});
      cur.start = std::max(cur.start, minus[k].end);
      if (cur.start >= cur.end) break;
      ++k;
    }
    if (cur.start < cur.end) out.push_back(cur);
  }
  return out;
}

std::vector<Interval> clip(const std::vector<Interval>& merged, std::int64_t start, std::int64_t end) {
  std::vector<Interval> out;
  for (const Interval& i : merged) {
    const std::int64_t s = std::max(i.start, start), e = std::min(i.end, end);
    if (s < e) out.push_back({s, e});
  }
  return out;
}

}  // namespace ferret
