#include "base/resident_memory.h"

#include <unistd.h>

#include <cstdio>

namespace ferret {

std::uint64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size_pages = 0, resident_pages = 0;
  const int got = std::fscanf(f, "%llu %llu", &size_pages, &resident_pages);
  std::fclose(f);
  const long page = ::sysconf(_SC_PAGESIZE);
  return got == 2 && page > 0 ? resident_pages * static_cast<std::uint64_t>(page) : 0;
}

}  // namespace ferret
