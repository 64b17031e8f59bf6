// `ferret watch`'s series measured (docs/WATCH.md): CPU per role (mean and p95 in cores), the
// busiest main process, workers, and per GPU the utilisation's mean and percentiles and the
// memory peak. The rules (diagnosis/rules_watch) judge these numbers; the report shows them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/watch_series.h"

namespace ferret {

struct WatchCpuStat {
  double mean = 0;  // cores: CPU seconds over sampled seconds
  double p95 = 0;   // of the samples (type 7), cores
  double peak = 0;
  double cpu_s = 0;
};

struct WatchGpuStat {
  int index = 0;
  std::string name;
  // Whether the verdict reads this device, and why: "tree" (a process of the command held a
  // context on it), "activity" (no process of the tree could be matched; the device was busy at
  // some sample), "all" (neither told: every device), or "" (not judged).
  std::string judged_by;
  int samples = 0;
  double util_mean = 0, util_p5 = 0, util_p50 = 0, util_p95 = 0;
  double mem_util_mean = 0;
  std::uint64_t memory_total = 0, memory_peak = 0, tree_memory_peak = 0;
};

struct WatchSummary {
  int samples = 0;
  double wall_s = 0;
  double sampled_s = 0;
  double cores_available = 0;
  std::string cores_origin;
  WatchCpuStat roles[kProcessRoles];
  WatchCpuStat total;
  WatchCpuStat busiest_main;  // the busiest main process, sample by sample
  int processes_seen = 0;
  int role_processes[kProcessRoles] = {0, 0, 0};  // processes seen in each role (last role)
  double workers_alive_mean = 0;                  // workers alive, averaged over the samples
  bool main_is_python = false;
  std::vector<WatchedProcess> top_processes;  // by CPU time, at most kWatchTopProcesses
  bool gpu_watched = false;
  std::string gpu_source, gpu_note;
  std::vector<WatchGpuStat> gpus;
  int gpus_judged = 0;
  double gpu_util_mean = 0;  // over the judged devices (their means averaged)
  int exit_status = 0, signal = 0, forwarded_signal = 0;
  std::vector<std::string> notes;
};

inline constexpr std::size_t kWatchTopProcesses = 8;

WatchSummary summarize_watch(const WatchSeries& series);

}  // namespace ferret
