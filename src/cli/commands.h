// Sub-command registration. Each command parses its options and calls into the library.
#pragma once

#include <CLI/CLI.hpp>

namespace ferret::cli {

// Thrown by a command's callback to set the process exit code.
struct ExitCode {
  int value;
};

void register_info(CLI::App& app);
void register_analyze(CLI::App& app);
void register_gen(CLI::App& app);
void register_diff(CLI::App& app);
void register_history(CLI::App& app);
void register_compare(CLI::App& app);
void register_bench(CLI::App& app);
void register_nccl(CLI::App& app);
void register_scaling(CLI::App& app);
void register_whatif(CLI::App& app);
void register_run(CLI::App& app);
void register_annotate(CLI::App& app);
void register_memory(CLI::App& app);
void register_smi(CLI::App& app);
void register_watch(CLI::App& app);

}  // namespace ferret::cli
