#include "ingest/memory_limit.h"

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

}  // namespace

std::optional<MemoryLimit> cgroup_memory_limit(std::string_view proc_self_cgroup, const std::string& sysfs_root) {
  std::istringstream lines{std::string(proc_self_cgroup)};
  std::string line;
  std::optional<MemoryLimit> v2, v1;
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
      v2 = smallest_along(sysfs_root, path, "memory.max");
    } else {
      std::istringstream names(controllers);
      std::string name;
      while (std::getline(names, name, ','))
        if (name == "memory") v1 = smallest_along(sysfs_root + "/memory", path, "memory.limit_in_bytes");
    }
  }
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
