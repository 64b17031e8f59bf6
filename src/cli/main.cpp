// ferret: find the bottleneck in a PyTorch job. This file only wires the command line to the
// library; each sub-command lives in its own cmd_*.cpp.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include "base/huge_pages.h"
#include "base/input_error.h"
#include "base/text.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "version.h"

namespace {

// "unknown command `analyz` (did you mean `analyze`?)", "unknown option --josn (did you mean
// `--json`?)", or CLI11's own message when the first word left over is neither.
std::string unknown_word_message(CLI::App& app, const std::vector<std::string>& unknown, const std::string& what) {
  if (unknown.empty() || unknown.front().empty()) return what;
  const std::string& word = unknown.front();
  const std::vector<CLI::App*> chosen = app.get_subcommands();
  if (word[0] != '-') {
    if (!chosen.empty()) return what;  // an extra argument of a sub-command
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) names.push_back(sub->get_name());
    const std::string nearest = ferret::closest_match(word, names);
    std::string message = "unknown command `" + word + "`";
    if (!nearest.empty()) return message + " (did you mean `" + nearest + "`?)";
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    return message + " (commands: " + list + ")";
  }
  std::string message = "unknown option " + word;
  if (!word.starts_with("--")) return message;
  const std::string name = word.substr(2, word.find('=') == std::string::npos ? std::string::npos : word.find('=') - 2);
  std::vector<std::string> options;
  for (const CLI::Option* o : (chosen.empty() ? &app : chosen.back())->get_options())
    for (const std::string& l : o->get_lnames()) options.push_back(l);
  const std::string nearest = ferret::closest_match(name, options);
  return nearest.empty() ? message : message + " (did you mean `--" + nearest + "`?)";
}

// Every report ends on stdout: a write that failed there (a full disk, a closed pipe, a quota)
// must not pass as a success, or `ferret analyze --json t > report.json && upload` uploads
// nothing. Exit 2 (or the status already due, when it says more) and say why.
int finish_stdout(int status) {
  errno = 0;
  std::cout.flush();
  const bool failed = !std::cout.good() || std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  if (!failed) return status;
  // errno is the last call's: a stream that failed earlier, and stays failed, no longer says why.
  const int error = errno;
  ferret::cli::print_error(std::string("cannot write the output to stdout: ") +
                           (error != 0 ? std::strerror(error) : "a write failed (a full disk, a quota?)"));
  return status == 0 ? 2 : status;
}

int run(int argc, char** argv);

}  // namespace

int main(int argc, char** argv) { return finish_stdout(run(argc, argv)); }

namespace {

int run(int argc, char** argv) {
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
  ferret::cli::register_whatif(app);
  ferret::cli::register_annotate(app);
  ferret::cli::register_memory(app);
  ferret::cli::register_smi(app);
  ferret::cli::register_run(app);
  ferret::cli::register_watch(app);
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
    // CLI11 reports a missing sub-command before an unknown option; name the option instead,
    // and the nearest sub-command or option when the word looks like a typo of one.
    const std::vector<std::string> unknown = app.remaining(true);
    ferret::cli::print_usage_error(unknown_word_message(app, unknown, e.what()) +
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

}  // namespace
