// The public front door (include/ferret/ferret.h) over the stages: each call is the library call
// the command line makes, so the API and `ferret analyze` cannot drift apart.
#include <ferret/ferret.h>

#include <utility>

#include "analysis/analysis_options.h"
#include "analysis/trace_analysis.h"
#include "app/analyze_command.h"
#include "app/analyze_options.h"
#include "app/annotate_command.h"
#include "app/diff_command.h"
#include "app/memory_command.h"
#include "app/nccl_command.h"
#include "app/smi_command.h"
#include "app/whatif_command.h"
#include "base/input_error.h"
#include "base/terminal_text.h"
#include "base/units.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "report/trace/analyze_report.h"
#include "version.h"

namespace ferret {

struct Trace::Model {
  TraceModel model;
};

struct Analysis::Result {
  TraceAnalysis analysis;
  Diagnosis diagnosis;
};

namespace {

// Reports for a terminal or a notebook, as the command line prints them: line breaks kept, any
// other control byte from a trace made visible.
constexpr TerminalTextRules kReportText{.keep_line_breaks = true};

AnalyzeFormat to_analyze_format(Format format) {
  switch (format) {
    case Format::kJson: return AnalyzeFormat::kJson;
    case Format::kMarkdown: return AnalyzeFormat::kMarkdown;
    case Format::kText: break;
  }
  return AnalyzeFormat::kText;
}

}  // namespace

std::string analyze_paths(const std::vector<std::string>& paths, const AnalyzeOptions& options, Format format,
                          std::vector<std::string>* notes) {
  AnalyzeRequest request;
  request.inputs = paths;
  request.analysis = analysis_options_from(options);
  request.format = to_analyze_format(format);
  request.threads = options.threads;
  request.max_memory = options.max_memory.empty() ? 0 : parse_size(options.max_memory);
  AnalyzeOutput output = run_analyze(request);
  if (notes) *notes = std::move(output.messages);
  return std::move(output.out);
}

Reports analyze_reports(const std::vector<std::string>& paths, const AnalyzeOptions& options) {
  AnalyzeRequest request;
  request.inputs = paths;
  request.analysis = analysis_options_from(options);
  request.every_format = true;
  request.threads = options.threads;
  request.max_memory = options.max_memory.empty() ? 0 : parse_size(options.max_memory);
  AnalyzeOutput output = run_analyze(request);
  Reports reports;
  reports.json = std::move(output.json);
  reports.text = terminal_safe(output.text, kReportText);
  reports.markdown = terminal_safe(output.markdown, kReportText);
  for (const std::string& message : output.messages) reports.notes.push_back(terminal_safe(message));
  reports.exit_code = output.exit_code;
  return reports;
}

Reports diff_reports(const std::string& base, const std::string& next, const DiffSettings& settings) {
  if (base == "-" && next == "-") throw OptionError("only one of BASE and NEW can be read from stdin");
  DiffOptions options;
  options.top = settings.top;
  parse_step_range(settings.steps, options.analysis);
  if (settings.device >= 0) options.analysis.device = settings.device;
  if (settings.fail_if_slower_pct >= 0) options.fail_if_slower_pct = settings.fail_if_slower_pct;
  DiffInputOptions input;
  input.threads = settings.threads;
  input.max_memory = settings.max_memory.empty() ? 0 : parse_size(settings.max_memory);
  const TraceModel base_model = load_diff_input("BASE", base, input);
  const TraceModel next_model = load_diff_input("NEW", next, input);
  DiffRenderings r = render_diff(diff_traces(base_model, next_model, options), Style{});
  Reports reports;
  reports.json = std::move(r.json);
  reports.text = terminal_safe(r.text, kReportText);
  reports.markdown = terminal_safe(r.markdown, kReportText);
  for (const std::string& note : base_model.report.notes) reports.notes.push_back(terminal_safe("BASE: " + note));
  for (const std::string& note : next_model.report.notes) reports.notes.push_back(terminal_safe("NEW: " + note));
  reports.exit_code = r.exit_code;
  return reports;
}

namespace {

// A report as the API returns it: notes as the command line prints them on stderr, documents
// terminal-safe as it prints them on stdout.
template <class Outcome, class Render>
void fill_reports(Reports& reports, const Outcome& outcome, Render render) {
  reports.json = render(outcome, Format::kJson, Style{});
  reports.text = terminal_safe(render(outcome, Format::kText, Style{}), kReportText);
  reports.markdown = terminal_safe(render(outcome, Format::kMarkdown, Style{}), kReportText);
}

}  // namespace

Reports nccl_reports(const std::vector<std::string>& logs, const NcclSettings& settings) {
  Reports reports;
  NcclRequest request = nccl_request_from(logs, settings);
  request.on_message = [&](const std::string& message) { reports.notes.push_back(terminal_safe(message)); };
  const NcclOutcome outcome = run_nccl(request);
  if (const std::string failure = nccl_failure(outcome); !failure.empty()) {
    reports.notes.push_back(failure);
    reports.exit_code = 2;
    return reports;
  }
  fill_reports(reports, outcome, render_nccl);
  return reports;
}

Reports smi_reports(const std::vector<std::string>& logs, const SmiSettings& settings) {
  Reports reports;
  SmiRequest request = smi_request_from(logs, settings);
  request.on_message = [&](const std::string& message) { reports.notes.push_back(terminal_safe(message)); };
  const SmiOutcome outcome = run_smi(request);
  if (const std::string failure = smi_failure_before_report(outcome); !failure.empty()) {
    reports.notes.push_back(failure);
    reports.exit_code = 2;
    return reports;
  }
  fill_reports(reports, outcome, render_smi);
  if (const std::string failure = smi_failure_after_report(outcome); !failure.empty()) {
    reports.notes.push_back(terminal_safe(failure));
    reports.exit_code = 2;
  }
  return reports;
}

Reports memory_reports(const std::vector<std::string>& files, const MemorySettings& settings) {
  Reports reports;
  MemoryRequest request = memory_request_from(files, settings);
  request.on_message = [&](const std::string& message) { reports.notes.push_back(terminal_safe(message)); };
  const MemoryOutcome outcome = run_memory(request);
  fill_reports(reports, outcome, render_memory);
  reports.exit_code = outcome.failed ? 2 : 0;
  return reports;
}

Reports whatif_reports(const std::string& trace, const WhatIfSettings& settings) {
  const WhatIfOutcome outcome = run_whatif(whatif_request_from(trace, settings));
  Reports reports;
  reports.json = render_whatif(outcome, Format::kJson, Style{});
  reports.text = terminal_safe(render_whatif(outcome, Format::kText, Style{}), kReportText);
  if (const std::string failure = whatif_failure(outcome, trace); !failure.empty()) {
    reports.notes.push_back(terminal_safe(failure));
    reports.exit_code = 2;
  }
  return reports;
}

std::vector<std::string> annotate(const std::string& trace, const std::string& output,
                                  const AnnotateSettings& settings) {
  const AnnotateRequest request = annotate_request_from(trace, output, settings);
  std::vector<std::string> notes;
  for (const std::string& line : annotate_messages(run_annotate(request), request))
    notes.push_back(terminal_safe(line));
  return notes;
}

std::string analyze_json(const std::string& path) { return analyze_paths({path}, AnalyzeOptions{}, Format::kJson); }

Trace::Trace(std::shared_ptr<const Model> model) : model_(std::move(model)) {}
const std::string& Trace::source() const { return model_->model.info.source; }
std::uint64_t Trace::event_count() const { return model_->model.size(); }

std::vector<std::string> Trace::notes() const { return model_->model.report.lines(); }

Trace load(const std::string& path, unsigned threads) {
  LoadOptions options;
  options.threads = threads;
  auto model = std::make_shared<Trace::Model>();
  model->model = load_trace(path, options);
  return Trace(std::move(model));
}

Analysis::Analysis(std::shared_ptr<const Result> result) : result_(std::move(result)) {}
const std::string& Analysis::verdict() const { return result_->diagnosis.verdict.headline; }
const std::string& Analysis::verdict_id() const { return result_->diagnosis.verdict.finding_id; }

std::vector<FindingSummary> Analysis::findings() const {
  std::vector<FindingSummary> out;
  for (const Finding& f : result_->diagnosis.findings) {
    FindingSummary s{f.id,
                     f.title,
                     dimension_name(f.dimension),
                     layer_name(f.layer),
                     severity_name(f.severity),
                     {},
                     f.time_share,
                     f.max_speedup,
                     {}};
    for (const Fix& fix : f.fixes) {
      s.fixes.push_back(fix.text);
      s.applies_because.push_back(applies_because(f, fix));
    }
    out.push_back(std::move(s));
  }
  return out;
}

Analysis analyze(const Trace& trace, const AnalyzeOptions& options) {
  auto result = std::make_shared<Analysis::Result>();
  result->analysis = analyze_trace(trace.model().model, analysis_options_from(options));
  result->diagnosis = diagnose(result->analysis);
  return Analysis(std::move(result));
}

std::string report(const Analysis& analysis, Format format) {
  const TraceAnalysis& a = analysis.result().analysis;
  const Diagnosis& d = analysis.result().diagnosis;
  switch (format) {
    case Format::kJson: return analysis_document(nlohmann::ordered_json::array({analyze_json(a, d)}));
    case Format::kMarkdown: return analyze_markdown(a, d);
    case Format::kText: break;
  }
  return analyze_text(a, d, Style{});
}

std::string version() { return FERRET_VERSION; }

}  // namespace ferret
