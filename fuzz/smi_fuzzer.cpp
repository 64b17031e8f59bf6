// libFuzzer harness for GPU utilisation logs: bytes -> SmiLog (every format the sniffer picks) ->
// statistics -> rules -> all three renderers, with and without a trace window placed on the log.
// Must never crash or hang, and text and Markdown must be terminal-safe whatever the log holds
// (GPU names, pmon commands and skipped lines are copied from it). Unreadable logs are InputErrors.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/smi/smi_stats.h"
#include "base/input_error.h"
#include "diagnosis/smi/rules_smi.h"
#include "ingest/smi/smi_log_parser.h"
#include "report/smi/smi_report.h"
#include "terminal_oracle.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ferret::SmiReadOptions options;
  // An input starting with '!' is read as a headerless CSV with these columns.
  if (size > 0 && data[0] == '!') options.columns = "timestamp,index,utilization.gpu,power.draw,power.limit";
  try {
    const ferret::SmiLog log =
        ferret::parse_smi_text(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.log", options);
    ferret::SmiStats stats = ferret::analyze_smi(log);
    const std::int64_t noon = 1706702400LL * 1000000000LL;
    stats.traces.push_back(ferret::align_smi_window(log, stats, "fuzz.json", true, noon, noon + 1000000000LL));
    std::vector<ferret::Finding> findings;
    ferret::rules_smi(log, stats, findings);
    const ferret::SmiReportInput in{log, stats, findings, {}};
    ferret::fuzz::require_terminal_safe(ferret::smi_text(in, ferret::Style{}), "smi text");
    ferret::fuzz::require_terminal_safe(ferret::smi_markdown(in), "smi markdown");
    (void)ferret::smi_json(in).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  } catch (const ferret::InputError&) {
  }
  return 0;
}
