#include "analysis/smi/smi_stats.h"

#include <algorithm>
#include <cmath>

#include "base/statistics.h"

namespace ferret {

double smi_busy_value(const SmiSample& s, const std::string& metric) {
  if (metric == "sm_active") return s.sm_active_pct;
  if (metric == "utilization") return s.util_pct;
  return kSmiNone;
}

namespace {

// Mean of the logged values of one column; NaN when none.
template <typename Get>
double smi_column_mean(const std::vector<SmiSample>& samples, Get get) {
  double sum = 0;
  std::size_t n = 0;
  for (const SmiSample& s : samples) {
    const double v = get(s);
    if (smi_has(v)) sum += v, ++n;
  }
  return n == 0 ? kSmiNone : sum / static_cast<double>(n);
}

template <typename Get>
double smi_column_max(const std::vector<SmiSample>& samples, Get get) {
  double best = kSmiNone;
  for (const SmiSample& s : samples) {
    const double v = get(s);
    if (smi_has(v) && (!smi_has(best) || v > best)) best = v;
  }
  return best;
}

std::int64_t smi_median_period(const std::vector<SmiSample>& samples) {
  std::vector<std::int64_t> deltas;
  deltas.reserve(samples.size());
  for (std::size_t i = 1; i < samples.size(); ++i) {
    // Saturating: times come from the log.
    std::int64_t d = 0;
    if (!__builtin_sub_overflow(samples[i].time_ns, samples[i - 1].time_ns, &d) && d > 0) deltas.push_back(d);
  }
  return deltas.empty() ? 0 : stats::median_ns_in_place(deltas);
}

void smi_idle_periods(const SmiGpu& g, SmiGpuStats& st) {
  // The samples that carry a busy value, in log order.
  std::vector<std::size_t> valued;
  for (std::size_t i = 0; i < g.samples.size(); ++i)
    if (smi_has(smi_busy_value(g.samples[i], st.busy_metric))) valued.push_back(i);
  if (valued.empty()) return;
  std::vector<std::int64_t> idle_starts;  // every idle period's start, for the spacing
  auto busy = [&](std::size_t k) { return smi_busy_value(g.samples[valued[k]], st.busy_metric) >= kSmiIdleBelowPct; };
  auto time = [&](std::size_t k) { return g.samples[valued[k]].time_ns; };
  std::size_t first_busy = valued.size(), last_busy = 0;
  for (std::size_t k = 0; k < valued.size(); ++k)
    if (busy(k)) first_busy = std::min(first_busy, k), last_busy = k;
  if (first_busy == valued.size()) {  // never busy: all of it is idle, none of it between work
    st.leading_idle_ns = std::max<std::int64_t>(0, time(valued.size() - 1) - time(0)) + st.sample_period_ns;
    return;
  }
  double active_sum = 0;
  for (std::size_t k = first_busy; k <= last_busy; ++k)
    active_sum += smi_busy_value(g.samples[valued[k]], st.busy_metric);
  st.active_busy_mean = active_sum / static_cast<double>(last_busy - first_busy + 1);
  st.leading_idle_ns = std::max<std::int64_t>(0, time(first_busy) - time(0));
  st.trailing_idle_ns = std::max<std::int64_t>(0, time(valued.size() - 1) - time(last_busy));
  for (std::size_t k = first_busy; k <= last_busy; ++k) {
    if (busy(k)) continue;
    SmiIdlePeriod p;
    p.start_ns = time(k);
    while (k <= last_busy && !busy(k)) ++k, ++p.samples;
    p.end_ns = std::max(p.start_ns, time(k));  // k <= last_busy: the busy sample that ends it
    ++st.idle_periods;
    // Saturating: a log's rows need not be in time order, so the periods may overlap.
    if (__builtin_add_overflow(st.idle_ns, p.duration_ns(), &st.idle_ns)) st.idle_ns = kSmiMaxTimeNs;
    if (st.idle.size() < kSmiIdleListed) st.idle.push_back(p);
    idle_starts.push_back(p.start_ns);
  }
  if (idle_starts.size() >= kSmiRegularMinPeriods) {
    std::vector<double> spacing;
    for (std::size_t i = 1; i < idle_starts.size(); ++i)
      spacing.push_back(static_cast<double>(idle_starts[i] - idle_starts[i - 1]));
    double mean = 0;
    for (double s : spacing) mean += s;
    mean /= static_cast<double>(spacing.size());
    double var = 0;
    for (double s : spacing) var += (s - mean) * (s - mean);
    var /= static_cast<double>(spacing.size());  // population: the spacings are all there are
    st.idle_spacing_ns = mean;
    st.idle_spacing_cv = mean > 0 ? std::sqrt(var) / mean : kSmiNone;
    st.idle_regular = mean > 0 && st.idle_spacing_cv <= kSmiRegularMaxCv;
  }
}

void smi_throttle(const SmiGpu& g, SmiGpuStats& st) {
  SmiThrottle& t = st.throttle;
  double clock_sum = 0;
  std::size_t clocks = 0;
  for (const SmiSample& s : g.samples) {
    if (s.throttle_reasons >= 0) t.reasons_logged = true;
    const double b = smi_busy_value(s, st.busy_metric);
    if (!smi_has(b) || b < kSmiIdleBelowPct) continue;
    ++t.busy_samples;
    if (smi_has(s.sm_clock_mhz)) clock_sum += s.sm_clock_mhz, ++clocks;
    const std::int64_t r = s.throttle_reasons < 0 ? 0 : s.throttle_reasons;
    const double limit = smi_has(s.power_limit_w) ? s.power_limit_w : st.power_limit_w;
    const bool at_limit = smi_has(s.power_w) && smi_has(limit) && limit > 0 && s.power_w >= kSmiPowerAtCap * limit;
    t.power_cap += (r & kSmiReasonSwPowerCap) != 0;
    t.thermal += (r & (kSmiReasonSwThermal | kSmiReasonHwThermal)) != 0;
    t.hw_slowdown += (r & kSmiReasonHwSlowdown) != 0;
    t.power_brake += (r & kSmiReasonHwPowerBrake) != 0;
    t.power_at_limit += at_limit;
    t.throttled_samples += (r & kSmiThrottleMask) != 0 || at_limit;
  }
  t.busy_clock_mhz = clocks == 0 ? kSmiNone : clock_sum / static_cast<double>(clocks);
  t.max_clock_mhz = smi_column_max(g.samples, [](const SmiSample& s) { return s.max_sm_clock_mhz; });
}

}  // namespace

SmiStats analyze_smi(const SmiLog& log) {
  SmiStats out;
  for (std::uint32_t gi = 0; gi < log.gpus.size(); ++gi) {
    const SmiGpu& g = log.gpus[gi];
    SmiGpuStats st;
    st.gpu = gi;
    st.samples = g.samples.size();
    bool sm = false, util = false;
    for (const SmiSample& s : g.samples) sm = sm || smi_has(s.sm_active_pct), util = util || smi_has(s.util_pct);
    st.busy_metric = sm ? "sm_active" : util ? "utilization" : "";
    if (!g.samples.empty()) {
      st.first_ns = g.samples.front().time_ns;
      st.last_ns = g.samples.back().time_ns;
      for (const SmiSample& s : g.samples)
        st.first_ns = std::min(st.first_ns, s.time_ns), st.last_ns = std::max(st.last_ns, s.time_ns);
    }
    st.sample_period_ns = smi_median_period(g.samples);
    std::vector<double> busy;
    for (const SmiSample& s : g.samples)
      if (const double b = smi_busy_value(s, st.busy_metric); smi_has(b)) busy.push_back(b);
    st.busy_values = busy.size();
    if (!busy.empty()) {
      double sum = 0;
      for (double b : busy) sum += b;
      st.busy_mean = sum / static_cast<double>(busy.size());
      std::sort(busy.begin(), busy.end());
      st.busy_p5 = stats::percentile(busy, 5);
      st.busy_p50 = stats::percentile(busy, 50);
      st.busy_p95 = stats::percentile(busy, 95);
    }
    st.util_mean = smi_column_mean(g.samples, [](const SmiSample& s) { return s.util_pct; });
    st.sm_active_mean = smi_column_mean(g.samples, [](const SmiSample& s) { return s.sm_active_pct; });
    st.sm_occupancy_mean = smi_column_mean(g.samples, [](const SmiSample& s) { return s.sm_occupancy_pct; });
    st.tensor_active_mean = smi_column_mean(g.samples, [](const SmiSample& s) { return s.tensor_active_pct; });
    st.dram_active_mean = smi_column_mean(g.samples, [](const SmiSample& s) { return s.dram_active_pct; });
    st.mem_util_mean = smi_column_mean(g.samples, [](const SmiSample& s) { return s.mem_util_pct; });
    st.mem_peak_used_mib = smi_column_max(g.samples, [](const SmiSample& s) { return s.mem_used_mib; });
    st.mem_total_mib = smi_column_max(g.samples, [](const SmiSample& s) { return s.mem_total_mib; });
    st.power_mean_w = smi_column_mean(g.samples, [](const SmiSample& s) { return s.power_w; });
    st.power_limit_w = smi_column_max(g.samples, [](const SmiSample& s) { return s.power_limit_w; });
    st.temp_max_c = smi_column_max(g.samples, [](const SmiSample& s) { return s.temp_c; });
    std::vector<double> power;
    for (const SmiSample& s : g.samples)
      if (smi_has(s.power_w)) power.push_back(s.power_w);
    if (!power.empty()) {
      std::sort(power.begin(), power.end());
      st.power_p95_w = stats::percentile(power, 95);
    }
    smi_idle_periods(g, st);
    smi_throttle(g, st);
    out.gpus.push_back(std::move(st));
  }
  return out;
}

SmiTraceWindow align_smi_window(const SmiLog& log, const SmiStats& stats, const std::string& source,
                                bool has_absolute_time, std::int64_t start_ns, std::int64_t end_ns) {
  SmiTraceWindow w;
  w.source = source;
  w.start_ns = start_ns;
  w.end_ns = end_ns;
  for (const SmiGpuStats& st : stats.gpus) w.run_ns = std::max(w.run_ns, st.span_ns());
  if (!has_absolute_time) {
    w.reason =
        "the trace has no absolute time (no baseTimeNanoseconds, and its timestamps are not since the epoch): it "
        "cannot be placed on the log";
    return w;
  }
  bool any_absolute = false;
  std::size_t inside = 0;
  for (const SmiGpuStats& st : stats.gpus) {
    const SmiGpu& g = log.gpus[st.gpu];
    if (!g.absolute_time || st.busy_metric.empty()) continue;
    any_absolute = true;
    // A sample reports the period before it: the one at t covers (t - period, t], so the window
    // [start, end] takes the samples with start < t < end + period.
    std::int64_t end_plus = 0;
    if (__builtin_add_overflow(end_ns, st.sample_period_ns, &end_plus)) end_plus = end_ns;
    SmiTraceWindow::Gpu wg;
    wg.gpu = st.gpu;
    wg.run_busy_mean = st.busy_mean;
    double sum = 0;
    for (const SmiSample& s : g.samples) {
      const double b = smi_busy_value(s, st.busy_metric);
      if (!smi_has(b) || s.time_ns <= start_ns || s.time_ns >= (st.sample_period_ns > 0 ? end_plus : end_ns + 1))
        continue;
      sum += b;
      ++wg.samples_in_window;
    }
    if (wg.samples_in_window > 0) wg.window_busy_mean = sum / static_cast<double>(wg.samples_in_window);
    inside += wg.samples_in_window;
    w.gpus.push_back(wg);
  }
  if (!any_absolute) {
    w.gpus.clear();
    w.reason =
        "the log has no wall-clock times (its samples are only spaced by --interval): the trace cannot be placed on it";
    return w;
  }
  if (inside == 0) {
    w.reason =
        "the trace's window lies outside the log (times compared in UTC: if the log was written in local time, "
        "pass --utc-offset)";
    return w;
  }
  w.aligned = true;
  return w;
}

}  // namespace ferret
