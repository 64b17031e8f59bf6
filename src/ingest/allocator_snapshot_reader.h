// Reads an allocator snapshot pickle (torch.cuda.memory._dump_snapshot(), gzip/zstd or plain) into
// the AllocatorSnapshot model with the safe pickle reader (ingest/pickle_reader.h). Throws
// InputError when the file is not a pickle, or holds no "segments" list.
#pragma once

#include <cstdint>
#include <string>

#include "model/allocator_snapshot.h"

namespace ferret {

// `max_bytes`: bound on the file's decompressed size and the pickle's values (0: 3/4 of memory).
AllocatorSnapshot read_allocator_snapshot(const std::string& path, std::uint64_t max_bytes = 0);
// The same from bytes in memory (tests, fuzzing).
AllocatorSnapshot read_allocator_snapshot_bytes(const std::string& bytes, const std::string& name,
                                                std::uint64_t max_bytes = 0);

}  // namespace ferret
