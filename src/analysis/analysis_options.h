// The analysis options as a user writes them (`ferret analyze --steps 3-7 --time 100-250`, or the
// same strings through the public API), read into AnalysisOptions.
#pragma once

#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "base/input_error.h"

namespace ferret {

// "--steps": "A-B", "A-", "-B" (ProfilerStep numbers, inclusive) or "N" into options.first_step /
// last_step; "" leaves them unset. Throws OptionError naming the option and the text.
void parse_step_range(const std::string& text, AnalysisOptions& options);

// "--time": "A-B" or "A-" (milliseconds from the trace start, decimals allowed, A < B) into
// options.time_from_ms / time_to_ms; "" leaves them unset. Throws OptionError.
void parse_time_range(const std::string& text, AnalysisOptions& options);

// "--timeline-definition": "ferret" or "hta". Throws OptionError.
TimelineDefinition parse_timeline_definition(const std::string& text);

// The DataLoader settings file `ferret run` writes beside the traces: a JSON list of objects with
// any of batch_size, num_workers, prefetch_factor, pin_memory, persistent_workers (null or absent:
// not recorded). Throws InputError naming `source` when the text is not such a list.
std::vector<DataLoaderSettings> parse_dataloader_settings(const std::string& json_text, const std::string& source);

}  // namespace ferret
