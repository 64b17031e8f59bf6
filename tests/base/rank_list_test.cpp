// base/rank_list: rank and step sets written as ranges, capped at a number of ranges.
#include "base/rank_list.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

namespace ferret {
namespace {
namespace rank_list_test {

using Ranges = std::vector<std::pair<int, int>>;

TEST(RankList, EmptyAndSingle) {
  EXPECT_EQ(format_rank_list({}), "");
  EXPECT_EQ(format_rank_list({7}), "7");
  EXPECT_EQ(format_rank_ranges({}), "");
  EXPECT_EQ(format_rank_ranges({{4, 4}}), "4");
}

TEST(RankList, RunsBecomeRanges) {
  EXPECT_EQ(format_rank_list({0, 1, 2, 3, 5, 8, 9, 10, 11, 12, 13, 14, 15}), "0-3, 5, 8-15");
  EXPECT_EQ(format_rank_list({0, 2, 4}), "0, 2, 4");
  EXPECT_EQ(format_rank_list({6, 7}), "6-7");
}

TEST(RankList, UnsortedAndRepeatedInputIsSortedAndMerged) {
  EXPECT_EQ(format_rank_list({8, 9, 10, 11, 3, 5, 4}), "3-5, 8-11");
  EXPECT_EQ(format_rank_list({2, 2, 2}), "2");
  EXPECT_EQ(format_rank_list({5, 3, 4, 3, 5, 1}), "1, 3-5");
}

TEST(RankList, ExtremeValuesDoNotOverflow) {
  EXPECT_EQ(format_rank_list({INT_MAX, INT_MIN, INT_MAX - 1}), "-2147483648, 2147483646-2147483647");
  EXPECT_EQ(format_number_list({INT64_MAX, INT64_MIN, INT64_MIN + 1}),
            "-9223372036854775808--9223372036854775807, 9223372036854775807");
}

// 1,048,576 ranks (the largest job a log may claim), in descending order: one range.
TEST(RankList, AMillionConsecutiveRanksAreOneRange) {
  std::vector<int> ranks;
  for (int r = (1 << 20) - 1; r >= 0; --r) ranks.push_back(r);
  EXPECT_EQ(format_rank_list(ranks), "0-1048575");
}

// Every other rank of 200: 100 single ranks. 64 are written (0, 2, ..., 126), then the count of
// the 36 left; today's list had no bound, so a hostile log could make one line megabytes long.
TEST(RankList, ScatteredRanksAreCutAfterTheLimit) {
  std::vector<int> ranks;
  for (int r = 0; r < 200; r += 2) ranks.push_back(r);
  std::string expected;
  for (int r = 0; r < 128; r += 2) expected += (r == 0 ? "" : ", ") + std::to_string(r);
  expected += ", ... (36 more ranges)";
  EXPECT_EQ(format_rank_list(ranks), expected);
  EXPECT_EQ(format_rank_list({1, 3, 5}, 2), "1, 3, ... (1 more ranges)");
  EXPECT_EQ(format_rank_list({1, 3, 5}, 3), "1, 3, 5");
}

TEST(RankList, RangesAreWrittenInTheGivenOrderAndCut) {
  EXPECT_EQ(format_rank_ranges({{1, 1}, {3, 4}, {6, 7}}), "1, 3-4, 6-7");
  EXPECT_EQ(format_rank_ranges({{1, 1}, {3, 4}, {6, 7}}, 2), "1, 3-4, ... (1 more ranges)");
  EXPECT_EQ(format_rank_ranges({{0, 1048575}}), "0-1048575");
}

TEST(RankList, MissingRankRangesFollowTheRanksSeen) {
  EXPECT_EQ(missing_rank_ranges({}, 3), (Ranges{{0, 2}}));
  EXPECT_EQ(missing_rank_ranges({0, 1, 2}, 3), Ranges{});
  EXPECT_EQ(missing_rank_ranges({0, 2, 5}, 8), (Ranges{{1, 1}, {3, 4}, {6, 7}}));
  EXPECT_EQ(missing_rank_ranges({-4, 1, 1, 9}, 4), (Ranges{{0, 0}, {2, 3}}));  // out of range and repeats ignored
  EXPECT_EQ(missing_rank_ranges({0}, INT_MAX), (Ranges{{1, INT_MAX - 1}}));
  EXPECT_EQ(missing_rank_ranges({}, 0), Ranges{});
}

}  // namespace rank_list_test
}  // namespace
}  // namespace ferret
