#include "cli/options.h"
#include "base/text.h"
#include "base/units.h"

#include <fmt/format.h>

#include <unistd.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "app/option_values.h"
#include "base/threads.h"
#include "cli/commands.h"
#include "cli/output.h"

namespace ferret::cli {

std::uint64_t memory_limit(const std::string& text) { return max_memory_option(text); }

std::uint64_t size_option(const std::string& text, const char* option) { return ferret::size_option(text, option); }

unsigned thread_option(unsigned requested, const char* option) {
  const unsigned cap = thread_cap();
  if (requested <= cap) return requested;
  fmt::print(stderr, "ferret: {} {} capped at {} (4 x {} cores)\n", option, requested, cap, cap / 4);
  return cap;
}

void add_width_option(CLI::App& cmd, std::size_t& width) {
  cmd.add_option(
         "--width", width,
         fmt::format("Width of the text report in columns (default: $COLUMNS when set, else {})", kDefaultTextWidth))
      ->check(CLI::Range(kMinTextWidth, kMaxTextWidth));
}

std::size_t text_width(std::size_t width_option) {
  if (width_option > 0) return width_option;
  if (const char* columns = std::getenv("COLUMNS"); columns != nullptr) {
    const std::string_view text(columns);
    std::size_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc{} && end == text.data() + text.size() && value >= kMinTextWidth && value <= kMaxTextWidth)
      return value;
  }
  return kDefaultTextWidth;
}

Style stdout_style(std::size_t width_option) {
  Style st = style_for_fd(STDOUT_FILENO);
  st.width = text_width(width_option);
  return st;
}

CLI::Validator finite_range(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        const char* begin = text.c_str();
        char* end = nullptr;
        const double v = std::strtod(begin, &end);
        if (end == begin || *end != '\0') return fmt::format("expected a number, got \"{}\"", text);
        if (!std::isfinite(v)) return fmt::format("expected a finite number, got \"{}\"", text);
        if (v < min || v > max) return fmt::format("{} is not from {} to {}", text, min, max);
        return {};
      },
      fmt::format("NUMBER in [{}, {}]", min, max));
}

}  // namespace ferret::cli
