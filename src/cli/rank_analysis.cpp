#include "cli/rank_analysis.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <new>
#include <thread>

#include <fmt/format.h>

#include "analysis/trace_analysis.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "diagnosis/diagnose.h"
#include "ingest/memory_limit.h"
#include "ingest/trace_loader.h"
#include "job/rank_files.h"
#include "model/threads.h"
#include "report/analyze_report.h"

namespace ferret::cli {

namespace {

TraceOutcome analyze_one(const std::string& path, const TraceRunOptions& o, unsigned threads,
                         const MemoryLimit& max_memory, bool progress) {
  TraceOutcome out;
  out.path = path;
  LoadOptions load;
  load.threads = threads;
  load.max_memory_bytes = max_memory.bytes;
  load.max_memory_origin = max_memory.origin;
  if (progress) load.progress = make_progress_bar(path, input_file_size(path));
  // What was under way when memory ran out, for the message.
  const char* stage = "loading it";
  try {
    TraceModel model = load_trace(path, load);
    if (progress) finish_progress_bar();
    stage = "analysing it";
    if (const std::string empty = nothing_to_analyse(model); !empty.empty()) {
      std::string why = model.info.source + ": " + empty;
      for (const std::string& note : model.report.notes) why += "; " + note;
      throw InputError(why);
    }
    const TraceAnalysis analysis = analyze_trace(model, o.analysis);
    stage = "diagnosing it";
    const Diagnosis diagnosis = diagnose(analysis);
    stage = "writing its report";
    switch (o.rendering) {
      case TraceRendering::kJson: out.json = analyze_json(analysis, diagnosis); break;
      case TraceRendering::kMarkdown: out.report = analyze_markdown(analysis, diagnosis); break;
      case TraceRendering::kText: out.report = analyze_text(analysis, diagnosis, o.style); break;
      case TraceRendering::kNone: break;
    }
    out.rank = summarize_rank(analysis, diagnosis);
  } catch (const InputError& e) {
    if (progress) finish_progress_bar();
    out.error = e.what();
  } catch (const std::bad_alloc&) {
    // Loading already stops at the memory limit and survives a refused allocation; this is the
    // analysis needing more than was left. The other traces of the run are still reported.
    if (progress) finish_progress_bar();
    out = TraceOutcome{};
    out.path = path;
    out.error = path + ": ran out of memory while " + stage + " (memory limit " +
                std::to_string(max_memory.bytes >> 20) + " MiB, " + max_memory.origin +
                "); try a lower --max-memory so that less of the trace is loaded";
  }
  return out;
}

}  // namespace

TraceInputs expand_inputs(const std::vector<std::string>& args) {
  TraceInputs in;
  try {
    std::vector<std::string> left_out;
    in.files = expand_trace_inputs(args, &left_out);
    for (const std::string& entry : left_out) print_error("left out " + entry);
  } catch (const std::exception& e) {
    print_error(e.what());
    throw ExitCode{2};
  }
  for (const std::string& f : in.files) {
    const bool named = std::find(args.begin(), args.end(), f) != args.end();
    in.given_by_name.push_back(named);
    in.directory_given = in.directory_given || !named;
  }
  return in;
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
  if (workers <= 1) {
    for (std::size_t k = 0; k < indices.size(); ++k)
      outcomes[k] = analyze_one(files[indices[k]], o, threads, max_memory, o.progress);
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

int report_trace_errors(std::vector<TraceOutcome>& outcomes, const std::vector<bool>& given_by_name) {
  int failures = 0;
  std::size_t usable = 0;
  std::vector<TraceOutcome> kept;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    TraceOutcome& o = outcomes[i];
    if (!o.error.empty() && !given_by_name[i] && o.error.find(kNotATraceDocument) != std::string::npos) {
      print_error(fmt::format("left out {}: not a trace ({})", o.path, kNotATraceDocument));
      continue;
    }
    if (o.error.empty()) {
      ++usable;
    } else if (given_by_name[i]) {
      print_error(o.error);
      ++failures;
    } else {
      // A broken rank found in a directory is named, and the report of the others still stands.
      print_error("rank file left out of the report: " + o.error);
    }
    kept.push_back(std::move(o));
  }
  outcomes = std::move(kept);
  // Nothing usable at all is a failure even when every file came from a directory.
  if (usable == 0) failures = std::max<int>(failures, static_cast<int>(outcomes.size()));
  return failures;
}

}  // namespace ferret::cli
