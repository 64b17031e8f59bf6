// Which files make up a job, and which rank each one is when its trace does not say.
//
// `ferret analyze DIR` takes every trace file in DIR (not recursively: a job's ranks sit side by
// side, as tensorboard_trace_handler writes them). A rank number is read from the file name when
// the trace has no distributedInfo: "rank-3", "rank_3", "rank3", "worker3", "proc3", "gpu3"
// (case-insensitive, the last such word wins), else nothing (the caller numbers by input order).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ferret {

// Files with a trace's extension: .json, .json.gz, .json.zst, .json.zstd (and .pt.trace.json*).
bool looks_like_trace_file(std::string_view name);

// DIR arguments become their trace files (sorted by name, so the order is the same everywhere);
// file arguments stay as given. Entries named like traces that are not regular files (dangling
// or looping symbolic links, FIFOs, device files, directories) are left out and, when `left_out`
// is given, named there with the reason ("DIR/rank-2.json: a dangling symbolic link"). Throws
// std::runtime_error naming a directory that cannot be read or holds no trace file.
std::vector<std::string> expand_trace_inputs(const std::vector<std::string>& inputs,
                                             std::vector<std::string>* left_out = nullptr);

// The rank a file name says, or nullopt.
std::optional<int> rank_from_file_name(std::string_view path);

}  // namespace ferret
