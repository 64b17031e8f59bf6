#include "diff/trace_diff.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <tuple>
#include <type_traits>

#include <fmt/format.h>

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
  // Too few steps: describe (medians, relative change), test nothing.
  stats::Comparison& c = d.comparison;
  c.n_a = base_ns.size();
  c.n_b = new_ns.size();
  c.alpha = alpha;
  c.median_a = stats::summarize(base_ns).median;
  c.median_b = stats::summarize(new_ns).median;
  if (c.median_a != 0 && std::isfinite(c.median_a)) c.relative_change = (c.median_b - c.median_a) / c.median_a;
  d.verdict = StepVerdict::kTooFewSamples;
  return d;
}

GateResult evaluate_gate(const StepTimeDiff& st, std::optional<double> fail_if_slower_pct) {
  GateResult g;
  if (!fail_if_slower_pct) return g;
  g.enabled = true;
  g.threshold_pct = *fail_if_slower_pct;
  const stats::Comparison& c = st.comparison;
  const double change_pct = 100 * c.relative_change;
  switch (st.verdict) {
    case StepVerdict::kTooFewSamples:
      g.reason = fmt::format("passed: too few steps for a significance test (BASE {}, NEW {}; at least {} each needed)",
                             c.n_a, c.n_b, kMinStepsForTest);
      return g;
    case StepVerdict::kNoSignificantChange:
      g.reason = fmt::format("passed: no significant change in step time (p = {:.3g} >= alpha {:g})",
                             c.mann_whitney.p_value, c.alpha);
      return g;
    case StepVerdict::kFaster:
      g.reason = fmt::format("passed: step time is significantly faster ({:+.1f}%, p = {:.3g})", change_pct,
                             c.mann_whitney.p_value);
      return g;
    case StepVerdict::kSlower: break;
  }
  if (!std::isfinite(change_pct)) {
    g.reason = "passed: the base median step time is 0, so no relative slowdown can be measured";
    return g;
  }
  if (change_pct > g.threshold_pct) {
    g.failed = true;
    g.reason =
        fmt::format("FAILED: step time is significantly slower by {:.1f}% (p = {:.3g}), beyond the {:g}% allowed",
                    change_pct, c.mann_whitney.p_value, g.threshold_pct);
  } else {
    g.reason =
        fmt::format("passed: step time is significantly slower by {:.1f}% (p = {:.3g}), within the {:g}% allowed",
                    change_pct, c.mann_whitney.p_value, g.threshold_pct);
  }
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

template <class Row>
ChangeLists<Row> to_lists(std::vector<Row> rows, int top) {
  sort_by_change(rows);
  ChangeLists<Row> lists;
  const std::size_t keep = static_cast<std::size_t>(std::max(0, top));
  auto add = [keep](std::vector<Row>& list, std::size_t& count, Row&& row) {
    ++count;
    if (list.size() < keep) list.push_back(std::move(row));
  };
  for (Row& r : rows) {
    switch (r.change) {
      case ChangeKind::kAdded: add(lists.added, lists.added_count, std::move(r)); break;
      case ChangeKind::kRemoved: add(lists.removed, lists.removed_count, std::move(r)); break;
      case ChangeKind::kSlower: add(lists.slower, lists.slower_count, std::move(r)); break;
      case ChangeKind::kFaster: add(lists.faster, lists.faster_count, std::move(r)); break;
      case ChangeKind::kUnchanged: ++lists.unchanged_count; break;
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

ChangeLists<OpDiff> diff_ops(const std::vector<OpStat>& base, double base_steps, const std::vector<OpStat>& next,
                             double new_steps, bool with_shapes, int top) {
  using Key = std::tuple<std::string, std::string, std::string>;
  std::map<Key, std::pair<const OpStat*, const OpStat*>> joined;
  auto key = [with_shapes](const OpStat& s) {
    return with_shapes ? Key{s.name, s.input_dims, s.input_types} : Key{s.name, "", ""};
  };
  for (const OpStat& s : base) joined[key(s)].first = &s;
  for (const OpStat& s : next) joined[key(s)].second = &s;
  // By shapes, an operator seen with one and the same input shapes in both traces repeats its row
  // by name: only operators with several shape groups (in either trace) are kept.
  std::map<std::string, std::size_t> shape_groups;
  if (with_shapes)
    for (const auto& entry : joined) ++shape_groups[std::get<0>(entry.first)];
  std::vector<OpDiff> rows;
  for (const auto& [k, pair] : joined) {
    if (with_shapes && shape_groups[std::get<0>(k)] < 2) continue;
    const auto& [b, n] = pair;
    OpDiff d;
    std::tie(d.name, d.input_dims, d.input_types) = k;
    if (b) {
      d.base_calls = per_step(static_cast<double>(b->calls), base_steps);
      d.base_host_self_ns = per_step(static_cast<double>(b->host_self_ns), base_steps);
      d.base_device_self_ns = per_step(static_cast<double>(b->device_self_ns), base_steps);
    }
    if (n) {
      d.new_calls = per_step(static_cast<double>(n->calls), new_steps);
      d.new_host_self_ns = per_step(static_cast<double>(n->host_self_ns), new_steps);
      d.new_device_self_ns = per_step(static_cast<double>(n->device_self_ns), new_steps);
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
  return to_lists(std::move(rows), top);
}

ChangeLists<KernelDiff> diff_kernels(const std::vector<KernelStat>& base, double base_steps,
                                     const std::vector<KernelStat>& next, double new_steps, int top) {
  std::map<std::string, std::pair<const KernelStat*, const KernelStat*>> joined;
  for (const KernelStat& k : base) joined[k.name].first = &k;
  for (const KernelStat& k : next) joined[k.name].second = &k;
  std::vector<KernelDiff> rows;
  for (const auto& [name, pair] : joined) {
    const auto& [b, n] = pair;
    KernelDiff d;
    d.name = name;
    d.kind = n ? n->kind : b->kind;
    if (b) {
      d.base_calls = per_step(static_cast<double>(b->calls), base_steps);
      d.base_ns = per_step(static_cast<double>(b->total_ns), base_steps);
      d.base_mean_ns = b->mean_ns;
    }
    if (n) {
      d.new_calls = per_step(static_cast<double>(n->calls), new_steps);
      d.new_ns = per_step(static_cast<double>(n->total_ns), new_steps);
      d.new_mean_ns = n->mean_ns;
    }
    d.delta_ns = d.new_ns - d.base_ns;
    if (d.base_ns > 0) d.relative = d.delta_ns / d.base_ns;
    d.change = classify(d.base_calls, d.new_calls, d.delta_ns);
    rows.push_back(std::move(d));
  }
  return to_lists(std::move(rows), top);
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
  // ops_by_host holds every name group when there is no top-N cut; shapes_by_device every
  // (name, shapes) group.
  d.ops = diff_ops(base_hot.ops_by_host, base_steps, new_hot.ops_by_host, new_steps, false, options.top);
  d.shapes_compared = base_hot.has_shapes && new_hot.has_shapes;
  if (d.shapes_compared)
    d.op_shapes =
        diff_ops(base_hot.shapes_by_device, base_steps, new_hot.shapes_by_device, new_steps, true, options.top);
  d.kernels = diff_kernels(base_hot.kernels, base_steps, new_hot.kernels, new_steps, options.top);

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
