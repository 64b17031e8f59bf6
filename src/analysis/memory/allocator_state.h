// What an allocator snapshot says (model/allocator_snapshot.h), per device and pool:
//
//   reserved    bytes of the segments cudaMalloc'd by the caching allocator
//   allocated   blocks handed to tensors (active_allocated)
//   active      allocated + blocks freed by Python but still in use by a stream (active_pending_free)
//   requested   what the tensors asked for (allocated - requested = rounding waste: sizes round up
//               to 512 B, and blocks over 1 MiB are split only when the rest is large enough)
//   inactive    cached free blocks: reserved - active
//   largest free block against total free: external fragmentation = 1 - largest / total (0 when all
//               free memory is one block; near 1 when it is scattered in pieces no large request fits)
//
// The segments that pin the most free memory (free blocks held because an active block sits in the
// same segment, so the segment cannot be returned or merged), with the allocations that split them.
// The device trace (a ring buffer of the last actions) is walked back from the snapshot's state, so
// every point of it has exact allocated and reserved totals: the peak, the churn (cudaMalloc and
// cudaFree of segments against allocations) and the state at each out-of-memory.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/units.h"
#include "model/allocator_snapshot.h"

namespace ferret {

struct PoolState {
  int device = 0;
  std::string pool;  // "0,0": the default pool; others belong to CUDA graphs
  std::uint64_t segments = 0;
  std::uint64_t blocks = 0;
  std::int64_t reserved = 0;
  std::int64_t allocated = 0;
  std::int64_t active = 0;
  std::int64_t requested = -1;  // -1: the snapshot has no requested sizes
  std::int64_t inactive = 0;
  std::int64_t largest_free = 0;
  std::uint64_t free_blocks = 0;
  double external_fragmentation() const {
    return inactive > 0 ? 1.0 - static_cast<double>(largest_free) / static_cast<double>(inactive) : 0.0;
  }
  std::int64_t rounding_waste() const { return requested >= 0 ? saturating_sub(allocated, requested) : -1; }
};

// An allocation site: bytes, and the first user frame that asked for them.
struct Splitter {
  std::int64_t size = 0;
  std::string frame;  // "file.py:12 in forward", "" when not recorded
};

struct PinningSegment {
  int device = 0;
  std::int64_t address = 0;
  std::int64_t total_size = 0;
  std::int64_t free_bytes = 0;
  std::int64_t active_bytes = 0;
  std::uint64_t free_blocks = 0;
  std::vector<Splitter> splitters;  // the largest active blocks in it (at most 3)
};

struct OomState {
  std::int64_t requested = 0;
  std::int64_t allocated = 0;  // active bytes at that moment
  std::int64_t reserved = 0;
  std::int64_t device_free = -1;
  std::int64_t time_us = -1;
  std::string frame;
  std::int64_t cached_free() const { return saturating_sub(reserved, allocated); }
};

struct DeviceAllocatorState {
  int device = 0;
  PoolState total;                      // every pool of the device together
  std::vector<PoolState> pools;         // by pool id
  std::vector<PinningSegment> pinning;  // most free bytes first (at most 5)
  bool expandable_segments = false;
  // Device trace (empty when _record_memory_history was off).
  std::uint64_t trace_entries = 0;
  std::uint64_t allocs = 0, frees = 0;
  std::uint64_t segment_allocs = 0, segment_frees = 0;  // cudaMalloc / cudaFree (or map / unmap)
  std::int64_t peak_active = -1;                        // over the trace and the snapshot
  std::int64_t peak_reserved = -1;
  std::int64_t reserved_at_peak = -1;    // reserved when active peaked: free then = this - peak_active
  std::int64_t segment_alloc_bytes = 0;  // cudaMalloc'd (or mapped) in the trace
  std::vector<Splitter> growth_sites;    // where those bytes were asked for, most first (at most 3)
  std::vector<OomState> ooms;
};

struct AllocatorStateResult {
  std::vector<DeviceAllocatorState> devices;
  std::vector<std::pair<std::string, std::string>> settings;
  std::vector<std::string> notes;
};

inline constexpr std::size_t kPinningSegmentsKept = 5;

AllocatorStateResult analyze_allocator_state(const AllocatorSnapshot& snapshot);

}  // namespace ferret
