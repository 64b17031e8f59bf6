#include "base/rank_list.h"

#include <algorithm>

#include <fmt/format.h>

namespace ferret {

namespace {

template <typename Number>
std::string format_ranges(const std::vector<std::pair<Number, Number>>& ranges, std::size_t max_ranges) {
  std::string out;
  for (std::size_t i = 0; i < ranges.size() && i < max_ranges; ++i) {
    if (!out.empty()) out += ", ";
    const auto [first, last] = ranges[i];
    out += last > first ? fmt::format("{}-{}", first, last) : fmt::format("{}", first);
  }
  if (ranges.size() > max_ranges) out += fmt::format(", ... ({} more ranges)", ranges.size() - max_ranges);
  return out;
}

}  // namespace

std::string format_number_list(std::vector<std::int64_t> numbers, std::size_t max_ranges) {
  std::sort(numbers.begin(), numbers.end());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
  std::vector<std::pair<std::int64_t, std::int64_t>> runs;
  for (const std::int64_t n : numbers) {
    // n - 1 cannot overflow: only the smallest number can be INT64_MIN, and it opens the first run.
    if (!runs.empty() && runs.back().second == n - 1)
      runs.back().second = n;
    else
      runs.emplace_back(n, n);
  }
  return format_ranges(runs, max_ranges);
}

std::string format_rank_list(const std::vector<int>& ranks, std::size_t max_ranges) {
  return format_number_list(std::vector<std::int64_t>(ranks.begin(), ranks.end()), max_ranges);
}

std::string format_rank_ranges(const std::vector<std::pair<int, int>>& ranges, std::size_t max_ranges) {
  return format_ranges(ranges, max_ranges);
}

std::vector<std::pair<int, int>> missing_rank_ranges(const std::vector<int>& seen, int nranks) {
  std::vector<std::pair<int, int>> gaps;
  long long next = 0;  // the lowest rank not yet accounted for
  for (int r : seen) {
    if (r < next || r >= nranks) continue;
    if (r > next) gaps.emplace_back(static_cast<int>(next), r - 1);
    next = static_cast<long long>(r) + 1;
  }
  if (next < nranks) gaps.emplace_back(static_cast<int>(next), nranks - 1);
  return gaps;
}

}  // namespace ferret
