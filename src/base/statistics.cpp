#include "base/statistics.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numbers>
#include <random>
#include <vector>

namespace ferret::stats {
namespace {

bool all_finite(std::span<const double> samples) {
  return std::all_of(samples.begin(), samples.end(), [](double x) { return std::isfinite(x); });
}

std::vector<double> sorted_copy(std::span<const double> samples) {
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

// numpy's _lerp: from the nearer end, so t = 1 gives exactly `upper` and results match numpy's
// percentiles bit for bit.
double interpolate(double lower, double upper, double t) {
  const double diff = upper - lower;
  return t >= 0.5 ? upper - diff * (1.0 - t) : lower + diff * t;
}

// Type-7 quantile of sorted, non-empty samples, q in [0, 1].
double quantile_of_sorted(std::span<const double> sorted, double q) {
  const double h = static_cast<double>(sorted.size() - 1) * q;
  const double lower_rank = std::floor(h);
  const auto lower = static_cast<std::size_t>(lower_rank);
  if (lower + 1 >= sorted.size()) return sorted.back();
  return interpolate(sorted[lower], sorted[lower + 1], h - lower_rank);
}

// Type-7 median of a non-empty buffer, reordering it: nth_element, plus the largest of the lower
// half when n is even. Same value as quantile_of_sorted(sorted, 0.5).
double median_in_place(std::span<double> values) {
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return interpolate(lower, upper, 0.5);
}

double median_of(std::span<const double> samples) {
  std::vector<double> copy(samples.begin(), samples.end());
  return median_in_place(copy);
}

// Fills `out` with out.size() draws with replacement from `samples`.
void resample(std::mt19937_64& rng, std::span<const double> samples, std::span<double> out) {
  for (double& x : out) x = samples[uniform_index(rng, samples.size())];
}

// ---- Order-statistic bootstrap helpers ----

// A uniform double in (0, 1) from the top 53 bits of one draw: portable, unlike
// std::uniform_real_distribution, and never 0, so its logarithm is finite.
double unit_uniform(std::mt19937_64& rng) { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1p-53; }

// Box–Muller (1958): one standard normal from two uniforms.
double standard_normal(std::mt19937_64& rng) {
  const double radius = std::sqrt(-2.0 * std::log(unit_uniform(rng)));
  return radius * std::cos(2.0 * std::numbers::pi * unit_uniform(rng));
}

// Gamma(shape, 1) for shape >= 1 by Marsaglia & Tsang (2000), "A simple method for generating
// gamma variables", ACM TOMS 26(3): a squeeze-free acceptance test on a transformed normal.
double gamma_variate(std::mt19937_64& rng, double shape) {
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x = 0.0, v = 0.0;
    do {
      x = standard_normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    if (std::log(unit_uniform(rng)) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

// Beta(a, b) as G_a / (G_a + G_b) with independent gammas; a, b >= 1.
double beta_variate(std::mt19937_64& rng, double a, double b) {
  const double ga = gamma_variate(rng, a);
  return ga / (ga + gamma_variate(rng, b));
}

// The type-7 median of n draws with replacement from `sorted`, drawn in O(1). The draws are
// indices floor(n U_i) with U_i uniform; floor is monotone, so the k-th smallest index is
// floor(n U_(k)), and U_(k) ~ Beta(k, n + 1 - k) (David & Nagaraja, Order Statistics, 2003,
// sec. 2.2). For even n the next order statistic is U_(k) plus (1 - U_(k)) times the smallest of
// the n - k uniforms above it, whose distribution is Beta(1, n - k): 1 - W^(1 / (n - k)).
double order_statistic_median(std::mt19937_64& rng, std::span<const double> sorted) {
  const std::size_t n = sorted.size();
  const std::size_t k = (n + 1) / 2;  // 1-based rank of the (lower) middle
  const double nd = static_cast<double>(n);
  auto index = [n, nd](double u) { return std::min(n - 1, static_cast<std::size_t>(u * nd)); };
  const double lower_u = beta_variate(rng, static_cast<double>(k), static_cast<double>(n + 1 - k));
  if (n % 2 == 1) return sorted[index(lower_u)];
  const double gap = 1.0 - std::pow(unit_uniform(rng), 1.0 / static_cast<double>(n - k));
  return interpolate(sorted[index(lower_u)], sorted[index(lower_u + (1.0 - lower_u) * gap)], 0.5);
}

// Draws bootstrap replicates of one sample's median by either method.
class ReplicateMedians {
 public:
  ReplicateMedians(std::span<const double> samples, BootstrapMethod method) : samples_(samples), method_(method) {
    if (method_ == BootstrapMethod::kOrderStatistic) {
      buffer_ = sorted_copy(samples);
    } else {
      buffer_.resize(samples.size());
    }
  }
  double draw(std::mt19937_64& rng) {
    if (method_ == BootstrapMethod::kOrderStatistic) return order_statistic_median(rng, buffer_);
    resample(rng, samples_, buffer_);
    return median_in_place(buffer_);
  }

 private:
  std::span<const double> samples_;
  BootstrapMethod method_;
  std::vector<double> buffer_;  // sorted samples, or the resample being drawn
};

BootstrapMethod resolve(BootstrapMethod method, std::size_t largest_run) {
  if (method != BootstrapMethod::kAuto) return method;
  return largest_run > kOrderStatisticBootstrapMinSize ? BootstrapMethod::kOrderStatistic : BootstrapMethod::kResample;
}

bool valid_bootstrap_request(double confidence, int resamples) {
  return confidence > 0.0 && confidence < 1.0 && resamples >= 1;
}

// The percentile interval from the replicates (reordered here).
void percentile_bounds(std::vector<double>& replicates, Interval& interval) {
  std::sort(replicates.begin(), replicates.end());
  interval.low = quantile_of_sorted(replicates, (1.0 - interval.confidence) / 2.0);
  interval.high = quantile_of_sorted(replicates, (1.0 + interval.confidence) / 2.0);
}

// ---- Mann–Whitney helpers ----

// Two-sided exact p-value for u_a with no ties: f(i, j, u), the number of orderings of i values of
// a and j of b with U_a = u, satisfies f(i, j, u) = f(i - 1, j, u - j) + f(i, j - 1, u): the
// largest value is from a (beating all j of b) or from b; f(i, 0, 0) = f(0, j, 0) = 1 (Mann and
// Whitney 1947). U is symmetric about n_a n_b / 2, so p = 2 P(U >= max(u_a, u_b)), at most 1.
// Null distribution of U for sizes n_a, n_b without ties: element u counts the orderings with U = u.
std::vector<std::uint64_t> exact_u_counts(std::size_t n_a, std::size_t n_b) {
  const std::size_t max_u = n_a * n_b;
  const std::size_t width = max_u + 1;
  // counts[i * width + u] = f(i, j, u) for the current j; previous holds j - 1.
  std::vector<std::uint64_t> previous((n_a + 1) * width, 0), counts((n_a + 1) * width, 0);
  for (std::size_t i = 0; i <= n_a; ++i) counts[i * width] = 1;  // j = 0
  for (std::size_t j = 1; j <= n_b; ++j) {
    std::swap(previous, counts);
    std::fill(counts.begin(), counts.end(), 0);
    counts[0] = 1;  // i = 0
    for (std::size_t i = 1; i <= n_a; ++i) {
      for (std::size_t u = 0; u <= i * j; ++u) {
        const std::uint64_t largest_from_a = u >= j ? counts[(i - 1) * width + u - j] : 0;
        counts[i * width + u] = largest_from_a + previous[i * width + u];
      }
    }
  }
  return {counts.begin() + static_cast<std::ptrdiff_t>(n_a * width),
          counts.begin() + static_cast<std::ptrdiff_t>(n_a * width + width)};
}

double exact_mann_whitney_p(std::size_t n_a, std::size_t n_b, double u_a) {
  const std::vector<std::uint64_t> counts = exact_u_counts(n_a, n_b);
  const std::size_t max_u = n_a * n_b;
  const auto u_high = static_cast<std::size_t>(std::max(u_a, static_cast<double>(max_u) - u_a));
  std::uint64_t total = 0, tail = 0;
  for (std::size_t u = 0; u <= max_u; ++u) {
    const std::uint64_t c = counts[u];
    total += c;
    if (u >= u_high) tail += c;
  }
  return std::min(1.0, 2.0 * static_cast<double>(tail) / static_cast<double>(total));
}

// ---- Hodges–Lehmann helpers ----

// Maps doubles to unsigned keys in the same order (-0.0 just below +0.0), and back.
std::uint64_t order_key(double x) {
  const auto bits = std::bit_cast<std::uint64_t>(x);
  constexpr std::uint64_t kSign = std::uint64_t{1} << 63;
  return (bits & kSign) ? ~bits : (bits | kSign);
}
double from_order_key(std::uint64_t key) {
  constexpr std::uint64_t kSign = std::uint64_t{1} << 63;
  return std::bit_cast<double>((key & kSign) ? (key & ~kSign) : ~key);
}

// Number of pairs with b_j - a_i <= t (both sorted ascending). The computed difference is
// monotone in each argument (IEEE rounding is monotone), so for growing b_j the qualifying a_i
// are a suffix whose start only moves right.
std::uint64_t count_differences_at_most(std::span<const double> a, std::span<const double> b, double t) {
  std::uint64_t count = 0;
  std::size_t first = 0;  // first a_i with b_j - a_i <= t
  for (double bj : b) {
    while (first < a.size() && bj - a[first] > t) ++first;
    count += a.size() - first;
  }
  return count;
}

// The k-th smallest difference b_j - a_i (1-based): the smallest double t with at least k
// differences <= t, found by bisection over order keys between the smallest and largest
// difference. That t is itself a difference, the same value a full sort would give.
double kth_difference(std::span<const double> a, std::span<const double> b, std::uint64_t k) {
  std::uint64_t low = order_key(b.front() - a.back());
  std::uint64_t high = order_key(b.back() - a.front());
  while (low < high) {
    const std::uint64_t mid = low + (high - low) / 2;
    if (count_differences_at_most(a, b, from_order_key(mid)) >= k) {
      high = mid;
    } else {
      low = mid + 1;
    }
  }
  return from_order_key(low) + 0.0;  // + 0.0 turns a -0.0 into 0.0
}

}  // namespace

std::int64_t median_ns_in_place(std::span<std::int64_t> values) {
  if (values.empty()) return 0;
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const std::int64_t upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const std::int64_t lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return lower + (upper - lower) / 2;
}

// ---- Summary ---------------------------------------------------------------------------------

double percentile(std::span<const double> sorted, double p) {
  if (sorted.empty() || !(p >= 0.0 && p <= 100.0)) return kNaN;
  return quantile_of_sorted(sorted, p / 100.0);
}

Summary summarize(std::span<const double> samples) {
  Summary s;
  s.n = samples.size();
  if (samples.empty() || !all_finite(samples)) return s;
  const std::vector<double> sorted = sorted_copy(samples);
  const double n = static_cast<double>(sorted.size());
  s.min = sorted.front();
  s.max = sorted.back();
  double sum = 0.0;
  for (double x : samples) sum += x;
  s.mean = sum / n;
  if (sorted.size() >= 2) {
    double squares = 0.0;  // two-pass: sum of squared deviations from the mean
    for (double x : samples) squares += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(squares / (n - 1.0));
  }
  s.q1 = percentile(sorted, 25);
  s.p50 = percentile(sorted, 50);
  s.median = s.p50;
  s.q3 = percentile(sorted, 75);
  s.iqr = s.q3 - s.q1;
  s.p90 = percentile(sorted, 90);
  s.p95 = percentile(sorted, 95);
  s.p99 = percentile(sorted, 99);
  s.p999 = percentile(sorted, 99.9);
  return s;
}

// ---- Noise -----------------------------------------------------------------------------------

double relative_iqr(const Summary& s) { return s.iqr / std::fabs(s.median); }

bool is_noisy(const Summary& s) { return relative_iqr(s) > kNoisyRelativeIqr; }

// ---- Bootstrap ---------------------------------------------------------------------------------

Interval bootstrap_median_ci(std::span<const double> samples, double confidence, int resamples, std::uint64_t seed,
                             BootstrapMethod method) {
  Interval interval;
  interval.confidence = confidence;
  interval.resamples = resamples;
  interval.method = resolve(method, samples.size());
  if (samples.empty() || !all_finite(samples)) return interval;
  interval.estimate = median_of(samples);
  if (!valid_bootstrap_request(confidence, resamples)) return interval;

  std::mt19937_64 rng(seed);
  ReplicateMedians replicates(samples, interval.method);
  std::vector<double> medians(static_cast<std::size_t>(resamples));
  for (double& median : medians) median = replicates.draw(rng);
  percentile_bounds(medians, interval);
  return interval;
}

// ---- Outliers ----------------------------------------------------------------------------------

TukeyOutliers tukey_outliers(std::span<const double> samples) {
  TukeyOutliers out;
  if (samples.empty() || !all_finite(samples)) return out;
  const std::vector<double> sorted = sorted_copy(samples);
  const double q1 = percentile(sorted, 25), q3 = percentile(sorted, 75);
  const double iqr = q3 - q1;
  out.lower_inner = q1 - kTukeyInnerFence * iqr;
  out.upper_inner = q3 + kTukeyInnerFence * iqr;
  out.lower_outer = q1 - kTukeyOuterFence * iqr;
  out.upper_outer = q3 + kTukeyOuterFence * iqr;
  for (double x : samples) {
    if (x < out.lower_outer) {
      ++out.low_extreme;
    } else if (x < out.lower_inner) {
      ++out.low_mild;
    } else if (x > out.upper_outer) {
      ++out.high_extreme;
    } else if (x > out.upper_inner) {
      ++out.high_mild;
    }
  }
  return out;
}

// ---- Warm-up -----------------------------------------------------------------------------------

std::size_t steady_state_start(std::span<const double> samples) {
  if (samples.size() < kMserMinSamples || !all_finite(samples)) return 0;
  const std::size_t batches = samples.size() / kMserBatchSize;
  std::vector<double> batch_means(batches);
  for (std::size_t j = 0; j < batches; ++j) {
    double sum = 0.0;
    for (std::size_t i = 0; i < kMserBatchSize; ++i) sum += samples[j * kMserBatchSize + i];
    batch_means[j] = sum / static_cast<double>(kMserBatchSize);
  }
  // Welford's running mean and sum of squared deviations over the kept batches d..k-1, grown
  // from the end so each truncation d costs O(1) and stays accurate for large, steady values.
  std::vector<double> mser(batches);
  double mean = 0.0, squares = 0.0;
  for (std::size_t d = batches; d-- > 0;) {
    const double kept = static_cast<double>(batches - d);
    const double delta = batch_means[d] - mean;
    mean += delta / kept;
    squares += delta * (batch_means[d] - mean);
    mser[d] = squares / (kept * kept);
  }
  std::size_t best = 0;
  for (std::size_t d = 1; 2 * d < batches; ++d) {  // d < k / 2: keep more than half the batches
    if (mser[d] < mser[best]) best = d;
  }
  return best * kMserBatchSize;
}

// ---- Mann–Whitney U ----------------------------------------------------------------------------

MannWhitney mann_whitney_u(std::span<const double> a, std::span<const double> b, bool allow_exact) {
  MannWhitney r;
  r.n_a = a.size();
  r.n_b = b.size();
  if (a.empty() || b.empty() || !all_finite(a) || !all_finite(b)) return r;

  // Walk the pooled sample in ascending order one run of equal values at a time: the run takes
  // ranks start+1 .. start+t, each value the midrank start + (t + 1) / 2.
  const std::vector<double> sa = sorted_copy(a), sb = sorted_copy(b);
  double rank_sum_a = 0.0, tie_term = 0.0;  // tie_term = sum over runs of t^3 - t
  std::size_t ia = 0, ib = 0, start = 0;
  while (ia < sa.size() || ib < sb.size()) {
    const double value = ib == sb.size() || (ia < sa.size() && sa[ia] < sb[ib]) ? sa[ia] : sb[ib];
    std::size_t from_a = 0, from_b = 0;
    while (ia < sa.size() && sa[ia] == value) ++ia, ++from_a;
    while (ib < sb.size() && sb[ib] == value) ++ib, ++from_b;
    const double run = static_cast<double>(from_a + from_b);
    rank_sum_a += static_cast<double>(from_a) * (static_cast<double>(start) + (run + 1.0) / 2.0);
    tie_term += run * run * run - run;
    start += from_a + from_b;
  }
  const double n_a = static_cast<double>(r.n_a), n_b = static_cast<double>(r.n_b);
  const double pooled = n_a + n_b;
  r.has_ties = tie_term > 0.0;
  r.u_a = rank_sum_a - n_a * (n_a + 1.0) / 2.0;
  r.u_b = n_a * n_b - r.u_a;

  // Normal approximation: mean n_a n_b / 2, variance with the tie correction, and the
  // continuity correction of 1/2 toward the mean.
  const double mean_u = n_a * n_b / 2.0;
  const double variance = n_a * n_b / 12.0 * ((pooled + 1.0) - tie_term / (pooled * (pooled - 1.0)));
  const double distance = std::max(std::fabs(r.u_a - mean_u) - 0.5, 0.0);
  double normal_p = 1.0;
  r.z = 0.0;
  if (variance > 0.0) {
    r.z = std::copysign(distance / std::sqrt(variance), r.u_a - mean_u) + 0.0;
    normal_p = std::min(1.0, std::erfc(std::fabs(r.z) / std::sqrt(2.0)));
  }

  const bool small = r.n_a <= kMannWhitneyExactMaxSize && r.n_b <= kMannWhitneyExactMaxSize;
  if (allow_exact && small && !r.has_ties) {
    r.method = MannWhitneyMethod::kExact;
    r.p_value = exact_mann_whitney_p(r.n_a, r.n_b, r.u_a);
  } else {
    r.method = MannWhitneyMethod::kNormal;
    r.p_value = normal_p;
  }
  return r;
}

// ---- Hodges–Lehmann --------------------------------------------------------------------------

double hodges_lehmann_shift(std::span<const double> a, std::span<const double> b) {
  if (a.empty() || b.empty() || !all_finite(a) || !all_finite(b)) return kNaN;
  const std::vector<double> sa = sorted_copy(a), sb = sorted_copy(b);
  const std::uint64_t pairs = static_cast<std::uint64_t>(sa.size()) * sb.size();
  // Type-7 median of the pairs: the middle one, or the two middle ones (1-based k, k + 1).
  const std::uint64_t k = (pairs + 1) / 2;
  const double lower = kth_difference(sa, sb, k);
  if (pairs % 2 == 1) return lower;
  return interpolate(lower, kth_difference(sa, sb, k + 1), 0.5);
}

ShiftInterval hodges_lehmann_interval(std::span<const double> a, std::span<const double> b, double confidence) {
  ShiftInterval r;
  r.requested = confidence;
  if (a.empty() || b.empty() || !all_finite(a) || !all_finite(b) || !(confidence > 0.0 && confidence < 1.0)) return r;
  const std::vector<double> sa = sorted_copy(a), sb = sorted_copy(b);
  const std::uint64_t pairs = static_cast<std::uint64_t>(sa.size()) * sb.size();
  const double tail = (1.0 - confidence) / 2.0;
  const MannWhitney mw = mann_whitney_u(a, b);
  if (mw.method == MannWhitneyMethod::kExact) {
    r.exact = true;
    const std::vector<std::uint64_t> counts = exact_u_counts(sa.size(), sb.size());
    double total = 0;
    for (std::uint64_t c : counts) total += static_cast<double>(c);
    // Largest k with P(U <= k - 1) <= tail; k = 1 (the widest interval) when none qualifies.
    double below = 0;
    std::uint64_t k = 1;
    double covered_below = static_cast<double>(counts[0]) / total;  // P(U <= k - 1)
    for (std::uint64_t next = 1; next <= pairs / 2; ++next) {
      below += static_cast<double>(counts[next - 1]) / total;
      if (below > tail) break;
      k = next;
      covered_below = below;
    }
    r.rank = k;
    r.confidence = std::max(0.0, 1.0 - 2.0 * covered_below);
  } else {
    const double n_a = static_cast<double>(sa.size()), n_b = static_cast<double>(sb.size());
    // The test's tie-corrected variance of U: runs of equal values in the pooled sample.
    double tie_term = 0;
    std::size_t ia = 0, ib = 0;
    while (ia < sa.size() || ib < sb.size()) {
      const double value = ib == sb.size() || (ia < sa.size() && sa[ia] < sb[ib]) ? sa[ia] : sb[ib];
      double run = 0;
      while (ia < sa.size() && sa[ia] == value) ++ia, ++run;
      while (ib < sb.size() && sb[ib] == value) ++ib, ++run;
      tie_term += run * run * run - run;
    }
    const double pooled = n_a + n_b;
    const double sigma =
        std::sqrt(std::max(0.0, n_a * n_b / 12.0 * ((pooled + 1.0) - tie_term / (pooled * (pooled - 1.0)))));
    const double k = std::floor(n_a * n_b / 2.0 - normal_quantile(1.0 - tail) * sigma);
    r.rank = static_cast<std::uint64_t>(std::max(1.0, k));
    r.confidence = confidence;
  }
  r.low = kth_difference(sa, sb, r.rank);
  r.high = kth_difference(sa, sb, pairs + 1 - r.rank);
  return r;
}

double normal_quantile(double p) {
  if (!(p > 0.0 && p < 1.0)) return kNaN;
  // Acklam (2003), "An algorithm for computing the inverse normal cumulative distribution function".
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                                 1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01, -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  double x = 0;
  if (p < kLow) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - kLow) {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    const double q = std::sqrt(-2 * std::log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  // One Halley step: e = Phi(x) - p with Phi(x) = erfc(-x / sqrt 2) / 2.
  const double e = 0.5 * std::erfc(-x / std::numbers::sqrt2) - p;
  const double u = e * std::sqrt(2 * std::numbers::pi) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

double steps_for_shift(double sigma, double delta, double alpha, double power) {
  if (!std::isfinite(sigma) || !std::isfinite(delta) || delta == 0.0) return std::numeric_limits<double>::infinity();
  const double z = normal_quantile(1.0 - alpha / 2.0) + normal_quantile(power);
  const double n = std::numbers::pi / 3.0 * 2.0 * z * z * sigma * sigma / (delta * delta);
  return std::max(1.0, std::ceil(n - 1e-9));
}

double pooled_stddev(std::span<const double> a, std::span<const double> b) {
  if (a.size() + b.size() < 3 || !all_finite(a) || !all_finite(b)) return kNaN;
  double squares = 0;
  for (std::span<const double> s : {a, b}) {
    if (s.empty()) continue;
    double mean = 0;
    for (double x : s) mean += x;
    mean /= static_cast<double>(s.size());
    for (double x : s) squares += (x - mean) * (x - mean);
  }
  return std::sqrt(squares / static_cast<double>(a.size() + b.size() - 2));
}

// ---- Comparison --------------------------------------------------------------------------------

Comparison compare_samples(std::span<const double> a, std::span<const double> b, double alpha, double confidence,
                           int resamples, std::uint64_t seed, BootstrapMethod method) {
  Comparison c;
  c.n_a = a.size();
  c.n_b = b.size();
  c.alpha = alpha;
  c.relative_change_ci.confidence = confidence;
  c.relative_change_ci.resamples = resamples;
  c.relative_change_ci.method = resolve(method, std::max(a.size(), b.size()));
  c.mann_whitney = mann_whitney_u(a, b);
  c.significant = c.mann_whitney.p_value < alpha;
  if (a.empty() || b.empty() || !all_finite(a) || !all_finite(b)) return c;

  c.median_a = median_of(a);
  c.median_b = median_of(b);
  c.hl_shift = hodges_lehmann_shift(a, b);
  if (c.median_a != 0.0) {
    c.relative_change = (c.median_b - c.median_a) / c.median_a;
    c.relative_shift = c.hl_shift / c.median_a;
  }
  c.shift_interval = hodges_lehmann_interval(a, b, confidence);
  if (c.median_a != 0.0) {
    c.relative_shift_low = c.shift_interval.low / c.median_a;
    c.relative_shift_high = c.shift_interval.high / c.median_a;
  }
  c.relative_change_ci.estimate = c.relative_change;
  if (c.median_a == 0.0 || !valid_bootstrap_request(confidence, resamples)) return c;

  std::mt19937_64 rng(seed);
  ReplicateMedians replicates_a(a, c.relative_change_ci.method), replicates_b(b, c.relative_change_ci.method);
  std::vector<double> changes(static_cast<std::size_t>(resamples));
  for (double& change : changes) {
    const double median_a = replicates_a.draw(rng);
    const double median_b = replicates_b.draw(rng);
    if (median_a == 0.0) return c;  // a relative change is undefined: leave the bounds NaN
    change = (median_b - median_a) / median_a;
  }
  percentile_bounds(changes, c.relative_change_ci);
  return c;
}

const char* mann_whitney_method_key(MannWhitneyMethod m) {
  switch (m) {
    case MannWhitneyMethod::kExact: return "exact";
    case MannWhitneyMethod::kNormal: return "normal";
    case MannWhitneyMethod::kNone: return "none";
  }
  return "none";
}

}  // namespace ferret::stats
