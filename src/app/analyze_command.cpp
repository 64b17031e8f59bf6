#include "app/analyze_command.h"

#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "job/job_analysis.h"
#include "job/job_diagnosis.h"
#include "job/wire.h"
#include "report/job/job_report.h"
#include "report/trace/analyze_report.h"

namespace ferret {

namespace {

std::string dump(const nlohmann::ordered_json& doc) {
  return doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + '\n';
}

RenderTrace trace_renderer(AnalyzeFormat format, const Style& style) {
  switch (format) {
    case AnalyzeFormat::kJson:
      return [](const TraceAnalysis& a, const Diagnosis& d, TraceOutcome& o) { o.json = analyze_json(a, d); };
    case AnalyzeFormat::kMarkdown:
      return [](const TraceAnalysis& a, const Diagnosis& d, TraceOutcome& o) { o.report = analyze_markdown(a, d); };
    case AnalyzeFormat::kText: break;
  }
  return [style](const TraceAnalysis& a, const Diagnosis& d, TraceOutcome& o) { o.report = analyze_text(a, d, style); };
}

RenderTrace every_format_renderer(const Style& style) {
  return [style](const TraceAnalysis& a, const Diagnosis& d, TraceOutcome& o) {
    o.json = analyze_json(a, d);
    o.report = analyze_text(a, d, style);
    o.markdown = analyze_markdown(a, d);
  };
}

void job_output(std::vector<TraceOutcome>&& outcomes, const AnalyzeRequest& request, AnalyzeOutput& output) {
  const JobAnalysis job = analyze_job(rank_results(std::move(outcomes)));
  const JobDiagnosis diagnosis = diagnose_job(job);
  if (request.every_format) {
    output.json = dump(job_json(job, diagnosis));
    output.markdown = job_markdown(job, diagnosis);
    output.text = job_text(job, diagnosis, request.style);
    return;
  }
  switch (request.format) {
    case AnalyzeFormat::kJson: output.out = dump(job_json(job, diagnosis)); return;
    case AnalyzeFormat::kMarkdown: output.out = job_markdown(job, diagnosis); return;
    case AnalyzeFormat::kText: break;
  }
  output.out = job_text(job, diagnosis, request.style);
}

// The reports of the traces that could be read, one after another.
std::string joined_reports(const std::vector<TraceOutcome>& outcomes, std::string TraceOutcome::*report) {
  std::string out;
  bool first = true;
  for (const TraceOutcome& o : outcomes) {
    if (!o.ok()) continue;
    if (!first) out += '\n';
    out += o.*report;
    first = false;
  }
  return out;
}

std::string json_of_traces(std::vector<TraceOutcome>&& outcomes) {
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (TraceOutcome& o : outcomes)
    all.push_back(o.ok() ? std::move(o.json) : nlohmann::ordered_json{{"source", o.path}, {"error", o.error}});
  return analysis_document(std::move(all));
}

void per_trace_output(std::vector<TraceOutcome>&& outcomes, const AnalyzeRequest& request, AnalyzeOutput& output) {
  if (request.every_format) {
    output.text = joined_reports(outcomes, &TraceOutcome::report);
    output.markdown = joined_reports(outcomes, &TraceOutcome::markdown);
    output.json = json_of_traces(std::move(outcomes));
  } else if (request.format == AnalyzeFormat::kJson) {
    output.out = json_of_traces(std::move(outcomes));
  } else {
    output.out = joined_reports(outcomes, &TraceOutcome::report);
  }
}

}  // namespace

std::string analysis_document(nlohmann::ordered_json traces) {
  return dump({{"schema", "ferret.analysis/1"}, {"traces", std::move(traces)}});
}

AnalyzeOutput run_analyze(const AnalyzeRequest& request, ProcessGroup* group) {
  AnalyzeOutput result;
  auto message = [&](std::string text) {
    if (request.on_message) request.on_message(text);
    result.messages.push_back(std::move(text));
  };
  TraceInputs inputs;
  try {
    inputs = expand_inputs(request.inputs);
  } catch (const std::exception& e) {
    message(e.what());
    result.exit_code = 2;
    return result;
  }
  for (const std::string& entry : inputs.left_out) message("left out " + entry);
  const std::vector<std::string>& files = inputs.files;

  const int processes = group != nullptr ? group->processes() : 1;
  const int process = group != nullptr ? group->process() : 0;
  std::vector<std::uint64_t> sizes(files.size(), 0);
  if (processes > 1)
    for (std::size_t i = 0; i < files.size(); ++i) sizes[i] = input_file_size(files[i]);
  const std::vector<std::size_t> mine = share_of_process(sizes, processes, process);

  TraceRunOptions run;
  run.analysis = request.analysis;
  run.render =
      request.every_format ? every_format_renderer(request.style) : trace_renderer(request.format, request.style);
  run.jobs = request.jobs;
  run.threads = request.threads;
  run.max_memory = request.max_memory;
  if (processes == 1) {
    run.start_progress = request.start_progress;
    run.finish_progress = request.finish_progress;
  }
  std::vector<TraceOutcome> outcomes = analyze_trace_files(files, mine, run);
  if (processes > 1) {
    // Process 0 gathers the rank results and writes the one report; the others only analyse.
    const std::vector<std::vector<std::uint8_t>> shares = group->gather(encode_share(mine, outcomes));
    if (process != 0) {
      result.exit_code = group->broadcast(0);
      return result;
    }
    outcomes.assign(files.size(), TraceOutcome{});
    try {
      for (const std::vector<std::uint8_t>& share : shares) decode_share(share, files, outcomes);
    } catch (const std::exception& e) {
      message(std::string("cannot read a process's results: ") + e.what());
      result.exit_code = group->broadcast(2);
      return result;
    }
  }

  const TraceTriage triage = triage_trace_outcomes(outcomes, inputs.given_by_name);
  for (const std::string& line : triage.messages) message(line);
  const bool job_mode =
      request.grouping != AnalyzeGrouping::kPerTrace && (processes > 1 || request.grouping == AnalyzeGrouping::kJob ||
                                                         inputs.directory_given || looks_like_one_job(outcomes));
  if (job_mode)
    job_output(std::move(outcomes), request, result);
  else
    per_trace_output(std::move(outcomes), request, result);
  result.exit_code = triage.failures > 0 ? 2 : 0;
  if (group != nullptr) result.exit_code = group->broadcast(result.exit_code);
  return result;
}

}  // namespace ferret
