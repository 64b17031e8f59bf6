// What `ferret watch` records while a command runs (docs/WATCH.md): the CPU use of its process
// tree by role, sampled from /proc, and each GPU's utilisation and memory, sampled through NVML.
// A fourth storage model beside TraceModel, NcclLog and AllocatorSnapshot: samples on a wall
// clock, not events. Written by benchmark/process_watch, measured by analysis/watch_summary.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ferret {

// A process's role in the tree (ingest/proc/process_tree.h says how it is told):
//  - main: the topmost Python process(es) (comm python*, or pt_main_thread, which torch 2.3-2.4
//    names the main thread on import); when the tree has none, the command's own process;
//  - workers: Python processes below a main one (DataLoader workers: comm python* inherited from
//    the fork, or pt_data_worker, which torch >= 2.4 names them);
//  - other: everything else (a launching shell or torchrun above main, non-Python helpers).
enum class ProcessRole { kMain, kWorkers, kOther };
inline constexpr int kProcessRoles = 3;
inline const char* process_role_name(ProcessRole r) {
  return r == ProcessRole::kMain ? "main" : r == ProcessRole::kWorkers ? "workers" : "other";
}

// The tree's CPU use over one sampling interval, in cores (CPU seconds per wall second).
struct CpuSample {
  double t_s = 0;                           // end of the interval, seconds since the command started
  double interval_s = 0;                    // its length as measured
  double cores[kProcessRoles] = {0, 0, 0};  // by ProcessRole
  double busiest_main_cores = 0;            // the busiest single main process
  int processes = 0;                        // alive in the tree at the sample
  int workers = 0;                          // of them, workers
  double total() const { return cores[0] + cores[1] + cores[2]; }
};

// One process seen in the tree, over the whole run.
struct WatchedProcess {
  int pid = 0;
  int parent = 0;  // its parent when first seen
  std::string comm;
  ProcessRole role = ProcessRole::kOther;  // at its last sample
  double cpu_s = 0;                        // CPU time counted while watched
  double first_seen_s = 0, last_seen_s = 0;
  double peak_cores = 0;  // its busiest interval
};

struct GpuDevice {
  int index = 0;
  std::string name;
  std::uint64_t memory_total = 0;
  bool tree_seen = false;  // a process of the tree held a compute context on it at some sample
};

// One device at one sample.
struct GpuSample {
  double t_s = 0;
  int device = 0;           // index into WatchSeries::devices
  double util_pct = 0;      // NVML utilization.gpu: share of the last sample period a kernel ran
  double mem_util_pct = 0;  // NVML utilization.memory: share of it device memory was read or written
  std::uint64_t memory_used = 0;
  std::uint64_t tree_memory = 0;  // used by the tree's processes, when the process list was read
};

struct WatchSeries {
  std::vector<std::string> command;
  double interval_s = 0;  // the sampling interval asked for
  double wall_s = 0;      // the command's run time
  double cores_available = 0;
  std::string cores_origin;  // "sched_getaffinity: 8 CPUs", "cgroup cpu.max 2.5 cores in ..."
  std::vector<CpuSample> cpu;
  std::vector<WatchedProcess> processes;
  // GPU side: `gpu_source` names what was read ("NVML 550.54.15") or is empty when nothing was;
  // `gpu_note` then says why (the one line `ferret watch` prints).
  std::string gpu_source;
  std::string gpu_note;
  bool gpu_process_lists = false;  // NVML listed compute processes (attribution to the tree)
  std::vector<GpuDevice> devices;
  std::vector<GpuSample> gpu;
  int exit_status = 0;       // as a shell reports it: the code, or 128 + N for signal N
  int signal = 0;            // the signal that ended the command, 0 when it exited
  int forwarded_signal = 0;  // SIGINT/SIGTERM ferret received and passed to the command
  std::vector<std::string> notes;
};

// Python as the main process or a DataLoader worker: comm python* (python, python3, python3.11),
// pt_main_thread (torch 2.3-2.4 renames the main thread so on import; forked workers inherit it)
// or pt_data_worker (torch >= 2.4 names DataLoader workers so).
inline bool is_python_comm(std::string_view comm) {
  return comm.starts_with("python") || comm == "pt_main_thread" || comm == "pt_data_worker";
}
// The comms a main process may have: as is_python_comm, less pt_data_worker.
inline bool is_main_python_comm(std::string_view comm) {
  return comm.starts_with("python") || comm == "pt_main_thread";
}

}  // namespace ferret
