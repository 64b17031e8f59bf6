// ferret's front door: diagnose PyTorch profiler traces from C++.
//
//   #include <ferret/ferret.h>
//   std::string json = ferret::analyze_json("trace.json.gz");   // = `ferret analyze --json PATH`
//
// or one step at a time:
//
//   ferret::Trace trace = ferret::load("trace.json.gz");
//   ferret::Analysis analysis = ferret::analyze(trace);
//   for (const ferret::FindingSummary& f : analysis.findings()) ...;
//   std::string markdown = ferret::report(analysis, ferret::Format::kMarkdown);
//
// This header needs only the standard library; the stages behind it (ingest, model, analysis,
// diagnosis, report) stay private to the library. Link `ferret::core` (CMake:
// find_package(ferret) after `make install`). Every function throws std::runtime_error (or a
// type derived from it) with a message naming the file when its input cannot be used at all.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ferret {

// The options of `ferret analyze`, with the same defaults.
struct AnalyzeOptions {
  int top = 10;               // rows in top-N tables (--top)
  std::string steps;          // ProfilerStep numbers: "A-B", "A-", "-B" or "N" (--steps); empty = all
  std::string window;         // "NAME" or "NAME#K": the K-th span of that name (--window)
  std::string time;           // "A-B" or "A-" in milliseconds from the trace start (--time)
  int device = -1;            // only this GPU (--device); -1 = all
  bool hta_timeline = false;  // the GPU timeline as HolisticTraceAnalysis defines it (--timeline-definition hta)
  unsigned threads = 0;       // parser threads (--threads); 0 = as the command line chooses
  std::string max_memory;     // memory bound, e.g. "8GiB" (--max-memory); empty = the default
  std::string peaks;          // measured device ceilings, a JSON file (--peaks FILE); empty = datasheet figures
  // How the script built its DataLoaders, as `ferret run` records it: a JSON list of objects with
  // batch_size, num_workers, pin_memory, prefetch_factor, persistent_workers; findings quote it.
  std::string dataloaders_json;
  // The machine and build, as `ferret run` and ferret.profile() record them: a JSON object
  // (blas_info, blas_libraries, threads, cpus, cpu_model, cpu_flags, cpu_mhz, cpu_capability).
  std::string host_json;
};

enum class Format { kText, kJson, kMarkdown };

// Exactly what `ferret analyze --json PATH` prints on stdout, for a trace file or a directory of
// one job's rank traces: schema ferret.analysis/1 or ferret.job/1 (docs/ANALYSIS_JSON.md).
std::string analyze_json(const std::string& path);

// Exactly what `ferret analyze` with these options prints on stdout for these inputs (text
// without colour). Diagnostics that the command line prints on stderr are returned in `notes`
// when it is not null.
std::string analyze_paths(const std::vector<std::string>& paths, const AnalyzeOptions& options, Format format,
                          std::vector<std::string>* notes = nullptr);

// Every rendering of one analysis, so that a caller can show it in any format without analysing
// the inputs again (the Python module keeps these).
struct Reports {
  std::string json;                // what --json prints (ferret.analysis/1, ferret.job/1 or ferret.diff/2)
  std::string text;                // the plain report, without colour
  std::string markdown;            // what --md prints
  std::vector<std::string> notes;  // what the command line prints on stderr
  int exit_code = 0;               // the command line's exit status (analyze: 0 or 2; diff: docs/DIFF.md)
};

// `ferret analyze` on these inputs, rendered in every format at once.
Reports analyze_reports(const std::vector<std::string>& paths, const AnalyzeOptions& options = {});

// The options of `ferret diff`, with the same defaults.
struct DiffSettings {
  int top = 10;                    // rows per list (--top)
  std::string steps;               // --steps, applied to both traces
  int device = -1;                 // --device; -1 = all
  double fail_if_slower_pct = -1;  // --fail-if-slower PCT; < 0 = no gate
  unsigned threads = 0;            // parser threads; 0 = one per core
  std::string max_memory;          // bound for each trace, e.g. "8GiB"; empty = half the default
};

// `ferret diff BASE NEW` rendered in every format; exit_code is the gate's (0, 1 confirmed
// slower, 3 inconclusive). Throws when a side cannot be used (the message starts "BASE:"/"NEW:").
Reports diff_reports(const std::string& base, const std::string& next, const DiffSettings& settings = {});

// The options of `ferret nccl`, with the same defaults (sizes as on the command line: "1GiB").
struct NcclSettings {
  std::vector<std::string> traces;         // --trace: Kineto traces of the same run, for the bus bandwidth
  std::string max_bytes_without_progress;  // --max-bytes-without-progress; empty = 1GiB, "0" = no limit
  std::string max_memory;                  // --max-memory; empty = 3/4 of RAM
  unsigned threads = 0;                    // --threads: trace parser threads; 0 = one per core
};

// `ferret nccl LOG...` rendered in every format: the lint of NCCL_DEBUG=INFO logs (schema
// ferret.nccl/1). exit_code 2 with a note when no log could be read, as on the command line.
Reports nccl_reports(const std::vector<std::string>& logs, const NcclSettings& settings = {});

// The options of `ferret smi`, with the same defaults.
struct SmiSettings {
  std::vector<std::string> traces;  // --trace: traces of the same run, placed on the logs' clock
  std::string columns;              // --columns: the --query-gpu list of a CSV written with noheader
  double interval = 1.0;            // --interval: seconds between samples in logs that print no time
  std::string utc_offset;           // --utc-offset: e.g. "+02:00"; empty = UTC
  std::string max_memory;           // --max-memory; empty = 3/4 of RAM
  unsigned threads = 0;             // --threads: trace parser threads; 0 = one per core
};

// `ferret smi LOG...` rendered in every format (schema ferret.smi/1); exit_code 2 with a note when
// no log or no sample could be read, as on the command line.
Reports smi_reports(const std::vector<std::string>& logs, const SmiSettings& settings = {});

// The options of `ferret memory`, with the same defaults.
struct MemorySettings {
  std::string max_memory;  // --max-memory: bound while reading; empty = the readers' default
};

// `ferret memory FILE...` rendered in every format (schema ferret.memory/1): allocator snapshots
// and memory text, told by content; exit_code 2 with a note per file that could not be read.
Reports memory_reports(const std::vector<std::string>& files, const MemorySettings& settings = {});

// The options of `ferret whatif`, with the same defaults.
struct WhatIfSettings {
  std::vector<std::string> remove;   // --remove CAUSE (repeatable): dataloader, host-sync, launch-overhead, ...
  std::vector<std::string> speedup;  // --speedup PATTERN=K (repeatable)
  std::string fix;                   // --fix FINDING_ID: re-time the fix of a finding of `ferret analyze`
  std::string steps;                 // --steps: "A-B", "A-", "-B" or "N"; empty = all
  int device = -1;                   // --device; -1 = all
  unsigned threads = 0;              // --threads: parser threads; 0 = one per core
  std::string max_memory;            // --max-memory; empty = the default
};

// `ferret whatif TRACE` in its two formats (markdown stays empty: the command has none; schema
// ferret.whatif/1). A window with no step to re-time gives exit_code 2 and a note. Throws
// InputError for a trace that cannot be read, OptionError for a bad value or a --fix that cannot
// be re-timed, with the command line's messages.
Reports whatif_reports(const std::string& trace, const WhatIfSettings& settings = {});

// The options of `ferret annotate`, with the same defaults.
struct AnnotateSettings {
  bool plain = false;      // --plain: uncompressed JSON even when the output's name ends in .gz
  std::string steps;       // --steps
  std::string window;      // --window: "NAME" or "NAME#K"
  std::string time;        // --time: "A-B" or "A-" in milliseconds from the trace start
  int device = -1;         // --device; -1 = all
  unsigned threads = 0;    // --threads
  std::string max_memory;  // --max-memory
};

// `ferret annotate TRACE -o OUTPUT`: writes the trace with ferret's diagnosis as trace events
// (whole or not at all; never over the trace itself) and returns what the command prints on
// stderr (what loading repaired, then a line counting the events added). Throws InputError for a
// trace that cannot be read, OptionError for a bad value, std::runtime_error for the output.
std::vector<std::string> annotate(const std::string& trace, const std::string& output,
                                  const AnnotateSettings& settings = {});

// One finding of a diagnosis, ranked first to last by the most its fix can gain.
struct FindingSummary {
  std::string id;         // stable rule id, e.g. "input-bound" (docs/RULES.md)
  std::string title;      // one line with the key number
  std::string dimension;  // "benchmark", "compute", "data_pipeline", "memory", "distributed"
  std::string layer;      // "macro", "framework", "operator", "hardware"
  std::string severity;   // "info", "low", "medium", "high"
  std::vector<std::string> fixes;
  double time_share = 0;     // share of the analysed time the cause accounts for, 0..1
  double max_speedup = 1.0;  // Amdahl bound if the cause vanished
  // One line per fix (same order): the finding's title, then the facts of the trace that make the
  // fix fit (the op or shape it targets, the device runs it, the trace shows it not yet done).
  std::vector<std::string> applies_because;
};

// A loaded trace. Cheap to copy (the model is shared and never changes after loading).
class Trace {
 public:
  struct Model;
  explicit Trace(std::shared_ptr<const Model> model);
  const std::string& source() const;
  std::uint64_t event_count() const;
  // What loading repaired or skipped, and other facts worth telling ("trace truncated at ...").
  std::vector<std::string> notes() const;
  const Model& model() const { return *model_; }

 private:
  std::shared_ptr<const Model> model_;
};

// Loads a Kineto JSON trace or a legacy autograd export (gzip, zstd or plain; "-" is stdin).
Trace load(const std::string& path, unsigned threads = 0);

// The analyses of one trace and their diagnosis.
class Analysis {
 public:
  struct Result;
  explicit Analysis(std::shared_ptr<const Result> result);
  // The one-line verdict ("Input-bound: ...") and the rule behind it (empty when none).
  const std::string& verdict() const;
  const std::string& verdict_id() const;
  std::vector<FindingSummary> findings() const;
  const Result& result() const { return *result_; }

 private:
  std::shared_ptr<const Result> result_;
};

Analysis analyze(const Trace& trace, const AnalyzeOptions& options = {});

// The report of one analysed trace, as `ferret analyze` renders it for a single trace.
std::string report(const Analysis& analysis, Format format);

// ferret's version, "MAJOR.MINOR.PATCH".
std::string version();

}  // namespace ferret
