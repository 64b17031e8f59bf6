// The exception types for unusable input, shared by every stage and caught by the CLI (one printer
// each), the job runner and the public API.
#pragma once

#include <stdexcept>

namespace ferret {

// An input that cannot be used at all. The message names the file and, when known, the offset.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A user-supplied option value that cannot be understood ("--steps 5-x"). The message names the
// option and the text; the CLI prints it as a usage error (exit status 2).
class OptionError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace ferret
