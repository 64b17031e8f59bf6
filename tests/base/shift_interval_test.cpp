// The Hodges–Lehmann interval, the normal quantile, the steps-for-power calculation and the pooled
// standard deviation (base/statistics.h) that `ferret diff`'s gate reads. Every expected value is
// worked out by hand beside it (U null counts by enumerating the C(10, 5) = 252 splits in Python).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/statistics.h"

namespace ferret::stats {
namespace {
namespace shift_interval_test {

TEST(ShiftInterval, FourAgainstFourSeparatedByHand) {
  // No ties, 4 and 4: exact. P(U <= 0) = 1/70 = 0.0143 <= 0.025 < P(U <= 1) = 2/70, so k = 1: the
  // smallest and largest of the 16 differences, 12.0 - 10.3 = 1.7 and 12.3 - 10.0 = 2.3, with
  // coverage 1 - 2/70 = 0.971.
  const std::vector<double> a = {10.0, 10.1, 10.2, 10.3}, b = {12.0, 12.1, 12.2, 12.3};
  const ShiftInterval ci = hodges_lehmann_interval(a, b, 0.95);
  EXPECT_TRUE(ci.exact);
  EXPECT_EQ(ci.rank, 1u);
  EXPECT_NEAR(ci.low, 1.7, 1e-12);
  EXPECT_NEAR(ci.high, 2.3, 1e-12);
  EXPECT_NEAR(ci.confidence, 1.0 - 2.0 / 70.0, 1e-15);
  EXPECT_TRUE(ci.attained());
}

TEST(ShiftInterval, FiveAgainstFiveRankThree) {
  // 5 and 5: U null counts for u = 0..3 are 1, 1, 2, 3 of 252, so P(U <= 2) = 4/252 = 0.0159 and
  // P(U <= 3) = 7/252 = 0.0278 > 0.025: k = 3, coverage 1 - 8/252 = 0.968. Differences
  // b_j - a_i = 1.5 + (j - i) for j, i in 0..4: sorted -2.5, -1.5 x2, -0.5 x3, ... so the 3rd
  // smallest is -1.5 and the 23rd (the 3rd largest) 4.5; the Hodges–Lehmann shift (13th) is 1.5.
  const std::vector<double> a = {10, 11, 12, 13, 14}, b = {11.5, 12.5, 13.5, 14.5, 15.5};
  const ShiftInterval ci = hodges_lehmann_interval(a, b, 0.95);
  EXPECT_EQ(ci.rank, 3u);
  EXPECT_DOUBLE_EQ(ci.low, -1.5);
  EXPECT_DOUBLE_EQ(ci.high, 4.5);
  EXPECT_NEAR(ci.confidence, 1.0 - 8.0 / 252.0, 1e-15);
  EXPECT_DOUBLE_EQ(hodges_lehmann_shift(a, b), 1.5);
  // compare_samples carries it, and over BASE's median (12): -12.5% .. +37.5%.
  const Comparison c = compare_samples(a, b);
  EXPECT_DOUBLE_EQ(c.shift_interval.low, -1.5);
  EXPECT_NEAR(c.relative_shift_low, -0.125, 1e-15);
  EXPECT_NEAR(c.relative_shift_high, 0.375, 1e-15);
  EXPECT_NEAR(c.relative_shift, 0.125, 1e-15);
}

TEST(ShiftInterval, ThreeAgainstThreeCannotReachNinetyFive) {
  // P(U <= 0) = 1/20 = 0.05 > 0.025: no 95% interval; the widest, [min, max] difference, covers
  // 1 - 2/20 = 90%.
  const std::vector<double> a = {1, 2, 3}, b = {4, 5, 7};
  const ShiftInterval ci = hodges_lehmann_interval(a, b, 0.95);
  EXPECT_EQ(ci.rank, 1u);
  EXPECT_DOUBLE_EQ(ci.low, 1.0);   // 4 - 3
  EXPECT_DOUBLE_EQ(ci.high, 6.0);  // 7 - 1
  EXPECT_NEAR(ci.confidence, 0.9, 1e-15);
  EXPECT_FALSE(ci.attained());
}

TEST(ShiftInterval, TiesUseTheNormalRank) {
  // Every value of a is 10 and of b is 12: ties, so the normal rank; every difference is 2, so
  // whatever k the interval is [2, 2]. 5 and 5 with two runs of 5: sigma^2 = 25/12 (11 - 240/90)
  // = 17.36, sigma = 4.1667; k = floor(12.5 - 1.95996 * 4.1667) = floor(4.33) = 4.
  const std::vector<double> a(5, 10.0), b(5, 12.0);
  const ShiftInterval ci = hodges_lehmann_interval(a, b, 0.95);
  EXPECT_FALSE(ci.exact);
  EXPECT_EQ(ci.rank, 4u);
  EXPECT_DOUBLE_EQ(ci.low, 2.0);
  EXPECT_DOUBLE_EQ(ci.high, 2.0);
  EXPECT_TRUE(ci.attained());
}

TEST(ShiftInterval, BadInputIsNaN) {
  const std::vector<double> empty, one = {1.0}, bad = {1.0, NAN};
  EXPECT_TRUE(std::isnan(hodges_lehmann_interval(empty, one).low));
  EXPECT_TRUE(std::isnan(hodges_lehmann_interval(one, bad).high));
  EXPECT_TRUE(std::isnan(hodges_lehmann_interval(one, one, 1.5).low));
}

TEST(NormalQuantile, KnownValues) {
  EXPECT_NEAR(normal_quantile(0.975), 1.959963984540054, 1e-13);
  EXPECT_NEAR(normal_quantile(0.8), 0.8416212335729143, 1e-13);
  EXPECT_NEAR(normal_quantile(0.5), 0.0, 1e-15);
  EXPECT_NEAR(normal_quantile(0.001), -3.090232306167813, 1e-12);
  EXPECT_TRUE(std::isnan(normal_quantile(0.0)));
  EXPECT_TRUE(std::isnan(normal_quantile(1.0)));
}

TEST(StepsForShift, ByHand) {
  // (pi/3) * 2 * (1.959964 + 0.841621)^2 = 1.047198 * 2 * 7.848867 = 16.4387: sigma = delta gives 17.
  EXPECT_DOUBLE_EQ(steps_for_shift(1.0, 1.0), 17.0);
  // sigma 1.5811 (the pooled SD of {10..14} and {11.5..15.5}), delta 0.9: 16.4387 * 3.08642 = 50.74 -> 51.
  EXPECT_DOUBLE_EQ(steps_for_shift(std::sqrt(2.5), 0.9), 51.0);
  EXPECT_DOUBLE_EQ(steps_for_shift(0.0, 1.0), 1.0);  // no spread: one step settles it
  EXPECT_TRUE(std::isinf(steps_for_shift(1.0, 0.0)));
}

TEST(PooledStddev, ByHand) {
  // {10..14}: squares 4+1+0+1+4 = 10; {11.5..15.5}: 10; sqrt(20 / 8) = 1.5811.
  const std::vector<double> a = {10, 11, 12, 13, 14}, b = {11.5, 12.5, 13.5, 14.5, 15.5};
  EXPECT_NEAR(pooled_stddev(a, b), std::sqrt(2.5), 1e-15);
  const std::vector<double> one = {1.0}, two = {1.0, 3.0};
  EXPECT_NEAR(pooled_stddev(one, two), std::sqrt(2.0), 1e-15);  // squares 0 + 2, over 1
  EXPECT_TRUE(std::isnan(pooled_stddev(one, one)));
}

}  // namespace shift_interval_test
}  // namespace
}  // namespace ferret::stats
