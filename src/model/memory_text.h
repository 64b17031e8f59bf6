// What PyTorch prints about device memory as text, found in a file on its own or inside a longer
// log: the tables of torch.cuda.memory_summary() and the out-of-memory messages of the caching
// allocator. Read by ingest/memory_text_reader; the rules in diagnosis/rules_memory_text judge it.
//
// memory_summary() (torch/cuda/memory.py) prints a box per call: a title "PyTorch CUDA memory
// summary, device ID N", a line "CUDA OOMs: N | cudaMalloc retries: M", then one row per metric
// with the columns Cur Usage, Peak Usage, Tot Alloc, Tot Freed, each followed (unless
// abbreviated) by "from large pool" and "from small pool" rows. Sizes are printed floor-divided
// to one unit per column (B, KiB/MiB/GiB/TiB/PiB; torch 1.x wrote KB/MB/GB for the same binary
// multiples), so a cell "14324 MiB" is between 14324 and 14325 MiB; counts are printed plain or,
// past 750,000, floor-divided by 1,000 with "K" or "M".
//
// The out-of-memory message (c10/cuda/CUDACachingAllocator.cpp) comes in two wordings:
//   torch 1.x  "CUDA out of memory. Tried to allocate S (GPU N; S total capacity; S already
//              allocated; S free; [S allowed; ]S reserved in total by PyTorch)" (before 1.4:
//              "S cached" for the reserved bytes)
//   torch 2.x  "CUDA out of memory. Tried to allocate S. GPU N has a total capacity of S of which
//              S is free. [Process P has S memory in use. ...][Including non-PyTorch memory, this
//              process has S memory in use. ][S allowed; ]Of the allocated memory S is allocated by
//              PyTorch, [with S allocated in private pools (e.g., CUDA Graphs), ]and S is reserved
//              by PyTorch but unallocated." (2.1 printed "capacty")
// ROCm builds say "HIP out of memory", Intel GPUs "XPU out of memory". Sizes there are printed
// with two decimals ("20.00 MiB", "0 bytes").
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ferret {

// The rows of memory_summary(), in the order torch prints them. The first five are byte sizes,
// the others counts.
enum class SummaryMetric : std::uint8_t {
  kAllocated,            // "Allocated memory": blocks held by tensors
  kActive,               // "Active memory": allocated + freed blocks still used by a stream
  kRequested,            // "Requested memory" (torch 2.x): what the tensors asked for
  kReserved,             // "GPU reserved memory": segments cudaMalloc'd by the allocator
  kNonReleasable,        // "Non-releasable memory": free bytes in split blocks (inactive_split)
  kAllocations,          // "Allocations"
  kActiveAllocs,         // "Active allocs"
  kSegments,             // "GPU reserved segments": cudaMalloc'd segments
  kNonReleasableAllocs,  // "Non-releasable allocs"
  kOversizeAllocations,  // "Oversize allocations" (torch >= 1.10, above max_split_size_mb)
  kOversizeSegments,     // "Oversize GPU segments"
};
inline constexpr std::size_t kSummaryMetrics = 11;
inline constexpr bool summary_metric_is_size(SummaryMetric m) { return m <= SummaryMetric::kNonReleasable; }
const char* summary_metric_name(SummaryMetric m);  // the row's title as torch prints it
const char* summary_metric_key(SummaryMetric m);   // a JSON key: "allocated_bytes", "segments", ...

// One row: -1 where the cell is missing or could not be read.
struct SummaryStat {
  std::int64_t current = -1;
  std::int64_t peak = -1;
  std::int64_t allocated = -1;  // "Tot Alloc": the sum of all increases
  std::int64_t freed = -1;      // "Tot Freed"
};

struct SummaryRows {
  bool present = false;
  SummaryStat all, large_pool, small_pool;
};

struct MemorySummary {
  std::uint64_t line = 0;  // 1-based line where the box starts (its top border, else its title)
  int device = -1;
  std::int64_t ooms = -1;           // "CUDA OOMs"
  std::int64_t alloc_retries = -1;  // "cudaMalloc retries": the allocator freed its cache and retried
  std::array<SummaryRows, kSummaryMetrics> rows;
  bool complete = false;   // the closing border was seen after the rows
  bool binary_kb = false;  // units written KB/MB/GB (torch 1.x) rather than KiB/MiB/GiB
  std::uint64_t bad_cells = 0;
  const SummaryRows& row(SummaryMetric m) const { return rows[static_cast<std::size_t>(m)]; }
  SummaryRows& row(SummaryMetric m) { return rows[static_cast<std::size_t>(m)]; }
};

struct OomProcess {
  std::int64_t pid = -1;
  std::int64_t bytes = -1;
};

// One out-of-memory message; -1 where it does not say.
struct OomMessage {
  std::uint64_t line = 0;     // 1-based line of "out of memory. Tried to allocate"
  std::uint64_t lines = 1;    // lines the message spans (wrapped messages)
  std::uint64_t repeats = 1;  // the same message again right after it (a re-raise, a logger) counts here
  std::string backend;        // "CUDA", "HIP", "XPU"
  std::string exception;      // "torch.OutOfMemoryError", "RuntimeError", ... ("" when not printed)
  bool torch2_wording = false;
  int device = -1;
  std::int64_t requested = -1;
  std::int64_t total_capacity = -1;
  std::int64_t device_free = -1;           // what the driver said was free
  std::int64_t allowed = -1;               // torch.cuda.set_per_process_memory_fraction's limit
  std::int64_t process_in_use = -1;        // this process, PyTorch and not (torch 2.x, from NVML)
  std::int64_t allocated = -1;             // by PyTorch
  std::int64_t reserved = -1;              // by PyTorch (1.x: printed; 2.x: allocated + unallocated + private)
  std::int64_t reserved_unallocated = -1;  // 2.x: printed; 1.x: reserved - allocated
  std::int64_t private_pools = -1;         // 2.x: allocated in private pools (CUDA graphs)
  std::vector<OomProcess> processes;       // "Process P has S memory in use" lines (other processes)
  // torch names this process by comparing NVML's pid with getpid(); inside a container's pid
  // namespace they differ and this process is listed as "Process P" too. Then (no "this process"
  // line) the listed process holding the least among those holding at least what PyTorch
  // reserved is taken as this one: its index here, -1 when none is.
  int self_index = -1;
  // The listed processes but this one: their count and bytes (saturating); 0 when none is listed.
  std::size_t other_processes() const { return processes.size() - (self_index >= 0 ? 1 : 0); }
  std::int64_t other_processes_bytes() const;
};

// Summaries and messages kept per file; more are counted, not kept.
inline constexpr std::size_t kMaxMemoryTextRecords = 4096;

struct MemoryText {
  std::string source;
  std::vector<MemorySummary> summaries;
  std::vector<OomMessage> ooms;
  std::uint64_t lines = 0;
  std::uint64_t bytes = 0;
  std::uint64_t long_lines = 0;       // cut at kMaxMemoryTextLineBytes
  std::uint64_t dropped_records = 0;  // past kMaxMemoryTextRecords
  std::vector<std::string> notes;
};

}  // namespace ferret
