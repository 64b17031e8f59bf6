#include "benchmark/process_watch.h"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <unordered_set>

#include <fmt/format.h>

#include "base/signal_forwarding.h"
#include "ingest/proc/process_tree.h"

extern char** environ;

namespace ferret {

namespace {

using WatchClock = std::chrono::steady_clock;

double seconds_between(WatchClock::time_point a, WatchClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// True once the command has ended (it stays a zombie, readable in /proc, until reaped).
bool watch_child_ended(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

// Waits until `deadline` or the command's end, whichever comes first; true when it ended.
bool watch_wait_until(pid_t pid, int pidfd, WatchClock::time_point deadline) {
  for (;;) {
    if (watch_child_ended(pid)) return true;
    const auto now = WatchClock::now();
    if (now >= deadline) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    if (pidfd >= 0) {
      pollfd p{pidfd, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 60000)));  // EINTR: loop and look again
    } else {
      // No pidfd (Linux < 5.3): look every 10 ms.
      ::usleep(static_cast<useconds_t>(std::min<long long>(left, 10) * 1000));
    }
  }
}

void record_gpu(WatchSeries& series, GpuSource& gpu, double t_s, const std::vector<int>& tree_pids) {
  const std::vector<GpuReading> readings = gpu.read();
  const std::unordered_set<int> pids(tree_pids.begin(), tree_pids.end());
  for (std::size_t d = 0; d < readings.size() && d < series.devices.size(); ++d) {
    const GpuReading& r = readings[d];
    if (!r.ok) continue;
    GpuSample s;
    s.t_s = t_s;
    s.device = static_cast<int>(d);
    s.util_pct = std::clamp(r.util_pct, 0.0, 100.0);
    s.mem_util_pct = std::clamp(r.mem_util_pct, 0.0, 100.0);
    s.memory_used = r.memory_used;
    if (r.has_processes) series.gpu_process_lists = true;
    for (const auto& [pid, bytes] : r.processes) {
      if (!pids.contains(static_cast<int>(pid))) continue;
      series.devices[d].tree_seen = true;
      // NVML writes ~0 (NVML_VALUE_NOT_AVAILABLE) when it cannot tell a process's memory.
      if (bytes != ~0ULL) s.tree_memory = std::min<std::uint64_t>(s.tree_memory + bytes, ~0ULL >> 1);
    }
    series.gpu.push_back(s);
  }
}

}  // namespace

WatchSeries watch_command(const WatchRequest& request, GpuSource* gpu, const std::string& gpu_note) {
  WatchSeries series;
  series.command = request.command;
  const int interval_ms = std::clamp(request.interval_ms, kWatchMinIntervalMs, kWatchMaxIntervalMs);
  series.interval_s = interval_ms / 1000.0;
  const CpuBudget budget = cpu_budget();
  series.cores_available = budget.cores;
  series.cores_origin = budget.origin;
  if (gpu != nullptr) {
    series.gpu_source = gpu->description();
    const std::vector<GpuDeviceInfo> infos = gpu->devices();
    for (std::size_t i = 0; i < infos.size(); ++i)
      series.devices.push_back(GpuDevice{static_cast<int>(i), infos[i].name, infos[i].memory_total, false});
  } else {
    series.gpu_note = gpu_note;
  }
  if (request.command.empty()) throw WatchSpawnError("no command to run", ENOENT);

  std::vector<char*> argv;
  for (const std::string& a : request.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  // Before the command starts, so a signal in between is not lost; the command gets default
  // dispositions (exec resets caught signals).
  std::optional<SignalForwarding> forwarding;
  if (request.forward_signals) forwarding.emplace();
  auto restore = [&] { forwarding.reset(); };

  const auto start = WatchClock::now();
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  if (spawned != 0) {
    restore();
    throw WatchSpawnError(fmt::format("cannot run {}: {}", request.command.front(), std::strerror(spawned)), spawned);
  }
  if (forwarding) forwarding->forward_to(pid);
#ifdef SYS_pidfd_open
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  const int pidfd = -1;
#endif

  const long hz = ::sysconf(_SC_CLK_TCK);
  const double ticks_per_s = hz > 0 ? static_cast<double>(hz) : 100.0;
  ProcessTree tree(pid);
  const auto interval = std::chrono::milliseconds(interval_ms);
  auto last = start;
  auto next = start + interval;
  for (;;) {
    const bool ended = watch_wait_until(pid, pidfd, next);
    const auto now = WatchClock::now();
    const double t_s = seconds_between(start, now);
    // The last sample is taken with the command a zombie: its counters are final and its
    // children's reaped time is in them.
    const double interval_s = seconds_between(last, now);
    series.cpu.push_back(tree.sample(t_s, interval_s, ticks_per_s, interval_s >= series.interval_s / 2));
    if (gpu != nullptr) record_gpu(series, *gpu, t_s, tree.alive_pids());
    last = now;
    if (ended) break;
    next += interval;
    if (next <= now) next = now + interval;  // a late wake-up starts a fresh interval, not a burst
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  series.wall_s = seconds_between(start, WatchClock::now());
  if (pidfd >= 0) ::close(pidfd);
  if (forwarding) series.forwarded_signal = forwarding->forwarded();
  restore();

  if (WIFEXITED(status)) series.exit_status = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    series.signal = WTERMSIG(status);
    series.exit_status = 128 + series.signal;
  }
  series.processes = tree.processes();
  if (tree.short_lived_cpu_s() > 0)
    series.notes.push_back(fmt::format("{:.2f} CPU s were used by processes that came and went between two samples",
                                       tree.short_lived_cpu_s()));
  if (tree.forgotten() > 0)
    series.notes.push_back(
        fmt::format("{} exited processes left out of the process list (their CPU is counted)", tree.forgotten()));
  return series;
}

}  // namespace ferret
