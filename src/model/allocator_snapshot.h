// The caching allocator's state as torch.cuda.memory._snapshot() records it (torch 2.x, pickled by
// torch.cuda.memory._dump_snapshot()): the segments reserved from the driver with the blocks they
// are split into, the recent allocator actions per device (device_traces, a ring buffer when
// _record_memory_history was on), and the allocator settings in force. Read by
// ingest/allocator_snapshot_reader; every key but "segments" is optional.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ferret {

struct SnapshotFrame {
  std::string filename;
  std::int64_t line = -1;
  std::string name;
};
// Frames kept per block or action: the innermost ones say who allocated - after the snapshot's
// own machinery, and always with the first user frame among them.
inline constexpr std::size_t kSnapshotFramesKept = 6;
// The recording's machinery, not an allocation site: C++ frames (the caching allocator, the
// traceback gatherer: CUDACachingAllocator.cpp, combined_traceback.cpp, memory_snapshot.cpp),
// frames without a file ("??", "<unknown>", "<frozen ...>"), gather_with_cpp, torch/cuda/memory.py.
bool is_allocator_machinery_frame(const SnapshotFrame& f);
// Code the user wrote: not machinery, not torch's own Python (torch/nn/modules/...), not the
// Python standard library (a lib/python3.x file outside site- or dist-packages).
bool is_user_frame(const SnapshotFrame& f);
// A frame is kept once per snapshot (AllocatorSnapshot::frames) and referred to by index: the same
// few hundred frames recur on every block and trace entry.
using SnapshotFrameId = std::uint32_t;
// Plausibility bounds a reader applies: a byte count above 2^50 (1 PiB) is no device's memory
// (and sums of such would overflow int64); a device index above 65535 is no machine's.
inline constexpr std::int64_t kMaxSnapshotBytes = std::int64_t{1} << 50;
inline constexpr std::int64_t kMaxSnapshotDevice = 65535;

enum class BlockState : std::uint8_t { kActiveAllocated, kActivePendingFree, kInactive, kUnknown };

struct SnapshotBlock {
  std::int64_t address = 0;
  std::int64_t size = 0;
  std::int64_t requested_size = -1;  // -1: not recorded (torch < 2.1)
  BlockState state = BlockState::kUnknown;
  std::vector<SnapshotFrameId> frames;  // where it was allocated, innermost first, when recorded
};

struct SnapshotSegment {
  int device = 0;
  std::int64_t address = 0;
  std::int64_t total_size = 0;
  std::int64_t stream = 0;
  std::string segment_type;  // "large" or "small" (blocks under 1 MiB live in 2 MiB small segments)
  std::string pool;          // segment_pool_id, e.g. "0,0" (the default pool) or a CUDA graph's pool
  bool expandable = false;   // an expandable segment (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)
  std::vector<SnapshotBlock> blocks;
};

enum class AllocatorAction : std::uint8_t {
  kAlloc,
  kFreeRequested,
  kFreeCompleted,
  kSegmentAlloc,
  kSegmentFree,
  kSegmentMap,
  kSegmentUnmap,
  kSnapshot,
  kOom,
  kOther,
};
const char* allocator_action_name(AllocatorAction a);

struct AllocatorEvent {
  AllocatorAction action = AllocatorAction::kOther;
  std::int64_t addr = 0;
  std::int64_t size = 0;
  std::int64_t time_us = -1;      // torch 2.2+
  std::int64_t device_free = -1;  // oom: what the driver said was free
  std::vector<SnapshotFrameId> frames;
};

struct AllocatorSnapshot {
  std::string source;
  std::vector<SnapshotSegment> segments;
  std::vector<std::vector<AllocatorEvent>> device_traces;  // index: device
  std::vector<std::pair<std::string, std::string>> settings;
  std::vector<SnapshotFrame> frames;  // each distinct frame once; blocks and trace entries index it
  // What could not be read as expected, one line per kind with its count.
  std::vector<std::string> notes;
};

}  // namespace ferret
