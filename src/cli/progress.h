// A progress bar on stderr for long loads; silent unless stderr is a terminal.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace ferret::cli {

// Inputs larger than this get a progress bar (when stderr is a terminal).
inline constexpr std::uint64_t kProgressMinBytes = 64ull << 20;

// Returns a callback for LoadOptions::progress, or an empty function when no bar should show.
std::function<void(std::uint64_t, std::uint64_t)> make_progress_bar(const std::string& label, std::uint64_t size);
void finish_progress_bar();

}  // namespace ferret::cli
