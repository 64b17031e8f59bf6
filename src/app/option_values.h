// Option values every command reads the same way, defined once for the command line, the C++ API
// and Python: each throws OptionError naming the flag and the text, which the CLI prints as a usage
// error (exit status 2) and Python raises as ferret.OptionError.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ferret {

// --max-memory: a positive size such as 4GiB or 512MiB; empty = 0 (the command's default).
std::uint64_t max_memory_option(const std::string& text);
// A size in bytes or such as 64MiB or 1GiB (0 allowed), for the flag named `option`.
std::uint64_t size_option(const std::string& text, const char* option);
// Standard input ("-") read by at most one of the inputs, wherever they were given.
void at_most_one_stdin(const std::vector<const std::vector<std::string>*>& inputs);

}  // namespace ferret
