// Starting threads without aborting when the system refuses (a low `ulimit -u`, thousands asked).
#pragma once

#include <system_error>
#include <thread>
#include <utility>

namespace ferret {

// Most threads a pool starts: 4 x the cores (at least 1). More only adds contention.
unsigned thread_cap();

// Throws std::system_error (resource_unavailable_try_again) when the test seam
// FERRET_TEST_THREAD_LIMIT=N is set and N threads were already started through start_thread.
void check_thread_seam();

// std::thread(f), throwing std::system_error when the system (or the test seam) refuses; callers
// catch it and carry on with the threads they have.
template <class F>
std::thread start_thread(F&& f) {
  check_thread_seam();
  return std::thread(std::forward<F>(f));
}

}  // namespace ferret
