#include "cli/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "base/terminal_text.h"

namespace ferret::cli {

namespace {
bool g_active = false;
}

std::function<void(std::uint64_t, std::uint64_t)> make_progress_bar(const std::string& label, std::uint64_t size) {
  if (size < kProgressMinBytes || !::isatty(STDERR_FILENO)) return {};
  g_active = true;
  auto last = std::make_shared<std::chrono::steady_clock::time_point>();
  return [label = terminal_safe(label), last](std::uint64_t done, std::uint64_t total) {  // a file name
    const auto now = std::chrono::steady_clock::now();
    if (now - *last < std::chrono::milliseconds(100) || total == 0) return;
    *last = now;
    const double frac = std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(frac * kWidth);
    std::fprintf(stderr, "\r%s [%.*s%*s] %3d%%", label.c_str(), filled, "##############################",
                 kWidth - filled, "", static_cast<int>(frac * 100));
    std::fflush(stderr);
  };
}

void show_progress_status(const std::string& text) {
  if (!::isatty(STDERR_FILENO)) return;
  g_active = true;
  std::fprintf(stderr, "\r%s\033[K", text.c_str());
  std::fflush(stderr);
}

void finish_progress_bar() {
  if (!g_active) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  g_active = false;
}

}  // namespace ferret::cli
