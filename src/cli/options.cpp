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

namespace {

// A step number: digits only, fits int64. nullopt for "" ; throws for anything else.
std::optional<std::int64_t> step_number(std::string_view s, bool& ok) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end != s.data() + s.size() || value < 0) ok = false;
  return value;
}

}  // namespace

void parse_step_range(const std::string& text, AnalysisOptions& options) {
  if (text.empty()) return;
  const std::string_view all = text;
  const std::size_t dash = all.find('-');
  bool ok = true;
  std::optional<std::int64_t> first;
  std::optional<std::int64_t> last;
  if (dash == std::string_view::npos) {
    first = last = step_number(all, ok);
  } else {
    first = step_number(all.substr(0, dash), ok);
    last = step_number(all.substr(dash + 1), ok);
  }
  if (!ok || (!first && !last)) {
    usage_error(fmt::format("--steps: expected A-B, A-, -B or N (step numbers), got \"{}\"", text));
  }
  options.first_step = first;
  options.last_step = last;
}

void parse_time_range(const std::string& text, AnalysisOptions& options) {
  if (text.empty()) return;
  const std::size_t dash = text.find('-');
  auto number = [](std::string_view s, std::optional<double>& out) {
    if (s.empty()) return true;
    double v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || !(v >= 0) || v > 1e12) return false;
    out = v;
    return true;
  };
  std::optional<double> from, to;
  const std::string_view all = text;
  const bool ok = dash != std::string_view::npos && dash > 0 && number(all.substr(0, dash), from) &&
                  number(all.substr(dash + 1), to) && (!to || *to > *from);
  if (!ok) {
    usage_error(fmt::format("--time: expected A-B or A- (milliseconds from the trace start, A < B), got \"{}\"", text));
  }
  options.time_from_ms = from;
  options.time_to_ms = to;
}

TimelineDefinition parse_timeline_definition(const std::string& text) {
  if (text == "ferret") return TimelineDefinition::kFerret;
  if (text == "hta") return TimelineDefinition::kHta;
  usage_error(fmt::format("--timeline-definition: expected ferret or hta, got \"{}\"", text));
}

unsigned thread_option(unsigned requested, const char* option) {
  const unsigned cap = thread_cap();
  if (requested <= cap) return requested;
  fmt::print(stderr, "ferret: {} {} capped at {} (4 x {} cores)\n", option, requested, cap, cap / 4);
  return cap;
}

}  // namespace ferret::cli
