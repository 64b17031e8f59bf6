// Sets of ranks (or step numbers) written as ranges for sentences and tables: "0-3, 5, 8-15".
// At most `max_ranges` ranges are written, then ", ... (N more ranges)": a hostile log can name a
// million scattered ranks, and no report line may grow with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ferret {

inline constexpr std::size_t kMaxListedRanges = 64;

// Any order, repeats allowed: {8, 9, 3, 5, 4, 4} -> "3-5, 8-9".
std::string format_number_list(std::vector<std::int64_t> numbers, std::size_t max_ranges = kMaxListedRanges);
std::string format_rank_list(const std::vector<int>& ranks, std::size_t max_ranges = kMaxListedRanges);
// Ranges already made, inclusive and in the order given: {[0, 3], [5, 5]} -> "0-3, 5".
std::string format_rank_ranges(const std::vector<std::pair<int, int>>& ranges,
                               std::size_t max_ranges = kMaxListedRanges);
// The gaps of 0..nranks-1 not in `seen` (ascending ranks; values outside 0..nranks-1 ignored), as
// inclusive ranges: one per gap, so the result follows `seen`, never nranks.
std::vector<std::pair<int, int>> missing_rank_ranges(const std::vector<int>& seen, int nranks);

}  // namespace ferret
