// Option values shared by several sub-commands.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "analysis/analysis_options.h"
#include "job/job_runner.h"  // input_file_size, for the commands' progress bars
#include "report/format.h"

namespace ferret::cli {

// "--max-memory 8GiB" -> bytes; "" -> 0 (the loader's default); "1GiB", "64MiB", "4096" -> bytes
// (0 allowed). Both app/option_values' (OptionError when invalid, a usage error here).
std::uint64_t memory_limit(const std::string& text);
std::uint64_t size_option(const std::string& text, const char* option);

// --steps, --time and --timeline-definition are read by the library (analysis/analysis_options.h),
// which throws OptionError; main() prints it as every other usage error.

// "--threads" / "--jobs": at most thread_cap() (4 x the cores); a larger value is capped with a
// note on stderr. 0 (the default: one per core) is kept.
unsigned thread_option(unsigned requested, const char* option);

// Every floating-point option's check: a finite number from `min` to `max`. "nan" and "inf" are
// refused: a comparison with NaN is false, so a plain range check lets it through, and a gate
// such as --fail-if-slower nan would pass everything.
CLI::Validator finite_range(double min, double max);

// --width N on a sub-command: the text layout width (0 when not given).
void add_width_option(CLI::App& cmd, std::size_t& width);
// The text layout width: --width when given, else COLUMNS when it holds a number of columns in
// kMinTextWidth..kMaxTextWidth, else kDefaultTextWidth (80).
std::size_t text_width(std::size_t width_option);
// The style of a text report on stdout: colour when it is a terminal, text_width(width_option).
Style stdout_style(std::size_t width_option);

}  // namespace ferret::cli
