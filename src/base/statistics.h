// Benchmark statistics: summaries, a noise check, bootstrap intervals, Tukey outliers, warm-up
// detection (MSER-5), the Mann–Whitney U test, the Hodges–Lehmann shift and a two-run comparison.
// Methods and references: docs/STATISTICS.md. Everything is deterministic: the bootstrap draws from
// std::mt19937_64 (its output sequence is fixed by the C++ standard) through an explicit index
// mapping, so the same samples and seed give the same interval on every platform.
//
// Conventions shared by every function:
//   - Samples are doubles in any order; nothing is modified (functions copy what they sort).
//   - Empty input gives NaN statistics (counts stay 0); see each function for n = 1.
//   - A NaN or infinite sample makes the statistics NaN (Summary.n still counts it); it never
//     reaches a sort, so there is no undefined behaviour on bad input.
//   - Percentiles are Hyndman & Fan (1996) type 7: linear interpolation between closest ranks,
//     the default of numpy.percentile and of R's quantile(). For p in [0, 100] and n sorted
//     samples, h = (p / 100) * (n - 1); the result is x[floor(h)] moved (h - floor(h)) of the
//     way to x[floor(h) + 1], with numpy's interpolation formula (so results match numpy to the
//     last bit on the same input).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace ferret::stats {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- Summary ---------------------------------------------------------------------------------

struct Summary {
  std::size_t n = 0;
  double min = kNaN, max = kNaN;
  double mean = kNaN;
  double median = kNaN;                     // = p50
  double stddev = kNaN;                     // sample standard deviation (divides by n - 1); NaN when n < 2
  double q1 = kNaN, q3 = kNaN, iqr = kNaN;  // 25th and 75th percentiles, iqr = q3 - q1
  double p50 = kNaN, p90 = kNaN, p95 = kNaN, p99 = kNaN, p999 = kNaN;  // p999 is the 99.9th
};

// n = 0: every statistic NaN. n = 1: every statistic is the sample, iqr 0, stddev NaN.
Summary summarize(std::span<const double> samples);

// Type-7 percentile of already ascending-sorted samples, p in [0, 100]. NaN when sorted is empty
// or p is outside [0, 100] (or NaN). The order is not checked.
double percentile(std::span<const double> sorted, double p);

// The median of integer nanoseconds, exact in integers: the middle value, or for an even count the
// lower middle plus half the gap (rounded toward the lower; pandas' mean of the two middles, as
// HTA reports it, to the nanosecond). 0 when empty. Reorders `values` (nth_element, O(n)).
std::int64_t median_ns_in_place(std::span<std::int64_t> values);
inline std::int64_t median_ns(std::vector<std::int64_t> values) { return median_ns_in_place(values); }

// ---- Noise -----------------------------------------------------------------------------------

// Noise warning: IQR / |median| > 10%. Source: common benchmarking practice (Google Benchmark's noise guidance),
// benchmark statistics
// ("a noise warning when IQR/median > 10%").
inline constexpr double kNoisyRelativeIqr = 0.10;

// iqr / |median|: +inf when the median is 0 and the IQR is not; NaN for an empty summary or a
// zero median with zero IQR.
double relative_iqr(const Summary& s);
// relative_iqr(s) > kNoisyRelativeIqr (strictly; false when it is NaN).
bool is_noisy(const Summary& s);

// ---- Bootstrap ---------------------------------------------------------------------------------

// std::mt19937_64::default_seed (5489, fixed by the C++ standard).
inline constexpr std::uint64_t kDefaultBootstrapSeed = 5489;
inline constexpr int kDefaultBootstrapResamples = 10000;
inline constexpr double kDefaultConfidence = 0.95;

// How each bootstrap replicate's median is drawn. kResample draws n values with replacement and
// takes their median: O(n) per replicate. kOrderStatistic draws the replicate's median straight
// from its sampling distribution (the middle order statistics of n uniform indices are Beta
// distributed; docs/STATISTICS.md): O(1) per replicate after one sort, the same distribution.
// kAuto picks kOrderStatistic beyond kOrderStatisticBootstrapMinSize samples in a run.
enum class BootstrapMethod : std::uint8_t { kAuto, kResample, kOrderStatistic };
inline constexpr std::size_t kOrderStatisticBootstrapMinSize = 10000;
// "resample" or "order statistic", as the JSON reports show it.
inline const char* bootstrap_method_name(BootstrapMethod method) {
  return method == BootstrapMethod::kOrderStatistic ? "order statistic" : "resample";
}

struct Interval {
  double estimate = kNaN;  // the statistic on the original samples
  double low = kNaN, high = kNaN;
  double confidence = kNaN;  // e.g. 0.95
  int resamples = 0;
  BootstrapMethod method = BootstrapMethod::kResample;  // the one used (never kAuto)

  bool contains(double x) const { return low <= x && x <= high; }
};

// A uniform index in [0, n) from one or more draws of rng: rejection sampling (draws below
// 2^64 mod n are discarded, the rest are reduced mod n), so it is unbiased and the same on every
// platform, unlike std::uniform_int_distribution whose algorithm is implementation-defined.
// n must be > 0.
template <class Engine>
std::uint64_t uniform_index(Engine& rng, std::uint64_t n) {
  const std::uint64_t reject_below = (0 - n) % n;  // 2^64 mod n
  for (;;) {
    const std::uint64_t draw = rng();
    if (draw >= reject_below) return draw % n;
  }
}

// Percentile bootstrap (Efron & Tibshirani 1993, ch. 13) of the median: `resamples` resamples of
// n draws with replacement (std::mt19937_64 seeded with `seed`, indices by uniform_index), the
// median of each (type 7, by nth_element), and the type-7 percentiles (1 - c)/2 and (1 + c)/2 of
// those medians. Empty input, confidence outside (0, 1) or resamples < 1: NaN bounds. n = 1: the
// interval is [x, x].
Interval bootstrap_median_ci(std::span<const double> samples, double confidence = kDefaultConfidence,
                             int resamples = kDefaultBootstrapResamples, std::uint64_t seed = kDefaultBootstrapSeed,
                             BootstrapMethod method = BootstrapMethod::kAuto);

// ---- Outliers ----------------------------------------------------------------------------------

// Tukey's fences (Tukey 1977) on type-7 quartiles: mild outliers lie beyond q1 - 1.5 IQR or
// q3 + 1.5 IQR but not beyond the outer fences q1 - 3 IQR / q3 + 3 IQR; extreme outliers lie
// beyond the outer fences. "Beyond" is strict: a sample on a fence is not an outlier.
struct TukeyOutliers {
  double lower_inner = kNaN, upper_inner = kNaN;  // q1 - 1.5 IQR, q3 + 1.5 IQR
  double lower_outer = kNaN, upper_outer = kNaN;  // q1 - 3 IQR, q3 + 3 IQR
  std::size_t low_mild = 0, high_mild = 0;
  std::size_t low_extreme = 0, high_extreme = 0;

  std::size_t total() const { return low_mild + high_mild + low_extreme + high_extreme; }
};
inline constexpr double kTukeyInnerFence = 1.5, kTukeyOuterFence = 3.0;

// Empty or non-finite input: NaN fences, zero counts.
TukeyOutliers tukey_outliers(std::span<const double> samples);

// ---- Warm-up -----------------------------------------------------------------------------------

// MSER-5 (White 1997; White, Cobb & Spratt 2000): split the series into k = n / 5 batches of 5
// (a trailing partial batch is dropped), with batch means Z_1..Z_k. Truncating the first d batches
// scores MSER(d) = sum_{j > d} (Z_j - mean_{j > d} Z)^2 / (k - d)^2; the warm-up is the d* that
// minimises it over the first half of the batches (0 <= d < k / 2, the earliest on ties), and the
// steady state starts at sample 5 d*.
inline constexpr std::size_t kMserBatchSize = 5;
inline constexpr std::size_t kMserMinSamples = 10;  // two batches: shorter series return 0

// Index of the first steady-state sample; 0 for series shorter than kMserMinSamples, for a
// non-finite sample, or when no truncation lowers the statistic.
std::size_t steady_state_start(std::span<const double> samples);

// ---- Mann–Whitney U ----------------------------------------------------------------------------

enum class MannWhitneyMethod : std::uint8_t {
  kNone,    // no p-value: a sample is empty or has a non-finite value
  kExact,   // exact null distribution of U (no ties, both samples <= kMannWhitneyExactMaxSize)
  kNormal,  // normal approximation with tie correction and continuity correction
};
// "exact", "normal", "none": the method as JSON documents name it.
const char* mann_whitney_method_key(MannWhitneyMethod m);
inline constexpr std::size_t kMannWhitneyExactMaxSize = 20;

struct MannWhitney {
  std::size_t n_a = 0, n_b = 0;
  // u_a: pairs (a_i, b_j) with a_i > b_j, plus half the tied pairs; = R_a - n_a (n_a + 1) / 2
  // with R_a the sum of a's midranks in the pooled sample. u_a + u_b = n_a n_b.
  double u_a = kNaN, u_b = kNaN;
  // Normal statistic (|u_a - n_a n_b / 2| - 1/2) / sigma_ties, signed as u_a - n_a n_b / 2 and
  // floored at 0; computed whichever method gives the p-value (0 when sigma is 0).
  double z = kNaN;
  double p_value = kNaN;  // two-sided, clipped to at most 1
  bool has_ties = false;  // equal values anywhere in the pooled sample
  MannWhitneyMethod method = MannWhitneyMethod::kNone;
};

// Two-sided Mann–Whitney U test (Mann & Whitney 1947). The p-value is exact (dynamic-programming
// count of the U distribution, Mann & Whitney's recurrence) when there are no ties and both
// samples have at most kMannWhitneyExactMaxSize values and allow_exact is true; otherwise it is the
// normal approximation with the tie-corrected variance and a continuity correction (as
// scipy.stats.mannwhitneyu's asymptotic method and NAG g08amc). When every pooled value is equal
// (sigma = 0) the p-value is 1. An empty or non-finite sample: method kNone, NaN U and p.
MannWhitney mann_whitney_u(std::span<const double> a, std::span<const double> b, bool allow_exact = true);

// ---- Hodges–Lehmann --------------------------------------------------------------------------

// Hodges–Lehmann (1963) estimate of the shift from a to b: the median (type 7) of all n_a n_b
// differences b_j - a_i. Exact for every size in O(n_a + n_b) memory: the order statistics are
// found by bisection over the doubles, counting differences <= t in O(n_a + n_b) with two
// pointers over the sorted samples (at most 64 steps each). NaN when a sample is empty or not
// finite.
double hodges_lehmann_shift(std::span<const double> a, std::span<const double> b);

// Distribution-free confidence interval of the Hodges–Lehmann shift (Moses 1965; Hollander,
// Wolfe & Chicken, Nonparametric Statistical Methods, 3rd ed., 2014, §4.3): the k-th smallest and
// the (n_a n_b + 1 - k)-th smallest of the n_a n_b differences b_j - a_i, where k is the largest
// rank with P(U <= k - 1) <= (1 - confidence) / 2 under the null distribution of U. Its coverage
// is 1 - 2 P(U <= k - 1). Exact U distribution when there are no ties and both samples have at
// most kMannWhitneyExactMaxSize values (as the test); otherwise k = floor(n_a n_b / 2 - z sigma_U)
// with sigma_U tie-corrected (the same variance as the test), at least 1. When even k = 1 covers
// less than asked (tiny samples, e.g. 3 against 3: 1 - 2/20 = 90%), the interval is the widest one,
// [min difference, max difference], and `confidence` says what it covers. The interval excludes 0
// exactly when the exact two-sided test rejects at 1 - confidence (the test's dual).
struct ShiftInterval {
  double low = kNaN, high = kNaN;
  double confidence = kNaN;  // the coverage attained (exact), or the one asked for (normal)
  double requested = kNaN;
  std::uint64_t rank = 0;  // k
  bool exact = false;

  bool attained() const { return confidence >= requested - 1e-12; }
};
ShiftInterval hodges_lehmann_interval(std::span<const double> a, std::span<const double> b,
                                      double confidence = kDefaultConfidence);

// Standard normal quantile: the x with Phi(x) = p, for p in (0, 1) (NaN outside). Acklam's rational
// approximation refined by one Halley step on erfc, accurate to about 1e-15.
double normal_quantile(double p);

// Steps per trace (each side) for a two-sided Mann–Whitney test at `alpha` to detect a shift
// `delta` with probability `power`, when single steps spread with standard deviation `sigma`:
// n = (pi / 3) * 2 (z_{1-alpha/2} + z_power)^2 sigma^2 / delta^2, rounded up: the two-sample
// normal-theory size (e.g. Chow, Shao & Wang, Sample Size Calculations in Clinical Research, §3.2)
// divided by the test's asymptotic relative efficiency 3/pi under normal errors (Lehmann,
// Nonparametrics, 1975, §2.4). +inf when delta is 0 (or sigma not finite); 1 at least.
double steps_for_shift(double sigma, double delta, double alpha = 0.05, double power = 0.8);

// Pooled sample standard deviation of two samples: sqrt(((n_a - 1) s_a^2 + (n_b - 1) s_b^2) /
// (n_a + n_b - 2)). NaN when n_a + n_b < 3 or a value is not finite.
double pooled_stddev(std::span<const double> a, std::span<const double> b);

// ---- Comparison --------------------------------------------------------------------------------

// Significance level: Google Benchmark's tools/compare.py defaults its U test to alpha = 0.05.
inline constexpr double kDefaultAlpha = 0.05;

struct Comparison {
  std::size_t n_a = 0, n_b = 0;
  double median_a = kNaN, median_b = kNaN;
  double relative_change = kNaN;  // (median_b - median_a) / median_a; NaN when median_a is 0
  double hl_shift = kNaN;         // hodges_lehmann_shift(a, b)
  double relative_shift = kNaN;   // hl_shift / median_a; NaN when median_a is 0
  // hodges_lehmann_interval(a, b, confidence), and the same bounds over median_a (NaN when it is 0).
  ShiftInterval shift_interval;
  double relative_shift_low = kNaN, relative_shift_high = kNaN;
  // Percentile bootstrap of relative_change, resampling a and b independently from one generator
  // (per resample: n_a draws from a, then n_b from b; or, beyond kOrderStatisticBootstrapMinSize
  // samples in either run, one order-statistic draw per run). NaN bounds if a resampled median of
  // a is 0.
  Interval relative_change_ci;
  MannWhitney mann_whitney;
  double alpha = kDefaultAlpha;
  bool significant = false;  // mann_whitney.p_value < alpha (false when the p-value is NaN)
};

// a is the baseline, b the contender.
Comparison compare_samples(std::span<const double> a, std::span<const double> b, double alpha = kDefaultAlpha,
                           double confidence = kDefaultConfidence, int resamples = kDefaultBootstrapResamples,
                           std::uint64_t seed = kDefaultBootstrapSeed, BootstrapMethod method = BootstrapMethod::kAuto);

}  // namespace ferret::stats
