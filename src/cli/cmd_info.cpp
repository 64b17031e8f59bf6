// `ferret info TRACE...`: what each trace holds.

#include <cstdio>
#include <iostream>
#include <new>

#include <fmt/format.h>

#include "analysis/timeline/trace_summary.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "ingest/trace_loader.h"
#include "report/trace/info_report.h"

namespace ferret::cli {

namespace {

struct InfoOptions {
  std::vector<std::string> traces;
  bool json = false;
  unsigned threads = 0;
  std::string max_memory;  // "8GiB"; empty = default
};

void run_info(const InfoOptions& opt) {
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  int failures = 0;
  bool first = true;
  for (const std::string& path : opt.traces) {
    LoadOptions load;
    load.threads = thread_option(opt.threads, "--threads");
    load.max_memory_bytes = memory_limit(opt.max_memory);
    load.progress = make_progress_bar(path, input_file_size(path));
    try {
      TraceModel model = load_trace(path, load);
      finish_progress_bar();
      const TraceSummary summary = summarize_trace(model);
      if (opt.json) {
        all.push_back(info_json(model, summary));
      } else {
        if (!first) std::cout << '\n';
        print_report(info_text(model, summary));
      }
      first = false;
    } catch (const InputError& e) {
      finish_progress_bar();
      print_error(e.what());
      ++failures;
      if (opt.json) all.push_back({{"source", path}, {"error", e.what()}});
    } catch (const std::bad_alloc&) {
      // Loading survives a refused allocation; summarising it did not.
      finish_progress_bar();
      const std::string error = path + ": ran out of memory while summarising it; try a lower --max-memory";
      print_error(error);
      ++failures;
      if (opt.json) all.push_back({{"source", path}, {"error", error}});
    }
  }
  if (opt.json) {
    nlohmann::ordered_json doc = {{"schema", "ferret.info/1"}, {"traces", all}};
    std::cout << doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
  }
  std::cout.flush();
  if (failures > 0) throw ExitCode{2};
}

}  // namespace

void register_info(CLI::App& app) {
  auto opt = std::make_shared<InfoOptions>();
  CLI::App* cmd = app.add_subcommand("info", "Describe traces: format, devices, ranks, steps, event counts, repairs");
  cmd->add_option("traces", opt->traces, "Trace files (Kineto JSON or legacy export; gzip/zstd/plain; - for stdin)")
      ->required();
  cmd->add_flag("--json", opt->json, "Print a JSON document (schema ferret.info/1, see docs/JSON.md)");
  cmd->add_option("--threads", opt->threads, "Parser threads (default: one per core)");
  cmd->add_option("--max-memory", opt->max_memory,
                  "Memory bound: loading stops (keeping what was read) early enough that the model, read "
                  "buffers and summary fit, e.g. 8GiB (default: 3/4 of RAM or of the cgroup limit)");
  cmd->callback([opt] { run_info(*opt); });
}

}  // namespace ferret::cli
