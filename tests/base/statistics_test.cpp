// Benchmark statistics against published worked examples, hand computations written out beside
// them, and independent re-computations. Where a comment says "Python reference", the value was
// computed with numpy 1.24 (numpy.percentile / numpy.median, default linear method) and, for the
// bootstrap, a separate Python implementation of mt19937_64 (checked against the standard's
// 10000th output, as the C++ test Mt19937_64.MatchesTheStandard does here) driving the same index
// mapping; exact Mann–Whitney tails in Python came from enumerating every rank assignment or from
// the Gaussian-binomial generating function, not from the dynamic program under test.
#include "base/statistics.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace ferret::stats {
namespace {
namespace statistics_test {

// Uniform [0, 1) from the top 53 bits of one draw: portable test noise.
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// ---- Percentiles and summaries -----------------------------------------------------------------

TEST(Percentile, Type7OnFourValues) {
  // Hand, h = (p / 100) * (n - 1) with n = 4 on {1, 2, 3, 4}:
  //   p25: h = 0.75 -> 1 + 0.75 = 1.75;  p50: h = 1.5 -> 2.5;  p75: h = 2.25 -> 3.25;
  //   p90: h = 2.7 -> 3 + 0.7 = 3.7;  p0 -> 1;  p100 -> 4.  numpy.percentile agrees.
  const std::vector<double> sorted = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(percentile(sorted, 0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(sorted, 25), 1.75);
  EXPECT_DOUBLE_EQ(percentile(sorted, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile(sorted, 75), 3.25);
  EXPECT_DOUBLE_EQ(percentile(sorted, 90), 3.7);
  EXPECT_DOUBLE_EQ(percentile(sorted, 100), 4.0);
}

TEST(Percentile, NumpyDocumentationExample) {
  // numpy.percentile's documentation: a = [[10, 7, 4], [3, 2, 1]]; np.percentile(a, 50) -> 3.5.
  const std::vector<double> sorted = {1, 2, 3, 4, 7, 10};
  EXPECT_DOUBLE_EQ(percentile(sorted, 50), 3.5);
}

TEST(Percentile, EmptyOrOutOfRangeIsNaN) {
  const std::vector<double> sorted = {1, 2};
  EXPECT_TRUE(std::isnan(percentile({}, 50)));
  EXPECT_TRUE(std::isnan(percentile(sorted, -1)));
  EXPECT_TRUE(std::isnan(percentile(sorted, 100.5)));
  EXPECT_TRUE(std::isnan(percentile(sorted, kNaN)));
  EXPECT_DOUBLE_EQ(percentile(std::vector<double>{42}, 99.9), 42.0);  // one value: every percentile
}

TEST(Summary, OneToTenShuffled) {
  // Hand on 1..10 (given shuffled): mean 5.5; squared deviations sum to 82.5, stddev
  // sqrt(82.5 / 9) = 3.0276503540974917. Percentiles with h = (p / 100) * 9:
  //   q1 h = 2.25 -> 3.25; median h = 4.5 -> 5.5; q3 h = 6.75 -> 7.75; iqr 4.5;
  //   p90 h = 8.1 -> 9.1; p95 h = 8.55 -> 9.55; p99 h = 8.91 -> 9.91; p99.9 h = 8.991 -> 9.991.
  // numpy gives the same (9.549999999999999 and 9.991000000000001 for the last-bit cases).
  const std::vector<double> samples = {7, 2, 9, 4, 1, 10, 3, 6, 8, 5};
  const Summary s = summarize(samples);
  EXPECT_EQ(s.n, 10u);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 10.0);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(s.stddev, 3.0276503540974917);
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_DOUBLE_EQ(s.p50, 5.5);
  EXPECT_DOUBLE_EQ(s.q1, 3.25);
  EXPECT_DOUBLE_EQ(s.q3, 7.75);
  EXPECT_DOUBLE_EQ(s.iqr, 4.5);
  EXPECT_DOUBLE_EQ(s.p90, 9.1);
  EXPECT_DOUBLE_EQ(s.p95, 9.55);
  EXPECT_DOUBLE_EQ(s.p99, 9.91);
  EXPECT_DOUBLE_EQ(s.p999, 9.991);
}

TEST(Summary, EmptyIsNaN) {
  const Summary s = summarize({});
  EXPECT_EQ(s.n, 0u);
  EXPECT_TRUE(std::isnan(s.min));
  EXPECT_TRUE(std::isnan(s.mean));
  EXPECT_TRUE(std::isnan(s.median));
  EXPECT_TRUE(std::isnan(s.stddev));
  EXPECT_TRUE(std::isnan(s.iqr));
  EXPECT_TRUE(std::isnan(s.p999));
  EXPECT_FALSE(is_noisy(s));
}

TEST(Summary, SingleSample) {
  // n = 1: every percentile is the sample, IQR 0, and the n - 1 standard deviation is undefined.
  const Summary s = summarize(std::vector<double>{3.5});
  EXPECT_EQ(s.n, 1u);
  EXPECT_DOUBLE_EQ(s.min, 3.5);
  EXPECT_DOUBLE_EQ(s.max, 3.5);
  EXPECT_DOUBLE_EQ(s.mean, 3.5);
  EXPECT_DOUBLE_EQ(s.median, 3.5);
  EXPECT_DOUBLE_EQ(s.p99, 3.5);
  EXPECT_DOUBLE_EQ(s.iqr, 0.0);
  EXPECT_TRUE(std::isnan(s.stddev));
  EXPECT_FALSE(is_noisy(s));
}

TEST(Summary, NonFiniteSampleGivesNaN) {
  const Summary s = summarize(std::vector<double>{1, 2, kNaN, 4});
  EXPECT_EQ(s.n, 4u);
  EXPECT_TRUE(std::isnan(s.median));
  EXPECT_TRUE(std::isnan(s.mean));
  const Summary inf = summarize(std::vector<double>{1, INFINITY});
  EXPECT_TRUE(std::isnan(inf.max));
}

// ---- Noise -------------------------------------------------------------------------------------

TEST(Noise, TenPercentOfTheMedianIsTheLine) {
  // n = 5: q1 = x[1], median = x[2], q3 = x[3] exactly (h = 1, 2, 3).
  // {90, 95, 100, 105, 110}: IQR 10, median 100, ratio exactly 0.10: not noisy (strictly greater).
  const Summary at_line = summarize(std::vector<double>{110, 90, 100, 95, 105});
  EXPECT_DOUBLE_EQ(relative_iqr(at_line), 0.10);
  EXPECT_FALSE(is_noisy(at_line));
  // {90, 94, 100, 105, 110}: IQR 11, ratio 0.11: noisy.
  const Summary above = summarize(std::vector<double>{90, 94, 100, 105, 110});
  EXPECT_DOUBLE_EQ(relative_iqr(above), 0.11);
  EXPECT_TRUE(is_noisy(above));
  // 1..10: IQR 4.5 / median 5.5 = 0.818 (Summary.OneToTenShuffled): noisy.
  EXPECT_TRUE(is_noisy(summarize(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})));
}

// ---- Random numbers and the bootstrap ----------------------------------------------------------

TEST(Mt19937_64, MatchesTheStandard) {
  // C++ standard [rand.predef]: the 10000th consecutive invocation of a default-constructed
  // mt19937_64 produces 9981545732273789042. This is what makes the bootstrap portable.
  std::mt19937_64 rng;
  rng.discard(9999);
  EXPECT_EQ(rng(), 9981545732273789042ull);
  EXPECT_EQ(kDefaultBootstrapSeed, std::mt19937_64::default_seed);
}

// Replays a fixed list of draws.
struct ScriptedEngine {
  std::vector<std::uint64_t> draws;
  std::size_t next = 0;
  std::uint64_t operator()() { return draws[next++]; }
};

TEST(UniformIndex, RejectsTheBiasedLowDraws) {
  // Hand: 2^64 = 4^32 = 1 (mod 3), so for n = 3 the draw 0 is rejected (the one value that would
  // over-weight index 0) and the draw 1 maps to 1 % 3 = 1, after two draws.
  ScriptedEngine rng{{0, 1}};
  EXPECT_EQ(uniform_index(rng, 3), 1u);
  EXPECT_EQ(rng.next, 2u);
  // 2^64 - 1 = 18446744073709551615 is divisible by 3 (its digit sum is 87): index 0, one draw.
  ScriptedEngine top{{~std::uint64_t{0}}};
  EXPECT_EQ(uniform_index(top, 3), 0u);
  // n = 2^k: 2^64 mod n = 0, nothing is rejected; the index is the low k bits (13 = 0b1101 -> 5).
  ScriptedEngine power{{13}};
  EXPECT_EQ(uniform_index(power, 8), 5u);
}

TEST(BootstrapMedianCi, MatchesIndependentReimplementation) {
  // Python reference (see the top of the file): median 14.5 (hand: sorted 11 12 12 13 14 15 16
  // 18 19 30, middle pair 14, 15); with confidence 0.90, 1000 resamples, seed 42 the 5th and 95th
  // percentiles of the resampled medians are 12.5 and 17.0; with the defaults (0.95, 10000,
  // seed 5489) 12.0 and 18.0.
  const std::vector<double> samples = {12, 15, 11, 19, 14, 13, 30, 16, 12, 18};
  const Interval ci = bootstrap_median_ci(samples, 0.90, 1000, 42);
  EXPECT_DOUBLE_EQ(ci.estimate, 14.5);
  EXPECT_DOUBLE_EQ(ci.low, 12.5);
  EXPECT_DOUBLE_EQ(ci.high, 17.0);
  EXPECT_DOUBLE_EQ(ci.confidence, 0.90);
  EXPECT_EQ(ci.resamples, 1000);
  const Interval defaults = bootstrap_median_ci(samples);
  EXPECT_DOUBLE_EQ(defaults.low, 12.0);
  EXPECT_DOUBLE_EQ(defaults.high, 18.0);
}

TEST(BootstrapMedianCi, ContainsTheTrueMedianAndIsDeterministic) {
  // 501 draws from U(0, 1) (true median 0.5; generator seed 7, top 53 bits). Python reference:
  // sample median 0.49258230042300843; 95% interval from 2000 resamples with seed 5489 is
  // [0.4339295222811085, 0.5275424874264671]. Asymptotically the median's standard error is
  // 1 / (2 f(m) sqrt(n)) = 1 / (2 sqrt(501)) = 0.0223: expect a width near 4 x 0.0223 = 0.089.
  std::mt19937_64 rng(7);
  std::vector<double> samples(501);
  for (double& x : samples) x = uniform01(rng);
  const Interval ci = bootstrap_median_ci(samples, 0.95, 2000);
  EXPECT_DOUBLE_EQ(ci.estimate, 0.49258230042300843);
  EXPECT_DOUBLE_EQ(ci.low, 0.4339295222811085);
  EXPECT_DOUBLE_EQ(ci.high, 0.5275424874264671);
  EXPECT_TRUE(ci.contains(0.5));
  EXPECT_TRUE(ci.contains(ci.estimate));
  EXPECT_NEAR(ci.high - ci.low, 0.089, 0.02);

  const Interval again = bootstrap_median_ci(samples, 0.95, 2000);
  EXPECT_EQ(again.low, ci.low);
  EXPECT_EQ(again.high, ci.high);
  const Interval other_seed = bootstrap_median_ci(samples, 0.95, 2000, 99);
  EXPECT_TRUE(other_seed.low != ci.low || other_seed.high != ci.high);
}

TEST(BootstrapMedianCi, EmptySingleAndBadArguments) {
  const Interval empty = bootstrap_median_ci({});
  EXPECT_TRUE(std::isnan(empty.estimate));
  EXPECT_TRUE(std::isnan(empty.low));
  EXPECT_FALSE(empty.contains(0.0));
  // n = 1: every resample is the one value.
  const Interval single = bootstrap_median_ci(std::vector<double>{2.5}, 0.95, 100);
  EXPECT_DOUBLE_EQ(single.low, 2.5);
  EXPECT_DOUBLE_EQ(single.high, 2.5);
  const std::vector<double> samples = {1, 2, 3};
  EXPECT_TRUE(std::isnan(bootstrap_median_ci(samples, 1.0).low));
  EXPECT_TRUE(std::isnan(bootstrap_median_ci(samples, 0.95, 0).high));
  EXPECT_DOUBLE_EQ(bootstrap_median_ci(samples, 0.95, 0).estimate, 2.0);
}

// ---- Tukey outliers ----------------------------------------------------------------------------

TEST(TukeyOutliers, OneOfEachKind) {
  // Hand, n = 9 so q1 = x[2] and q3 = x[6] exactly (h = 2, 6): sorted
  //   -40  1  10  11  12  13  14  22  60 -> q1 10, q3 14, IQR 4;
  // inner fences 10 - 6 = 4 and 14 + 6 = 20, outer fences 10 - 12 = -2 and 14 + 12 = 26.
  // -40 < -2: low extreme; 1 in [-2, 4): low mild; 22 in (20, 26]: high mild;
  // 60 > 26: high extreme.
  const std::vector<double> samples = {12, 60, -40, 13, 10, 22, 11, 1, 14};
  const TukeyOutliers t = tukey_outliers(samples);
  EXPECT_DOUBLE_EQ(t.lower_inner, 4.0);
  EXPECT_DOUBLE_EQ(t.upper_inner, 20.0);
  EXPECT_DOUBLE_EQ(t.lower_outer, -2.0);
  EXPECT_DOUBLE_EQ(t.upper_outer, 26.0);
  EXPECT_EQ(t.low_extreme, 1u);
  EXPECT_EQ(t.low_mild, 1u);
  EXPECT_EQ(t.high_mild, 1u);
  EXPECT_EQ(t.high_extreme, 1u);
  EXPECT_EQ(t.total(), 4u);
}

TEST(TukeyOutliers, ValuesOnTheFencesAreNotOutliers) {
  // Hand: sorted 4 10 10 11 12 13 14 14 20 -> q1 = x[2] = 10, q3 = x[6] = 14, inner fences 4 and 20
  // exactly; the extremes sit on them. A value on an outer fence (-2 or 26) is mild, not extreme:
  // 9 values again with q1 10, q3 14: -2 10 10 11 12 13 14 14 26.
  EXPECT_EQ(tukey_outliers(std::vector<double>{4, 10, 10, 11, 12, 13, 14, 14, 20}).total(), 0u);
  const TukeyOutliers on_outer = tukey_outliers(std::vector<double>{-2, 10, 10, 11, 12, 13, 14, 14, 26});
  EXPECT_EQ(on_outer.low_mild, 1u);
  EXPECT_EQ(on_outer.high_mild, 1u);
  EXPECT_EQ(on_outer.low_extreme + on_outer.high_extreme, 0u);
}

TEST(TukeyOutliers, EmptyAndSingle) {
  const TukeyOutliers empty = tukey_outliers({});
  EXPECT_EQ(empty.total(), 0u);
  EXPECT_TRUE(std::isnan(empty.lower_inner));
  // n = 1: IQR 0, every fence is the value, nothing lies beyond.
  const TukeyOutliers single = tukey_outliers(std::vector<double>{5});
  EXPECT_EQ(single.total(), 0u);
  EXPECT_DOUBLE_EQ(single.upper_outer, 5.0);
}

// ---- Warm-up (MSER-5) --------------------------------------------------------------------------

TEST(SteadyStateStart, HandComputedThreeBatches) {
  // 5 samples of 10 then 10 of 1: batch means Z = 10, 1, 1 (k = 3, d in {0, 1} since d < 3/2).
  // d = 0: mean 4, squared deviations 36 + 9 + 9 = 54, MSER = 54 / 3^2 = 6.
  // d = 1: Z = 1, 1, deviations 0, MSER = 0  -> d* = 1, steady state from sample 5.
  std::vector<double> samples(5, 10.0);
  samples.insert(samples.end(), 10, 1.0);
  EXPECT_EQ(steady_state_start(samples), 5u);
}

TEST(SteadyStateStart, ConstantAndShortSeriesStartAtZero) {
  // Constant: every MSER(d) is 0, the earliest d (0) wins.
  EXPECT_EQ(steady_state_start(std::vector<double>(50, 7.0)), 0u);
  // Fewer than 10 samples (two batches): too short to judge, even with an obvious warm-up.
  EXPECT_EQ(steady_state_start(std::vector<double>{100, 100, 100, 100, 1, 1, 1, 1, 1}), 0u);
  // Exactly 10 samples: k = 2 and only d = 0 keeps more than half the batches.
  EXPECT_EQ(steady_state_start(std::vector<double>{100, 100, 100, 100, 100, 1, 1, 1, 1, 1}), 0u);
  EXPECT_EQ(steady_state_start({}), 0u);
  EXPECT_EQ(steady_state_start(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9, kNaN, 11}), 0u);
}

// `warm` samples at 150 then `stable` at 100, each plus uniform noise in [-1, 1) from one
// mt19937_64 seeded with `seed`.
std::vector<double> planted_warm_up(std::uint64_t seed, int warm, int stable) {
  std::mt19937_64 rng(seed);
  std::vector<double> samples;
  for (int i = 0; i < warm; ++i) samples.push_back(150.0 + (uniform01(rng) - 0.5) * 2.0);
  for (int i = 0; i < stable; ++i) samples.push_back(100.0 + (uniform01(rng) - 0.5) * 2.0);
  return samples;
}

TEST(SteadyStateStart, FindsAPlantedWarmUp) {
  // 20 slow samples then 200 stable ones (Python reference with the same generator, MSER computed
  // directly from its definition for every d < k / 2 = 22). For seeds 3..10 the start is 20, 20,
  // 20, 20, 25, 30, 20, 20: at the planted 20 or a batch or two later.
  const std::size_t expected[] = {20, 20, 20, 20, 25, 30, 20, 20};
  for (std::uint64_t seed = 3; seed <= 10; ++seed) {
    EXPECT_EQ(steady_state_start(planted_warm_up(seed, 20, 200)), expected[seed - 3]) << "seed " << seed;
  }
  // A warm-up of 22 samples ends inside batch 4 (samples 20..24, two of them slow): that batch is
  // cut too. Python reference, seed 3: 25.
  EXPECT_EQ(steady_state_start(planted_warm_up(3, 22, 200)), 25u);
}

TEST(SteadyStateStart, StationarySeriesAndMsersKnownOvertruncation) {
  // 220 stationary samples: Python reference gives 0 for seeds 3..10 -- but 105 for seed 1 and 10
  // for seed 2. MSER can truncate stationary data by chance when the later batches happen to vary
  // less (documented in docs/STATISTICS.md); this pins that behaviour rather than hiding it.
  EXPECT_EQ(steady_state_start(planted_warm_up(3, 0, 220)), 0u);
  EXPECT_EQ(steady_state_start(planted_warm_up(1, 0, 220)), 105u);
}

// ---- Mann–Whitney U ----------------------------------------------------------------------------

TEST(MannWhitney, TortoiseAndHare) {
  // Wikipedia, "Mann–Whitney U test", illustration: finishing order T H H H H H T T T T T H.
  // As finishing positions, tortoises {1, 7, 8, 9, 10, 11} and hares {2, 3, 4, 5, 6, 12}.
  // U_T = 11 (hares each tortoise beats), U_H = 25; here u_a counts a_i > b_j, i.e. the tortoise
  // finishing after the hare: u_a = 25 = U_H, u_b = 11 = U_T. Exact two-sided p: of the
  // C(12, 6) = 924 rank assignments, 143 have U >= 25, p = 2 x 143 / 924 = 0.30952380952380953
  // (Python enumeration).
  const std::vector<double> tortoises = {1, 7, 8, 9, 10, 11}, hares = {2, 3, 4, 5, 6, 12};
  const MannWhitney r = mann_whitney_u(tortoises, hares);
  EXPECT_DOUBLE_EQ(r.u_a, 25.0);
  EXPECT_DOUBLE_EQ(r.u_b, 11.0);
  EXPECT_FALSE(r.has_ties);
  EXPECT_EQ(r.method, MannWhitneyMethod::kExact);
  EXPECT_DOUBLE_EQ(r.p_value, 0.30952380952380953);
}

TEST(MannWhitney, CriticalValueForSixAndSix) {
  // Wikipedia's tortoise-and-hare example: for n1 = n2 = 6 the two-sided 5% critical value is
  // U = 5 (significant at U <= 5). Exact tails by enumeration (Python): P(U <= 5) = 19/924,
  // p = 0.04112554112554113; P(U <= 6) = 30/924, p = 0.06493506493506493.
  // a's 11 is above 6..10 (five pairs): U = 5.  a's 12 is above all of 6..11: U = 6.
  const MannWhitney u5 =
      mann_whitney_u(std::vector<double>{1, 2, 3, 4, 5, 11}, std::vector<double>{6, 7, 8, 9, 10, 12});
  EXPECT_DOUBLE_EQ(u5.u_a, 5.0);
  EXPECT_DOUBLE_EQ(u5.p_value, 0.04112554112554113);
  EXPECT_LT(u5.p_value, 0.05);
  const MannWhitney u6 =
      mann_whitney_u(std::vector<double>{1, 2, 3, 4, 5, 12}, std::vector<double>{6, 7, 8, 9, 10, 11});
  EXPECT_DOUBLE_EQ(u6.u_a, 6.0);
  EXPECT_DOUBLE_EQ(u6.p_value, 0.06493506493506493);
  EXPECT_GT(u6.p_value, 0.05);
}

TEST(MannWhitney, ScipyDocumentationExample) {
  // scipy.stats.mannwhitneyu documentation (after Conover): ages at diagnosis, males
  // {19, 22, 16, 29, 24}, females {20, 11, 17, 12}: U1 = 17, U2 = 3, exact p = 0.1111111111111111
  // (= 2 x 7 / 126; enumeration agrees). The continuity-corrected normal p: Python reference
  // 0.11134688653314048 (scipy's docs print ...041, norm.sf vs erfc in the last digits).
  const std::vector<double> males = {19, 22, 16, 29, 24}, females = {20, 11, 17, 12};
  const MannWhitney exact = mann_whitney_u(males, females);
  EXPECT_DOUBLE_EQ(exact.u_a, 17.0);
  EXPECT_DOUBLE_EQ(exact.u_b, 3.0);
  EXPECT_EQ(exact.method, MannWhitneyMethod::kExact);
  EXPECT_DOUBLE_EQ(exact.p_value, 0.1111111111111111);
  const MannWhitney normal = mann_whitney_u(males, females, /*allow_exact=*/false);
  EXPECT_EQ(normal.method, MannWhitneyMethod::kNormal);
  EXPECT_NEAR(normal.p_value, 0.11134688653314048, 1e-12);
}

TEST(MannWhitney, ClickHouseExample) {
  // ClickHouse's mannWhitneyUTest documentation: {10, 11, 12} vs {1, 2, 3}, alternative 'greater'
  // -> (U = 9, p = 0.04042779918503192), the continuity-corrected normal approximation. Two-sided:
  // 2 x that = 0.0808555983700638. Hand: mean 4.5, sigma = sqrt(9 x 7 / 12) = 2.2913,
  // z = (9 - 4.5 - 0.5) / 2.2913 = 1.7457. Exact: 1 of C(6, 3) = 20 orderings has U = 9,
  // two-sided p = 2 / 20 = 0.1.
  const std::vector<double> a = {10, 11, 12}, b = {1, 2, 3};
  const MannWhitney normal = mann_whitney_u(a, b, /*allow_exact=*/false);
  EXPECT_DOUBLE_EQ(normal.u_a, 9.0);
  EXPECT_NEAR(normal.z, 1.7457431218879391, 1e-12);
  EXPECT_NEAR(normal.p_value, 0.0808555983700638, 1e-12);
  EXPECT_DOUBLE_EQ(mann_whitney_u(a, b).p_value, 0.1);
}

TEST(MannWhitney, NagExampleWithTies) {
  // NAG Library g08amc example (16 vs 23 values with many ties): test statistic U = 86, normal
  // statistic -2.8039, approximate (lower) tail probability 0.0025. NAG's z is the
  // continuity-corrected one. Two-sided p, Python reference from the tie-corrected formula:
  // 0.005048845813774749 (one tail 0.0025244...).
  const std::vector<double> x = {13, 6, 12, 7, 12, 7, 10, 7, 10, 7, 16, 7, 10, 8, 9, 8};
  const std::vector<double> y = {17, 6,  10, 8,  15, 8,  15, 10, 15, 10, 14, 10,
                                 14, 11, 14, 11, 13, 12, 13, 12, 13, 12, 12};
  const MannWhitney r = mann_whitney_u(x, y);
  EXPECT_DOUBLE_EQ(r.u_a, 86.0);
  EXPECT_DOUBLE_EQ(r.u_b, 16.0 * 23.0 - 86.0);
  EXPECT_TRUE(r.has_ties);
  EXPECT_EQ(r.method, MannWhitneyMethod::kNormal);
  EXPECT_NEAR(r.z, -2.8039, 5e-5);
  EXPECT_NEAR(r.p_value / 2.0, 0.0025, 5e-5);
  EXPECT_NEAR(r.p_value, 0.005048845813774749, 1e-12);
}

TEST(MannWhitney, HandComputedTies) {
  // a = {1, 2, 2, 3}, b = {2, 3, 4, 4, 5}. Pooled ranks: 1 -> 1; the three 2s share ranks 2..4,
  // midrank 3; the two 3s share 5, 6 -> 5.5; the two 4s 7, 8 -> 7.5; 5 -> 9.
  // R_a = 1 + 3 + 3 + 5.5 = 12.5, u_a = 12.5 - 4 x 5 / 2 = 2.5, u_b = 20 - 2.5 = 17.5.
  // Ties: sum t^3 - t = 24 + 6 + 6 = 36; N = 9; variance = 20/12 x (10 - 36 / 72) = 15.8333;
  // z = -(|2.5 - 10| - 0.5) / sqrt(15.8333) = -7 / 3.97911 = -1.759186414825121;
  // p = erfc(1.759186 / sqrt 2) = 0.0785458509511907 (Python).
  const MannWhitney r = mann_whitney_u(std::vector<double>{1, 2, 2, 3}, std::vector<double>{2, 3, 4, 4, 5});
  EXPECT_DOUBLE_EQ(r.u_a, 2.5);
  EXPECT_DOUBLE_EQ(r.u_b, 17.5);
  EXPECT_TRUE(r.has_ties);
  EXPECT_EQ(r.method, MannWhitneyMethod::kNormal);
  EXPECT_NEAR(r.z, -1.759186414825121, 1e-12);
  EXPECT_NEAR(r.p_value, 0.0785458509511907, 1e-12);
}

TEST(MannWhitney, ExactAtTwentyEach) {
  // a = odd numbers 1..39, b = even numbers 12..50 (no ties). u_a = pairs a > b: the odd numbers
  // 13..39 beat 1, 2, ..., 14 of b's values -> 1 + 2 + ... + 14 = 105. Exact two-sided p from the
  // Gaussian binomial [40 choose 20]_q coefficients (Python, an independent method from the
  // dynamic program): tail 653641166 / 137846528820, p = 0.009483607191205005. The normal
  // approximation would say 0.010581211443165657.
  std::vector<double> a, b;
  for (int i = 1; i <= 39; i += 2) a.push_back(i);
  for (int i = 12; i <= 50; i += 2) b.push_back(i);
  const MannWhitney r = mann_whitney_u(a, b);
  EXPECT_DOUBLE_EQ(r.u_a, 105.0);
  EXPECT_EQ(r.method, MannWhitneyMethod::kExact);
  EXPECT_NEAR(r.p_value, 0.009483607191205005, 1e-15);
  EXPECT_NEAR(mann_whitney_u(a, b, false).p_value, 0.010581211443165657, 1e-12);
}

TEST(MannWhitney, LargerSamplesUseTheNormalApproximation) {
  // a = 1.5 i (i < 30), b = 1.5 j + 10.25 (j < 25): no ties, n_a = 30 > 20 -> normal.
  // Python reference (direct pair count and the formula): u_a = 276, z = -1.6649538818151777,
  // p = 0.09592195709677959.
  std::vector<double> a, b;
  for (int i = 0; i < 30; ++i) a.push_back(1.5 * i);
  for (int j = 0; j < 25; ++j) b.push_back(1.5 * j + 10.25);
  const MannWhitney r = mann_whitney_u(a, b);
  EXPECT_DOUBLE_EQ(r.u_a, 276.0);
  EXPECT_FALSE(r.has_ties);
  EXPECT_EQ(r.method, MannWhitneyMethod::kNormal);
  EXPECT_NEAR(r.z, -1.6649538818151777, 1e-12);
  EXPECT_NEAR(r.p_value, 0.09592195709677959, 1e-12);
}

TEST(MannWhitney, IdenticalAndConstantSamples) {
  // Identical samples 1..10: every value is tied across the samples, u_a = u_b = 100 / 2 = 50 =
  // the mean, so the corrected z is 0 and p = 1.
  std::vector<double> same;
  for (int i = 1; i <= 10; ++i) same.push_back(i);
  const MannWhitney r = mann_whitney_u(same, same);
  EXPECT_DOUBLE_EQ(r.u_a, 50.0);
  EXPECT_DOUBLE_EQ(r.p_value, 1.0);
  EXPECT_DOUBLE_EQ(r.z, 0.0);
  // All five values equal: the tie-corrected variance is 0 (sum t^3 - t = 120 = N (N - 1)(N + 1));
  // p = 1 by convention.
  const MannWhitney flat = mann_whitney_u(std::vector<double>{5, 5, 5}, std::vector<double>{5, 5});
  EXPECT_DOUBLE_EQ(flat.u_a, 3.0);
  EXPECT_DOUBLE_EQ(flat.p_value, 1.0);
}

TEST(MannWhitney, EmptyOrNonFinite) {
  const MannWhitney empty = mann_whitney_u({}, std::vector<double>{1, 2});
  EXPECT_EQ(empty.method, MannWhitneyMethod::kNone);
  EXPECT_TRUE(std::isnan(empty.p_value));
  EXPECT_TRUE(std::isnan(empty.u_a));
  EXPECT_EQ(empty.n_b, 2u);
  const MannWhitney nan = mann_whitney_u(std::vector<double>{1, kNaN}, std::vector<double>{1, 2});
  EXPECT_EQ(nan.method, MannWhitneyMethod::kNone);
  // One value each: exact, u_a = 1 (2 > 1), the two orderings are equally likely, p = 1.
  const MannWhitney one = mann_whitney_u(std::vector<double>{2}, std::vector<double>{1});
  EXPECT_EQ(one.method, MannWhitneyMethod::kExact);
  EXPECT_DOUBLE_EQ(one.u_a, 1.0);
  EXPECT_DOUBLE_EQ(one.p_value, 1.0);
}

// ---- Hodges–Lehmann ----------------------------------------------------------------------------

TEST(HodgesLehmann, HandComputedOddAndEvenPairCounts) {
  // a = {1, 2, 3}, b = {4, 6, 9}: differences b - a are 3 2 1 / 5 4 3 / 8 7 6, sorted
  // 1 2 3 3 4 5 6 7 8, median 4.
  EXPECT_DOUBLE_EQ(hodges_lehmann_shift(std::vector<double>{1, 2, 3}, std::vector<double>{4, 6, 9}), 4.0);
  // a = {1, 2}, b = {3, 5}: differences 2 1 4 3, sorted 1 2 3 4, median (2 + 3) / 2 = 2.5.
  EXPECT_DOUBLE_EQ(hodges_lehmann_shift(std::vector<double>{1, 2}, std::vector<double>{3, 5}), 2.5);
  // Reversed direction: the shift from b to a is -4.
  EXPECT_DOUBLE_EQ(hodges_lehmann_shift(std::vector<double>{4, 6, 9}, std::vector<double>{1, 2, 3}), -4.0);
}

TEST(HodgesLehmann, PlantedShift) {
  // b = a + 3.25: the differences are 3.25 + (a_j - a_i), and a_j - a_i is symmetric about 0
  // (the pairs (i, j) and (j, i)), so the median is exactly 3.25.
  const std::vector<double> a = {3, 9, 1, 14, 6, 2, 11};
  std::vector<double> b;
  for (double x : a) b.push_back(x + 3.25);
  EXPECT_DOUBLE_EQ(hodges_lehmann_shift(a, b), 3.25);
}

TEST(HodgesLehmann, LargeInputsStayExact) {
  // 2100 x 2100 = 4,410,000 pairs (over the ~4 million the brief named as large). Python
  // reference: numpy.median(numpy.subtract.outer(b, a)) = 52.37999999999988, with
  // a_i = (7919 i mod 2111) x 0.37 + 1000 and b_j = (104729 j mod 2099) x 0.41 + 1012.5.
  constexpr int n = 2100;
  std::vector<double> a, b;
  for (int i = 0; i < n; ++i) a.push_back(static_cast<double>(i * 7919 % 2111) * 0.37 + 1000.0);
  for (int j = 0; j < n; ++j)
    b.push_back(static_cast<double>(static_cast<std::int64_t>(j) * 104729 % 2099) * 0.41 + 1012.5);
  EXPECT_DOUBLE_EQ(hodges_lehmann_shift(a, b), 52.37999999999988);
  // Planted: a = 0..2099, b = a + 7.5: median 7.5 exactly (symmetry, as in PlantedShift).
  std::vector<double> base, shifted;
  for (int i = 0; i < n; ++i) {
    base.push_back(i);
    shifted.push_back(i + 7.5);
  }
  EXPECT_DOUBLE_EQ(hodges_lehmann_shift(base, shifted), 7.5);
}

TEST(HodgesLehmann, EmptyOrNonFiniteIsNaN) {
  EXPECT_TRUE(std::isnan(hodges_lehmann_shift({}, std::vector<double>{1})));
  EXPECT_TRUE(std::isnan(hodges_lehmann_shift(std::vector<double>{1}, std::vector<double>{INFINITY})));
  EXPECT_DOUBLE_EQ(hodges_lehmann_shift(std::vector<double>{1}, std::vector<double>{1}), 0.0);
}

// ---- Comparison --------------------------------------------------------------------------------

// 100 + the first 20 digits of pi (ties within the sample).
std::vector<double> baseline_samples() {
  const int digits[] = {0, 3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8};
  std::vector<double> samples;
  for (int d : digits) samples.push_back(100.0 + d);
  return samples;
}

TEST(CompareSamples, ClearlyShiftedIsSignificant) {
  // b = a + 10. Hand: a sorted 100 101 101 102 102 103 103 103 103 104 105 105 105 106 107 108 108
  // 109 109 109, median (104 + 105) / 2 = 104.5; b's median 114.5; relative change
  // 10 / 104.5 = 0.09569377990430622. HL shift: every b_j - a_i = 10 + (a_j - a_i), symmetric
  // about 10 -> 10. Every b beats every a: u_a = 0; ties within the samples -> normal, Python
  // reference z = -5.407155270755306, p = 6.40336288347558e-08. Bootstrap of the relative change
  // (defaults: 0.95, 10000, seed 5489), Python reference:
  // [0.0660377358490566, 0.12380952380952381].
  const std::vector<double> a = baseline_samples();
  std::vector<double> b;
  for (double x : a) b.push_back(x + 10.0);
  const Comparison c = compare_samples(a, b);
  EXPECT_EQ(c.n_a, 20u);
  EXPECT_EQ(c.n_b, 20u);
  EXPECT_DOUBLE_EQ(c.median_a, 104.5);
  EXPECT_DOUBLE_EQ(c.median_b, 114.5);
  EXPECT_DOUBLE_EQ(c.relative_change, 0.09569377990430622);
  EXPECT_DOUBLE_EQ(c.hl_shift, 10.0);
  EXPECT_DOUBLE_EQ(c.relative_shift, 0.09569377990430622);
  EXPECT_DOUBLE_EQ(c.mann_whitney.u_a, 0.0);
  EXPECT_EQ(c.mann_whitney.method, MannWhitneyMethod::kNormal);
  EXPECT_NEAR(c.mann_whitney.p_value, 6.40336288347558e-08, 1e-18);
  EXPECT_TRUE(c.significant);
  EXPECT_DOUBLE_EQ(c.alpha, 0.05);
  EXPECT_DOUBLE_EQ(c.relative_change_ci.estimate, c.relative_change);
  EXPECT_DOUBLE_EQ(c.relative_change_ci.low, 0.0660377358490566);
  EXPECT_DOUBLE_EQ(c.relative_change_ci.high, 0.12380952380952381);
  EXPECT_TRUE(c.relative_change_ci.contains(c.relative_change));
}

TEST(CompareSamples, IdenticalSamplesAreNotSignificant) {
  // a against itself: p = 1 (MannWhitney.IdenticalAndConstantSamples), no change, no shift. The
  // bootstrap still resamples both sides independently: Python reference
  // [-0.028037383177570093, 0.02857142857142857], which contains 0.
  const std::vector<double> a = baseline_samples();
  const Comparison c = compare_samples(a, a);
  EXPECT_DOUBLE_EQ(c.mann_whitney.p_value, 1.0);
  EXPECT_FALSE(c.significant);
  EXPECT_DOUBLE_EQ(c.relative_change, 0.0);
  EXPECT_DOUBLE_EQ(c.hl_shift, 0.0);
  EXPECT_DOUBLE_EQ(c.relative_change_ci.low, -0.028037383177570093);
  EXPECT_DOUBLE_EQ(c.relative_change_ci.high, 0.02857142857142857);
  EXPECT_TRUE(c.relative_change_ci.contains(0.0));
}

TEST(CompareSamples, AlphaDecidesSignificance) {
  // Tortoise and hare (p = 0.3095, MannWhitney.TortoiseAndHare): not significant at the default
  // 0.05 (Google Benchmark compare.py's default), significant at alpha = 0.5.
  const std::vector<double> tortoises = {1, 7, 8, 9, 10, 11}, hares = {2, 3, 4, 5, 6, 12};
  EXPECT_FALSE(compare_samples(tortoises, hares).significant);
  EXPECT_TRUE(compare_samples(tortoises, hares, 0.5).significant);
}

TEST(CompareSamples, EmptyAndZeroBaseline) {
  const Comparison empty = compare_samples({}, std::vector<double>{1, 2});
  EXPECT_FALSE(empty.significant);
  EXPECT_TRUE(std::isnan(empty.median_a));
  EXPECT_TRUE(std::isnan(empty.relative_change_ci.low));
  // A baseline median of 0: no relative change and no bootstrap interval. Hand: median_b = 2;
  // the differences 2 - a_i are 3, 2, 1 (three of each), so the HL shift is 2.
  const Comparison zero = compare_samples(std::vector<double>{-1, 0, 1}, std::vector<double>{2, 2, 2}, 0.05, 0.95, 100);
  EXPECT_DOUBLE_EQ(zero.median_a, 0.0);
  EXPECT_DOUBLE_EQ(zero.hl_shift, 2.0);
  EXPECT_TRUE(std::isnan(zero.relative_change));
  EXPECT_TRUE(std::isnan(zero.relative_change_ci.low));
}

// ---- Order-statistic bootstrap (runs beyond kOrderStatisticBootstrapMinSize) --------------------

TEST(OrderStatisticBootstrap, SmallDistributionsByHand) {
  // Resampling {1, 2, 3} three times: the median is 1 when at least two draws are 1,
  // 3 (1/3)^2 (2/3) + (1/3)^3 = 7/27 = 0.259; 3 likewise; 2 otherwise (13/27). The 30th and 70th
  // percentiles of the medians are therefore 2, the 20th is 1 and the 80th is 3 (each at least 0.04
  // from a jump, ten standard errors of a proportion from 10,000 replicates).
  const std::vector<double> odd = {3, 1, 2};
  const Interval narrow = bootstrap_median_ci(odd, 0.4, 10000, 5489, BootstrapMethod::kOrderStatistic);
  EXPECT_EQ(narrow.method, BootstrapMethod::kOrderStatistic);
  EXPECT_DOUBLE_EQ(narrow.low, 2.0);
  EXPECT_DOUBLE_EQ(narrow.high, 2.0);
  const Interval wide = bootstrap_median_ci(odd, 0.6, 10000, 5489, BootstrapMethod::kOrderStatistic);
  EXPECT_DOUBLE_EQ(wide.low, 1.0);
  EXPECT_DOUBLE_EQ(wide.high, 3.0);
  // Resampling {1, 3} twice: median 1 (1/4), 2 (the mean of 1 and 3, 1/2) or 3 (1/4); this
  // exercises the second middle order statistic of an even n.
  const std::vector<double> even = {3, 1};
  const Interval even_narrow = bootstrap_median_ci(even, 0.4, 10000, 5489, BootstrapMethod::kOrderStatistic);
  EXPECT_DOUBLE_EQ(even_narrow.low, 2.0);
  EXPECT_DOUBLE_EQ(even_narrow.high, 2.0);
  const Interval even_wide = bootstrap_median_ci(even, 0.6, 10000, 5489, BootstrapMethod::kOrderStatistic);
  EXPECT_DOUBLE_EQ(even_wide.low, 1.0);
  EXPECT_DOUBLE_EQ(even_wide.high, 3.0);
}

TEST(OrderStatisticBootstrap, AgreesWithResamplingAndTheNormalTheoryAtTheSwitchSize) {
  // 10,000 samples per run (the switch size): a on an even grid over [1.00, 1.10), b the same grid
  // over [1.02, 1.12), each shuffled. Medians 1.05 and 1.07 (to 1e-5), relative change
  // 0.02 / 1.05 = 0.019048. Normal theory (Stuart & Ord, Kendall's Advanced Theory of Statistics,
  // sec. 10.10): a median's standard error is 1 / (2 f sqrt(n)) = 1 / (2 * 10 * 100) = 0.0005 for a
  // density f of 10; by the delta method the change (m_b - m_a) / m_a has standard error
  // sqrt(0.0005^2 + (1.07 / 1.05)^2 0.0005^2) / 1.05 = 0.000680, so the 95% interval is
  // 0.019048 -+ 1.96 * 0.000680 = [0.017715, 0.020381].
  constexpr std::size_t n = 10000;
  std::vector<double> a(n), b(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double grid = static_cast<double>((i * 7919) % n) / static_cast<double>(n);  // a permutation
    a[i] = 1.00 + 0.1 * grid;
    b[i] = 1.02 + 0.1 * grid;
  }
  const double expected_low = 0.017715, expected_high = 0.020381;
  const double half_width = (expected_high - expected_low) / 2;
  const Comparison fast = compare_samples(a, b, kDefaultAlpha, kDefaultConfidence, kDefaultBootstrapResamples,
                                          kDefaultBootstrapSeed, BootstrapMethod::kOrderStatistic);
  const Comparison slow =
      compare_samples(a, b, kDefaultAlpha, kDefaultConfidence, 2000, kDefaultBootstrapSeed, BootstrapMethod::kResample);
  // Tolerance: 15% of the half-width. The Monte Carlo error of a 2.5% percentile from B replicates
  // is about sqrt(0.025 * 0.975 / B) / phi(1.96) = 0.085 standard errors for B = 2000 (6% of the
  // half-width); the rest allows for the median's discreteness.
  EXPECT_NEAR(fast.relative_change_ci.low, expected_low, 0.15 * half_width);
  EXPECT_NEAR(fast.relative_change_ci.high, expected_high, 0.15 * half_width);
  EXPECT_NEAR(slow.relative_change_ci.low, expected_low, 0.15 * half_width);
  EXPECT_NEAR(slow.relative_change_ci.high, expected_high, 0.15 * half_width);
  EXPECT_NEAR(fast.relative_change_ci.low, slow.relative_change_ci.low, 0.15 * half_width);
  EXPECT_NEAR(fast.relative_change_ci.high, slow.relative_change_ci.high, 0.15 * half_width);
  EXPECT_EQ(fast.relative_change_ci.method, BootstrapMethod::kOrderStatistic);
  EXPECT_EQ(slow.relative_change_ci.method, BootstrapMethod::kResample);
  // Same verdict: the test does not depend on the interval method.
  EXPECT_EQ(fast.significant, slow.significant);
  EXPECT_TRUE(fast.significant);
  // The automatic choice keeps resampling up to the switch size and switches beyond it.
  EXPECT_EQ(compare_samples(a, b, kDefaultAlpha, kDefaultConfidence, 0).relative_change_ci.method,
            BootstrapMethod::kResample);
  a.push_back(1.05);
  EXPECT_EQ(compare_samples(a, b, kDefaultAlpha, kDefaultConfidence, 0).relative_change_ci.method,
            BootstrapMethod::kOrderStatistic);
}

TEST(OrderStatisticBootstrap, MedianIntervalOfUniformDrawsMatchesNormalTheory) {
  // 40,001 draws from U(0, 1) (generator seed 11): the median's standard error is
  // 1 / (2 sqrt(40001)) = 0.0025, so the 95% interval is the sample median -+ 0.0049.
  std::mt19937_64 rng(11);
  std::vector<double> samples(40001);
  for (double& x : samples) x = uniform01(rng);
  const Interval ci = bootstrap_median_ci(samples);
  EXPECT_EQ(ci.method, BootstrapMethod::kOrderStatistic);
  EXPECT_NEAR(ci.low, ci.estimate - 0.0049, 0.15 * 0.0049);
  EXPECT_NEAR(ci.high, ci.estimate + 0.0049, 0.15 * 0.0049);
}

}  // namespace statistics_test
}  // namespace
}  // namespace ferret::stats

namespace ferret::stats {
namespace {
namespace statistics_test {

// Integer medians by hand: odd counts take the middle; even counts the lower middle plus half the
// gap, rounded toward the lower value; empty is 0.
TEST(MedianNs, HandComputed) {
  EXPECT_EQ(median_ns({}), 0);
  EXPECT_EQ(median_ns({7}), 7);
  EXPECT_EQ(median_ns({5, 1, 3}), 3);
  EXPECT_EQ(median_ns({10, 1, 3, 2}), 2);  // middles 2 and 3: 2 + 1/2
  EXPECT_EQ(median_ns({1, 4}), 2);         // 1 + 3/2
  EXPECT_EQ(median_ns({6, 2}), 4);
  EXPECT_EQ(median_ns({-5, -2}), -4);  // -5 + 3/2
  const std::int64_t big = INT64_MAX - 1;
  EXPECT_EQ(median_ns({big, INT64_MAX}), big);  // no overflow from adding the middles
}

}  // namespace statistics_test
}  // namespace
}  // namespace ferret::stats
