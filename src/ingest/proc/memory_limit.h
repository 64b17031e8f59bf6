// The default memory bound of a run: three quarters of what the machine, or the container it runs
// in, lets the process have.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ferret {

struct MemoryLimit {
  std::uint64_t bytes = 0;
  std::string origin;  // where the number came from, said in notes when loading stops at it
};

// The memory limit of the cgroup this process runs in, or nullopt when there is none (no cgroup
// file, "max", v1's "unlimited" 2^63-ish value, unreadable or garbage contents). `proc_self_cgroup`
// is the text of /proc/self/cgroup; `sysfs_root` the cgroup mount (/sys/fs/cgroup), injectable for
// tests. A limit set on an ancestor cgroup binds too, so the smallest along the path is taken.
// v2: the line "0::/path" -> <root>/path/memory.max; v1: the line "N:...memory...:/path" ->
// <root>/memory/path/memory.limit_in_bytes.
std::optional<MemoryLimit> cgroup_memory_limit(std::string_view proc_self_cgroup, const std::string& sysfs_root);

// min(3/4 of physical memory, 3/4 of the cgroup limit), with its origin.
MemoryLimit default_memory_limit_from(std::uint64_t physical_bytes, std::string_view proc_self_cgroup,
                                      const std::string& sysfs_root);
// The same for this process and machine.
MemoryLimit default_memory_limit();

// The CPU quota of the cgroup this process runs in, in cores (quota / period), or nullopt when
// there is none. Read along the same path as cgroup_memory_limit, the smallest along it: v2
// <root>/path/cpu.max ("QUOTA PERIOD", or "max PERIOD" for none); v1 <root>/cpu/path/
// cpu.cfs_quota_us (-1 for none) over cpu.cfs_period_us.
struct CgroupCpuQuota {
  double cores = 0;
  std::string origin;
};
std::optional<CgroupCpuQuota> cgroup_cpu_quota(std::string_view proc_self_cgroup, const std::string& sysfs_root);

}  // namespace ferret
