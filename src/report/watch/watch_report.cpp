#include "report/watch/watch_report.h"

#include <fmt/format.h>

#include "base/terminal_text.h"
#include "report/text_table.h"
#include "report/trace/analyze_report.h"

namespace ferret {

namespace {

using json = nlohmann::ordered_json;

std::string watch_command_line(const std::vector<std::string>& command) {
  std::string line;
  for (const std::string& word : command) line += (line.empty() ? "" : " ") + word;
  return line;
}

std::string watch_cores(double cores) { return fmt::format("{:.2f}", cores); }

std::string watch_exit_text(const WatchSummary& s) {
  std::string text = s.signal != 0 ? fmt::format("ended by signal {} (exit status {})", s.signal, s.exit_status)
                                   : fmt::format("exit status {}", s.exit_status);
  if (s.forwarded_signal != 0) text += fmt::format("; signal {} passed on to it", s.forwarded_signal);
  return text;
}

json cpu_stat_json(const WatchCpuStat& c) {
  return {{"mean_cores", round3(c.mean)},
          {"p95_cores", round3(c.p95)},
          {"peak_cores", round3(c.peak)},
          {"cpu_s", round3(c.cpu_s)}};
}

// The rows of the CPU table: role, processes seen, mean, p95, peak, CPU seconds.
std::vector<std::vector<std::string>> cpu_rows(const WatchSummary& s) {
  std::vector<std::vector<std::string>> rows;
  for (int r = 0; r < kProcessRoles; ++r) {
    const WatchCpuStat& c = s.roles[r];
    rows.push_back({process_role_name(static_cast<ProcessRole>(r)), std::to_string(s.role_processes[r]),
                    watch_cores(c.mean), watch_cores(c.p95), watch_cores(c.peak), fmt::format("{:.2f}", c.cpu_s)});
  }
  rows.push_back({"total", std::to_string(s.processes_seen), watch_cores(s.total.mean), watch_cores(s.total.p95),
                  watch_cores(s.total.peak), fmt::format("{:.2f}", s.total.cpu_s)});
  return rows;
}

std::vector<std::vector<std::string>> gpu_rows(const WatchSummary& s) {
  std::vector<std::vector<std::string>> rows;
  for (const WatchGpuStat& g : s.gpus)
    rows.push_back({std::to_string(g.index), terminal_safe(g.name), g.judged_by.empty() ? "no" : g.judged_by,
                    fmt::format("{:.1f}", g.util_mean), fmt::format("{:.0f}", g.util_p5),
                    fmt::format("{:.0f}", g.util_p50), fmt::format("{:.0f}", g.util_p95),
                    human_bytes(g.memory_peak) + " / " + human_bytes(g.memory_total)});
  return rows;
}

}  // namespace

json watch_json(const WatchReportInput& in) {
  const WatchSummary& s = in.summary;
  json roles = json::object();
  for (int r = 0; r < kProcessRoles; ++r) {
    json c = cpu_stat_json(s.roles[r]);
    c["processes"] = s.role_processes[r];
    roles[process_role_name(static_cast<ProcessRole>(r))] = c;
  }
  json total = cpu_stat_json(s.total);
  total["processes"] = s.processes_seen;
  json processes = json::array();
  for (const WatchedProcess& p : s.top_processes)
    processes.push_back({{"pid", p.pid},
                         {"parent", p.parent},
                         {"comm", p.comm},
                         {"role", process_role_name(p.role)},
                         {"cpu_s", round3(p.cpu_s)},
                         {"peak_cores", round3(p.peak_cores)},
                         {"first_seen_s", round3(p.first_seen_s)},
                         {"last_seen_s", round3(p.last_seen_s)}});
  json devices = json::array();
  for (const WatchGpuStat& g : s.gpus)
    devices.push_back({{"index", g.index},
                       {"name", g.name},
                       {"judged_by", g.judged_by.empty() ? json() : json(g.judged_by)},
                       {"samples", g.samples},
                       {"util_mean_pct", round2(g.util_mean)},
                       {"util_p5_pct", round2(g.util_p5)},
                       {"util_p50_pct", round2(g.util_p50)},
                       {"util_p95_pct", round2(g.util_p95)},
                       {"mem_util_mean_pct", round2(g.mem_util_mean)},
                       {"memory_total_bytes", g.memory_total},
                       {"memory_peak_bytes", g.memory_peak},
                       {"tree_memory_peak_bytes", g.tree_memory_peak}});
  json findings = json::array();
  for (const Finding& f : in.findings) findings.push_back(finding_json(f));
  return {
      {"schema", "ferret.watch/1"},
      {"command", in.command},
      {"exit_status", s.exit_status},
      {"signal", s.signal != 0 ? json(s.signal) : json()},
      {"forwarded_signal", s.forwarded_signal != 0 ? json(s.forwarded_signal) : json()},
      {"wall_s", round3(s.wall_s)},
      {"samples", {{"count", s.samples}, {"interval_s", round3(in.interval_s)}, {"sampled_s", round3(s.sampled_s)}}},
      {"cpu",
       {{"cores_available", round3(s.cores_available)},
        {"cores_origin", s.cores_origin},
        {"roles", roles},
        {"total", total},
        {"busiest_main", cpu_stat_json(s.busiest_main)},
        {"workers_alive_mean", round2(s.workers_alive_mean)},
        {"main_is_python", s.main_is_python},
        {"top_processes", processes}}},
      {"gpu",
       {{"watched", s.gpu_watched},
        {"source", s.gpu_watched ? json(s.gpu_source) : json()},
        {"note", s.gpu_note.empty() ? json() : json(s.gpu_note)},
        {"devices_judged", s.gpus_judged},
        {"util_mean_pct", s.gpus_judged > 0 ? json(round2(s.gpu_util_mean)) : json()},
        {"devices", devices}}},
      {"findings", findings},
      {"notes", s.notes}};
}

std::string watch_text(const WatchReportInput& in, const Style& st) {
  const WatchSummary& s = in.summary;
  std::string out = fmt::format("{}ferret watch{} ", st.bold(), st.reset());
  out += fit_width(watch_command_line(in.command), st.width > 14 ? st.width - 14 : 1) + "\n";
  out += wrap(fmt::format("{:.2f} s, {}; {} sample{} every {:.0f} ms", s.wall_s, watch_exit_text(s), s.samples,
                          s.samples == 1 ? "" : "s", in.interval_s * 1000),
              st.width, "  ");
  out +=
      "\n" + wrap(fmt::format("CPU, in cores ({:.2f} available: {})", s.cores_available, s.cores_origin), st.width, "");
  const std::vector<std::vector<std::string>> rows = cpu_rows(s);
  const TextTable table({{"role", 8, 5},
                         {"processes", 0, 0, true, 0, 2},
                         {"mean", 0, 0, true, 0, 2},
                         {"p95", 0, 0, true, 0, 2},
                         {"peak", 0, 0, true, 2, 2},
                         {"CPU s", 0, 0, true, 1, 2}},
                        rows, 2, st.width);
  out += table.render(rows);
  out += wrap(fmt::format("busiest main process: {} cores on average, p95 {}; workers alive: {:.1f} on average",
                          watch_cores(s.busiest_main.mean), watch_cores(s.busiest_main.p95), s.workers_alive_mean),
              st.width, "  ");
  if (!s.top_processes.empty()) {
    out += "\nProcesses by CPU time\n";
    std::vector<std::vector<std::string>> prow;
    for (const WatchedProcess& p : s.top_processes)
      prow.push_back({std::to_string(p.pid), process_role_name(p.role), terminal_safe(p.comm),
                      fmt::format("{:.2f}", p.cpu_s), watch_cores(p.peak_cores)});
    const TextTable ptable({{"pid", 0, 0, true},
                            {"role", 0, 0, false, 0, 2},
                            {"name", 16, 6, false, 0, 2},
                            {"CPU s", 0, 0, true, 0, 2},
                            {"peak", 0, 0, true, 1, 2}},
                           prow, 2, st.width);
    out += ptable.render(prow);
  }
  out += "\n";
  if (!s.gpu_watched) {
    out += wrap("GPU: not watched (" + s.gpu_note + ")", st.width, "");
  } else {
    out += wrap(fmt::format("GPU utilisation, % of the time a kernel ran ({}; judged: {} device{}, mean {:.1f}%)",
                            s.gpu_source, s.gpus_judged, s.gpus_judged == 1 ? "" : "s", s.gpu_util_mean),
                st.width, "");
    const std::vector<std::vector<std::string>> grows = gpu_rows(s);
    const TextTable gtable({{"gpu", 0, 0, true},
                            {"name", 24, 6, false, 2, 2},
                            {"judged", 0, 0, false, 0, 2},
                            {"mean", 0, 0, true, 0, 2},
                            {"p5", 0, 0, true, 1, 2},
                            {"p50", 0, 0, true, 0, 2},
                            {"p95", 0, 0, true, 0, 2},
                            {"memory peak", 0, 0, true, 3, 2}},
                           grows, 2, st.width);
    out += gtable.render(grows);
  }
  if (in.findings.empty())
    out += "\nNo finding.\n";
  else
    out += findings_text(in.findings, st, st.width, /*with_rules=*/false);
  for (const std::string& n : s.notes) out += wrap("note: " + n, st.width, "  ");
  return finish_text(out, st);
}

std::string watch_markdown(const WatchReportInput& in) {
  const WatchSummary& s = in.summary;
  std::string out = "## ferret watch " + markdown_code(watch_command_line(in.command), false) + "\n\n";
  out += escape_markdown(fmt::format("{:.2f} s, {}; {} sample{} every {:.0f} ms.", s.wall_s, watch_exit_text(s),
                                     s.samples, s.samples == 1 ? "" : "s", in.interval_s * 1000),
                         false) +
         "\n\n";
  out +=
      escape_markdown(fmt::format("CPU in cores, {:.2f} available ({}).", s.cores_available, s.cores_origin), false) +
      "\n\n| role | processes | mean | p95 | peak | CPU s |\n|---|---|---|---|---|---|\n";
  for (const std::vector<std::string>& r : cpu_rows(s))
    out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", r[0], r[1], r[2], r[3], r[4], r[5]);
  if (!s.top_processes.empty()) {
    out += "\n| pid | role | name | CPU s | peak cores |\n|---|---|---|---|---|\n";
    for (const WatchedProcess& p : s.top_processes)
      out += fmt::format("| {} | {} | {} | {:.2f} | {} |\n", p.pid, process_role_name(p.role), escape_markdown(p.comm),
                         p.cpu_s, watch_cores(p.peak_cores));
  }
  out += "\n";
  if (!s.gpu_watched) {
    out += escape_markdown("GPU: not watched (" + s.gpu_note + ").", false) + "\n\n";
  } else {
    out +=
        escape_markdown(
            fmt::format("GPU utilisation ({}), judged devices' mean {:.1f}%.", s.gpu_source, s.gpu_util_mean), false) +
        "\n\n| gpu | name | judged | mean % | p5 | p50 | p95 | memory peak |\n|---|---|---|---|---|---|---|---|\n";
    for (const std::vector<std::string>& r : gpu_rows(s))
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", r[0], escape_markdown(r[1]), r[2], r[3], r[4],
                         r[5], r[6], r[7]);
    out += "\n";
  }
  out += findings_markdown(in.findings);
  for (const std::string& n : s.notes) out += "- note: " + escape_markdown(n, false) + "\n";
  return finish_text(out);
}

std::string watch_samples_csv(const WatchSeries& series) {
  std::string out = "t_s,interval_s,main_cores,workers_cores,other_cores,total_cores,processes,workers";
  for (const GpuDevice& d : series.devices)
    out += fmt::format(",gpu{0}_util_pct,gpu{0}_mem_util_pct,gpu{0}_memory_used_bytes", d.index);
  out += "\n";
  std::size_t g = 0;
  for (const CpuSample& c : series.cpu) {
    out += fmt::format("{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{},{}", c.t_s, c.interval_s, c.cores[0], c.cores[1],
                       c.cores[2], c.total(), c.processes, c.workers);
    // GPU samples are taken right after the CPU sample of the same time, in device order.
    std::vector<const GpuSample*> at(series.devices.size(), nullptr);
    while (g < series.gpu.size() && series.gpu[g].t_s <= c.t_s) {
      const GpuSample& s = series.gpu[g++];
      if (s.t_s == c.t_s && s.device >= 0 && static_cast<std::size_t>(s.device) < at.size()) at[s.device] = &s;
    }
    for (const GpuSample* s : at)
      out += s == nullptr ? std::string(",,,")
                          : fmt::format(",{:.1f},{:.1f},{}", s->util_pct, s->mem_util_pct, s->memory_used);
    out += "\n";
  }
  return out;
}

}  // namespace ferret
