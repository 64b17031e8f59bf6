// What an MPI process sends to process 0 after analysing its share of a job's rank files: per
// file, its index, how its analysis ended, the error and the RankResult (MessagePack).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "job/job_runner.h"

namespace ferret {

// outcomes[k] is the outcome of files[indices[k]].
std::vector<std::uint8_t> encode_share(const std::vector<std::size_t>& indices,
                                       const std::vector<TraceOutcome>& outcomes);

// Fills all[index] (path from files[index]) for every file in the share. Throws std::runtime_error
// (or nlohmann::json's exceptions) on bytes that are not a share of these files.
void decode_share(const std::vector<std::uint8_t>& bytes, const std::vector<std::string>& files,
                  std::vector<TraceOutcome>& all);

}  // namespace ferret
