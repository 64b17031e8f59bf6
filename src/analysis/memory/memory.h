// Memory: what the caching allocator held and how it churned, from the [memory] instants that
// profile_memory=True records (one per allocation or free, with the allocator's running totals).
//
// Per device: peak allocated and peak reserved against the device's memory, fragmentation
// ((reserved - allocated) / reserved) at the peak of reserved and over time, and how often the
// reserved total moved (each move is a cudaMalloc or cudaFree by the allocator). Per step:
// allocation count and bytes. Per operator: who allocates most (the innermost cpu_op on the
// allocating thread whose span contains the [memory] instant).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace ferret {

// The allocator's totals over the window, downsampled to at most kMemoryCurveBuckets equal
// buckets: each bucket holds the highest allocated and reserved bytes seen in it (so the peak
// survives), or the state carried from before when no event fell in it.
inline constexpr int kMemoryCurveBuckets = 300;
struct MemoryCurve {
  std::int64_t start_ns = 0;
  std::int64_t bucket_ns = 0;
  std::vector<std::int64_t> allocated;  // -1 before the first event with totals
  std::vector<std::int64_t> reserved;
};

struct MemoryDevice {
  int device_type = -1;  // c10::DeviceType: 0 CPU, 1 CUDA (most ROCm builds too), 6 HIP
  int device_id = -1;
  std::string device_name;           // from deviceProperties, when known
  std::int64_t capacity_bytes = -1;  // deviceProperties totalGlobalMem, -1 unknown (always for CPU)

  std::uint64_t events = 0;
  std::uint64_t allocations = 0;     // Bytes > 0
  std::uint64_t frees = 0;           // Bytes < 0
  std::int64_t allocated_bytes = 0;  // sum of allocation sizes
  std::int64_t freed_bytes = 0;      // sum of free sizes (positive)
  // Highest running sum of Bytes from the first event: a lower bound on growth that needs no
  // allocator totals (torch 1.8-era [memory] events carry none).
  std::int64_t peak_net_bytes = 0;

  bool has_totals = false;  // Total Allocated / Total Reserved present
  std::int64_t peak_allocated = -1;
  std::int64_t peak_allocated_ns = 0;
  std::int64_t peak_reserved = -1;
  std::int64_t peak_reserved_ns = 0;  // the first event that reached the peak
  // The most allocated while reserved stood at its peak.
  std::int64_t allocated_at_peak_reserved = -1;
  double peak_allocated_share = -1;  // of capacity; -1 unknown
  double peak_reserved_share = -1;

  // (reserved - allocated) / reserved at the peak of reserved, taking the most that was allocated
  // while reserved stood at its peak: the part of the cache that stayed idle even at the highest
  // demand it served. Taking the best moment of the plateau matters: a trace often starts with
  // the cache already at its peak (reserved before profiling began), and frees during the plateau
  // lower `allocated` without saying anything about fragmentation.
  double fragmentation_at_peak = -1;
  double fragmentation_mean = -1;      // time-weighted over the device's memory timeline
  double fragmentation_max = -1;       // highest value at any event with reserved > 0
  std::uint64_t reserved_grows = 0;    // events where Total Reserved rose (a new segment: cudaMalloc)
  std::uint64_t reserved_shrinks = 0;  // events where it fell (segments released: cudaFree)
  MemoryCurve curve;                   // empty without totals
};

struct MemoryStepChurn {
  std::int64_t step = -1;  // ProfilerStep number
  std::int64_t duration_ns = 0;
  std::uint64_t allocations = 0;  // device (GPU) allocations in the step
  std::int64_t allocated_bytes = 0;
  std::uint64_t frees = 0;
  std::int64_t freed_bytes = 0;
  std::uint64_t reserved_grows = 0;
  std::uint64_t reserved_shrinks = 0;
  std::uint64_t cpu_allocations = 0;
  std::int64_t cpu_allocated_bytes = 0;
};

struct MemoryOp {
  std::string name;
  std::uint64_t allocations = 0;  // device allocations inside this op (innermost cpu_op)
  std::int64_t bytes = 0;
  std::int64_t largest = 0;  // largest single allocation
};

struct MemoryResult {
  bool present = false;               // any [memory] events in scope
  bool whole_trace = true;            // peaks cover the whole trace (false: only the --steps window)
  std::vector<MemoryDevice> devices;  // CUDA devices by id, then CPU
  std::vector<MemoryStepChurn> steps;
  // Steady-state churn: means over steps after the first (the first step after the profiler's
  // warm-up still fills the allocator cache); over the only step when there is one.
  std::uint64_t steady_steps = 0;
  double allocations_per_step = 0;
  double allocated_bytes_per_step = 0;
  double reserved_changes_per_step = 0;  // grows + shrinks
  // Host time in allocator runtime calls (cudaMalloc/cudaFree and hip* twins) in the window.
  std::uint64_t allocator_calls = 0;
  std::int64_t allocator_call_ns = 0;
  std::uint64_t allocator_free_calls = 0;  // cudaFree calls: each synchronizes the device
  std::int64_t window_ns = 0;
  std::vector<MemoryOp> top_ops;  // by device bytes allocated, at most options.top_k
  std::uint64_t allocations_without_op = 0;
};

MemoryResult analyze_memory(const TraceModel& model, const AnalysisContext& ctx);

}  // namespace ferret
