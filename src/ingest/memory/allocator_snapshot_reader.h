// Reads an allocator snapshot pickle (torch.cuda.memory._dump_snapshot(), gzip/zstd or plain) into
// the AllocatorSnapshot model with the safe pickle reader (ingest/memory/pickle_reader.h). Throws
// InputError when the file is not a pickle, or holds no "segments" list.
#pragma once

#include <cstdint>
#include <string>

#include "ingest/byte_source.h"
#include "model/allocator_snapshot.h"

namespace ferret {

// `max_bytes`: bound on the file's decompressed size and the pickle's values (0: 3/4 of memory).
AllocatorSnapshot read_allocator_snapshot(const std::string& path, std::uint64_t max_bytes = 0);
// The same from bytes in memory (tests, fuzzing). The bytes, the pickle's values and the model
// built from them share the one bound.
AllocatorSnapshot read_allocator_snapshot_bytes(const std::string& bytes, const std::string& name,
                                                std::uint64_t max_bytes = 0);

// The rest of a snapshot's bytes after `first` (what was read so far), for the bytes readers above:
// a start (64 KiB) that is already no pickle is refused before the rest is read, and the bytes may
// take at most half of `bound` (the values built from them need the rest). Throws InputError.
inline constexpr std::size_t kSnapshotReadChunk = std::size_t{1} << 20;
std::string read_snapshot_bytes(ByteSource& source, std::string first, const std::string& path, std::uint64_t bound);

}  // namespace ferret
