#include "cli/options.h"
#include "base/text.h"
#include "base/units.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "cli/commands.h"
#include "cli/output.h"
#include "model/threads.h"

namespace ferret::cli {

std::uint64_t memory_limit(const std::string& text) {
  if (text.empty()) return 0;
  try {
    const std::uint64_t bytes = parse_size(text);
    if (bytes > 0) return bytes;
  } catch (const std::exception&) {
  }
  usage_error(fmt::format("--max-memory: expected a size such as 4GiB or 512MiB, got \"{}\"", text));
}

std::uint64_t size_option(const std::string& text, const char* option) {
  try {
    return parse_size(text);
  } catch (const std::exception&) {
  }
  usage_error(fmt::format("{}: expected a size in bytes or such as 64MiB or 1GiB, got \"{}\"", option, text));
}

unsigned thread_option(unsigned requested, const char* option) {
  const unsigned cap = thread_cap();
  if (requested <= cap) return requested;
  fmt::print(stderr, "ferret: {} {} capped at {} (4 x {} cores)\n", option, requested, cap, cap / 4);
  return cap;
}

}  // namespace ferret::cli
