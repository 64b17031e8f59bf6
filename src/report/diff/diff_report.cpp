#include "report/diff/diff_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <type_traits>

#include <fmt/format.h>

#include "base/terminal_text.h"
#include "report/text_table.h"

namespace ferret {

namespace {

using json = nlohmann::ordered_json;

// Numbers that may be NaN (no base value, no test): JSON null.
json number_or_null(double v, double scale = 1.0) { return std::isfinite(v) ? json(round3(v * scale)) : json(nullptr); }
json us_json(double ns) { return number_or_null(ns, 1e-3); }
json pct_json(double relative) { return number_or_null(relative, 100.0); }

std::string duration(double ns) { return human_duration(std::llround(ns)); }
std::string signed_duration(double ns) {
  const std::int64_t v = std::llround(ns);
  return fmt::format("{}{}", v > 0 ? "+" : "", human_duration(v));
}
// "+50.0%", "new" when there was nothing before, "n/a" when undefined.
std::string relative_text(double relative, bool added = false) {
  if (added) return "new";
  if (!std::isfinite(relative)) return "n/a";
  return fmt::format("{:+.1f}%", 100 * relative);
}
std::string calls_text(double calls) {
  return std::fabs(calls - std::round(calls)) < 1e-9 ? fmt::format("{:.0f}", calls) : fmt::format("{:.2f}", calls);
}

// "5 steps (ProfilerStep#0..#4), mean 10.000 ms"
std::string window_line(const DiffSide& s) {
  if (!s.has_steps) return fmt::format("no ProfilerStep spans, one window of {}", duration(s.mean_step_ns));
  return fmt::format("{} step{} (ProfilerStep#{}..#{}), mean {}", s.step_ns.size(), s.step_ns.size() == 1 ? "" : "s",
                     s.first_step, s.last_step, duration(s.mean_step_ns));
}

const char* method_name(stats::MannWhitneyMethod m) {
  switch (m) {
    case stats::MannWhitneyMethod::kExact: return "exact";
    case stats::MannWhitneyMethod::kNormal: return "normal approximation";
    case stats::MannWhitneyMethod::kNone: return "none";
  }
  return "none";
}
// The change, named: "+20.0% (Hodges-Lehmann shift +2.000 ms of the 10.000 ms median, 95% CI
// +16.7% to +22.7%); mean +20.0% (10.000 ms -> 12.000 ms)". The one statistic every format calls
// the change; the mean beside it, labelled.
std::string change_line(const StepTimeDiff& st) {
  const stats::Comparison& c = st.comparison;
  std::string interval = "no interval";
  if (st.enough_samples && std::isfinite(c.relative_shift_low))
    interval = fmt::format("{:.3g}% CI {} to {}", 100 * c.shift_interval.confidence,
                           relative_text(c.relative_shift_low), relative_text(c.relative_shift_high));
  const double mean_relative = st.base_mean_ns > 0 ? (st.new_mean_ns - st.base_mean_ns) / st.base_mean_ns : stats::kNaN;
  return fmt::format("{} (Hodges-Lehmann shift {} of the {} median, {}); mean {} ({} -> {})",
                     relative_text(c.relative_shift), signed_duration(c.hl_shift), duration(c.median_a), interval,
                     relative_text(mean_relative), duration(st.base_mean_ns), duration(st.new_mean_ns));
}

// The statistics behind the verdict, one sentence each.
std::vector<std::string> step_detail(const TraceDiff& d) {
  const StepTimeDiff& st = d.step_time;
  const stats::Comparison& c = st.comparison;
  std::vector<std::string> lines;
  lines.push_back(
      fmt::format("median step {} -> {}; the change is the Hodges-Lehmann shift (the median of the {} "
                  "differences NEW step - BASE step) over BASE's median",
                  duration(c.median_a), duration(c.median_b), c.n_a * c.n_b));
  if (!st.enough_samples) {
    lines.push_back(
        fmt::format("no significance test with BASE {} and NEW {} steps (at least {} each needed): "
                    "profile more steps to test the change",
                    c.n_a, c.n_b, kMinStepsForTest));
    return lines;
  }
  const stats::MannWhitney& mw = c.mann_whitney;
  lines.push_back(fmt::format("{} (Mann-Whitney U, {}{}, {} vs {} steps): {} at alpha {:g}", p_equals_text(mw.p_value),
                              method_name(mw.method), mw.has_ties ? ", ties" : "", c.n_a, c.n_b,
                              c.significant ? "significant" : "not significant", c.alpha));
  if (!c.significant && st.min_attainable_p >= c.alpha)
    lines.push_back(
        fmt::format("with {} and {} steps the exact test cannot reach p < {:g} (its smallest p is {}): "
                    "profile more steps",
                    c.n_a, c.n_b, c.alpha, p_value_text(st.min_attainable_p)));
  return lines;
}

json side_json(const DiffSide& s) {
  json durations = json::array();
  for (double ns : s.step_ns) durations.push_back(round3(ns_to_us(ns)));
  return {{"source", s.source},
          {"has_steps", s.has_steps},
          {"steps", s.has_steps ? s.step_ns.size() : 0},
          {"first_step", s.has_steps ? json(s.first_step) : json(nullptr)},
          {"last_step", s.has_steps ? json(s.last_step) : json(nullptr)},
          {"step_us", durations},
          {"mean_step_us", round3(ns_to_us(s.mean_step_ns))},
          {"findings", s.findings},
          {"repairs", s.repairs},
          {"skips", s.skips},
          {"notes", s.notes}};
}

json diff_finding_json(const Finding& f) {
  return {{"id", f.id},
          {"cause", f.cause.empty() ? f.id : f.cause},
          {"title", f.title},
          {"severity", severity_name(f.severity)},
          {"dimension", dimension_name(f.dimension)},
          {"layer", layer_name(f.layer)},
          {"time_share", round3(f.time_share)},
          {"max_speedup", round3(f.max_speedup)}};
}

json row_test_json(const RowTest& t) {
  return {{"above_floor", t.above_floor},
          {"tested", t.tested},
          {"p_value", std::isfinite(t.p_value) ? json(t.p_value) : json(nullptr)},
          {"significant", t.significant}};
}
json matched_json(const std::string& from) { return from.empty() ? json(nullptr) : json(from); }

json op_json(const OpDiff& o, bool with_shapes) {
  json j = {{"name", o.name}, {"matched_from", matched_json(o.matched_from)}};
  if (with_shapes) {
    j["input_dims"] = o.input_dims;
    j["input_types"] = o.input_types;
  }
  j["change"] = change_kind_key(o.change);
  j["basis"] = time_basis_key(o.basis);
  j["delta_us"] = round3(ns_to_us(o.delta_ns));
  j["relative_change_pct"] = pct_json(o.relative);
  j["test"] = row_test_json(o.test);
  j["base"] = {{"calls", round3(o.base_calls)},
               {"host_self_us", round3(ns_to_us(o.base_host_self_ns))},
               {"device_self_us", round3(ns_to_us(o.base_device_self_ns))}};
  j["new"] = {{"calls", round3(o.new_calls)},
              {"host_self_us", round3(ns_to_us(o.new_host_self_ns))},
              {"device_self_us", round3(ns_to_us(o.new_device_self_ns))}};
  return j;
}

json kernel_json(const KernelDiff& k) {
  return {{"name", k.name},
          {"matched_from", matched_json(k.matched_from)},
          {"kind", event_kind_name(k.kind)},
          {"change", change_kind_key(k.change)},
          {"delta_us", round3(ns_to_us(k.delta_ns))},
          {"relative_change_pct", pct_json(k.relative)},
          {"test", row_test_json(k.test)},
          {"base",
           {{"calls", round3(k.base_calls)},
            {"total_us", round3(ns_to_us(k.base_ns))},
            {"mean_us", round3(ns_to_us(k.base_mean_ns))}}},
          {"new",
           {{"calls", round3(k.new_calls)},
            {"total_us", round3(ns_to_us(k.new_ns))},
            {"mean_us", round3(ns_to_us(k.new_mean_ns))}}}};
}

template <class Row, class ToJson>
json lists_json(const ChangeLists<Row>& l, ToJson to_json) {
  auto rows = [&](const std::vector<Row>& v) {
    json a = json::array();
    for (const Row& r : v) a.push_back(to_json(r));
    return a;
  };
  return {{"counts",
           {{"added", l.added_count},
            {"removed", l.removed_count},
            {"slower", l.slower_count},
            {"faster", l.faster_count},
            {"unchanged", l.unchanged_count}}},
          {"floor_us", round3(ns_to_us(l.floor_ns))},
          {"tested", l.tested},
          {"listed", l.listed},
          {"not_listed", {{"below_floor", l.below_floor}, {"not_significant", l.not_significant}}},
          {"renamed", l.renamed},
          {"added", rows(l.added)},
          {"removed", rows(l.removed)},
          {"slower", rows(l.slower)},
          {"faster", rows(l.faster)}};
}

template <class Row>
std::size_t row_count(const ChangeLists<Row>& l) {
  return l.added_count + l.removed_count + l.slower_count + l.faster_count + l.unchanged_count;
}

template <class Row>
std::string counts_text(const ChangeLists<Row>& l) {
  return fmt::format("{} added, {} removed, {} slower, {} faster, {} unchanged", l.added_count, l.removed_count,
                     l.slower_count, l.faster_count, l.unchanged_count);
}

// "and 123 smaller or not-significant changes (below the floor of 1.000 ms per step: 120;
// not significant over the steps: 3)"; "" when every change is listed.
template <class Row>
std::string not_listed_text(const ChangeLists<Row>& l) {
  const std::size_t n = l.below_floor + l.not_significant;
  if (n == 0) return "";
  std::string parts = fmt::format("below the floor of {} per step: {}", duration(l.floor_ns), l.below_floor);
  if (l.tested) parts += fmt::format("; not significant over the steps: {}", l.not_significant);
  return fmt::format("and {} smaller or not-significant change{} ({})", n, n == 1 ? "" : "s", parts);
}

// How the listed rows were chosen: tested over the steps, or above the floor only.
template <class Row>
std::string selection_text(const ChangeLists<Row>& l) {
  if (l.tested)
    return fmt::format(
        "listed: changes of at least {} per step, significant over the steps (Mann-Whitney, "
        "Benjamini-Hochberg)",
        duration(l.floor_ns));
  return fmt::format("listed: changes of at least {} per step, untested (too few steps for a per-step test)",
                     duration(l.floor_ns));
}

// The lists in the order a reader looks for them, with their labels.
template <class Row>
std::vector<std::pair<const char*, const std::vector<Row>*>> ordered(const ChangeLists<Row>& l) {
  return {{"slower", &l.slower}, {"added", &l.added}, {"faster", &l.faster}, {"removed", &l.removed}};
}

// Text rows: "    name BASE(10) NEW(10) change(11) %(7) [h]", the name column taking what the
// width leaves (32 at 80 columns, at least 12).
template <class Row>
void text_rows(std::string& out, const char* title, const ChangeLists<Row>& l, const Style& st) {
  constexpr bool kOps = std::is_same_v<Row, OpDiff>;
  constexpr std::size_t kNumbers = 4 + 10 + 1 + 10 + 1 + 11 + 1 + 7 + 2;  // indent, columns, " h"
  const std::size_t name_width = std::clamp<std::size_t>(st.width > kNumbers ? st.width - kNumbers - 1 : 0, 12, 32);
  out += '\n';
  out += wrap(fmt::format("{}{}{} (per step; {})", st.bold(), title, st.reset(),
                          kOps ? "self time, h = host, else GPU" : "total time"),
              st.width + (st.enabled ? 8 : 0), "");
  out += wrap(counts_text(l), st.width, "  ");
  if (l.listed + l.below_floor + l.not_significant > 0)
    out += fmt::format("{}{}{}", st.dim(), wrap(selection_text(l), st.width, "  "), st.reset());
  const std::string rest = not_listed_text(l);
  if (l.added.empty() && l.removed.empty() && l.slower.empty() && l.faster.empty()) {
    if (!rest.empty())
      out += fmt::format("{}{}{}", st.dim(), wrap("no change listed, " + rest, st.width, "  "), st.reset());
    return;
  }
  out += fmt::format("{}    {:<{}} {:>10} {:>10} {:>11} {:>7}{}\n", st.dim(), "", name_width, "BASE", "NEW", "change",
                     "%", st.reset());
  // Long names get a line of their own, cut to the width; names that would cut alike show what
  // tells them apart.
  std::vector<std::string> long_names;
  auto full_name = [&](const Row& r) {
    std::string name = terminal_safe(r.name);
    if constexpr (kOps) {
      if (!r.input_dims.empty()) name += ' ' + terminal_safe(r.input_dims);
    }
    return name;
  };
  for (const auto& [label, rows] : ordered(l))
    for (const Row& r : *rows) long_names.push_back(full_name(r));
  const std::vector<std::string> fitted_long = fit_names(long_names, st.width - 4);
  std::size_t row_index = 0;
  for (const auto& [label, rows] : ordered(l)) {
    if (rows->empty()) continue;
    out += fmt::format("  {}\n", label);
    for (const Row& r : *rows) {
      std::string name = full_name(r);
      const std::string& fitted = fitted_long[row_index++];
      double base_ns = 0, new_ns = 0;
      const char* marker = "";
      if constexpr (kOps) {
        base_ns = r.basis == TimeBasis::kDevice ? r.base_device_self_ns : r.base_host_self_ns;
        new_ns = r.basis == TimeBasis::kDevice ? r.new_device_self_ns : r.new_host_self_ns;
        marker = r.basis == TimeBasis::kHost ? " h" : "";
      } else {
        base_ns = r.base_ns;
        new_ns = r.new_ns;
      }
      const char* colour = r.delta_ns > 0 ? st.red() : r.delta_ns < 0 ? st.green() : "";
      // A name too long for its column (kernel templates) gets a line of its own.
      if (name.size() > name_width) {
        out += fmt::format("    {}\n", fitted);
        name.clear();
      }
      out += fmt::format("    {:<{}} {:>10} {:>10} {}{:>11}{} {:>7}{}\n", name, name_width,
                         r.change == ChangeKind::kAdded ? std::string("-") : duration(base_ns),
                         r.change == ChangeKind::kRemoved ? std::string("-") : duration(new_ns), colour,
                         signed_duration(r.delta_ns), st.reset(),
                         relative_text(r.relative, r.change == ChangeKind::kAdded), marker);
      if (!r.matched_from.empty())
        out += fmt::format("{}      ~ was {}{}\n", st.dim(), fit_width(terminal_safe(r.matched_from), st.width - 12),
                           st.reset());
    }
  }
  const std::size_t cut = l.listed - (l.added.size() + l.removed.size() + l.slower.size() + l.faster.size());
  if (cut > 0) out += fmt::format("  {}... {} more (--top N shows more rows){}\n", st.dim(), cut, st.reset());
  auto shown_renamed = [](const std::vector<Row>& v) {
    return std::any_of(v.begin(), v.end(), [](const Row& r) { return !r.matched_from.empty(); });
  };
  if (shown_renamed(l.added) || shown_renamed(l.removed) || shown_renamed(l.slower) || shown_renamed(l.faster))
    out +=
        fmt::format("{}{}{}", st.dim(),
                    wrap("~ matched by a normalised name (a span renamed by the change)", st.width, "  "), st.reset());
  if (!rest.empty()) out += fmt::format("{}{}{}", st.dim(), wrap(rest, st.width, "  "), st.reset());
}

template <class Row>
void markdown_rows(std::string& out, const char* title, const ChangeLists<Row>& l, bool with_shapes) {
  constexpr bool kOps = std::is_same_v<Row, OpDiff>;
  out += fmt::format("**{}** per step: {}\n\n", title, counts_text(l));
  const std::string rest = not_listed_text(l);
  if (l.listed + l.below_floor + l.not_significant > 0) out += fmt::format("_{}_\n\n", selection_text(l));
  if (l.added.empty() && l.removed.empty() && l.slower.empty() && l.faster.empty()) {
    if (!rest.empty()) out += fmt::format("No change listed, {}.\n\n", rest);
    return;
  }
  out += kOps ? (with_shapes ? "| change | operator | input dims | self time | BASE | NEW | Δ | % | calls |\n"
                               "|---|---|---|---|---:|---:|---:|---:|---:|\n"
                             : "| change | operator | self time | BASE | NEW | Δ | % | calls |\n"
                               "|---|---|---|---:|---:|---:|---:|---:|\n")
              : "| change | kernel | kind | BASE | NEW | Δ | % | calls |\n|---|---|---|---:|---:|---:|---:|---:|\n";
  for (const auto& [label, rows] : ordered(l)) {
    for (const Row& r : *rows) {
      const bool added = r.change == ChangeKind::kAdded, removed = r.change == ChangeKind::kRemoved;
      std::string cells = fmt::format("| {} | {}{} |", label, escape_markdown(r.name),
                                      r.matched_from.empty() ? ""
                                                             : fmt::format(" (was {}: matched by a normalised name)",
                                                                           escape_markdown(r.matched_from)));
      double base_ns = 0, new_ns = 0;
      if constexpr (kOps) {
        if (with_shapes) cells += fmt::format(" {} |", escape_markdown(r.input_dims));
        cells += r.basis == TimeBasis::kDevice ? " GPU |" : " host |";
        base_ns = r.basis == TimeBasis::kDevice ? r.base_device_self_ns : r.base_host_self_ns;
        new_ns = r.basis == TimeBasis::kDevice ? r.new_device_self_ns : r.new_host_self_ns;
      } else {
        cells += fmt::format(" {} |", event_kind_name(r.kind));
        base_ns = r.base_ns;
        new_ns = r.new_ns;
      }
      out += fmt::format("{} {} | {} | {} | {} | {} → {} |\n", cells, added ? std::string("-") : duration(base_ns),
                         removed ? std::string("-") : duration(new_ns), signed_duration(r.delta_ns),
                         relative_text(r.relative, added), calls_text(r.base_calls), calls_text(r.new_calls));
    }
  }
  out += "\n";
  if (!rest.empty()) out += fmt::format("{}{}.\n\n", static_cast<char>(std::toupper(rest[0])), rest.substr(1));
}

}  // namespace

std::string diff_headline(const TraceDiff& d) {
  const StepTimeDiff& st = d.step_time;
  switch (st.verdict) {
    case StepVerdict::kTooFewSamples: return "Step time: too few steps to test, " + change_line(st);
    case StepVerdict::kNoSignificantChange: return "Step time: no significant change, " + change_line(st);
    case StepVerdict::kSlower: return "Step time: significantly slower, " + change_line(st);
    case StepVerdict::kFaster: return "Step time: significantly faster, " + change_line(st);
  }
  return "";
}

namespace {

const char* gate_colour(const GateResult& g, const Style& st) {
  return g.outcome == GateOutcome::kFail ? st.red() : g.outcome == GateOutcome::kInconclusive ? st.yellow() : "";
}

}  // namespace

std::string diff_text(const TraceDiff& d, const Style& st) {
  std::string out;
  out += fmt::format("{}ferret diff{}\n", st.bold(), st.reset());
  out += fmt::format("  BASE  {}\n        {}\n", fit_width(d.base.source, st.width - 8), window_line(d.base));
  out += fmt::format("  NEW   {}\n        {}\n", fit_width(d.next.source, st.width - 8), window_line(d.next));

  const char* verdict_colour = d.step_time.verdict == StepVerdict::kSlower   ? st.red()
                               : d.step_time.verdict == StepVerdict::kFaster ? st.green()
                                                                             : "";
  out += fmt::format("\n{}{}{}{}", st.bold(), verdict_colour, wrap(diff_headline(d), st.width, ""), st.reset());
  for (const std::string& line : step_detail(d)) out += wrap(line, st.width, "  ");
  if (d.gate.enabled)
    out += fmt::format(
               "{}{}", gate_colour(d.gate, st),
               wrap(fmt::format("Gate --fail-if-slower {:g}: {}", d.gate.threshold_pct, d.gate.reason), st.width, "")) +
           st.reset();

  out += fmt::format("\n{}Step time breakdown{} (mean per step)\n", st.bold(), st.reset());
  std::vector<std::vector<std::string>> rows;
  for (const CategoryDiff& c : d.categories)
    rows.push_back({step_category_label(c.category), duration(c.base_ns), duration(c.new_ns),
                    signed_duration(c.delta_ns), relative_text(c.relative)});
  const double step_delta = d.step_time.new_mean_ns - d.step_time.base_mean_ns;
  rows.push_back({"Step (mean)", duration(d.step_time.base_mean_ns), duration(d.step_time.new_mean_ns),
                  signed_duration(step_delta),
                  relative_text(d.step_time.base_mean_ns > 0 ? step_delta / d.step_time.base_mean_ns : stats::kNaN)});
  // Numbers in columns as wide as they need, three spaces apart when the width allows: "136.361 ms"
  // carries a space of its own.
  const TextTable table({{"", 14},
                         {"BASE", 0, 0, true, 0, 3},
                         {"NEW", 0, 0, true, 0, 3},
                         {"change", 0, 0, true, 0, 3},
                         {"%", 0, 0, true, 0, 3}},
                        rows, 2, st.width);
  out += fmt::format("{}{}{}", st.dim(), table.header(), st.reset());
  for (const std::vector<std::string>& r : rows) out += table.row(r);
  out += fmt::format("{}{}{}", st.dim(),
                     wrap(fmt::format("means, as the categories add up to them; the step-time change is the "
                                      "Hodges-Lehmann shift above, {}",
                                      relative_text(d.step_time.comparison.relative_shift)),
                          st.width, "  "),
                     st.reset());

  text_rows(out, "Operators", d.ops, st);
  // By shapes only when some operator ran on several input shapes (else it repeats the by-name list).
  if (d.shapes_compared && row_count(d.op_shapes) > 0) text_rows(out, "Operators by input shapes", d.op_shapes, st);
  text_rows(out, "GPU kernels and copies", d.kernels, st);

  const FindingsDiff& f = d.findings;
  out += fmt::format("\n{}Findings{}: {} appeared, {} resolved, {} persisting\n", st.bold(), st.reset(),
                     f.appeared.size(), f.resolved.size(), f.persisting.size());
  for (const Finding& x : f.appeared)
    out += fmt::format("  {}appeared{}  {:<6} {}\n", st.red(), st.reset(), upper(severity_name(x.severity)),
                       fit_width(x.title, st.width - 19));
  for (const Finding& x : f.resolved)
    out += fmt::format("  {}resolved{}  {:<6} {}\n", st.green(), st.reset(), upper(severity_name(x.severity)),
                       fit_width(x.title, st.width - 19));
  for (const FindingChange& x : f.persisting) {
    out += fmt::format("  persists  {:<6} {}\n", upper(severity_name(x.next.severity)),
                       fit_width(x.next.title, st.width - 19));
    if (x.base.severity != x.next.severity)
      out +=
          fmt::format("            {}was {} in BASE{}\n", st.dim(), upper(severity_name(x.base.severity)), st.reset());
  }

  if (!d.warnings.empty() || !d.base.notes.empty() || !d.next.notes.empty()) {
    out += fmt::format("\n{}Comparability{}\n", st.bold(), st.reset());
    for (const std::string& w : d.warnings) out += wrap(w, st.width, "  ");
    for (const std::string& n : d.base.notes) out += wrap("BASE: " + n, st.width, "  ");
    for (const std::string& n : d.next.notes) out += wrap("NEW: " + n, st.width, "  ");
  }
  return finish_text(out, st);
}

json diff_json(const TraceDiff& d) {
  const StepTimeDiff& st = d.step_time;
  const stats::Comparison& c = st.comparison;
  json j;
  j["schema"] = "ferret.diff/2";
  j["base"] = side_json(d.base);
  j["new"] = side_json(d.next);
  const bool has_interval = st.enough_samples && std::isfinite(c.shift_interval.low);
  const double mean_relative = st.base_mean_ns > 0 ? (st.new_mean_ns - st.base_mean_ns) / st.base_mean_ns : stats::kNaN;
  j["step_time"] = {
      {"verdict", step_verdict_key(st.verdict)},
      {"headline", diff_headline(d)},
      {"enough_samples", st.enough_samples},
      {"min_steps", kMinStepsForTest},
      {"change",
       {{"statistic", "hodges-lehmann-shift"},
        {"shift_us", us_json(c.hl_shift)},
        {"relative_pct", pct_json(c.relative_shift)},
        {"ci", has_interval ? json{{"low_us", us_json(c.shift_interval.low)},
                                   {"high_us", us_json(c.shift_interval.high)},
                                   {"low_pct", pct_json(c.relative_shift_low)},
                                   {"high_pct", pct_json(c.relative_shift_high)},
                                   {"confidence", c.shift_interval.confidence},
                                   {"attained", c.shift_interval.attained()},
                                   {"method", c.shift_interval.exact ? "exact" : "normal"}}
                            : json(nullptr)}}},
      {"median", {{"base_us", us_json(c.median_a)}, {"new_us", us_json(c.median_b)}}},
      {"mean",
       {{"base_us", round3(ns_to_us(st.base_mean_ns))},
        {"new_us", round3(ns_to_us(st.new_mean_ns))},
        {"change_us", round3(ns_to_us(st.new_mean_ns - st.base_mean_ns))},
        {"relative_pct", pct_json(mean_relative)}}},
      {"spread_us", us_json(st.spread_ns)},
      {"test", st.enough_samples ? json{{"name", "mann-whitney-u"},
                                        {"method", stats::mann_whitney_method_key(c.mann_whitney.method)},
                                        {"u", number_or_null(c.mann_whitney.u_a)},
                                        {"p_value", std::isfinite(c.mann_whitney.p_value) ? json(c.mann_whitney.p_value)
                                                                                          : json(nullptr)},
                                        {"ties", c.mann_whitney.has_ties}}
                                 : json(nullptr)},
      {"alpha", c.alpha},
      {"significant", st.enough_samples && c.significant},
      {"min_attainable_p", st.min_attainable_p}};
  j["gate"] = {{"enabled", d.gate.enabled},
               {"threshold_pct", d.gate.enabled ? json(d.gate.threshold_pct) : json(nullptr)},
               {"outcome", d.gate.enabled ? json(gate_outcome_key(d.gate.outcome)) : json(nullptr)},
               {"failed", d.gate.failed},
               {"steps_needed", std::isfinite(d.gate.steps_needed) ? json(d.gate.steps_needed) : json(nullptr)},
               {"reason", d.gate.reason}};
  json categories = json::array();
  for (const CategoryDiff& cd : d.categories)
    categories.push_back({{"category", step_category_key(cd.category)},
                          {"label", step_category_label(cd.category)},
                          {"base_us", round3(ns_to_us(cd.base_ns))},
                          {"new_us", round3(ns_to_us(cd.new_ns))},
                          {"change_us", round3(ns_to_us(cd.delta_ns))},
                          {"relative_change_pct", pct_json(cd.relative)}});
  j["breakdown"] = categories;
  j["operators"] = lists_json(d.ops, [](const OpDiff& o) { return op_json(o, false); });
  j["operator_shapes"] =
      d.shapes_compared ? lists_json(d.op_shapes, [](const OpDiff& o) { return op_json(o, true); }) : json(nullptr);
  j["kernels"] = lists_json(d.kernels, kernel_json);
  json appeared = json::array(), resolved = json::array(), persisting = json::array();
  for (const Finding& f : d.findings.appeared) appeared.push_back(diff_finding_json(f));
  for (const Finding& f : d.findings.resolved) resolved.push_back(diff_finding_json(f));
  for (const FindingChange& f : d.findings.persisting)
    persisting.push_back({{"cause", f.cause}, {"base", diff_finding_json(f.base)}, {"new", diff_finding_json(f.next)}});
  j["findings"] = {{"appeared", appeared}, {"resolved", resolved}, {"persisting", persisting}};
  j["warnings"] = d.warnings;
  j["exit_code"] = d.exit_code();
  return j;
}

std::string diff_markdown(const TraceDiff& d) {
  std::string out;
  out += fmt::format("### ferret diff: {} → {}\n\n", escape_markdown(d.base.source), escape_markdown(d.next.source));
  out += fmt::format("**{}**\n\n", escape_markdown(diff_headline(d)));
  for (const std::string& line : step_detail(d)) out += "- " + escape_markdown(line) + "\n";
  if (d.gate.enabled)
    out += fmt::format("- **Gate --fail-if-slower {:g}: {}**\n", d.gate.threshold_pct, escape_markdown(d.gate.reason));
  out += "\n";
  out += fmt::format("| | trace | window |\n|---|---|---|\n| BASE | {} | {} |\n| NEW | {} | {} |\n\n",
                     escape_markdown(d.base.source), escape_markdown(window_line(d.base)),
                     escape_markdown(d.next.source), escape_markdown(window_line(d.next)));

  out += "| category (mean per step) | BASE | NEW | Δ | % |\n|---|---:|---:|---:|---:|\n";
  for (const CategoryDiff& c : d.categories)
    out += fmt::format("| {} | {} | {} | {} | {} |\n", step_category_label(c.category), duration(c.base_ns),
                       duration(c.new_ns), signed_duration(c.delta_ns), relative_text(c.relative));
  const double step_delta = d.step_time.new_mean_ns - d.step_time.base_mean_ns;
  out += fmt::format("| **step (mean)** | {} | {} | {} | {} |\n\n", duration(d.step_time.base_mean_ns),
                     duration(d.step_time.new_mean_ns), signed_duration(step_delta),
                     relative_text(d.step_time.base_mean_ns > 0 ? step_delta / d.step_time.base_mean_ns : stats::kNaN));
  out += fmt::format(
      "Means, as the categories add up to them; the step-time change is the Hodges–Lehmann shift "
      "above, {}.\n\n",
      relative_text(d.step_time.comparison.relative_shift));

  markdown_rows(out, "Operators", d.ops, false);
  if (d.shapes_compared && row_count(d.op_shapes) > 0)
    markdown_rows(out, "Operators by input shapes", d.op_shapes, true);
  markdown_rows(out, "GPU kernels and copies", d.kernels, false);

  const FindingsDiff& f = d.findings;
  out += fmt::format("**Findings**: {} appeared, {} resolved, {} persisting\n\n", f.appeared.size(), f.resolved.size(),
                     f.persisting.size());
  if (!f.appeared.empty() || !f.resolved.empty() || !f.persisting.empty()) {
    out += "| | severity | finding |\n|---|---|---|\n";
    for (const Finding& x : f.appeared)
      out += fmt::format("| appeared | {} | {} |\n", severity_name(x.severity), escape_markdown(x.title));
    for (const Finding& x : f.resolved)
      out += fmt::format("| resolved | {} | {} |\n", severity_name(x.severity), escape_markdown(x.title));
    for (const FindingChange& x : f.persisting)
      out += fmt::format(
          "| persists | {}{} | {} |\n", severity_name(x.next.severity),
          x.base.severity != x.next.severity ? fmt::format(" (was {})", severity_name(x.base.severity)) : "",
          escape_markdown(x.next.title));
    out += "\n";
  }
  if (!d.warnings.empty() || !d.base.notes.empty() || !d.next.notes.empty()) {
    out += "**Comparability**\n\n";
    for (const std::string& w : d.warnings) out += "- " + escape_markdown(w) + "\n";
    for (const std::string& n : d.base.notes) out += "- BASE: " + escape_markdown(n) + "\n";
    for (const std::string& n : d.next.notes) out += "- NEW: " + escape_markdown(n) + "\n";
  }
  return finish_text(out);
}

}  // namespace ferret
