// What Linux says about a process and the CPUs it may use: /proc/PID/stat lines (proc(5)), the
// CPU affinity mask, the cgroup CPU quota. Read by ingest/process_tree for `ferret watch`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ferret {

// The fields of one /proc/PID/stat line that `ferret watch` uses. Times are clock ticks
// (sysconf(_SC_CLK_TCK), 100 on every Linux ABI in use).
struct ProcStat {
  int pid = 0;
  std::string comm;  // the executable's name or the main thread's name, at most 15 bytes
  char state = '?';  // R, S, D, Z, ...
  int ppid = 0;
  std::uint64_t utime = 0, stime = 0;    // fields 14, 15: the process (all its threads)
  std::uint64_t cutime = 0, cstime = 0;  // fields 16, 17: its children it waited for, and theirs
  std::uint64_t starttime = 0;           // field 22: ticks after boot; with pid, names one process
  std::uint64_t own() const { return utime + stime; }
  std::uint64_t reaped() const { return cutime + cstime; }
};

// One /proc/PID/stat line: "pid (comm) state ppid ..." with at least 22 fields. comm is written
// raw between parentheses and may itself hold spaces and ')' ("(python (worker))"), so it runs
// from the first '(' to the last ')'. nullopt for a line that does not have that shape: a field
// that is not a number, a negative or out-of-range count, fewer than 22 fields.
std::optional<ProcStat> parse_proc_stat(std::string_view line);

// The CPUs this process may run on and where the number comes from: the affinity mask
// (sched_getaffinity), else std::thread::hardware_concurrency; lowered to the cgroup CPU quota
// (cgroup v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us) when that is smaller.
struct CpuBudget {
  double cores = 1;
  std::string origin;
};
CpuBudget cpu_budget_from(int affinity_cpus, std::optional<double> cgroup_quota, const std::string& quota_origin);
CpuBudget cpu_budget();

}  // namespace ferret
