#include "analysis/watch/watch_summary.h"

#include <algorithm>

#include "base/statistics.h"

namespace ferret {

namespace {

// Mean: CPU seconds over sampled seconds, every sample. p95 and peak: of the samples at least
// half an interval long - the last one, cut short when the command ends, holds a tick or two
// over a few milliseconds, which reads as cores it never used (ticks are 10 ms). All samples
// when none is that long.
WatchCpuStat watch_cpu_stat(const std::vector<double>& cores, const std::vector<double>& seconds, double interval_s) {
  WatchCpuStat s;
  double total_s = 0;
  std::vector<double> sorted;
  for (std::size_t i = 0; i < cores.size(); ++i) {
    s.cpu_s += cores[i] * seconds[i];
    total_s += seconds[i];
    if (seconds[i] >= interval_s / 2) sorted.push_back(cores[i]);
  }
  if (cores.empty()) return s;
  s.mean = total_s > 0 ? s.cpu_s / total_s : 0;
  if (sorted.empty()) sorted = cores;
  std::sort(sorted.begin(), sorted.end());
  s.p95 = stats::percentile(sorted, 95);
  s.peak = sorted.back();
  return s;
}

}  // namespace

WatchSummary summarize_watch(const WatchSeries& series) {
  WatchSummary w;
  w.samples = static_cast<int>(series.cpu.size());
  w.wall_s = series.wall_s;
  w.cores_available = series.cores_available;
  w.cores_origin = series.cores_origin;
  std::vector<double> seconds, role[kProcessRoles], total, busiest;
  double workers_weighted = 0;
  for (const CpuSample& s : series.cpu) {
    seconds.push_back(s.interval_s);
    w.sampled_s += s.interval_s;
    for (int r = 0; r < kProcessRoles; ++r) role[r].push_back(s.cores[r]);
    total.push_back(s.total());
    busiest.push_back(s.busiest_main_cores);
    workers_weighted += s.workers * s.interval_s;
  }
  for (int r = 0; r < kProcessRoles; ++r) w.roles[r] = watch_cpu_stat(role[r], seconds, series.interval_s);
  w.total = watch_cpu_stat(total, seconds, series.interval_s);
  w.busiest_main = watch_cpu_stat(busiest, seconds, series.interval_s);
  w.workers_alive_mean = w.sampled_s > 0 ? workers_weighted / w.sampled_s : 0;

  w.processes_seen = static_cast<int>(series.processes.size());
  for (const WatchedProcess& p : series.processes) {
    ++w.role_processes[static_cast<int>(p.role)];
    if (p.role == ProcessRole::kMain && is_main_python_comm(p.comm)) w.main_is_python = true;
  }
  w.top_processes = series.processes;
  std::stable_sort(w.top_processes.begin(), w.top_processes.end(),
                   [](const WatchedProcess& a, const WatchedProcess& b) { return a.cpu_s > b.cpu_s; });
  if (w.top_processes.size() > kWatchTopProcesses) w.top_processes.resize(kWatchTopProcesses);

  w.gpu_source = series.gpu_source;
  w.gpu_note = series.gpu_note;
  w.gpu_watched = !series.gpu_source.empty();
  bool any_tree = false, any_activity = false;
  for (const GpuDevice& d : series.devices) {
    WatchGpuStat g;
    g.index = d.index;
    g.name = d.name;
    g.memory_total = d.memory_total;
    std::vector<double> util;
    double mem_util = 0;
    for (const GpuSample& s : series.gpu) {
      if (s.device != d.index) continue;
      util.push_back(s.util_pct);
      mem_util += s.mem_util_pct;
      g.memory_peak = std::max(g.memory_peak, s.memory_used);
      g.tree_memory_peak = std::max(g.tree_memory_peak, s.tree_memory);
    }
    g.samples = static_cast<int>(util.size());
    if (!util.empty()) {
      std::sort(util.begin(), util.end());
      double sum = 0;
      for (double u : util) sum += u;
      g.util_mean = sum / static_cast<double>(util.size());
      g.mem_util_mean = mem_util / static_cast<double>(util.size());
      g.util_p5 = stats::percentile(util, 5);
      g.util_p50 = stats::percentile(util, 50);
      g.util_p95 = stats::percentile(util, 95);
      any_activity = any_activity || util.back() > 0;
    }
    any_tree = any_tree || d.tree_seen;
    w.gpus.push_back(std::move(g));
  }
  // Which devices the verdict reads: those the command's processes used, when NVML's process
  // lists name them (in a container NVML lists host pids, which match nothing); else those that
  // were busy at some sample; else all.
  double judged_sum = 0;
  for (std::size_t i = 0; i < w.gpus.size(); ++i) {
    WatchGpuStat& g = w.gpus[i];
    if (g.samples == 0) continue;
    if (any_tree)
      g.judged_by = series.devices[i].tree_seen ? "tree" : "";
    else if (any_activity)
      g.judged_by = g.util_p95 > 0 || g.util_mean > 0 ? "activity" : "";
    else
      g.judged_by = "all";
    if (g.judged_by.empty()) continue;
    ++w.gpus_judged;
    judged_sum += g.util_mean;
  }
  w.gpu_util_mean = w.gpus_judged > 0 ? judged_sum / w.gpus_judged : 0;
  w.exit_status = series.exit_status;
  w.signal = series.signal;
  w.forwarded_signal = series.forwarded_signal;
  w.notes = series.notes;
  return w;
}

}  // namespace ferret
