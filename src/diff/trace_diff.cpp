#include "diff/trace_diff.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <tuple>
#include <type_traits>

#include <fmt/format.h>

#include "base/units.h"

namespace ferret {

const char* step_verdict_key(StepVerdict v) {
  switch (v) {
    case StepVerdict::kTooFewSamples: return "too-few-samples";
    case StepVerdict::kNoSignificantChange: return "no-significant-change";
    case StepVerdict::kSlower: return "slower";
    case StepVerdict::kFaster: return "faster";
  }
  return "?";
}

const char* change_kind_key(ChangeKind c) {
  switch (c) {
    case ChangeKind::kAdded: return "added";
    case ChangeKind::kRemoved: return "removed";
    case ChangeKind::kSlower: return "slower";
    case ChangeKind::kFaster: return "faster";
    case ChangeKind::kUnchanged: return "unchanged";
  }
  return "?";
}

const char* time_basis_key(TimeBasis b) { return b == TimeBasis::kDevice ? "device" : "host"; }

const char* gate_outcome_key(GateOutcome o) {
  switch (o) {
    case GateOutcome::kPass: return "pass";
    case GateOutcome::kFail: return "fail";
    case GateOutcome::kInconclusive: return "inconclusive";
  }
  return "?";
}

std::size_t min_steps_for_interval(double alpha) {
  std::size_t n = 1;
  while (n < 64 && min_attainable_p(n, n) > alpha) ++n;
  return n;
}

std::string normalized_span_name(std::string_view name) {
  // Class variants of one operation, as PyTorch names them in record_function ranges.
  static constexpr std::pair<std::string_view, std::string_view> kVariants[] = {
      {"_SingleProcessDataLoaderIter", "_DataLoaderIter"},
      {"_MultiProcessingDataLoaderIter", "_DataLoaderIter"},
  };
  std::string unified(name);
  for (const auto& [from, to] : kVariants)
    for (std::size_t at = unified.find(from); at != std::string::npos; at = unified.find(from, at + to.size()))
      unified.replace(at, from.size(), to);
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  auto is_hex = [&](char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); };
  std::string out;
  out.reserve(unified.size());
  for (std::size_t i = 0; i < unified.size();) {
    if (unified[i] == '0' && i + 2 < unified.size() && (unified[i + 1] == 'x' || unified[i + 1] == 'X') &&
        is_hex(unified[i + 2])) {
      out += "0x<id>";
      for (i += 2; i < unified.size() && is_hex(unified[i]);) ++i;
    } else if (is_digit(unified[i])) {
      out += "<n>";
      while (i < unified.size() && is_digit(unified[i])) ++i;
    } else {
      out += unified[i++];
    }
  }
  return out;
}

std::vector<bool> benjamini_hochberg(const std::vector<double>& p_values, double q) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < p_values.size(); ++i)
    if (std::isfinite(p_values[i])) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return p_values[a] < p_values[b]; });
  // The largest rank i (1-based) with p_(i) <= i q / m; ranks 1..i are discoveries.
  const double m = static_cast<double>(order.size());
  std::size_t cut = 0;
  for (std::size_t i = 0; i < order.size(); ++i)
    if (p_values[order[i]] <= static_cast<double>(i + 1) * q / m) cut = i + 1;
  std::vector<bool> out(p_values.size(), false);
  for (std::size_t i = 0; i < cut; ++i) out[order[i]] = true;
  return out;
}

double min_attainable_p(std::size_t n_a, std::size_t n_b) {
  if (n_a == 0 || n_b == 0) return 1.0;
  // C(n_a + n_b, k) with k the smaller size, as a running product (exact for small sizes, and for
  // large ones the result is far below any alpha anyway).
  const std::size_t k = std::min(n_a, n_b), n = n_a + n_b;
  double combinations = 1;
  for (std::size_t i = 1; i <= k; ++i)
    combinations = combinations * static_cast<double>(n - k + i) / static_cast<double>(i);
  return std::min(1.0, 2.0 / combinations);
}

StepTimeDiff diff_step_time(const std::vector<double>& base_ns, const std::vector<double>& new_ns, double alpha) {
  StepTimeDiff d;
  auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
  };
  d.base_mean_ns = mean(base_ns);
  d.new_mean_ns = mean(new_ns);
  d.min_attainable_p = min_attainable_p(base_ns.size(), new_ns.size());
  d.enough_samples = base_ns.size() >= kMinStepsForTest && new_ns.size() >= kMinStepsForTest;
  d.spread_ns = stats::pooled_stddev(base_ns, new_ns);
  if (d.enough_samples) {
    d.comparison = stats::compare_samples(base_ns, new_ns, alpha);
    const stats::Comparison& c = d.comparison;
    // The direction of a significant change: the medians, or the Hodges–Lehmann shift when the
    // medians happen to be equal.
    const double direction = c.median_b != c.median_a ? c.median_b - c.median_a : c.hl_shift;
    if (!c.significant || !(direction != 0))
      d.verdict = StepVerdict::kNoSignificantChange;
    else
      d.verdict = direction > 0 ? StepVerdict::kSlower : StepVerdict::kFaster;
    return d;
  }
  // Too few steps: describe (medians, the shift), test nothing.
  stats::Comparison& c = d.comparison;
  c.n_a = base_ns.size();
  c.n_b = new_ns.size();
  c.alpha = alpha;
  c.median_a = stats::summarize(base_ns).median;
  c.median_b = stats::summarize(new_ns).median;
  c.hl_shift = stats::hodges_lehmann_shift(base_ns, new_ns);
  if (c.median_a != 0 && std::isfinite(c.median_a)) {
    c.relative_change = (c.median_b - c.median_a) / c.median_a;
    c.relative_shift = c.hl_shift / c.median_a;
  }
  d.verdict = StepVerdict::kTooFewSamples;
  return d;
}

namespace {

// "about 14 steps per trace would settle it (...)": the power calculation behind an inconclusive gate.
std::string steps_needed_text(const GateResult& g, const StepTimeDiff& st, double estimate_pct) {
  const stats::Comparison& c = st.comparison;
  if (std::isinf(g.steps_needed)) return "the estimate is at the threshold itself: no number of steps can settle it";
  if (!std::isfinite(g.steps_needed))
    return fmt::format("profile at least {} steps in each trace; their spread then says how many settle it",
                       min_steps_for_interval(c.alpha));
  return fmt::format(
      "about {:.0f} steps per trace would settle it ({:.0f}% power at alpha {:g} for a shift of {:.1f}% "
      "= {} with the steps' spread, pooled SD {})",
      g.steps_needed, 100 * kGatePower, c.alpha, std::fabs(estimate_pct - g.threshold_pct),
      human_duration(std::llround(std::fabs(estimate_pct - g.threshold_pct) / 100 * c.median_a)),
      human_duration(std::llround(st.spread_ns)));
}

}  // namespace

GateResult evaluate_gate(const StepTimeDiff& st, std::optional<double> fail_if_slower_pct) {
  GateResult g;
  if (!fail_if_slower_pct) return g;
  g.enabled = true;
  g.threshold_pct = *fail_if_slower_pct;
  const stats::Comparison& c = st.comparison;
  const double t = g.threshold_pct;
  const double estimate = 100 * c.relative_shift;
  auto inconclusive = [&](const std::string& why) {
    g.outcome = GateOutcome::kInconclusive;
    if (std::isfinite(estimate) && std::isfinite(st.spread_ns)) {
      const double delta_ns = std::fabs(estimate - t) / 100 * c.median_a;
      g.steps_needed = stats::steps_for_shift(st.spread_ns, delta_ns, c.alpha, kGatePower);
      if (std::isfinite(g.steps_needed))
        g.steps_needed = std::max(g.steps_needed, static_cast<double>(min_steps_for_interval(c.alpha)));
    }
    g.reason = fmt::format("INCONCLUSIVE: {}; {}", why, steps_needed_text(g, st, estimate));
  };
  if (!std::isfinite(estimate)) {
    g.outcome = GateOutcome::kInconclusive;
    g.reason = "INCONCLUSIVE: the base median step time is 0, so no relative change can be measured";
    return g;
  }
  if (!st.enough_samples) {
    inconclusive(
        fmt::format("the change is {:+.1f}%, but BASE has {} and NEW {} steps, too few to confirm it "
                    "either way (at least {} each for a test)",
                    estimate, c.n_a, c.n_b, kMinStepsForTest));
    return g;
  }
  const stats::ShiftInterval& ci = c.shift_interval;
  const double low = 100 * c.relative_shift_low, high = 100 * c.relative_shift_high;
  const std::string interval = fmt::format("{:.3g}% CI {:+.1f}% to {:+.1f}%", 100 * ci.confidence, low, high);
  if (!ci.attained() || !std::isfinite(low) || !std::isfinite(high)) {
    inconclusive(
        fmt::format("the change is {:+.1f}%, but with {} and {} steps no {:.3g}% interval exists (the "
                    "widest, {}, covers {:.3g}%)",
                    estimate, c.n_a, c.n_b, 100 * ci.requested, interval, 100 * ci.confidence));
    return g;
  }
  if (high <= t) {
    g.outcome = GateOutcome::kPass;
    g.reason = st.verdict == StepVerdict::kFaster
                   ? fmt::format("passed: step time is significantly faster, {:+.1f}% ({}, p = {:.3g})", estimate,
                                 interval, c.mann_whitney.p_value)
                   : fmt::format("passed: the change {:+.1f}% ({}) rules out a slowdown beyond the {:g}% allowed",
                                 estimate, interval, t);
    return g;
  }
  if (low > t && st.verdict == StepVerdict::kSlower) {
    g.outcome = GateOutcome::kFail;
    g.failed = true;
    g.reason = fmt::format(
        "FAILED: step time is significantly slower by {:.1f}% ({}, p = {:.3g}), beyond the {:g}% "
        "allowed",
        estimate, interval, c.mann_whitney.p_value, t);
    return g;
  }
  if (estimate > t)
    inconclusive(
        fmt::format("the change {:+.1f}% is beyond the {:g}% allowed, but the data cannot confirm it ({} "
                    "reaches {:+.1f}%{})",
                    estimate, t, interval, low,
                    st.verdict == StepVerdict::kSlower ? "" : fmt::format(", p = {:.3g}", c.mann_whitney.p_value)));
  else
    inconclusive(
        fmt::format("the change {:+.1f}% is within the {:g}% allowed, but the data cannot rule out a slowdown "
                    "beyond it ({} reaches {:+.1f}%)",
                    estimate, t, interval, high));
  return g;
}

FindingsDiff diff_findings(const std::vector<Finding>& base, const std::vector<Finding>& next) {
  auto key = [](const Finding& f) { return f.cause.empty() ? f.id : f.cause; };
  auto find = [&](const std::vector<Finding>& v, const std::string& k) -> const Finding* {
    for (const Finding& f : v)
      if (key(f) == k) return &f;
    return nullptr;
  };
  FindingsDiff d;
  for (const Finding& f : next) {
    if (const Finding* b = find(base, key(f)))
      d.persisting.push_back({key(f), *b, f});
    else
      d.appeared.push_back(f);
  }
  for (const Finding& f : base)
    if (!find(next, key(f))) d.resolved.push_back(f);
  return d;
}

namespace {

// Every operator and kernel group of the window (hot spots with no top-N cut).
HotSpotsResult all_hot_spots(const TraceModel& model, const AnalysisContext& context) {
  AnalysisContext ctx = context;
  ctx.options.top_k = INT_MAX;
  return analyze_hot_spots(model, ctx);
}

double per_step(double total, double steps) { return total / steps; }

// The key of an operator row: its name, or for a shape row name, input dims and input types.
std::string row_key(const std::string& name) { return name; }
std::string row_key(const std::string& name, const std::string& dims, const std::string& types) {
  return name + '\x1f' + dims + '\x1f' + types;
}

// Per-step values of every row of one trace: one hot-spot pass per step (the step's own window).
// Empty (steps = 0) when the trace cannot be tested row by row.
struct StepSeries {
  std::size_t steps = 0;
  std::map<std::string, std::vector<double>> op_host, op_device, kernel;  // by row_key
};

StepSeries step_series(const TraceModel& model, const TraceAnalysis& analysis) {
  StepSeries s;
  const StepBreakdownResult& b = analysis.breakdown;
  if (!b.has_steps || b.steps.size() < kMinStepsForTest || b.steps.size() > kMaxStepsForRowTests) return s;
  s.steps = b.steps.size();
  auto add = [&s](std::map<std::string, std::vector<double>>& m, const std::string& key, std::size_t step, double v) {
    std::vector<double>& series = m[key];
    if (series.empty()) series.assign(s.steps, 0.0);
    series[step] += v;
  };
  for (std::size_t i = 0; i < b.steps.size(); ++i) {
    AnalysisContext ctx = analysis.context;
    ctx.window_start_ns = b.steps[i].start_ns;
    ctx.window_end_ns = b.steps[i].start_ns + b.steps[i].duration_ns;
    const HotSpotsResult hot = all_hot_spots(model, ctx);
    for (const OpStat& o : hot.ops_by_host) {
      add(s.op_host, row_key(o.name), i, static_cast<double>(o.host_self_ns));
      add(s.op_device, row_key(o.name), i, static_cast<double>(o.device_self_ns));
    }
    for (const OpStat& o : hot.shapes_by_device) {
      add(s.op_host, row_key(o.name, o.input_dims, o.input_types), i, static_cast<double>(o.host_self_ns));
      add(s.op_device, row_key(o.name, o.input_dims, o.input_types), i, static_cast<double>(o.device_self_ns));
    }
    for (const KernelStat& k : hot.kernels) add(s.kernel, k.name, i, static_cast<double>(k.total_ns));
  }
  return s;
}

// What the row tests need from both traces.
struct RowTestContext {
  const StepSeries* base = nullptr;
  const StepSeries* next = nullptr;
  double floor_ns = 0;
  double alpha = stats::kDefaultAlpha;
  bool tested() const { return base->steps > 0 && next->steps > 0; }
};

template <class Row>
void sort_by_change(std::vector<Row>& rows) {
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    const double ma = std::fabs(a.delta_ns), mb = std::fabs(b.delta_ns);
    if (ma != mb) return ma > mb;
    if constexpr (std::is_same_v<Row, OpDiff>)
      return std::tie(a.name, a.input_dims, a.input_types) < std::tie(b.name, b.input_dims, b.input_types);
    else
      return a.name < b.name;
  });
}

// Floor, test and Benjamini–Hochberg guard over the rows; `p_of(row)` gives a row's p-value.
template <class Row, class PValue>
ChangeLists<Row> to_lists(std::vector<Row> rows, int top, const RowTestContext& rt, PValue p_of) {
  ChangeLists<Row> lists;
  lists.floor_ns = rt.floor_ns;
  lists.tested = rt.tested();
  std::vector<double> p_values(rows.size(), stats::kNaN);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    Row& r = rows[i];
    r.test.above_floor = r.change != ChangeKind::kUnchanged && std::fabs(r.delta_ns) >= rt.floor_ns;
    r.test.tested = lists.tested && r.test.above_floor;
    if (r.test.tested) p_values[i] = r.test.p_value = p_of(i, r);
  }
  const std::vector<bool> discoveries = benjamini_hochberg(p_values, rt.alpha);
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i].test.significant = discoveries[i];

  sort_by_change(rows);
  const std::size_t keep = static_cast<std::size_t>(std::max(0, top));
  auto add = [keep](std::vector<Row>& list, Row&& row) {
    if (list.size() < keep) list.push_back(std::move(row));
  };
  for (Row& r : rows) {
    lists.renamed += !r.matched_from.empty();
    switch (r.change) {
      case ChangeKind::kAdded: ++lists.added_count; break;
      case ChangeKind::kRemoved: ++lists.removed_count; break;
      case ChangeKind::kSlower: ++lists.slower_count; break;
      case ChangeKind::kFaster: ++lists.faster_count; break;
      case ChangeKind::kUnchanged: ++lists.unchanged_count; continue;
    }
    if (!r.test.above_floor) {
      ++lists.below_floor;
      continue;
    }
    if (r.test.tested && !r.test.significant) {
      ++lists.not_significant;
      continue;
    }
    ++lists.listed;
    switch (r.change) {
      case ChangeKind::kAdded: add(lists.added, std::move(r)); break;
      case ChangeKind::kRemoved: add(lists.removed, std::move(r)); break;
      case ChangeKind::kSlower: add(lists.slower, std::move(r)); break;
      case ChangeKind::kFaster: add(lists.faster, std::move(r)); break;
      case ChangeKind::kUnchanged: break;
    }
  }
  return lists;
}

ChangeKind classify(double base_calls, double new_calls, double delta) {
  if (base_calls == 0) return ChangeKind::kAdded;
  if (new_calls == 0) return ChangeKind::kRemoved;
  if (delta > 0) return ChangeKind::kSlower;
  if (delta < 0) return ChangeKind::kFaster;
  return ChangeKind::kUnchanged;
}

// One row of a list: the groups of each trace it stands for (one, or several joined by a
// normalised name), and how it was matched.
template <class Stat>
struct Joined {
  std::vector<const Stat*> base, next;
  std::string matched_from;  // "" when matched by the exact name
};

// Joins rows seen only in BASE with rows seen only in NEW whose keys agree after `normalise`. One
// against one: the row keeps NEW's name and says BASE's. Several on a side (a name per step, such
// as "forward 12", "forward 13" against "forward 40", "forward 41"): one row under the normalised
// name that sums them all. A normalised key that is also an exact key of the lists is left alone.
template <class Key, class Stat, class Normalise, class Name>
void match_renamed(std::map<Key, Joined<Stat>>& joined, Normalise normalise, Name name_of) {
  std::map<Key, std::pair<std::vector<Key>, std::vector<Key>>> by_normal;  // base-only, new-only keys
  for (const auto& [key, row] : joined) {
    if (!row.base.empty() && row.next.empty()) by_normal[normalise(key)].first.push_back(key);
    if (row.base.empty() && !row.next.empty()) by_normal[normalise(key)].second.push_back(key);
  }
  for (const auto& [normal, sides] : by_normal) {
    const auto& [base_keys, new_keys] = sides;
    if (base_keys.empty() || new_keys.empty()) continue;
    if (base_keys.size() == 1 && new_keys.size() == 1) {
      Joined<Stat>& row = joined[new_keys.front()];
      row.base = joined[base_keys.front()].base;
      row.matched_from = name_of(base_keys.front());
      joined.erase(base_keys.front());
      continue;
    }
    if (joined.count(normal)) continue;
    Joined<Stat> merged;
    for (const Key& k : base_keys) merged.base.push_back(joined[k].base.front());
    for (const Key& k : new_keys) merged.next.push_back(joined[k].next.front());
    merged.matched_from = fmt::format("{} names in BASE ({}, ...), {} in NEW ({}, ...)", base_keys.size(),
                                      name_of(base_keys.front()), new_keys.size(), name_of(new_keys.front()));
    for (const Key& k : base_keys) joined.erase(k);
    for (const Key& k : new_keys) joined.erase(k);
    joined.emplace(normal, std::move(merged));
  }
}

// The per-step series of a row: the sum of its groups' series (a group absent from a step is 0).
std::vector<double> summed_series(const std::map<std::string, std::vector<double>>& series,
                                  const std::vector<std::string>& keys, std::size_t steps) {
  std::vector<double> out(steps, 0.0);
  for (const std::string& k : keys)
    if (const auto it = series.find(k); it != series.end())
      for (std::size_t i = 0; i < steps && i < it->second.size(); ++i) out[i] += it->second[i];
  return out;
}

ChangeLists<OpDiff> diff_ops(const std::vector<OpStat>& base, double base_steps, const std::vector<OpStat>& next,
                             double new_steps, bool with_shapes, int top, const RowTestContext& rt) {
  using Key = std::tuple<std::string, std::string, std::string>;
  std::map<Key, Joined<OpStat>> joined;
  auto key = [with_shapes](const OpStat& s) {
    return with_shapes ? Key{s.name, s.input_dims, s.input_types} : Key{s.name, "", ""};
  };
  for (const OpStat& s : base) joined[key(s)].base.push_back(&s);
  for (const OpStat& s : next) joined[key(s)].next.push_back(&s);
  match_renamed(
      joined,
      [](const Key& k) {
        return Key{normalized_span_name(std::get<0>(k)), std::get<1>(k), std::get<2>(k)};
      },
      [](const Key& k) { return std::get<0>(k); });
  // By shapes, an operator seen with one and the same input shapes in both traces repeats its row
  // by name: only operators with several shape groups (in either trace) are kept.
  std::map<std::string, std::size_t> shape_groups;
  if (with_shapes)
    for (const auto& entry : joined) ++shape_groups[std::get<0>(entry.first)];
  std::vector<OpDiff> rows;
  std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> series_keys;  // per row
  auto series_key = [with_shapes](const OpStat& s) {
    return with_shapes ? row_key(s.name, s.input_dims, s.input_types) : row_key(s.name);
  };
  for (const auto& [k, joined_row] : joined) {
    if (with_shapes && shape_groups[std::get<0>(k)] < 2) continue;
    OpDiff d;
    std::tie(d.name, d.input_dims, d.input_types) = k;
    d.matched_from = joined_row.matched_from;
    auto& keys = series_keys.emplace_back();
    for (const OpStat* b : joined_row.base) {
      d.base_calls += per_step(static_cast<double>(b->calls), base_steps);
      d.base_host_self_ns += per_step(static_cast<double>(b->host_self_ns), base_steps);
      d.base_device_self_ns += per_step(static_cast<double>(b->device_self_ns), base_steps);
      keys.first.push_back(series_key(*b));
    }
    for (const OpStat* n : joined_row.next) {
      d.new_calls += per_step(static_cast<double>(n->calls), new_steps);
      d.new_host_self_ns += per_step(static_cast<double>(n->host_self_ns), new_steps);
      d.new_device_self_ns += per_step(static_cast<double>(n->device_self_ns), new_steps);
      keys.second.push_back(series_key(*n));
    }
    const double host_delta = d.new_host_self_ns - d.base_host_self_ns;
    const double device_delta = d.new_device_self_ns - d.base_device_self_ns;
    d.basis = std::fabs(device_delta) >= std::fabs(host_delta) ? TimeBasis::kDevice : TimeBasis::kHost;
    d.delta_ns = d.basis == TimeBasis::kDevice ? device_delta : host_delta;
    const double base_time = d.basis == TimeBasis::kDevice ? d.base_device_self_ns : d.base_host_self_ns;
    if (base_time > 0) d.relative = d.delta_ns / base_time;
    d.change = classify(d.base_calls, d.new_calls, d.delta_ns);
    rows.push_back(std::move(d));
  }
  return to_lists(std::move(rows), top, rt, [&](std::size_t i, const OpDiff& d) {
    const bool device = d.basis == TimeBasis::kDevice;
    return stats::mann_whitney_u(
               summed_series(device ? rt.base->op_device : rt.base->op_host, series_keys[i].first, rt.base->steps),
               summed_series(device ? rt.next->op_device : rt.next->op_host, series_keys[i].second, rt.next->steps))
        .p_value;
  });
}

ChangeLists<KernelDiff> diff_kernels(const std::vector<KernelStat>& base, double base_steps,
                                     const std::vector<KernelStat>& next, double new_steps, int top,
                                     const RowTestContext& rt) {
  std::map<std::string, Joined<KernelStat>> joined;
  for (const KernelStat& k : base) joined[k.name].base.push_back(&k);
  for (const KernelStat& k : next) joined[k.name].next.push_back(&k);
  match_renamed(
      joined, [](const std::string& name) { return normalized_span_name(name); },
      [](const std::string& name) { return name; });
  std::vector<KernelDiff> rows;
  std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> series_keys;
  for (const auto& [name, joined_row] : joined) {
    KernelDiff d;
    d.name = name;
    d.matched_from = joined_row.matched_from;
    d.kind = !joined_row.next.empty() ? joined_row.next.front()->kind : joined_row.base.front()->kind;
    auto& keys = series_keys.emplace_back();
    double base_total = 0, base_calls = 0, new_total = 0, new_calls = 0;
    for (const KernelStat* b : joined_row.base) {
      base_total += static_cast<double>(b->total_ns);
      base_calls += static_cast<double>(b->calls);
      keys.first.push_back(b->name);
    }
    for (const KernelStat* n : joined_row.next) {
      new_total += static_cast<double>(n->total_ns);
      new_calls += static_cast<double>(n->calls);
      keys.second.push_back(n->name);
    }
    d.base_calls = per_step(base_calls, base_steps);
    d.base_ns = per_step(base_total, base_steps);
    d.base_mean_ns = base_calls > 0 ? base_total / base_calls : 0;
    d.new_calls = per_step(new_calls, new_steps);
    d.new_ns = per_step(new_total, new_steps);
    d.new_mean_ns = new_calls > 0 ? new_total / new_calls : 0;
    d.delta_ns = d.new_ns - d.base_ns;
    if (d.base_ns > 0) d.relative = d.delta_ns / d.base_ns;
    d.change = classify(d.base_calls, d.new_calls, d.delta_ns);
    rows.push_back(std::move(d));
  }
  return to_lists(std::move(rows), top, rt, [&](std::size_t i, const KernelDiff&) {
    return stats::mann_whitney_u(summed_series(rt.base->kernel, series_keys[i].first, rt.base->steps),
                                 summed_series(rt.next->kernel, series_keys[i].second, rt.next->steps))
        .p_value;
  });
}

DiffSide make_side(const TraceModel& model, const TraceAnalysis& analysis, const Diagnosis& diagnosis) {
  DiffSide s;
  s.source = model.info.source;
  const StepBreakdownResult& b = analysis.breakdown;
  s.has_steps = b.has_steps;
  if (b.has_steps && !b.steps.empty()) {
    s.first_step = b.steps.front().number;
    s.last_step = b.steps.back().number;
  }
  for (const StepCost& c : b.steps) s.step_ns.push_back(static_cast<double>(c.duration_ns));
  s.mean_step_ns = b.average_duration_ns;
  s.category_ns = b.average_ns;
  s.notes = model.report.notes;
  s.repairs = model.report.repair_count();
  s.skips = model.report.skip_count();
  s.findings = diagnosis.findings.size();
  return s;
}

std::string device_name(const TraceModel& m) {
  return m.info.devices.empty() ? std::string() : m.info.devices.front().name;
}

}  // namespace

TraceDiff diff_traces(const TraceModel& base, const TraceModel& next, const DiffOptions& options) {
  // The diagnosis sees the options `ferret analyze` would use by default (its rules read top-N
  // tables), so the findings compared are the ones analyze reports.
  AnalysisOptions analysis_options = options.analysis;
  analysis_options.top_k = AnalysisOptions{}.top_k;
  const TraceAnalysis base_analysis = analyze_trace(base, analysis_options);
  const TraceAnalysis new_analysis = analyze_trace(next, analysis_options);
  const Diagnosis base_diagnosis = diagnose(base_analysis);
  const Diagnosis new_diagnosis = diagnose(new_analysis);

  TraceDiff d;
  d.base = make_side(base, base_analysis, base_diagnosis);
  d.next = make_side(next, new_analysis, new_diagnosis);

  d.step_time = diff_step_time(d.base.step_ns, d.next.step_ns, options.alpha);
  for (int c = 0; c < kStepCategoryCount; ++c) {
    CategoryDiff cd;
    cd.category = static_cast<StepCategory>(c);
    cd.base_ns = d.base.category_ns[c];
    cd.new_ns = d.next.category_ns[c];
    cd.delta_ns = cd.new_ns - cd.base_ns;
    if (cd.base_ns > 0) cd.relative = cd.delta_ns / cd.base_ns;
    d.categories.push_back(cd);
  }

  // Per step: the window's totals over its step count (a trace without steps is one window).
  const double base_steps = static_cast<double>(std::max<std::size_t>(1, d.base.step_ns.size()));
  const double new_steps = static_cast<double>(std::max<std::size_t>(1, d.next.step_ns.size()));
  const HotSpotsResult base_hot = all_hot_spots(base, base_analysis.context);
  const HotSpotsResult new_hot = all_hot_spots(next, new_analysis.context);
  // Rows are tested over the steps (per-step values from one hot-spot pass per step) and listed
  // above a floor of BASE's median step time.
  const StepSeries base_series = step_series(base, base_analysis);
  const StepSeries new_series = step_series(next, new_analysis);
  RowTestContext rt;
  rt.base = &base_series;
  rt.next = &new_series;
  rt.alpha = options.alpha;
  const double base_median = d.step_time.comparison.median_a;
  rt.floor_ns = std::max(kRowFloorMinNs, std::isfinite(base_median) ? kRowFloorShare * base_median : 0.0);
  // ops_by_host holds every name group when there is no top-N cut; shapes_by_device every
  // (name, shapes) group.
  d.ops = diff_ops(base_hot.ops_by_host, base_steps, new_hot.ops_by_host, new_steps, false, options.top, rt);
  d.shapes_compared = base_hot.has_shapes && new_hot.has_shapes;
  if (d.shapes_compared)
    d.op_shapes =
        diff_ops(base_hot.shapes_by_device, base_steps, new_hot.shapes_by_device, new_steps, true, options.top, rt);
  d.kernels = diff_kernels(base_hot.kernels, base_steps, new_hot.kernels, new_steps, options.top, rt);

  d.findings = diff_findings(base_diagnosis.findings, new_diagnosis.findings);
  d.gate = evaluate_gate(d.step_time, options.fail_if_slower_pct);

  // What makes the two windows less comparable.
  for (const auto& [label, side] : {std::pair{"BASE", &d.base}, std::pair{"NEW", &d.next}})
    if (!side->has_steps)
      d.warnings.push_back(fmt::format("{} has no ProfilerStep spans{}: it is compared as one window", label,
                                       options.analysis.first_step || options.analysis.last_step ? " in --steps" : ""));
  if (d.base.has_steps && d.next.has_steps && d.base.step_ns.size() != d.next.step_ns.size())
    d.warnings.push_back(
        fmt::format("the windows hold different numbers of steps (BASE {}, NEW {}): every figure is per step",
                    d.base.step_ns.size(), d.next.step_ns.size()));
  if (device_name(base) != device_name(next) && !device_name(base).empty() && !device_name(next).empty())
    d.warnings.push_back(fmt::format("different GPUs: BASE {}, NEW {}", device_name(base), device_name(next)));
  if (base.info.distributed.world_size > 0 && next.info.distributed.world_size > 0 &&
      base.info.distributed.world_size != next.info.distributed.world_size)
    d.warnings.push_back(fmt::format("different world sizes: BASE {}, NEW {}", base.info.distributed.world_size,
                                     next.info.distributed.world_size));
  if (base_hot.has_shapes != new_hot.has_shapes)
    d.warnings.push_back(fmt::format("only {} recorded input shapes: operators are compared by name only",
                                     base_hot.has_shapes ? "BASE" : "NEW"));
  return d;
}

}  // namespace ferret
