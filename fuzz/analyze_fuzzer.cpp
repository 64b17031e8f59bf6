// libFuzzer harness: bytes that parse as a trace go through every analysis, the diagnosis and
// all three renderers. Must never crash or hang, whatever the events say, and the text and
// Markdown must be terminal-safe whatever the names hold.
#include <cstddef>
#include <cstdint>
#include <string>

#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "report/analyze_report.h"
#include "terminal_oracle.h"

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
  } catch (const ferret::InputError&) {
  }
  return 0;
}
