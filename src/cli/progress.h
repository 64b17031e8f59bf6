// A progress bar on stderr for long loads; silent unless stderr is a terminal.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace ferret::cli {

// Inputs larger than this get a progress bar (when stderr is a terminal).
inline constexpr std::uint64_t kProgressMinBytes = 64ull << 20;

// Returns a callback for LoadOptions::progress, or an empty function when no bar should show.
std::function<void(std::uint64_t, std::uint64_t)> make_progress_bar(const std::string& label, std::uint64_t size);
void finish_progress_bar();

// Runs with more samples than this (both together) get a status line while `ferret compare`
// computes; below it the statistics take well under a second.
inline constexpr std::size_t kProgressMinSamples = 200000;
// A one-line status on stderr ("comparing 1000000 and 1000000 samples") for work without a known
// fraction done; silent unless stderr is a terminal. finish_progress_bar() erases it.
void show_progress_status(const std::string& text);

}  // namespace ferret::cli
