// Running the analysis of many trace files, for `ferret analyze` and `ferret scaling`: which files
// the inputs name, whether they are the ranks of one job, which of them each MPI process takes,
// and each file loaded, analysed, diagnosed and reduced to its RankResult on a bounded pool of
// threads that shares the memory budget. Every failure comes back as a typed outcome naming the
// file; nothing a worker throws ends the run. Rendering is the caller's (report/ is a later stage).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/analysis.h"
#include "job/rank_result.h"

namespace ferret {

struct TraceAnalysis;
struct Diagnosis;

// How the analysis of one file ended.
enum class RankOutcome {
  kOk,
  kNotATrace,      // a JSON document without "traceEvents": some other file beside the ranks
  kUnreadable,     // cannot be read, or holds nothing to analyse (InputError)
  kOutOfMemory,    // the analysis needed more than the memory limit left
  kInternalError,  // any other exception: a bug, named with the file and the stage it hit
};
const char* rank_outcome_name(RankOutcome outcome);

// What one file gave.
struct TraceOutcome {
  std::string path;
  RankOutcome outcome = RankOutcome::kOk;
  std::string error;            // the message naming the file, when outcome is not kOk
  std::string report;           // text or Markdown rendering, by TraceRunOptions::render
  std::string markdown;         // the Markdown beside the text in `report`, when every format is rendered
  nlohmann::ordered_json json;  // JSON rendering, by TraceRunOptions::render
  RankResult rank;
  bool ok() const { return outcome == RankOutcome::kOk; }
};

// Renders one file's report into its outcome. Runs on a worker thread; may throw.
using RenderTrace = std::function<void(const TraceAnalysis&, const Diagnosis&, TraceOutcome&)>;
using LoadProgress = std::function<void(std::uint64_t, std::uint64_t)>;

struct TraceRunOptions {
  AnalysisOptions analysis;
  RenderTrace render;            // empty: no per-file report, only the RankResult
  unsigned jobs = 0;             // files at once; 0 = one per core
  unsigned threads = 0;          // parser threads per file; 0 = every core for one file, else 1
  std::uint64_t max_memory = 0;  // for all files at once; 0 = the loader's default
  // A progress display, used only when files are analysed one at a time: start gets the path and
  // its size and returns LoadOptions::progress; finish is called once loading ends either way.
  std::function<LoadProgress(const std::string&, std::uint64_t)> start_progress;
  std::function<void()> finish_progress;
};

// The files behind the inputs: directories become their trace files (sorted).
struct TraceInputs {
  std::vector<std::string> files;
  std::vector<bool> given_by_name;  // per file: named as an input (not found in a directory)
  bool directory_given = false;
  std::vector<std::string> left_out;  // entries of a directory left out, with the reason
};
// Throws std::runtime_error naming a directory that cannot be read or holds no trace.
TraceInputs expand_inputs(const std::vector<std::string>& inputs);

// Size of a regular file (progress, sharing); 0 for "-", pipes and unreadable paths.
std::uint64_t input_file_size(const std::string& path);

// Analyses files[i] for every i in `indices`; outcomes come back in the order of `indices`.
std::vector<TraceOutcome> analyze_trace_files(const std::vector<std::string>& files,
                                              const std::vector<std::size_t>& indices, const TraceRunOptions& options);

// Drops what is not a trace among the files found in a directory, and says what failed.
struct TraceTriage {
  // Errors that make the exit status 2: those of files given by name, or every error when no file
  // at all could be used; a broken rank found in a directory is named but does not fail a report
  // made from the others.
  int failures = 0;
  std::vector<std::string> messages;  // one line each, for stderr
};
TraceTriage triage_trace_outcomes(std::vector<TraceOutcome>& outcomes, const std::vector<bool>& given_by_name);

// Inputs are the ranks of one job when each says which rank it is (distributedInfo or its file
// name), no two say the same, and they agree on the world size.
bool looks_like_one_job(const std::vector<TraceOutcome>& outcomes);

// The ranks for analyze_job: a failed file becomes a rank that keeps only its source and error.
std::vector<RankResult> rank_results(std::vector<TraceOutcome>&& outcomes);

// The indices of the files that process `process` of `processes` analyses: largest first to the
// least loaded process (LPT), the same on every process since it depends only on the sizes.
std::vector<std::size_t> share_of_process(const std::vector<std::uint64_t>& file_sizes, int processes, int process);

// The processes that analyse one job together (MPI in the ferret-mpi build; cli/world.cpp).
class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int process() const = 0;
  virtual int processes() const = 0;
  // Every process's bytes, in process order, on process 0; the others get an empty vector.
  virtual std::vector<std::vector<std::uint8_t>> gather(const std::vector<std::uint8_t>& mine) = 0;
  // Process 0's value on every process.
  virtual int broadcast(int value) = 0;
};

}  // namespace ferret
