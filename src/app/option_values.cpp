#include "app/option_values.h"

#include <fmt/format.h>

#include "base/input_error.h"
#include "base/units.h"

namespace ferret {

std::uint64_t max_memory_option(const std::string& text) {
  if (text.empty()) return 0;
  try {
    const std::uint64_t bytes = parse_size(text);
    if (bytes > 0) return bytes;
  } catch (const std::exception&) {
  }
  throw OptionError(fmt::format("--max-memory: expected a size such as 4GiB or 512MiB, got \"{}\"", text));
}

std::uint64_t size_option(const std::string& text, const char* option) {
  try {
    return parse_size(text);
  } catch (const std::exception&) {
  }
  throw OptionError(fmt::format("{}: expected a size in bytes or such as 64MiB or 1GiB, got \"{}\"", option, text));
}

void at_most_one_stdin(const std::vector<const std::vector<std::string>*>& inputs) {
  int uses = 0;
  for (const std::vector<std::string>* paths : inputs)
    for (const std::string& p : *paths) uses += p == "-";
  if (uses > 1) throw OptionError("only one input can be read from stdin");
}

}  // namespace ferret
