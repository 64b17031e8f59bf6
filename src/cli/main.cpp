// ferret: find the bottleneck in a PyTorch job. This file only wires the command line to the
// library; each sub-command lives in its own cmd_*.cpp.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <exception>

#include "cli/commands.h"
#include "version.h"

namespace {

// Trace models are large arrays filled once: with 4 KB pages the kernel's page faults cost
// about a third of load time. glibc backs malloc with transparent huge pages only when the
// tunable is set before the process starts, so set it and re-execute once. Harmless where THP
// is off; FERRET_NO_HUGEPAGES=1 disables it.
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

}  // namespace

int main(int argc, char** argv) {
  reexec_with_huge_pages(argv);
  CLI::App app{"ferret: find the bottleneck in a PyTorch training or inference job and say what to do about it"};
  app.set_version_flag("--version", std::string("ferret ") + FERRET_VERSION);
  app.require_subcommand(1);
  ferret::cli::register_info(app);
  ferret::cli::register_gen(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;  // usage error
  } catch (const ferret::cli::ExitCode& code) {
    return code.value;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ferret: %s\n", e.what());
    return 2;
  }
  return 0;
}
