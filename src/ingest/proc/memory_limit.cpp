#include "ingest/proc/memory_limit.h"

#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

namespace ferret {

namespace {

// cgroup v1 writes "no limit" as the largest page-aligned int64 (9223372036854771712); anything
// from 2^62 up is no limit in practice.
constexpr std::uint64_t kNoLimitAbove = std::uint64_t{1} << 62;

std::optional<std::string> read_small_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string text;
  std::getline(in, text);
  return text;
}

// A byte count as the cgroup files write it; nullopt for "max", garbage or no limit.
std::optional<std::uint64_t> parse_limit(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) text.remove_suffix(1);
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value == 0 || value >= kNoLimitAbove)
    return std::nullopt;
  return value;
}

// The smallest limit in `file` along `dir` and its ancestors up to `root`.
std::optional<MemoryLimit> smallest_along(const std::string& root, std::string path, const std::string& file) {
  std::optional<MemoryLimit> best;
  for (;;) {
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    const std::string full = root + (path == "/" ? "" : path) + "/" + file;
    if (const auto text = read_small_file(full)) {
      if (const auto bytes = parse_limit(*text); bytes && (!best || *bytes < best->bytes))
        best = MemoryLimit{*bytes, full};
    }
    if (path.empty() || path == "/") break;
    const std::size_t slash = path.rfind('/');
    path = slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
  }
  return best;
}

// The cgroup lines of /proc/self/cgroup: the v2 path ("0::/path"), and v1 paths by controller.
struct CgroupPaths {
  std::optional<std::string> v2;
  std::optional<std::string> v1_memory, v1_cpu;
};

CgroupPaths cgroup_paths(std::string_view proc_self_cgroup) {
  CgroupPaths paths;
  std::istringstream lines{std::string(proc_self_cgroup)};
  std::string line;
  while (std::getline(lines, line)) {
    // hierarchy-id:controller-list:path; the path may itself hold ':'.
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string hierarchy = line.substr(0, first);
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (path.empty() || path.front() != '/') continue;
    if (hierarchy == "0" && controllers.empty()) {
      paths.v2 = path;
    } else {
      std::istringstream names(controllers);
      std::string name;
      while (std::getline(names, name, ',')) {
        if (name == "memory") paths.v1_memory = path;
        if (name == "cpu") paths.v1_cpu = path;
      }
    }
  }
  return paths;
}

// "QUOTA PERIOD" (v2 cpu.max) -> cores; nullopt for "max ...", garbage or a zero period.
std::optional<double> parse_cpu_max(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) text.remove_suffix(1);
  const std::size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::uint64_t quota = 0, period = 0;
  const std::string_view q = text.substr(0, space), p = text.substr(space + 1);
  const auto [qe, qec] = std::from_chars(q.data(), q.data() + q.size(), quota);
  const auto [pe, pec] = std::from_chars(p.data(), p.data() + p.size(), period);
  if (qec != std::errc() || qe != q.data() + q.size() || pec != std::errc() || pe != p.data() + p.size() ||
      quota == 0 || period == 0)
    return std::nullopt;
  return static_cast<double>(quota) / static_cast<double>(period);
}

// The smallest CPU quota along `path` and its ancestors; `v1` reads the two cfs files.
std::optional<CgroupCpuQuota> smallest_cpu_quota(const std::string& root, std::string path, bool v1) {
  std::optional<CgroupCpuQuota> best;
  for (;;) {
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    const std::string dir = root + (path == "/" ? "" : path);
    std::optional<double> cores;
    std::string origin;
    if (v1) {
      const auto quota = read_small_file(dir + "/cpu.cfs_quota_us");
      const auto period = read_small_file(dir + "/cpu.cfs_period_us");
      if (quota && period) {
        cores = parse_cpu_max(*quota + " " + *period);
        origin = dir + "/cpu.cfs_quota_us";
      }
    } else if (const auto text = read_small_file(dir + "/cpu.max")) {
      cores = parse_cpu_max(*text);
      origin = dir + "/cpu.max";
    }
    if (cores && (!best || *cores < best->cores)) best = CgroupCpuQuota{*cores, origin};
    if (path.empty() || path == "/") break;
    const std::size_t slash = path.rfind('/');
    path = slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
  }
  return best;
}

}  // namespace

std::optional<CgroupCpuQuota> cgroup_cpu_quota(std::string_view proc_self_cgroup, const std::string& sysfs_root) {
  const CgroupPaths paths = cgroup_paths(proc_self_cgroup);
  std::optional<CgroupCpuQuota> v2, v1;
  if (paths.v2) v2 = smallest_cpu_quota(sysfs_root, *paths.v2, false);
  if (paths.v1_cpu) v1 = smallest_cpu_quota(sysfs_root + "/cpu", *paths.v1_cpu, true);
  if (v1 && (!v2 || v1->cores < v2->cores)) return v1;
  return v2;
}

std::optional<MemoryLimit> cgroup_memory_limit(std::string_view proc_self_cgroup, const std::string& sysfs_root) {
  const CgroupPaths paths = cgroup_paths(proc_self_cgroup);
  std::optional<MemoryLimit> v2, v1;
  if (paths.v2) v2 = smallest_along(sysfs_root, *paths.v2, "memory.max");
  if (paths.v1_memory) v1 = smallest_along(sysfs_root + "/memory", *paths.v1_memory, "memory.limit_in_bytes");
  if (v1 && (!v2 || v1->bytes < v2->bytes)) return v1;
  return v2;
}

MemoryLimit default_memory_limit_from(std::uint64_t physical_bytes, std::string_view proc_self_cgroup,
                                      const std::string& sysfs_root) {
  MemoryLimit limit{physical_bytes / 4 * 3,
                    fmt::format("the default, 3/4 of physical memory ({} MiB)", physical_bytes >> 20)};
  if (physical_bytes == 0) limit = MemoryLimit{std::uint64_t{8} << 30, "the default for an unknown memory size"};
  if (const auto cgroup = cgroup_memory_limit(proc_self_cgroup, sysfs_root);
      cgroup && cgroup->bytes / 4 * 3 < limit.bytes)
    limit = MemoryLimit{cgroup->bytes / 4 * 3, fmt::format("the default, 3/4 of the cgroup limit of {} MiB in {}",
                                                           cgroup->bytes >> 20, cgroup->origin)};
  return limit;
}

MemoryLimit default_memory_limit() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  const std::uint64_t physical =
      pages > 0 && page_size > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size) : 0;
  std::ifstream in("/proc/self/cgroup");
  std::stringstream text;
  text << in.rdbuf();
  return default_memory_limit_from(physical, text.str(), "/sys/fs/cgroup");
}

}  // namespace ferret
