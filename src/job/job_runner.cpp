#include "job/job_runner.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <new>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "analysis/trace_analysis.h"
#include "base/threads.h"
#include "diagnosis/diagnose.h"
#include "ingest/proc/memory_limit.h"
#include "ingest/trace_loader.h"
#include "job/rank_files.h"

namespace ferret {

const char* rank_outcome_name(RankOutcome outcome) {
  switch (outcome) {
    case RankOutcome::kOk: return "ok";
    case RankOutcome::kNotATrace: return "not a trace";
    case RankOutcome::kUnreadable: return "unreadable";
    case RankOutcome::kOutOfMemory: return "out of memory";
    case RankOutcome::kInternalError: return "internal error";
  }
  return "unknown";
}

namespace {

// A file that loaded but holds nothing to analyse; says whether it is some other JSON document.
struct NothingToAnalyse {
  std::string why;
  bool not_a_trace = false;
};

TraceOutcome failed(const std::string& path, RankOutcome outcome, std::string error) {
  TraceOutcome out;
  out.path = path;
  out.outcome = outcome;
  out.error = std::move(error);
  return out;
}

TraceOutcome analyze_one(const std::string& path, const TraceRunOptions& o, unsigned threads,
                         const MemoryLimit& max_memory, bool progress) {
  TraceOutcome out;
  out.path = path;
  LoadOptions load;
  load.threads = threads;
  load.max_memory_bytes = max_memory.bytes;
  load.max_memory_origin = max_memory.origin;
  bool loading = progress;
  if (progress) load.progress = o.start_progress(path, input_file_size(path));
  auto stop_progress = [&] {
    if (loading) o.finish_progress();
    loading = false;
  };
  // What was under way when it failed, for the message.
  const char* stage = "loading it";
  try {
    TraceModel model = load_trace(path, load);
    stop_progress();
    stage = "analysing it";
    if (const std::string empty = nothing_to_analyse(model); !empty.empty()) {
      std::string why = model.info.source + ": " + empty;
      for (const std::string& note : model.report.notes) why += "; " + note;
      const auto& notes = model.report.notes;
      const bool not_a_trace = std::find(notes.begin(), notes.end(), kNotATraceDocument) != notes.end();
      return failed(path, not_a_trace ? RankOutcome::kNotATrace : RankOutcome::kUnreadable, why);
    }
    AnalysisOptions analysis_options = o.analysis;
    analysis_options.concurrent = threads != 1;  // one thread per trace: traces run side by side
    const TraceAnalysis analysis = analyze_trace(model, analysis_options);
    stage = "diagnosing it";
    const Diagnosis diagnosis = diagnose(analysis);
    stage = "writing its report";
    if (o.render) o.render(analysis, diagnosis, out);
    stage = "summarising it";
    out.rank = summarize_rank(analysis, diagnosis);
  } catch (const InputError& e) {
    stop_progress();
    return failed(path, RankOutcome::kUnreadable, e.what());
  } catch (const std::bad_alloc&) {
    // Loading already stops at the memory limit and survives a refused allocation; this is the
    // analysis needing more than was left. The other traces of the run are still reported.
    stop_progress();
    return failed(path, RankOutcome::kOutOfMemory,
                  fmt::format("{}: ran out of memory while {} (memory limit {} MiB, {}); try a lower --max-memory "
                              "so that less of the trace is loaded",
                              path, stage, max_memory.bytes >> 20, max_memory.origin));
  } catch (const std::exception& e) {
    // A bug, not the input's fault as far as anyone knows: named, and the other files go on.
    stop_progress();
    return failed(path, RankOutcome::kInternalError,
                  fmt::format("{}: internal error while {}: {}", path, stage, e.what()));
  } catch (...) {
    stop_progress();
    return failed(path, RankOutcome::kInternalError,
                  fmt::format("{}: internal error while {}: an exception that is not a std::exception", path, stage));
  }
  return out;
}

}  // namespace

TraceInputs expand_inputs(const std::vector<std::string>& inputs) {
  TraceInputs in;
  in.files = expand_trace_inputs(inputs, &in.left_out);
  for (const std::string& f : in.files) {
    const bool named = std::find(inputs.begin(), inputs.end(), f) != inputs.end();
    in.given_by_name.push_back(named);
    in.directory_given = in.directory_given || !named;
  }
  return in;
}

std::uint64_t input_file_size(const std::string& path) {
  struct stat st {};
  return (path != "-" && ::stat(path.c_str(), &st) == 0) ? static_cast<std::uint64_t>(st.st_size) : 0;
}

std::vector<TraceOutcome> analyze_trace_files(const std::vector<std::string>& files,
                                              const std::vector<std::size_t>& indices, const TraceRunOptions& o) {
  // Several traces are analysed at once, one parser thread each; a single trace gets every core.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const auto workers = static_cast<unsigned>(std::min<std::size_t>(indices.size(), o.jobs > 0 ? o.jobs : cores));
  const unsigned threads = workers > 1 ? (o.threads > 0 ? o.threads : 1) : o.threads;
  MemoryLimit max_memory = o.max_memory > 0 ? MemoryLimit{o.max_memory, "--max-memory"} : default_memory_limit();
  if (workers > 1) {
    max_memory.bytes /= workers;
    max_memory.origin += fmt::format(", shared by {} traces loaded at once", workers);
  }
  std::vector<TraceOutcome> outcomes(indices.size());
  const bool progress = workers <= 1 && o.start_progress && o.finish_progress;
  if (workers <= 1) {
    for (std::size_t k = 0; k < indices.size(); ++k)
      outcomes[k] = analyze_one(files[indices[k]], o, threads, max_memory, progress);
    return outcomes;
  }
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t k = next++; k < indices.size(); k = next++)
      outcomes[k] = analyze_one(files[indices[k]], o, threads, max_memory, false);
  };
  // This thread works too, so when the system refuses threads (std::system_error: a low
  // `ulimit -u`) the traces are still analysed by those that started.
  std::vector<std::thread> pool;
  try {
    for (unsigned w = 1; w < std::min(workers, thread_cap()); ++w) pool.push_back(start_thread(work));
  } catch (const std::system_error&) {
  }
  work();
  for (std::thread& t : pool) t.join();
  return outcomes;
}

TraceTriage triage_trace_outcomes(std::vector<TraceOutcome>& outcomes, const std::vector<bool>& given_by_name) {
  TraceTriage triage;
  std::size_t usable = 0;
  std::vector<TraceOutcome> kept;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    TraceOutcome& o = outcomes[i];
    // A directory can hold other JSON beside the rank traces (a config, a ground truth): a file
    // found in one that is not a trace document at all is left out with a note, not a failure.
    if (o.outcome == RankOutcome::kNotATrace && !given_by_name[i]) {
      triage.messages.push_back(fmt::format("left out {}: not a trace ({})", o.path, kNotATraceDocument));
      continue;
    }
    if (o.ok()) {
      ++usable;
    } else if (given_by_name[i]) {
      triage.messages.push_back(o.error);
      ++triage.failures;
    } else {
      // A broken rank found in a directory is named, and the report of the others still stands.
      triage.messages.push_back("rank file left out of the report: " + o.error);
    }
    kept.push_back(std::move(o));
  }
  outcomes = std::move(kept);
  // Nothing usable at all is a failure even when every file came from a directory.
  if (usable == 0) triage.failures = std::max<int>(triage.failures, static_cast<int>(outcomes.size()));
  return triage;
}

bool looks_like_one_job(const std::vector<TraceOutcome>& outcomes) {
  std::set<int> ranks, world_sizes;
  std::size_t ok = 0;
  for (const TraceOutcome& o : outcomes) {
    if (!o.ok()) continue;
    ++ok;
    int rank = o.rank.rank;
    if (rank < 0) rank = rank_from_file_name(o.path).value_or(-1);
    if (rank < 0 || !ranks.insert(rank).second) return false;
    if (o.rank.world_size > 0) world_sizes.insert(o.rank.world_size);
  }
  return ok >= 2 && world_sizes.size() <= 1;
}

std::vector<RankResult> rank_results(std::vector<TraceOutcome>&& outcomes) {
  std::vector<RankResult> ranks;
  for (TraceOutcome& o : outcomes) {
    if (o.ok()) {
      ranks.push_back(std::move(o.rank));
    } else {
      RankResult failed_rank;
      failed_rank.source = o.path;
      failed_rank.error = o.error;
      ranks.push_back(std::move(failed_rank));
    }
  }
  return ranks;
}

std::vector<std::size_t> share_of_process(const std::vector<std::uint64_t>& file_sizes, int processes, int process) {
  std::vector<std::size_t> mine;
  if (processes <= 1) {
    for (std::size_t i = 0; i < file_sizes.size(); ++i) mine.push_back(i);
    return mine;
  }
  std::vector<std::pair<std::uint64_t, std::size_t>> by_size;
  for (std::size_t i = 0; i < file_sizes.size(); ++i) by_size.push_back({file_sizes[i], i});
  std::stable_sort(by_size.begin(), by_size.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::uint64_t> load(static_cast<std::size_t>(processes), 0);
  for (const auto& [size, index] : by_size) {
    const auto p = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[p] += std::max<std::uint64_t>(size, 1);
    if (static_cast<int>(p) == process) mine.push_back(index);
  }
  std::sort(mine.begin(), mine.end());
  return mine;
}

}  // namespace ferret
