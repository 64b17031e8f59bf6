// libFuzzer harness: bytes that parse as a trace go through every analysis, the diagnosis and
// all three renderers. Must never crash or hang, whatever the events say.
#include <cstddef>
#include <cstdint>
#include <string>

#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"
#include "ingest/trace_loader.h"
#include "report/analyze_report.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ferret::LoadOptions options;
  options.threads = 1;
  options.max_memory_bytes = 64u << 20;
  try {
    const ferret::TraceModel model =
        ferret::load_trace_text(std::string(reinterpret_cast<const char*>(data), size), options);
    const ferret::TraceAnalysis analysis = ferret::analyze_trace(model, {});
    const ferret::Diagnosis diagnosis = ferret::diagnose(analysis);
    (void)ferret::analyze_text(analysis, diagnosis, ferret::Style{});
    (void)ferret::analyze_json(analysis, diagnosis)
        .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    (void)ferret::analyze_markdown(analysis, diagnosis);
  } catch (const ferret::InputError&) {
  }
  return 0;
}
