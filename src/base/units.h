// Human-readable sizes and durations, for every stage that writes a sentence (findings, notes,
// reports).
#pragma once

#include <cstdint>
#include <string>

namespace ferret {

std::string human_bytes(std::uint64_t bytes);  // "1.5 GiB"
std::string human_duration(std::int64_t ns);   // "12.345 ms"

}  // namespace ferret
