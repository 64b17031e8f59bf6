// Process setup for large models: back malloc with transparent huge pages.
#pragma once

namespace ferret {

// Trace models are large arrays filled once: with 4 KB pages the kernel's page faults cost
// about a third of load time. glibc backs malloc with transparent huge pages only when its
// tunable is set before the process starts, so this sets it and re-executes the program once
// (argv must be main's). Harmless where THP is off; FERRET_NO_HUGEPAGES=1 disables it.
void reexec_with_huge_pages(char** argv);

}  // namespace ferret
