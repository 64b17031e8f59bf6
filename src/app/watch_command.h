// `ferret watch` as one call: run a command, sample its process tree's CPU use and its GPUs (NVML
// when the driver is there) until it ends, then summarise and run the watch rules. The CLI renders
// the outcome and passes the command's exit status on; the C++ API and Python can offer the same.
#pragma once

#include "benchmark/process_watch.h"
#include "report/watch/watch_report.h"

namespace ferret {

struct WatchOutcome {
  WatchSeries series;       // every sample, and the command's exit status
  WatchReportInput report;  // the summary and its findings, for the renderers
};

// Throws WatchSpawnError when the command cannot be started.
WatchOutcome run_watch(const WatchRequest& request);

}  // namespace ferret
