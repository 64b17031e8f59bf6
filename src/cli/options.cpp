#include "cli/options.h"

#include <cstdio>
#include <stdexcept>

#include "cli/commands.h"
#include "gen/trace_writer.h"

namespace ferret::cli {

std::uint64_t memory_limit(const std::string& text) {
  if (text.empty()) return 0;
  try {
    const std::uint64_t bytes = parse_size(text);
    if (bytes > 0) return bytes;
  } catch (const std::exception&) {
  }
  std::fprintf(stderr, "ferret: --max-memory: expected a size such as 4GiB or 512MiB, got \"%s\"\n", text.c_str());
  throw ExitCode{2};
}

}  // namespace ferret::cli
