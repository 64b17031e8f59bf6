#include "report/smi/smi_report.h"

#include <cmath>

#include <fmt/format.h>

#include "base/terminal_text.h"
#include "base/text.h"
#include "base/units.h"
#include "diagnosis/smi/rules_smi.h"
#include "ingest/smi/smi_log_parser.h"
#include "report/text_table.h"
#include "report/trace/analyze_report.h"

namespace ferret {

namespace {

using json = nlohmann::ordered_json;

json smi_num(double v) { return smi_has(v) ? json(round3(v)) : json(); }
double smi_seconds(std::int64_t ns) { return static_cast<double>(ns) / 1e9; }

// "87" / "-": a percentage cell of the text and Markdown tables (the JSON has the decimals).
std::string smi_pct_cell(double v) { return smi_has(v) ? fmt::format("{:.0f}", v) : "-"; }

// "40536/81920": the peak used of the total. A log with only one of the two (memory.used without
// memory.total, power.draw without power.limit) shows the one it has, `?` for the other; `-` only
// when it has neither.
std::string smi_headroom_cell(double used, double total) {
  if (!smi_has(used) && !smi_has(total)) return "-";
  const auto part = [](double v) { return smi_has(v) ? fmt::format("{:.0f}", v) : std::string("?"); };
  return part(used) + "/" + part(total);
}

std::string smi_busy_words(const std::string& metric) {
  if (metric == "sm_active") return "smact";
  if (metric == "utilization") return "util";
  return "-";
}

json smi_gpu_json(const SmiLog& log, const SmiGpuStats& st) {
  const SmiGpu& g = log.gpus[st.gpu];
  json idle = json::array();
  for (const SmiIdlePeriod& p : st.idle)
    idle.push_back({{"start_s", round3(smi_seconds(p.start_ns - st.first_ns))},
                    {"end_s", round3(smi_seconds(p.end_ns - st.first_ns))},
                    {"duration_s", round3(smi_seconds(p.duration_ns()))},
                    {"samples", p.samples}});
  const SmiThrottle& t = st.throttle;
  json processes = json::array();
  for (const SmiProcess& p : g.processes)
    processes.push_back(
        {{"pid", p.pid},
         {"command", p.command},
         {"samples", p.samples},
         {"mean_sm_pct", smi_num(p.samples ? p.sm_pct_sum / static_cast<double>(p.samples) : kSmiNone)}});
  return {
      {"gpu", g.key},
      {"label", smi_gpu_label(log, st.gpu)},
      {"source", log.sources[g.source].name},
      {"name", g.name},
      {"uuid", g.uuid},
      {"bus_id", g.bus_id},
      {"samples", st.samples},
      {"absolute_time", g.absolute_time},
      {"first_sample_ns", g.absolute_time && st.samples > 0 ? json(st.first_ns) : json()},
      {"span_s", round3(smi_seconds(st.samples > 0 ? st.span_ns() : 0))},
      {"sample_period_s", round3(smi_seconds(st.sample_period_ns))},
      {"busy_metric", st.busy_metric.empty() ? json() : json(st.busy_metric)},
      {"busy",
       {{"samples", st.busy_values},
        {"mean_pct", smi_num(st.busy_mean)},
        {"active_mean_pct", smi_num(st.active_busy_mean)},
        {"p5_pct", smi_num(st.busy_p5)},
        {"p50_pct", smi_num(st.busy_p50)},
        {"p95_pct", smi_num(st.busy_p95)}}},
      {"utilization_mean_pct", smi_num(st.util_mean)},
      {"sm_active_mean_pct", smi_num(st.sm_active_mean)},
      {"sm_occupancy_mean_pct", smi_num(st.sm_occupancy_mean)},
      {"tensor_active_mean_pct", smi_num(st.tensor_active_mean)},
      {"dram_active_mean_pct", smi_num(st.dram_active_mean)},
      {"memory_utilization_mean_pct", smi_num(st.mem_util_mean)},
      {"memory",
       {{"peak_used_mib", smi_num(st.mem_peak_used_mib)},
        {"total_mib", smi_num(st.mem_total_mib)},
        {"headroom_mib",
         smi_num(smi_has(st.mem_total_mib) && smi_has(st.mem_peak_used_mib) ? st.mem_total_mib - st.mem_peak_used_mib
                                                                            : kSmiNone)}}},
      {"power",
       {{"mean_w", smi_num(st.power_mean_w)},
        {"p95_w", smi_num(st.power_p95_w)},
        {"limit_w", smi_num(st.power_limit_w)},
        {"headroom_w", smi_num(smi_has(st.power_limit_w) && smi_has(st.power_p95_w) ? st.power_limit_w - st.power_p95_w
                                                                                    : kSmiNone)}}},
      {"temperature_max_c", smi_num(st.temp_max_c)},
      {"throttle",
       {{"reasons_logged", t.reasons_logged},
        {"busy_samples", t.busy_samples},
        {"throttled_samples", t.throttled_samples},
        {"throttled_pct", round3(100 * t.share())},
        {"power_cap_samples", t.power_cap},
        {"power_at_limit_samples", t.power_at_limit},
        {"thermal_samples", t.thermal},
        {"hw_slowdown_samples", t.hw_slowdown},
        {"power_brake_samples", t.power_brake},
        {"busy_sm_clock_mhz", smi_num(t.busy_clock_mhz)},
        {"max_sm_clock_mhz", smi_num(t.max_clock_mhz)}}},
      {"idle",
       {{"threshold_pct", kSmiIdleBelowPct},
        {"periods", st.idle_periods},
        {"idle_s", round3(smi_seconds(st.idle_ns))},
        {"leading_s", round3(smi_seconds(st.leading_idle_ns))},
        {"trailing_s", round3(smi_seconds(st.trailing_idle_ns))},
        {"spacing_mean_s", smi_has(st.idle_spacing_ns) ? json(round3(st.idle_spacing_ns / 1e9)) : json()},
        {"spacing_cv", smi_num(st.idle_spacing_cv)},
        {"regular", st.idle_regular},
        {"listed", idle}}},
      {"processes", processes}};
}

json smi_source_json(const SmiSource& s) {
  return {{"source", s.name},
          {"compression", s.compression},
          {"format", smi_format_name(s.format)},
          {"bytes", s.bytes},
          {"lines", s.lines},
          {"samples", s.samples},
          {"skipped_lines", s.skipped_lines},
          {"long_lines", s.long_lines},
          {"ragged_rows", s.ragged_rows},
          {"not_available_values", s.not_available},
          {"ignored_gpus", s.ignored_gpus},
          {"columns", s.columns},
          {"ignored_columns", s.ignored_columns},
          {"skipped_examples", s.skipped_examples},
          {"notes", s.notes},
          {"stopped", s.stopped},
          {"damage", s.damage}};
}

// "the trace covered 12.0 s of a 2.0 h run; GPU 0 was 91% busy in that window but 54% over the run"
std::vector<std::string> smi_trace_sentences(const SmiLog& log, const SmiTraceWindow& w) {
  std::vector<std::string> out;
  if (!w.aligned) {
    out.push_back("Trace " + terminal_safe(w.source) + ": " + w.reason + ".");
    return out;
  }
  out.push_back(fmt::format("Trace {}: the trace covered {} of a {} run.", terminal_safe(w.source),
                            human_duration(w.end_ns - w.start_ns), human_duration(w.run_ns)));
  for (const SmiTraceWindow::Gpu& g : w.gpus) {
    if (g.samples_in_window == 0) {
      out.push_back(fmt::format("  {}: no sample inside the window.", smi_gpu_label(log, g.gpu)));
      continue;
    }
    const double diff = g.window_busy_mean - g.run_busy_mean;
    out.push_back(fmt::format(
        "  {} was {:.0f}% busy in that window {} {:.0f}% over the run ({} samples in the window){}",
        smi_gpu_label(log, g.gpu), g.window_busy_mean, std::fabs(diff) < 10 ? "and" : "but", g.run_busy_mean,
        g.samples_in_window, std::fabs(diff) >= 10 ? ": the trace is not typical of the run." : "."));
  }
  return out;
}

std::vector<std::string> smi_notes(const SmiLog& log) {
  std::vector<std::string> out;
  for (const SmiSource& s : log.sources) {
    const std::string name = terminal_safe(s.name);
    if (s.skipped_lines > 0)
      out.push_back(fmt::format("{}: {} line{} skipped, neither header nor readable row ({} over {} KiB)", name,
                                s.skipped_lines, s.skipped_lines == 1 ? "" : "s", s.long_lines,
                                kSmiMaxLineBytes / 1024));
    if (s.ragged_rows > 0)
      out.push_back(fmt::format("{}: {} row{} of another width than their header", name, s.ragged_rows,
                                s.ragged_rows == 1 ? "" : "s"));
    for (const std::string& e : s.skipped_examples) out.push_back(name + ": " + e);
    if (s.not_available > 0)
      out.push_back(fmt::format("{}: {} values not available ([N/A], -)", name, s.not_available));
    if (s.ignored_gpus > 0)
      out.push_back(fmt::format("{}: {} rows of GPUs past the first {} ignored", name, s.ignored_gpus, 1024));
    for (const std::string& n : s.notes) out.push_back(name + ": " + terminal_safe(n));
    if (!s.stopped.empty()) out.push_back(name + ": " + terminal_safe(s.stopped));
    if (!s.damage.empty()) out.push_back(name + ": " + terminal_safe(s.damage));
  }
  for (const SmiGpu& g : log.gpus)
    if (!g.absolute_time) {
      out.push_back("the log has no times: samples are placed --interval apart");
      break;
    }
  return out;
}

}  // namespace

json smi_json(const SmiReportInput& in) {
  json sources = json::array();
  for (const SmiSource& s : in.log.sources) sources.push_back(smi_source_json(s));
  json gpus = json::array();
  for (const SmiGpuStats& st : in.stats.gpus) gpus.push_back(smi_gpu_json(in.log, st));
  json traces = json::array();
  for (const SmiTraceWindow& w : in.stats.traces) {
    json tg = json::array();
    for (const SmiTraceWindow::Gpu& g : w.gpus)
      tg.push_back({{"gpu", in.log.gpus[g.gpu].key},
                    {"label", smi_gpu_label(in.log, g.gpu)},
                    {"samples_in_window", g.samples_in_window},
                    {"window_busy_mean_pct", smi_num(g.window_busy_mean)},
                    {"run_busy_mean_pct", smi_num(g.run_busy_mean)}});
    traces.push_back({{"source", w.source},
                      {"aligned", w.aligned},
                      {"reason", w.reason},
                      {"start_ns", w.start_ns},
                      {"end_ns", w.end_ns},
                      {"window_s", round3(smi_seconds(w.end_ns - w.start_ns))},
                      {"run_s", round3(smi_seconds(w.run_ns))},
                      {"gpus", tg}});
  }
  json findings = json::array();
  for (const Finding& f : in.findings) findings.push_back(finding_json(f));
  json errors = json::array();
  for (const SmiInputError& e : in.errors) errors.push_back({{"source", e.source}, {"message", e.message}});
  return {{"schema", "ferret.smi/1"}, {"idle_below_pct", kSmiIdleBelowPct},
          {"sources", sources},       {"gpus", gpus},
          {"traces", traces},         {"findings", findings},
          {"errors", errors}};
}

std::string smi_text(const SmiReportInput& in, const Style& st) {
  std::string out;
  for (const SmiSource& s : in.log.sources)
    out += st.bold() +
           wrap(fmt::format("{} ({}, {} lines, {} samples)", terminal_safe(s.name), smi_format_name(s.format), s.lines,
                            s.samples),
                st.width, "") +
           st.reset();
  out += wrap(
      "Busy (by): smact = DCGM's SM active when logged, else util = the tool's utilisation - the share of each "
      "sample period during which at least one kernel ran, however little of the GPU it used. Idle: busy < 10%; "
      "start-up and shutdown idle left out.",
      st.width, "  ");
  out += "\n";
  std::vector<TableColumn> columns = {{"GPU", 24, 12},
                                      {"by", 5, 5, false, 6},
                                      {"samples", 0, 0, true, 7},
                                      {"mean%", 0, 0, true},
                                      {"p5", 0, 0, true, 3},
                                      {"p50", 0, 0, true},
                                      {"p95", 0, 0, true, 3},
                                      {"idle", 0, 0, true, 2},
                                      {"SM%", 0, 0, true, 4},
                                      {"tensor%", 0, 0, true, 5},
                                      {"mem MiB", 13, 5, true, 1},
                                      {"power W", 9, 5, true, 1},
                                      {"throttled%", 0, 0, true, 2}};
  std::vector<std::vector<std::string>> rows;
  for (const SmiGpuStats& g : in.stats.gpus) {
    rows.push_back({smi_gpu_label(in.log, g.gpu), smi_busy_words(g.busy_metric), std::to_string(g.samples),
                    smi_pct_cell(g.busy_mean), smi_pct_cell(g.busy_p5), smi_pct_cell(g.busy_p50),
                    smi_pct_cell(g.busy_p95), std::to_string(g.idle_periods), smi_pct_cell(g.sm_active_mean),
                    smi_pct_cell(g.tensor_active_mean), smi_headroom_cell(g.mem_peak_used_mib, g.mem_total_mib),
                    smi_headroom_cell(g.power_p95_w, g.power_limit_w),
                    g.throttle.busy_samples ? fmt::format("{:.0f}", 100 * g.throttle.share()) : "-"});
  }
  const TextTable table(columns, rows, 2, st.width);
  out += table.render(rows);
  out += wrap(
      "mem: peak used / total; power: p95 draw / limit; idle: idle periods between the first and last busy sample.",
      st.width, "  ");
  bool idle_header = false;
  for (const SmiGpuStats& g : in.stats.gpus) {
    if (g.idle_periods == 0) continue;
    if (!idle_header) out += fmt::format("\n{}Idle periods{} (from each GPU's first sample)\n", st.bold(), st.reset());
    idle_header = true;
    std::string line = fmt::format("{}: {} periods, {} in all", smi_gpu_label(in.log, g.gpu), g.idle_periods,
                                   human_duration(g.idle_ns));
    if (smi_has(g.idle_spacing_ns))
      line +=
          fmt::format(", starts {} apart (CV {:.2f}{})", human_duration(static_cast<std::int64_t>(g.idle_spacing_ns)),
                      g.idle_spacing_cv, g.idle_regular ? ", regular" : "");
    line += ":";
    for (std::size_t i = 0; i < g.idle.size() && i < 5; ++i)
      line += fmt::format(" at {} for {}{}", human_duration(g.idle[i].start_ns - g.first_ns),
                          human_duration(g.idle[i].duration_ns()),
                          i + 1 < std::min<std::size_t>(5, g.idle.size()) ? "," : "");
    if (g.idle_periods > 5) line += ", ...";
    out += wrap(line, st.width, "  ");
  }
  for (const SmiGpuStats& g : in.stats.gpus) {
    const SmiGpu& gpu = in.log.gpus[g.gpu];
    if (gpu.processes.empty()) continue;
    std::string line = smi_gpu_label(in.log, g.gpu) + " processes:";
    for (std::size_t i = 0; i < gpu.processes.size() && i < 5; ++i) {
      const SmiProcess& p = gpu.processes[i];
      line += fmt::format(" {} (pid {}, sm {:.0f}%)", terminal_safe(p.command), p.pid,
                          p.samples ? p.sm_pct_sum / static_cast<double>(p.samples) : 0.0);
    }
    out += wrap(line, st.width, "  ");
  }
  if (!in.stats.traces.empty()) out += fmt::format("\n{}Trace window{}\n", st.bold(), st.reset());
  for (const SmiTraceWindow& w : in.stats.traces)
    for (const std::string& s : smi_trace_sentences(in.log, w)) out += wrap(s, st.width, "  ");
  out += findings_text(in.findings, st, st.width, /*with_rules=*/false);
  const std::vector<std::string> notes = smi_notes(in.log);
  for (const std::string& n : notes) out += wrap("note: " + n, st.width, "  ");
  for (const SmiInputError& e : in.errors) out += wrap("not read: " + terminal_safe(e.message), st.width, "  ");
  return finish_text(out, st);
}

std::string smi_markdown(const SmiReportInput& in) {
  std::string out = "## GPU utilisation\n\n";
  for (const SmiSource& s : in.log.sources)
    out += fmt::format("- {} ({}, {} lines, {} samples)\n", markdown_code(s.name, false), smi_format_name(s.format),
                       s.lines, s.samples);
  out +=
      "\nBusy: SM active (DCGM) when logged, else the tool's utilisation (the share of each sample period during "
      "which at least one kernel ran). Idle: busy < 10%.\n\n"
      "| GPU | by | samples | mean % | p5 | p50 | p95 | idle periods | SM % | tensor % | memory MiB | power W | "
      "throttled % |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const SmiGpuStats& g : in.stats.gpus)
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                       escape_markdown(smi_gpu_label(in.log, g.gpu)), smi_busy_words(g.busy_metric), g.samples,
                       smi_pct_cell(g.busy_mean), smi_pct_cell(g.busy_p5), smi_pct_cell(g.busy_p50),
                       smi_pct_cell(g.busy_p95), g.idle_periods, smi_pct_cell(g.sm_active_mean),
                       smi_pct_cell(g.tensor_active_mean), smi_headroom_cell(g.mem_peak_used_mib, g.mem_total_mib),
                       smi_headroom_cell(g.power_p95_w, g.power_limit_w),
                       g.throttle.busy_samples ? fmt::format("{:.0f}", 100 * g.throttle.share()) : "-");
  for (const SmiTraceWindow& w : in.stats.traces)
    for (const std::string& s : smi_trace_sentences(in.log, w)) {
      out += '\n';  // appended apart: GCC 12 warns falsely (-Wrestrict) on "\n" + a temporary string
      out += escape_markdown(trim(s), false);
      out += '\n';
    }
  out += "\n" + findings_markdown(in.findings);
  const std::vector<std::string> notes = smi_notes(in.log);
  if (!notes.empty()) out += "\n";
  for (const std::string& n : notes) out += "- " + escape_markdown(n, false) + "\n";
  for (const SmiInputError& e : in.errors) out += "- not read: " + escape_markdown(e.message, false) + "\n";
  return finish_text(out);
}

}  // namespace ferret
