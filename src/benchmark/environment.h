// The environment fingerprint stored with every benchmark run, and the comparison that warns
// when two runs were not measured on like machines.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ferret {

// Ordered key -> value pairs (kept in insertion order so output is stable).
using Fields = std::vector<std::pair<std::string, std::string>>;

// Where a run happened: CPU model and cores, GPU and driver, torch and ferret versions, git
// commit, thread and allocator variables. Two runs are comparable when these agree.
struct Environment {
  Fields fields;
  std::string get(const std::string& key) const;  // "" when absent
};

// Reads /proc/cpuinfo, sysconf, /proc/driver/nvidia/version, the git commit of the current
// directory (from .git files, no subprocess), ferret's version, and the thread and allocator
// variables (OMP_NUM_THREADS, MKL_NUM_THREADS, PYTORCH_CUDA_ALLOC_CONF, LD_PRELOAD, MALLOC_CONF,
// ...). `torch_version` and `device` come from the runner ("" when unknown).
Environment capture_environment(const std::string& torch_version = "", const std::string& device = "");

// Keys whose values differ between two environments, each as "key: A -> B". Keys that never
// make runs incomparable (git commit, timestamps) are left out.
std::vector<std::string> environment_differences(const Environment& a, const Environment& b);

// The git state of the repository containing `dir`, read from the .git files alone: HEAD, the ref
// it names (loose file, then packed-refs; worktrees through .git files and commondir) and, for
// `dirty`, the index. All fields empty outside a repository.
struct GitState {
  std::string commit;  // full hex id; "" for an unborn branch
  std::string branch;  // "main"; "" when HEAD is detached
  // "yes" when a tracked file differs from the index (modified or deleted: stat data first, then
  // the blob's SHA-1) or the index has unmerged entries; "no" otherwise; "" when not known.
  // Changes staged with `git add` but not committed are not seen: that needs the object store.
  std::string dirty;
};
GitState read_git_state(const std::string& dir = ".");

}  // namespace ferret
