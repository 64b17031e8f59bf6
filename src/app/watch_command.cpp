#include "app/watch_command.h"

#include <memory>
#include <string>

#include "analysis/watch/watch_summary.h"
#include "diagnosis/watch/rules_watch.h"
#include "ingest/proc/gpu_source.h"

namespace ferret {

WatchOutcome run_watch(const WatchRequest& request) {
  WatchOutcome out;
  {
    std::string gpu_note;
    std::unique_ptr<GpuSource> gpu = open_nvml_gpu_source(gpu_note);
    out.series = watch_command(request, gpu.get(), gpu_note);
  }  // NVML closed before the analysis
  out.report.command = out.series.command;
  out.report.interval_s = out.series.interval_s;
  out.report.summary = summarize_watch(out.series);
  rules_watch(out.report.summary, out.report.findings);
  return out;
}

}  // namespace ferret
