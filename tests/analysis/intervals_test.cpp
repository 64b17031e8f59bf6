#include "analysis/intervals.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace ferret {
namespace {
namespace intervals_test {

TEST(LongestIntervals, KeepsTheLongestByTimeAndCountsAll) {
  LongestIntervals keep(3);
  keep.offer({100, 110});  // 10
  keep.offer({0, 50});     // 50
  keep.offer({200, 201});  // 1
  keep.offer({300, 330});  // 30
  keep.offer({400, 400});  // 0: an instant
  keep.offer({500, 540});  // 40
  const Occurrences o = keep.take();
  EXPECT_EQ(o.count, 6u);
  ASSERT_EQ(o.longest.size(), 3u);
  EXPECT_EQ(o.longest[0].start, 0);    // 50
  EXPECT_EQ(o.longest[1].start, 300);  // 30
  EXPECT_EQ(o.longest[2].start, 500);  // 40
}

TEST(LongestIntervals, TiesKeepTheEarliestAndInstantsSurviveWhenRoomIsLeft) {
  LongestIntervals keep(2);
  keep.offer({30, 40});
  keep.offer({10, 20});
  keep.offer({20, 30});
  const Occurrences o = keep.take();
  ASSERT_EQ(o.longest.size(), 2u);
  EXPECT_EQ(o.longest[0].start, 10);
  EXPECT_EQ(o.longest[1].start, 20);

  LongestIntervals instants(4);
  instants.offer({7, 7});
  instants.offer({9, 3});  // reversed: an instant at 9
  const Occurrences i = instants.take();
  ASSERT_EQ(i.longest.size(), 2u);
  EXPECT_EQ(i.longest[1].start, 9);
  EXPECT_EQ(i.longest[1].end, 9);
}

// The heap against a full sort of every interval offered.
TEST(LongestIntervals, MatchesSortingEverything) {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 50; ++round) {
    const std::size_t capacity = 1 + rng() % 20;
    const std::size_t n = rng() % 300;
    std::vector<Interval> all;
    LongestIntervals keep(capacity);
    for (std::size_t k = 0; k < n; ++k) {
      const std::int64_t start = static_cast<std::int64_t>(rng() % 10'000);
      const Interval i{start, start + static_cast<std::int64_t>(rng() % 50)};
      all.push_back(i);
      keep.offer(i);
    }
    std::sort(all.begin(), all.end(), [](const Interval& a, const Interval& b) {
      return a.length() != b.length() ? a.length() > b.length() : a.start < b.start;
    });
    all.resize(std::min(all.size(), capacity));
    std::sort(all.begin(), all.end(), [](const Interval& a, const Interval& b) {
      return a.start != b.start ? a.start < b.start : a.end < b.end;
    });
    const Occurrences o = keep.take();
    EXPECT_EQ(o.count, n);
    ASSERT_EQ(o.longest.size(), all.size());
    for (std::size_t k = 0; k < all.size(); ++k) {
      EXPECT_EQ(o.longest[k].start, all[k].start) << "round " << round << " #" << k;
      EXPECT_EQ(o.longest[k].length(), all[k].length()) << "round " << round << " #" << k;
    }
  }
}

}  // namespace intervals_test
}  // namespace
}  // namespace ferret
