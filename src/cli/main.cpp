// ferret: find the bottleneck in a PyTorch job. This file only wires the command line to the
// library; each sub-command lives in its own cmd_*.cpp.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>

#include "base/input_error.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "model/huge_pages.h"
#include "version.h"

int main(int argc, char** argv) {
  ferret::reexec_with_huge_pages(argv);
  CLI::App app{"ferret: find the bottleneck in a PyTorch training or inference job and say what to do about it"};
  app.set_version_flag("--version", std::string("ferret ") + FERRET_VERSION);
  app.require_subcommand(1);
  ferret::cli::register_analyze(app);
  ferret::cli::register_info(app);
  ferret::cli::register_gen(app);
  ferret::cli::register_diff(app);
  ferret::cli::register_history(app);
  ferret::cli::register_compare(app);
  ferret::cli::register_bench(app);
  ferret::cli::register_nccl(app);
  ferret::cli::register_scaling(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    // CLI11 reports a missing sub-command before an unknown option; name the option instead.
    const std::vector<std::string> unknown = app.remaining(true);
    const bool unknown_option = !unknown.empty() && !unknown.front().empty() && unknown.front()[0] == '-';
    ferret::cli::print_usage_error((unknown_option ? "unknown option " + unknown.front() : std::string(e.what())) +
                                   "; run with --help for more information");
    return 2;
  } catch (const ferret::OptionError& e) {
    ferret::cli::print_usage_error(e.what());
    return 2;
  } catch (const ferret::cli::ExitCode& code) {
    return code.value;
  } catch (const std::exception& e) {
    ferret::cli::print_error(e.what());
    return 2;
  }
  return 0;
}
