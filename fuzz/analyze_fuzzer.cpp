// libFuzzer harness: bytes that parse as a trace go through every analysis, the diagnosis and
// all three renderers, and are annotated (ferret annotate's events spliced into a copy). Must
// never crash or hang, whatever the events say; the text and Markdown must be terminal-safe
// whatever the names hold; an input that is valid JSON stays valid JSON once annotated, with its
// events first and unchanged.
#include <unistd.h>
#include <cstddef>
#include <cstdint>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "report/trace/analyze_report.h"
#include "report/trace/trace_annotation.h"
#include "terminal_oracle.h"

namespace {

void check_annotation(const std::string& input, const ferret::TraceModel& model) {
  ferret::AnalysisOptions options;
  options.series_buckets = 50;
  options.queue_series = true;
  const ferret::TraceAnalysis analysis = ferret::analyze_trace(model, options);
  const ferret::AnnotationEvents added = ferret::annotation_events(model, analysis, ferret::diagnose(analysis));
  const std::string path = "/tmp/ferret-annotate-fuzz-" + std::to_string(::getpid()) + ".json";
  try {
    std::unique_ptr<ferret::ByteSource> source = ferret::make_memory_source(input);
    ferret::OutputFile out(path, ferret::OutputCompression::kNone);
    ferret::splice_trace(*source, "input", added.events, out);
    out.close();
  } catch (const ferret::InputError&) {
    std::remove(path.c_str());
    return;  // not a JSON object or array: nothing to annotate
  }
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  std::remove(path.c_str());
  // The key written other than literally once (repeated: the copy adds to the first array, a JSON
  // reader keeps the last; escaped: the copy does not take it for the key) is not compared.
  const std::size_t key = input.find("\"traceEvents\"");
  const bool literal_once = key != std::string::npos && input.find("\"traceEvents\"", key + 1) == std::string::npos;
  const nlohmann::json original = nlohmann::json::parse(input, nullptr, false);
  if (original.is_discarded()) return;  // salvaged input: the output is checked by the unit tests
  const nlohmann::json annotated = nlohmann::json::parse(text.str(), nullptr, false);
  if (annotated.is_discarded()) __builtin_trap();  // valid JSON in, invalid out
  const nlohmann::json* before = original.is_array() ? &original : nullptr;
  const nlohmann::json* after = annotated.is_array() ? &annotated : nullptr;
  if (original.is_object()) {
    const auto events = original.find("traceEvents");
    if (events == original.end()) return;
    if (!literal_once || !events->is_array()) return;
    const auto out_events = annotated.is_object() ? annotated.find("traceEvents") : annotated.end();
    if (out_events == annotated.end()) __builtin_trap();
    before = &*events, after = &*out_events;
  }
  if (before == nullptr || after == nullptr) return;
  if (after->size() != before->size() + added.events.size()) __builtin_trap();
  for (std::size_t i = 0; i < before->size(); ++i)
    if ((*after)[i] != (*before)[i]) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ferret::LoadOptions options;
  options.threads = 1;
  options.max_memory_bytes = 64u << 20;
  try {
    const ferret::TraceModel model =
        ferret::load_trace_text(std::string(reinterpret_cast<const char*>(data), size), options);
    const ferret::TraceAnalysis analysis = ferret::analyze_trace(model, {});
    const ferret::Diagnosis diagnosis = ferret::diagnose(analysis);
    ferret::fuzz::require_terminal_safe(ferret::analyze_text(analysis, diagnosis, ferret::Style{}), "analyze text");
    (void)ferret::analyze_json(analysis, diagnosis)
        .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    ferret::fuzz::require_terminal_safe(ferret::analyze_markdown(analysis, diagnosis), "analyze markdown");
    check_annotation(std::string(reinterpret_cast<const char*>(data), size), model);
  } catch (const ferret::InputError&) {
  }
  return 0;
}
