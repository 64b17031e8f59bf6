#include "report/bench/bench_compare_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/terminal_text.h"

namespace ferret {

namespace {

using json = nlohmann::ordered_json;

// "12.35 ms": four significant digits at most, so a time fits 8 columns.
std::string compact_seconds(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  const double mag = std::fabs(seconds);
  double scale = 1e-9;
  const char* unit = "ns";
  if (mag >= 1)
    scale = 1, unit = "s";
  else if (mag >= 1e-3)
    scale = 1e-3, unit = "ms";
  else if (mag >= 1e-6)
    scale = 1e-6, unit = "us";
  const double x = seconds / scale;
  const int decimals = std::fabs(x) >= 100 ? 1 : std::fabs(x) >= 10 ? 2 : 3;
  return fmt::format("{:.{}f} {}", x, decimals, unit);
}

// A sample value in its run's unit: a time when the unit is one, else the number and the unit.
std::string value_text(double v, const std::string& unit) {
  if (!std::isfinite(v)) return "-";
  const double spu = seconds_per_unit(unit);
  if (std::isfinite(spu)) return compact_seconds(v * spu);
  return human_number(v) + " " + unit;
}

std::string signed_value_text(double v, const std::string& unit) {
  const std::string text = value_text(v, unit);
  return std::isfinite(v) && v > 0 ? "+" + text : text;
}

std::string throughput_text(double v) {
  if (!std::isfinite(v)) return "-";
  if (v >= 1e8) return fmt::format("{:.2e}", v);
  if (v >= 1000) return fmt::format("{:.0f}", v);
  if (v >= 100) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
}

std::string percent(double fraction) {
  return std::isfinite(fraction) ? fmt::format("{:.1f}%", fraction * 100) : std::string("-");
}
std::string signed_percent(double fraction) {
  return std::isfinite(fraction) ? fmt::format("{:+.1f}%", fraction * 100) : std::string("-");
}

// "2026-12-02T15:40:00Z" -> "2026-12-02 15:40".
std::string date_text(const std::string& iso) {
  if (iso.size() >= 16 && iso[10] == 'T') return iso.substr(0, 10) + " " + iso.substr(11, 5);
  return iso;
}

std::string basename(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos || slash + 1 == path.size() ? path : path.substr(slash + 1);
}

std::string run_name(const RunRecord& r) { return fmt::format("#{} {}", r.id, r.label); }

// Wraps `text` to st.width columns, each line prefixed by `indent` (the first by `first`); labels and
// environment values in it are escaped first (base/terminal_text.h).
std::string wrap_after(std::string_view untrusted, const std::string& first, const std::string& indent,
                       std::size_t width) {
  const std::string text = terminal_safe(untrusted, {.keep_colour = true});
  std::string out, line;
  const std::string* prefix = &first;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t next = text.find(' ', pos);
    if (next == std::string_view::npos) next = text.size();
    const std::string_view word = std::string_view(text).substr(pos, next - pos);  // not a temporary
    if (!line.empty() && prefix->size() + line.size() + 1 + word.size() > width) {
      out += *prefix + line + "\n";
      line.clear();
      prefix = &indent;
    }
    if (!line.empty()) line += ' ';
    line += word;
    pos = next + 1;
  }
  if (!line.empty()) out += *prefix + line + "\n";
  return out;
}

json fields_object(const Fields& fields) {
  json j = json::object();
  for (const auto& [k, v] : fields) j[k] = v;
  return j;
}

json run_json(const RunRecord& r, const RunStats& s) {
  json metrics = json::object();
  for (const auto& [k, v] : r.metrics) metrics[k] = v;
  return {{"id", r.id},
          {"label", r.label},
          {"created_at", r.created_at},
          {"kind", r.kind},
          {"subject", r.subject},
          {"unit", r.unit},
          {"n", s.summary.n},
          {"warmup", r.warmup},
          {"batch_size", r.batch_size},
          {"median", s.summary.median},
          {"p90", s.summary.p90},
          {"p99", s.summary.p99},
          {"iqr", s.summary.iqr},
          {"relative_iqr", s.relative_iqr},
          {"noisy", s.noisy},
          {"throughput", s.throughput},
          {"settings", fields_object(r.settings)},
          {"metrics", metrics},
          {"environment", fields_object(r.environment.fields)}};
}

// "#7 12.05 ms (+20.1%, step)" — one point of a trend.
std::string trend_point_text(const TrendPoint& p, const std::string& unit, bool markdown) {
  std::string text = fmt::format("#{} {}", p.id, value_text(p.median, unit));
  if (std::isfinite(p.relative_change) || p.step) {
    text += " (" + signed_percent(p.relative_change);
    if (p.step) text += markdown ? ", **step**" : ", step";
    text += ")";
  }
  return text;
}

const std::string& unit_of(const HistoryReport& r, std::int64_t id) {
  static const std::string kSeconds = "s";
  for (const RunRecord& run : r.runs)
    if (run.id == id) return run.unit;
  return kSeconds;
}

}  // namespace

// ---- history ---------------------------------------------------------------------------------

std::string history_text(const HistoryReport& r, const Style& st) {
  std::string out;
  std::string title =
      fmt::format("History of {}{}: {} run{}, newest first", r.database,
                  r.label.empty() ? "" : " (label " + r.label + ")", r.runs.size(), r.runs.size() == 1 ? "" : "s");
  out += fmt::format("{}{}{}\n", st.bold(), fit_width(title, st.width), st.reset());
  if (r.runs.empty()) {
    out += r.label.empty() ? "No runs recorded yet. Record one with\n" : "No runs with this label. Record one with\n";
    out += "  ferret bench MODEL --record --label NAME\n";
    return finish_text(out, st);
  }
  out += "\n";
  //   id    label      date             subject       n   median      p90  items/s
  // 5+1+10+1+16+1+11+1+5+1+8+1+8+1+8 = 78 columns, and " *" for a noisy run.
  out += fmt::format("{}{:>5} {:<10} {:<16} {:<11} {:>5} {:>8} {:>8} {:>8}{}\n", st.dim(), "id", "label", "date",
                     "subject", "n", "median", "p90", "items/s", st.reset());
  bool any_noisy = false;
  for (std::size_t i = 0; i < r.runs.size(); ++i) {
    const RunRecord& run = r.runs[i];
    const RunStats& s = r.stats[i];
    any_noisy = any_noisy || s.noisy;
    out += fmt::format("{:>5} {:<10} {:<16} {:<11} {:>5} {:>8} {:>8} {:>8}", fmt::format("#{}", run.id),
                       fit_width(run.label, 10), fit_width(date_text(run.created_at), 16),
                       fit_width(basename(run.subject), 11), s.summary.n, value_text(s.summary.median, run.unit),
                       value_text(s.summary.p90, run.unit), throughput_text(s.throughput));
    if (s.noisy) out += fmt::format(" {}*{}", st.yellow(), st.reset());
    out += "\n";
  }
  if (any_noisy) out += fmt::format("{}*{} noisy: IQR/median above 10%\n", st.yellow(), st.reset());

  out += fmt::format("\n{}Trend per label{}, oldest first (step: Mann-Whitney p < {:g} vs the run before)\n", st.bold(),
                     st.reset(), r.alpha);
  for (const LabelTrend& t : r.trends) {
    // "  main: #1 9.991 ms -> #2 9.993 ms (+0.0%) -> ...", wrapped with an indent of 4.
    const std::string head = "  " + fit_width(t.label.empty() ? std::string("(no label)") : t.label, 24) + ":";
    std::string line = head;
    std::size_t line_width = head.size();  // columns, without colour codes
    for (std::size_t i = 0; i < t.points.size(); ++i) {
      const TrendPoint& p = t.points[i];
      std::string plain = (i == 0 ? " " : " -> ") + trend_point_text(p, unit_of(r, p.id), false);
      if (line_width + plain.size() > st.width && line_width > 4) {
        out += line + "\n";
        line = "   ";
        line_width = 3;
      }
      const char* colour = !p.step ? "" : p.relative_change > 0 ? st.red() : st.green();
      line += *colour ? std::string(colour) + plain + st.reset() : plain;
      line_width += plain.size();
    }
    out += line + "\n";
  }
  return finish_text(out, st);
}

std::string history_markdown(const HistoryReport& r) {
  std::string out = "### ferret history\n\n";
  out += fmt::format("Database {}{}: {} run{}, newest first.\n\n", escape_markdown(r.database),
                     r.label.empty() ? "" : ", label " + escape_markdown(r.label), r.runs.size(),
                     r.runs.size() == 1 ? "" : "s");
  if (r.runs.empty()) return finish_text(out);
  out += "| id | label | date | subject | n | median | p90 | items/s | noisy |\n";
  out += "|---:|---|---|---|---:|---:|---:|---:|---|\n";
  for (std::size_t i = 0; i < r.runs.size(); ++i) {
    const RunRecord& run = r.runs[i];
    const RunStats& s = r.stats[i];
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", run.id, escape_markdown(run.label),
                       escape_markdown(date_text(run.created_at)), escape_markdown(basename(run.subject)), s.summary.n,
                       value_text(s.summary.median, run.unit), value_text(s.summary.p90, run.unit),
                       throughput_text(s.throughput),
                       s.noisy ? fmt::format("yes ({})", percent(s.relative_iqr)) : std::string("no"));
  }
  out += fmt::format(
      "\n#### Trend per label\n\nOldest first; **step**: Mann–Whitney p < {:g} against the run "
      "before.\n\n",
      r.alpha);
  for (const LabelTrend& t : r.trends) {
    out += "- **" + escape_markdown(t.label.empty() ? std::string("(no label)") : t.label) + "**: ";
    for (std::size_t i = 0; i < t.points.size(); ++i)
      out += (i == 0 ? "" : " → ") + trend_point_text(t.points[i], unit_of(r, t.points[i].id), true);
    out += "\n";
  }
  return finish_text(out);
}

json history_json(const HistoryReport& r) {
  json runs = json::array();
  for (std::size_t i = 0; i < r.runs.size(); ++i) runs.push_back(run_json(r.runs[i], r.stats[i]));
  json trends = json::array();
  for (const LabelTrend& t : r.trends) {
    json points = json::array();
    for (const TrendPoint& p : t.points)
      points.push_back({{"id", p.id},
                        {"created_at", p.created_at},
                        {"median", p.median},
                        {"relative_change", p.relative_change},
                        {"p_value", p.p_value},
                        {"step", p.step}});
    trends.push_back({{"label", t.label}, {"points", points}});
  }
  return {{"schema", "ferret.history/1"},
          {"database", r.database},
          {"label", r.label.empty() ? json(nullptr) : json(r.label)},
          {"alpha", r.alpha},
          {"runs", runs},
          {"trends", trends}};
}

// ---- compare ---------------------------------------------------------------------------------

namespace {

// " (95% CI 10.1–14.2%)" for a change of the given direction (+1 slower, -1 faster), in
// magnitudes; signed with "to" when the interval reaches the other side of zero.
std::string ci_text(const stats::Interval& ci, int direction) {
  if (!std::isfinite(ci.low) || !std::isfinite(ci.high)) return "";
  double lo = ci.low * 100, hi = ci.high * 100;
  if (direction < 0) lo = -ci.high * 100, hi = -ci.low * 100;
  const std::string level = fmt::format("{:g}%", ci.confidence * 100);
  if (direction != 0 && lo >= 0) return fmt::format(" ({} CI {:.1f}–{:.1f}%)", level, lo, hi);
  return fmt::format(" ({} CI {:+.1f}% to {:+.1f}%)", level, lo, hi);
}

std::string method_text(stats::MannWhitneyMethod m) {
  switch (m) {
    case stats::MannWhitneyMethod::kExact: return "exact";
    case stats::MannWhitneyMethod::kNormal: return "normal approximation";
    default: return "none";
  }
}

const char* direction_name(const stats::Comparison& c) {
  if (!c.significant) return "same";
  if (c.relative_change > 0) return "slower";
  if (c.relative_change < 0) return "faster";
  return "different";
}

}  // namespace

std::string compare_verdict(const CompareReport& r) {
  const stats::Comparison& c = r.comparison.change;
  if (std::isnan(c.mann_whitney.p_value)) return "no verdict: a run has no usable (finite) samples";
  const std::string alpha = fmt::format("α={:g}", c.alpha);
  if (c.significant && c.relative_change > 0)
    return fmt::format("B is {:.1f}% slower{}, significant at {}", c.relative_change * 100,
                       ci_text(c.relative_change_ci, +1), alpha);
  if (c.significant && c.relative_change < 0)
    return fmt::format("B is {:.1f}% faster{}, significant at {}", -c.relative_change * 100,
                       ci_text(c.relative_change_ci, -1), alpha);
  if (c.significant)
    return fmt::format("B differs from A ({}, significant at {}) but the medians are the same",
                       p_equals_text(c.mann_whitney.p_value), alpha);
  std::string detail =
      fmt::format("{}; median {}", p_equals_text(c.mann_whitney.p_value), signed_percent(c.relative_change));
  if (std::isfinite(c.relative_change_ci.low) && std::isfinite(c.relative_change_ci.high))
    detail += fmt::format(", {:g}% CI {:+.1f}% to {:+.1f}%", c.relative_change_ci.confidence * 100,
                          c.relative_change_ci.low * 100, c.relative_change_ci.high * 100);
  return fmt::format("no significant difference at {} ({})", alpha, detail);
}

namespace {

// A warning and, for differences, the keys that differ ("OMP_NUM_THREADS: 4 -> 8").
struct Warning {
  std::string text;
  std::vector<std::string> items;
};

std::vector<Warning> warning_list(const CompareReport& r) {
  const RunComparison& c = r.comparison;
  std::vector<Warning> out;
  if (!c.environment_differences.empty())
    out.push_back({"the environments differ, so the runs may not be comparable", c.environment_differences});
  if (!c.setup_differences.empty()) out.push_back({"the runs were set up differently", c.setup_differences});
  const std::pair<const char*, const RunStats*> runs[] = {{"A", &c.a}, {"B", &c.b}};
  for (const auto& [name, s] : runs) {
    if (s->noisy)
      out.push_back({fmt::format("{} is noisy: IQR/median is {}, above 10%; its median is less certain", name,
                                 percent(s->relative_iqr)),
                     {}});
    if (s->summary.n < kFewSamples)
      out.push_back({fmt::format("{} has only {} sample{} (fewer than {}): the test has little power", name,
                                 s->summary.n, s->summary.n == 1 ? "" : "s", kFewSamples),
                     {}});
  }
  return out;
}

}  // namespace

std::vector<std::string> compare_warnings(const CompareReport& r) {
  std::vector<std::string> out;
  for (const Warning& w : warning_list(r)) {
    std::string text = w.text;
    for (std::size_t i = 0; i < w.items.size(); ++i) text += (i == 0 ? ": " : "; ") + w.items[i];
    out.push_back(std::move(text));
  }
  return out;
}

namespace {

std::string gate_text(const CompareReport& r) {
  if (!r.fail_if_slower_pct) return "";
  const stats::Comparison& c = r.comparison.change;
  if (r.gate_failed)
    return fmt::format("FAILED, B is {:.1f}% slower, more than the {:g}% allowed", c.relative_change * 100,
                       *r.fail_if_slower_pct);
  return fmt::format("passed, no significant slowdown beyond {:g}%", *r.fail_if_slower_pct);
}

}  // namespace

std::string compare_text(const CompareReport& r, const Style& st) {
  const RunComparison& c = r.comparison;
  const stats::Comparison& ch = c.change;
  std::string out;
  out += fmt::format(
      "{}{}{}\n", st.bold(),
      fit_width(fmt::format("Compare A = {} (baseline) with B = {}", run_name(r.a), run_name(r.b)), st.width),
      st.reset());
  out += fit_width("database " + r.database, st.width) + "\n\n";

  // Two run columns of what the width leaves after the 21 of the labels: 28 each at 80 columns.
  const std::size_t run_width = std::clamp<std::size_t>(st.width > 23 ? (st.width - 23) / 2 : 0, 8, 28);
  auto row = [&out, run_width](const std::string& name, const std::string& a, const std::string& b) {
    out += fmt::format("  {:<18} {:<{}} {}\n", name, fit_width(a, run_width), run_width, fit_width(b, run_width));
  };
  out += fmt::format("{}  {:<18} {:<{}} {}{}\n", st.dim(), "", fmt::format("A #{}", r.a.id), run_width,
                     fmt::format("B #{}", r.b.id), st.reset());
  row("label", r.a.label, r.b.label);
  row("date", date_text(r.a.created_at), date_text(r.b.created_at));
  row("subject", basename(r.a.subject), basename(r.b.subject));
  row("samples", std::to_string(c.a.summary.n), std::to_string(c.b.summary.n));
  row("median", value_text(c.a.summary.median, r.a.unit), value_text(c.b.summary.median, r.b.unit));
  row("p90", value_text(c.a.summary.p90, r.a.unit), value_text(c.b.summary.p90, r.b.unit));
  row("p99", value_text(c.a.summary.p99, r.a.unit), value_text(c.b.summary.p99, r.b.unit));
  row("IQR/median", percent(c.a.relative_iqr) + (c.a.noisy ? " (noisy)" : ""),
      percent(c.b.relative_iqr) + (c.b.noisy ? " (noisy)" : ""));
  row("items/s", throughput_text(c.a.throughput), throughput_text(c.b.throughput));
  out += "\n";
  out += fmt::format("  {:<18} {}{}\n", "median change", signed_percent(ch.relative_change),
                     ci_text(ch.relative_change_ci, 0));
  out += fmt::format("  {:<18} {} ({} of A's median)\n", "Hodges-Lehmann", signed_value_text(ch.hl_shift, r.a.unit),
                     signed_percent(ch.relative_shift));
  out += wrap_after(fmt::format("{} ({}), α = {:g}", p_equals_text(ch.mann_whitney.p_value),
                                method_text(ch.mann_whitney.method), ch.alpha),
                    fmt::format("  {:<18} ", "Mann-Whitney U"), std::string(21, ' '), st.width);

  const char* colour = !ch.significant ? "" : ch.relative_change > 0 ? st.red() : st.green();
  out += "\n" + std::string(st.bold()) + colour;
  out += wrap_after(compare_verdict(r), "Verdict: ", "  ", st.width);
  out += st.reset();

  const std::vector<Warning> warnings = warning_list(r);
  if (!warnings.empty()) {
    out += fmt::format("\n{}Warnings{}\n", st.yellow(), st.reset());
    for (const Warning& w : warnings) {
      out += wrap_after(w.items.empty() ? w.text : w.text + ":", "  ! ", "    ", st.width);
      for (const std::string& item : w.items) out += "      " + fit_width(item, st.width - 6) + "\n";
    }
  }
  if (r.fail_if_slower_pct) {
    out += '\n';  // appended apart: GCC 12 warns falsely (-Wrestrict) on "\n" + a temporary string
    out += wrap_after(gate_text(r), fmt::format("Gate --fail-if-slower {:g}: ", *r.fail_if_slower_pct), "  ", st.width);
  }
  return finish_text(out, st);
}

std::string compare_markdown(const CompareReport& r) {
  const RunComparison& c = r.comparison;
  const stats::Comparison& ch = c.change;
  std::string out = fmt::format("### ferret compare: #{} {} → #{} {}\n\n", r.a.id, escape_markdown(r.a.label), r.b.id,
                                escape_markdown(r.b.label));
  out += "**" + compare_verdict(r) + "**\n\n";
  out += fmt::format("| | A: #{} (baseline) | B: #{} |\n|---|---:|---:|\n", r.a.id, r.b.id);
  auto row = [&out](const std::string& name, const std::string& a, const std::string& b) {
    out += fmt::format("| {} | {} | {} |\n", name, a, b);
  };
  row("label", escape_markdown(r.a.label), escape_markdown(r.b.label));
  row("date", escape_markdown(date_text(r.a.created_at)), escape_markdown(date_text(r.b.created_at)));
  row("subject", escape_markdown(basename(r.a.subject)), escape_markdown(basename(r.b.subject)));
  row("samples", std::to_string(c.a.summary.n), std::to_string(c.b.summary.n));
  row("median", value_text(c.a.summary.median, r.a.unit), value_text(c.b.summary.median, r.b.unit));
  row("p90", value_text(c.a.summary.p90, r.a.unit), value_text(c.b.summary.p90, r.b.unit));
  row("p99", value_text(c.a.summary.p99, r.a.unit), value_text(c.b.summary.p99, r.b.unit));
  row("IQR/median", percent(c.a.relative_iqr) + (c.a.noisy ? " (noisy)" : ""),
      percent(c.b.relative_iqr) + (c.b.noisy ? " (noisy)" : ""));
  row("items/s", throughput_text(c.a.throughput), throughput_text(c.b.throughput));
  out += "\n";
  out += fmt::format("- median change: {}{}\n", signed_percent(ch.relative_change), ci_text(ch.relative_change_ci, 0));
  out += fmt::format("- Hodges–Lehmann shift: {} ({} of A's median)\n", signed_value_text(ch.hl_shift, r.a.unit),
                     signed_percent(ch.relative_shift));
  out += fmt::format("- Mann–Whitney U: {} ({}), α = {:g}\n", p_equals_text(ch.mann_whitney.p_value),
                     method_text(ch.mann_whitney.method), ch.alpha);
  for (const Warning& w : warning_list(r)) {
    out += "\n> **Warning:** " + escape_markdown(w.text) + (w.items.empty() ? "\n" : ":\n>\n");
    for (const std::string& item : w.items) out += "> - " + escape_markdown(item) + "\n";
  }
  if (r.fail_if_slower_pct)
    out += fmt::format("\nGate `--fail-if-slower {:g}`: {}\n", *r.fail_if_slower_pct, gate_text(r));
  return finish_text(out);
}

json compare_json(const CompareReport& r) {
  const RunComparison& c = r.comparison;
  const stats::Comparison& ch = c.change;
  const stats::MannWhitney& mw = ch.mann_whitney;
  json gate = nullptr;
  if (r.fail_if_slower_pct) gate = {{"fail_if_slower_pct", *r.fail_if_slower_pct}, {"failed", r.gate_failed}};
  return {{"schema", "ferret.compare/1"},
          {"database", r.database},
          {"a", run_json(r.a, c.a)},
          {"b", run_json(r.b, c.b)},
          {"change",
           {{"median_a", ch.median_a},
            {"median_b", ch.median_b},
            {"relative", ch.relative_change},
            {"ci_low", ch.relative_change_ci.low},
            {"ci_high", ch.relative_change_ci.high},
            {"confidence", ch.relative_change_ci.confidence},
            {"resamples", ch.relative_change_ci.resamples},
            {"ci_method", stats::bootstrap_method_name(ch.relative_change_ci.method)},
            {"hl_shift", ch.hl_shift},
            {"relative_hl_shift", ch.relative_shift}}},
          {"mann_whitney",
           {{"u_a", mw.u_a},
            {"u_b", mw.u_b},
            {"z", mw.z},
            {"p_value", mw.p_value},
            {"method", stats::mann_whitney_method_key(mw.method)},
            {"ties", mw.has_ties}}},
          {"alpha", ch.alpha},
          {"significant", ch.significant},
          {"direction", direction_name(ch)},
          {"verdict", compare_verdict(r)},
          {"environment_differences", c.environment_differences},
          {"setup_differences", c.setup_differences},
          {"warnings", compare_warnings(r)},
          {"gate", gate}};
}

}  // namespace ferret
