// `ferret gen`: writes large or synthetic traces (see gen/).
#include "cli/commands.h"

namespace ferret::cli {

void register_gen(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("gen", "Generate traces: inflate a real trace, or synthesize a scenario");
  (void)cmd;
}

}  // namespace ferret::cli
