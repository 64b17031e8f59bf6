#include "base/huge_pages.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace ferret {

void reexec_with_huge_pages(char** argv) {
  if (std::getenv("FERRET_NO_HUGEPAGES") || std::getenv("FERRET_REEXECED")) return;
  std::string tunables = "glibc.malloc.hugetlb=1";
  if (const char* existing = std::getenv("GLIBC_TUNABLES")) {
    if (std::strstr(existing, "glibc.malloc.hugetlb")) return;
    tunables = std::string(existing) + ":" + tunables;
  }
  ::setenv("GLIBC_TUNABLES", tunables.c_str(), 1);
  ::setenv("FERRET_REEXECED", "1", 1);
  ::execv("/proc/self/exe", argv);
  // exec failed: carry on without huge pages.
}

}  // namespace ferret
