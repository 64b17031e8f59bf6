#include "app/analyze_options.h"

#include "analysis/analysis_options.h"
#include "analysis/device/device_peaks.h"

namespace ferret {

AnalysisOptions analysis_options_from(const AnalyzeOptions& options) {
  AnalysisOptions o;
  o.top_k = options.top;
  if (options.device >= 0) o.device = options.device;
  parse_step_range(options.steps, o);
  parse_time_range(options.time, o);
  o.window_name = options.window;
  o.timeline_definition = options.hta_timeline ? TimelineDefinition::kHta : TimelineDefinition::kFerret;
  if (!options.peaks.empty()) o.peaks = read_peaks_file(options.peaks);
  if (!options.dataloaders_json.empty())
    o.dataloaders = parse_dataloader_settings(options.dataloaders_json, "DataLoader settings");
  if (!options.host_json.empty()) o.host = parse_host_facts(options.host_json);
  return o;
}

}  // namespace ferret
