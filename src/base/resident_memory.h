// This process's resident memory, as the kernel counts it against a memory limit: the readers of
// NCCL and GPU utilisation logs check it as they go, whatever allocator (or sanitizer) holds their
// records.
#pragma once

#include <cstdint>

namespace ferret {

// Resident bytes of this process (/proc/self/statm), 0 when unknown.
std::uint64_t resident_bytes();

}  // namespace ferret
