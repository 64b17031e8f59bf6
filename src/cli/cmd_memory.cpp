// `ferret memory FILE... [--json|--md]`: the caching allocator's state from snapshots written by
// torch.cuda.memory._dump_snapshot(), or from text holding torch.cuda.memory_summary() tables and
// out-of-memory messages; each file is told by its content (docs/MEMORY.md).

#include <iostream>

#include "app/memory_command.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"
#include "report/memory/memory_report.h"

namespace ferret::cli {

namespace {

struct MemoryOptions {
  std::vector<std::string> files;
  MemorySettings settings;  // the options the C++ API and Python share (app/memory_command.h)
  bool json = false;
  bool markdown = false;
  std::size_t width = 0;
};

void run_memory_command(const MemoryOptions& opt) {
  if (opt.json && opt.markdown) usage_error("choose one of --json and --md");
  MemoryRequest request = memory_request_from(opt.files, opt.settings);
  request.on_message = [](const std::string& message) { print_error(message); };
  const MemoryOutcome outcome = run_memory(request);
  const Format format = opt.json ? Format::kJson : opt.markdown ? Format::kMarkdown : Format::kText;
  const std::string report = render_memory(outcome, format, stdout_style(opt.width));
  if (opt.json)
    std::cout << report;
  else
    print_report(report);
  std::cout.flush();
  if (outcome.failed) throw ExitCode{2};
}

}  // namespace

void register_memory(CLI::App& app) {
  auto opt = std::make_shared<MemoryOptions>();
  CLI::App* cmd =
      app.add_subcommand("memory",
                         "The caching allocator's state from memory snapshots (torch.cuda.memory._dump_snapshot()) or "
                         "text (torch.cuda.memory_summary() tables, out-of-memory messages, logs holding them): "
                         "reserved, allocated, free, fragmentation, what pins free memory, out-of-memory causes");
  cmd->add_option("files", opt->files, "Snapshot pickles or text files (gzip/zstd/plain), told by content")->required();
  cmd->add_flag("--json", opt->json, "Print a JSON document (schema ferret.memory/1, docs/MEMORY.md)");
  cmd->add_flag("--md", opt->markdown, "Print Markdown to paste into a pull request");
  cmd->add_option("--max-memory", opt->settings.max_memory, "Memory bound while reading, e.g. 8GiB");
  add_width_option(*cmd, opt->width);
  cmd->callback([opt] { run_memory_command(*opt); });
}

}  // namespace ferret::cli
