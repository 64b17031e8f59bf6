#include "ingest/proc/proc_stat.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "ingest/proc/memory_limit.h"

namespace ferret {

namespace {

// The next space-separated field of `rest` as an unsigned number; false when it is missing or not
// a plain decimal that fits.
bool next_stat_number(std::string_view& rest, std::uint64_t& value) {
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  const std::size_t end = std::min(rest.find(' '), rest.size());
  if (end == 0) return false;
  const auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + end, value);
  if (ec != std::errc() || ptr != rest.data() + end) return false;
  rest.remove_prefix(end);
  return true;
}

// A signed field (ppid, cutime, cstime are signed in the kernel): negative values are refused.
bool next_stat_signed(std::string_view& rest, std::int64_t& value) {
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  const std::size_t end = std::min(rest.find(' '), rest.size());
  if (end == 0) return false;
  const auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + end, value);
  if (ec != std::errc() || ptr != rest.data() + end || value < 0) return false;
  rest.remove_prefix(end);
  return true;
}

bool skip_stat_field(std::string_view& rest) {
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (rest.empty()) return false;
  rest.remove_prefix(std::min(rest.find(' '), rest.size()));
  return true;
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.remove_suffix(1);
  const std::size_t open = line.find('(');
  const std::size_t close = line.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
  ProcStat s;
  std::uint64_t pid = 0;
  std::string_view head = line.substr(0, open);
  while (!head.empty() && head.back() == ' ') head.remove_suffix(1);
  if (!next_stat_number(head, pid) || !head.empty() || pid == 0 || pid > 0x7fffffff) return std::nullopt;
  s.pid = static_cast<int>(pid);
  s.comm = std::string(line.substr(open + 1, close - open - 1));
  std::string_view rest = line.substr(close + 1);
  // Field 3: the state, one letter.
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (rest.empty() || rest.front() == ' ') return std::nullopt;
  s.state = rest.front();
  rest.remove_prefix(1);
  if (!rest.empty() && rest.front() != ' ') return std::nullopt;
  std::int64_t ppid = 0, cutime = 0, cstime = 0;
  if (!next_stat_signed(rest, ppid) || ppid > 0x7fffffff) return std::nullopt;  // field 4
  s.ppid = static_cast<int>(ppid);
  for (int field = 5; field <= 13; ++field)
    if (!skip_stat_field(rest)) return std::nullopt;
  if (!next_stat_number(rest, s.utime) || !next_stat_number(rest, s.stime)) return std::nullopt;  // 14, 15
  if (!next_stat_signed(rest, cutime) || !next_stat_signed(rest, cstime)) return std::nullopt;    // 16, 17
  s.cutime = static_cast<std::uint64_t>(cutime);
  s.cstime = static_cast<std::uint64_t>(cstime);
  for (int field = 18; field <= 21; ++field)
    if (!skip_stat_field(rest)) return std::nullopt;
  if (!next_stat_number(rest, s.starttime)) return std::nullopt;  // 22
  // Ticks summed later: keep each well below overflow (2^60 ticks is 3.6e8 years at 100 Hz).
  constexpr std::uint64_t kMaxTicks = std::uint64_t{1} << 60;
  if (s.utime > kMaxTicks || s.stime > kMaxTicks || s.cutime > kMaxTicks || s.cstime > kMaxTicks) return std::nullopt;
  return s;
}

CpuBudget cpu_budget_from(int affinity_cpus, std::optional<double> cgroup_quota, const std::string& quota_origin) {
  CpuBudget b;
  if (affinity_cpus > 0) {
    b.cores = affinity_cpus;
    b.origin = fmt::format("{} CPUs in the affinity mask", affinity_cpus);
  } else {
    const unsigned hw = std::thread::hardware_concurrency();
    b.cores = hw > 0 ? hw : 1;
    b.origin = hw > 0 ? fmt::format("{} hardware threads", hw) : "unknown: 1 assumed";
  }
  if (cgroup_quota && *cgroup_quota > 0 && *cgroup_quota < b.cores) {
    b.cores = *cgroup_quota;
    b.origin = fmt::format("the cgroup CPU quota of {:.2f} cores in {}", *cgroup_quota, quota_origin);
  }
  return b;
}

CpuBudget cpu_budget() {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int affinity = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  std::ifstream in("/proc/self/cgroup");
  std::stringstream text;
  text << in.rdbuf();
  const std::optional<CgroupCpuQuota> quota = cgroup_cpu_quota(text.str(), "/sys/fs/cgroup");
  return cpu_budget_from(affinity, quota ? std::optional<double>(quota->cores) : std::nullopt,
                         quota ? quota->origin : std::string());
}

}  // namespace ferret
