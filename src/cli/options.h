// Option values shared by several sub-commands.
#pragma once

#include <cstdint>
#include <string>

namespace ferret::cli {

// "--max-memory 8GiB" -> bytes; "" -> 0 (the loader's default). Throws ExitCode{2} when invalid.
std::uint64_t memory_limit(const std::string& text);

}  // namespace ferret::cli
