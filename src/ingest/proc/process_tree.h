// The process tree of a running command, sampled from /proc for `ferret watch` (docs/WATCH.md):
// which processes belong to it, their role, and the CPU each used between two samples.
//
// Membership: the command's process, then every process whose parent is a member (parents from
// /proc/PID/stat field 4). A member stays one when its parent exits and it is re-parented (to
// init or a subreaper): members are known by (pid, start time), so a reused pid is a new process.
// CPU: utime + stime of each member (all its threads), in clock ticks. A process that exits
// between two samples is counted through its parent: when the parent reaps it, the kernel adds
// the child's whole time (and its own reaped children's) to the parent's cutime + cstime, so the
// parent's growth there, less what was already counted of the processes it reaped, is the CPU
// they used since the last sample - including children that lived less than one interval. A
// process whose parent never waits for it loses at most its last interval.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ingest/proc/proc_stat.h"
#include "model/watch_series.h"

namespace ferret {

// Every process's stat line under `proc_root` (lines that do not parse are left out).
std::vector<ProcStat> scan_proc(const std::string& proc_root = "/proc");

class ProcessTree {
 public:
  using Scan = std::function<std::vector<ProcStat>()>;
  // The tree rooted at `root_pid`, read by `scan` (scan_proc by default; tests hand in lines).
  explicit ProcessTree(
      int root_pid, Scan scan = [] { return scan_proc(); });

  // Reads the tree and returns the CPU it used since the previous sample (the first: since each
  // process started), over `interval_s` seconds of wall time ending at `t_s`; `ticks_per_s` is
  // sysconf(_SC_CLK_TCK). `full_interval`: false for a sample cut short (the last one), whose
  // few ticks over a few milliseconds would read as a peak no process reached.
  CpuSample sample(double t_s, double interval_s, double ticks_per_s, bool full_interval = true);

  // Every process seen, in the order first seen; CPU seconds counted so far.
  std::vector<WatchedProcess> processes() const;
  // The members alive at the last sample.
  std::vector<int> alive_pids() const;
  // CPU seconds of processes that came and went between two samples (known only through their
  // parent's cutime/cstime).
  double short_lived_cpu_s() const { return short_lived_ticks_ / ticks_per_s_; }
  // Exited processes forgotten to bound memory (a tree that forks without end), and their CPU.
  std::size_t forgotten() const { return forgotten_; }

 private:
  struct Tracked {
    std::size_t order = 0;
    int parent = 0;  // the parent when first seen: roles follow the tree as it was built
    std::string comm;
    std::uint64_t starttime = 0;
    std::uint64_t own = 0, reaped = 0;  // at the last sample
    std::uint64_t counted = 0;          // ticks counted for it
    bool alive = true;
    ProcessRole role = ProcessRole::kOther;
    double first_seen_s = 0, last_seen_s = 0, peak_cores = 0;
  };
  std::unordered_set<int> find_members(const std::unordered_map<int, const ProcStat*>& by_pid,
                                       const std::unordered_map<int, std::vector<const ProcStat*>>& children);
  void assign_roles();
  void forget_exited();

  int root_pid_;
  Scan scan_;
  bool root_seen_ = false;
  std::uint64_t root_start_ = 0;
  std::size_t next_order_ = 0;
  std::unordered_map<int, Tracked> tracked_;
  std::uint64_t short_lived_ticks_ = 0;
  double ticks_per_s_ = 100;
  std::size_t forgotten_ = 0;
};

}  // namespace ferret
