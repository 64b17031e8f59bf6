#include "base/threads.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>

namespace ferret {

unsigned thread_cap() { return 4 * std::max(1u, std::thread::hardware_concurrency()); }

void check_thread_seam() {
  static const long limit = [] {
    const char* v = std::getenv("FERRET_TEST_THREAD_LIMIT");
    return v ? std::strtol(v, nullptr, 10) : -1;
  }();
  static std::atomic<long> started{0};
  if (limit >= 0 && started.fetch_add(1) >= limit)
    throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again), "thread limit (test)");
}

}  // namespace ferret
