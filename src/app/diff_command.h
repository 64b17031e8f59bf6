// `ferret diff` as library calls: each side loaded with its share of the memory bound and checked
// for something to analyse, then compared and rendered. The CLI adds option parsing, the progress
// bar and the terminal; the Python module calls the same functions.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "diff/trace_diff.h"
#include "ingest/trace_loader.h"
#include "job/job_runner.h"  // LoadProgress, input_file_size
#include "report/format.h"

namespace ferret {

struct DiffInputOptions {
  unsigned threads = 0;          // parser threads; 0 = one per core
  std::uint64_t max_memory = 0;  // bound for each trace; 0 = half the loader's default (two models live at once)
  std::function<LoadProgress(const std::string&, std::uint64_t)> start_progress;
  std::function<void()> finish_progress;
};

// Loads one side ("BASE" or "NEW"); throws InputError prefixed with the label when the file
// cannot be used or holds nothing to analyse (its ingest notes appended).
TraceModel load_diff_input(const std::string& label, const std::string& path, const DiffInputOptions& options);

struct DiffRenderings {
  std::string text, markdown, json;  // json ends with a newline, as `ferret diff --json` prints it
  std::string headline;
  int exit_code = 0;  // the gate's: 0, 1 confirmed slower, 3 inconclusive
};

DiffRenderings render_diff(const TraceDiff& diff, const Style& style);

}  // namespace ferret
