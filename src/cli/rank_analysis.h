// Analysing many trace files at once, for `ferret analyze` and `ferret scaling`: each file is
// loaded, analysed and diagnosed on its own (several at a time, one parser thread each), then
// rendered as its own report if asked and reduced to its RankResult.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/analysis.h"
#include "job/rank_result.h"
#include "report/format.h"

namespace ferret::cli {

enum class TraceRendering { kNone, kText, kMarkdown, kJson };

struct TraceRunOptions {
  AnalysisOptions analysis;
  TraceRendering rendering = TraceRendering::kNone;
  Style style;
  unsigned jobs = 0;             // files at once; 0 = one per core
  unsigned threads = 0;          // parser threads per file; 0 = every core for one file, else 1
  std::uint64_t max_memory = 0;  // for all files at once; 0 = the loader's default
  bool progress = true;          // a progress bar when one file is analysed at a time
};

// What one file gave.
struct TraceOutcome {
  std::string path;
  std::string error;            // non-empty: failed, and nothing else is set
  std::string report;           // text or Markdown rendering
  nlohmann::ordered_json json;  // JSON rendering
  RankResult rank;
};

// The files behind the command line's inputs: directories become their trace files (sorted).
// Prints the problem and throws ExitCode{2} when a directory cannot be read or holds none.
struct TraceInputs {
  std::vector<std::string> files;
  std::vector<bool> given_by_name;  // per file: named on the command line (not found in a directory)
  bool directory_given = false;
};
TraceInputs expand_inputs(const std::vector<std::string>& args);

// Analyses files[i] for every i in `indices`; outcomes come back in the order of `indices`.
std::vector<TraceOutcome> analyze_trace_files(const std::vector<std::string>& files,
                                              const std::vector<std::size_t>& indices, const TraceRunOptions& options);

// Files found in a directory that are not trace documents at all (another JSON file beside the
// ranks) are dropped with a note on stderr. Every other error is printed. Returns the number of
// failures that make the exit status 2: errors of files named on the command line, or every
// error when no file at all could be used; a broken rank found in a directory is named but
// does not fail a report made from the others.
int report_trace_errors(std::vector<TraceOutcome>& outcomes, const std::vector<bool>& given_by_name);

}  // namespace ferret::cli
