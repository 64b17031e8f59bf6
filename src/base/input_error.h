// The one exception type for unusable input, shared by every stage that reads files (traces, NCCL
// logs, rank directories, benchmark records) and caught by the CLI and the job runner.
#pragma once

#include <stdexcept>

namespace ferret {

// An input that cannot be used at all. The message names the file and, when known, the offset.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ferret
