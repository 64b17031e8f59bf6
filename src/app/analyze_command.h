// `ferret analyze` as one library call: the inputs expanded, each trace analysed (this process's
// share of them when several processes work together), the traces reported one by one or as the
// ranks of one job, and what the command prints with its exit status. The CLI adds only option
// parsing, the terminal and the MPI transport.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/analysis.h"
#include "job/job_runner.h"
#include "report/format.h"

namespace ferret {

enum class AnalyzeFormat { kText, kMarkdown, kJson };
enum class AnalyzeGrouping {
  kAuto,      // one job report for a directory or for traces that name distinct ranks
  kJob,       // the inputs are the ranks of one job (--job)
  kPerTrace,  // one report per trace (--per-trace)
};

struct AnalyzeRequest {
  std::vector<std::string> inputs;  // trace files ("-" for stdin) or directories of rank traces
  AnalysisOptions analysis;
  AnalyzeFormat format = AnalyzeFormat::kText;
  // Render every format from the one analysis (AnalyzeOutput::text/markdown/json), as the Python
  // module does so that a result can be shown in any format without analysing it again.
  bool every_format = false;
  AnalyzeGrouping grouping = AnalyzeGrouping::kAuto;
  Style style;                   // colours of the text report
  unsigned jobs = 0;             // traces analysed at once; 0 = one per core
  unsigned threads = 0;          // parser threads per trace; 0 = the runner's default
  std::uint64_t max_memory = 0;  // 0 = the loader's default
  // Loading progress of one trace at a time (TraceRunOptions); left empty, none.
  std::function<LoadProgress(const std::string&, std::uint64_t)> start_progress;
  std::function<void()> finish_progress;
  // Called with each message as it arises (also kept in AnalyzeOutput::messages).
  std::function<void(const std::string&)> on_message;
};

struct AnalyzeOutput {
  // What `ferret analyze` writes on stdout: the JSON document, or the report(s) before the
  // CLI's last escape of control bytes (cli/output.h). Empty on processes other than 0.
  std::string out;
  std::vector<std::string> messages;  // stderr lines, without the "ferret: " prefix
  std::string text, markdown, json;   // with every_format: each rendering (`out` stays empty)
  int exit_code = 0;                  // 0, or 2 when an input named by the caller failed
};

// `group` shares the traces among processes (process 0 writes the report); nullptr = this process
// alone. Throws only what the group's transport throws.
// The ferret.analysis/1 document around an array of per-trace JSON (analyze_json of
// report/trace/analyze_report.h), as `ferret analyze --json` prints it, final newline included.
std::string analysis_document(nlohmann::ordered_json traces);

AnalyzeOutput run_analyze(const AnalyzeRequest& request, ProcessGroup* group = nullptr);

}  // namespace ferret
