// libFuzzer harness for NCCL logs: bytes -> log records -> setup analysis -> rules -> all three
// renderers. Must never crash or hang, and the text and Markdown must be terminal-safe whatever
// the log holds (host names, NCCL_* values and warnings are copied from it).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/nccl/nccl_setup.h"
#include "diagnosis/nccl/rules_nccl.h"
#include "ingest/nccl/nccl_log_parser.h"
#include "report/nccl/nccl_report.h"
#include "terminal_oracle.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ferret::NcclReadLimits limits;
  limits.max_bytes_without_progress = 1 << 20;
  const ferret::NcclLog log =
      ferret::parse_nccl_text(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.log", limits);
  const ferret::NcclSetup setup = ferret::analyze_nccl_setup(log);
  std::vector<ferret::Finding> findings;
  ferret::rules_nccl(setup, findings);
  ferret::fuzz::require_terminal_safe(ferret::nccl_text(setup, findings, {}, ferret::Style{}), "nccl text");
  ferret::fuzz::require_terminal_safe(ferret::nccl_markdown(setup, findings, {}), "nccl markdown");
  (void)ferret::nccl_json(setup, findings, {}).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  return 0;
}
