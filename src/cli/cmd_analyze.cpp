// `ferret analyze TRACE...`: the layered diagnosis.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <regex>

#include <fmt/format.h>

#include "analysis/trace_analysis.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/options.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "report/analyze_report.h"

namespace ferret::cli {

namespace {

struct AnalyzeCliOptions {
  std::vector<std::string> traces;
  bool json = false;
  bool markdown = false;
  int top = 10;
  std::string steps;
  int device = -1;
  unsigned threads = 0;
  std::string max_memory;  // "8GiB"; empty = default
};

std::uint64_t file_size(const std::string& path) {
  struct stat st {};
  return (path != "-" && ::stat(path.c_str(), &st) == 0) ? static_cast<std::uint64_t>(st.st_size) : 0;
}

AnalysisOptions to_analysis_options(const AnalyzeCliOptions& cli) {
  AnalysisOptions o;
  o.top_k = cli.top;
  if (cli.device >= 0) o.device = cli.device;
  if (!cli.steps.empty()) {
    // "A-B", "A-" or "-B" (ProfilerStep numbers, inclusive), or a single "N".
    static const std::regex kRange(R"(^\s*(\d*)\s*(-?)\s*(\d*)\s*$)");
    std::smatch m;
    if (!std::regex_match(cli.steps, m, kRange) || (m[1].str().empty() && m[3].str().empty())) {
      std::fprintf(stderr, "ferret: --steps: expected A-B, A-, -B or N, got \"%s\"\n", cli.steps.c_str());
      throw ExitCode{2};
    }
    if (!m[1].str().empty()) o.first_step = std::stoll(m[1].str());
    if (!m[3].str().empty()) o.last_step = std::stoll(m[3].str());
    if (m[2].str().empty()) o.last_step = o.first_step;  // a single step number
  }
  return o;
}

void run_analyze(const AnalyzeCliOptions& cli) {
  if (cli.json && cli.markdown) {
    std::fprintf(stderr, "ferret: choose one of --json and --md\n");
    throw ExitCode{2};
  }
  const AnalysisOptions options = to_analysis_options(cli);
  const Style style = (cli.json || cli.markdown) ? Style{} : style_for_fd(STDOUT_FILENO);
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  int failures = 0;
  bool first = true;
  for (const std::string& path : cli.traces) {
    LoadOptions load;
    load.threads = cli.threads;
    load.max_memory_bytes = memory_limit(cli.max_memory);
    load.progress = make_progress_bar(path, file_size(path));
    try {
      TraceModel model = load_trace(path, load);
      finish_progress_bar();
      if (const std::string empty = nothing_to_analyse(model); !empty.empty()) {
        std::string why = model.info.source + ": " + empty;
        for (const std::string& note : model.report.notes) why += "; " + note;
        throw InputError(why);
      }
      const TraceAnalysis analysis = analyze_trace(model, options);
      const Diagnosis diagnosis = diagnose(analysis);
      if (cli.json) {
        all.push_back(analyze_json(analysis, diagnosis));
      } else {
        if (!first) std::cout << '\n';
        std::cout << (cli.markdown ? analyze_markdown(analysis, diagnosis) : analyze_text(analysis, diagnosis, style));
      }
      first = false;
    } catch (const InputError& e) {
      finish_progress_bar();
      std::fprintf(stderr, "ferret: %s\n", e.what());
      ++failures;
      if (cli.json) all.push_back({{"source", path}, {"error", e.what()}});
    }
  }
  if (cli.json) {
    nlohmann::ordered_json doc = {{"schema", "ferret.analysis/1"}, {"traces", all}};
    std::cout << doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
  }
  std::cout.flush();
  if (failures > 0) throw ExitCode{2};
}

}  // namespace

void register_analyze(CLI::App& app) {
  auto opt = std::make_shared<AnalyzeCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "analyze", "Diagnose traces: where the time goes, the bottleneck, what to change, the most it can gain");
  cmd->add_option("traces", opt->traces, "Trace files (Kineto JSON or legacy export; gzip/zstd/plain; - for stdin)")
      ->required();
  cmd->add_flag("--json", opt->json, "Print a JSON document (schema ferret.analysis/1, see docs/ANALYSIS_JSON.md)");
  cmd->add_flag("--md", opt->markdown, "Print Markdown to paste into a pull request");
  cmd->add_option("--top", opt->top, "Rows in top-N tables (default 10)")->check(CLI::Range(1, 1000));
  cmd->add_option("--steps", opt->steps, "Analyse only these ProfilerStep numbers: A-B, A-, -B or N");
  cmd->add_option("--device", opt->device, "Analyse only this GPU device index")->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--threads", opt->threads, "Parser threads (default: one per core)");
  cmd->add_option("--max-memory", opt->max_memory,
                  "Stop loading (keeping what was read) when the model reaches this size, e.g. 8GiB "
                  "(default: 3/4 of RAM)");
  cmd->callback([opt] { run_analyze(*opt); });
}

}  // namespace ferret::cli
