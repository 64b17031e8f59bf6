// What every analysis shares: options from the command line and the time window they cover.
//
// An analysis is a function `XResult analyze_x(const TraceModel&, const AnalysisContext&)` in its
// own file under src/analysis/: it reads the model, returns a plain struct, prints nothing.
// docs/WINDOWS.md says which window each selector gives and why.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/device/device_peaks.h"
#include "analysis/device/host_facts.h"
#include "base/input_error.h"
#include "model/trace_model.h"

namespace ferret {

// How the GPU timeline is computed: ferret's definition, or HolisticTraceAnalysis's own window
// and rounding, so that a user moving from HTA can check ferret number for number (docs/HTA.md).
enum class TimelineDefinition { kFerret, kHta };

// How a DataLoader was built, as `ferret run` and ferret.profile() read it from the running
// script (the trace itself tells only the iterator class). -1: not recorded; booleans 0/1.
struct DataLoaderSettings {
  std::int64_t batch_size = -1;
  std::int64_t num_workers = -1;
  std::int64_t prefetch_factor = -1;  // per worker; -1 also when num_workers is 0 (torch ignores it)
  int pin_memory = -1;
  int persistent_workers = -1;
  // "DataLoader(batch_size=8, num_workers=0, pin_memory=False, persistent_workers=False)"
  std::string describe() const;
};

struct AnalysisOptions {
  int top_k = 10;                          // rows in "top N" tables
  std::optional<std::int64_t> first_step;  // --steps A-B (ProfilerStep numbers, inclusive)
  std::optional<std::int64_t> last_step;
  std::optional<int> device;  // --device N: GPU device (pid of GPU events)
  // --window NAME[#K]: the K-th (1-based) host span named NAME (a record_function / user
  // annotation such as "warmup" or "inference", or any op), extended to the end of its GPU work.
  std::string window_name;
  int window_occurrence = 1;
  // --time A-B: milliseconds from the trace start (the first host span or GPU activity).
  std::optional<double> time_from_ms;
  std::optional<double> time_to_ms;
  TimelineDefinition timeline_definition = TimelineDefinition::kFerret;
  std::optional<PeakOverrides> peaks;  // --peaks FILE: measured ceilings for the roofline
  // Run the independent analyses of one trace on two threads (the step graph and the operator
  // layer beside the rest). Off where traces are already analysed side by side (a job's ranks).
  bool concurrent = true;
  std::size_t concurrent_min_events = 200'000;  // below it a second thread costs more than it saves
  // The script's DataLoaders, when recorded at run time (empty: unknown): findings quote them.
  std::vector<DataLoaderSettings> dataloaders;
  // The machine and build, when recorded at run time (not recorded: the CPU rules judge by the trace alone).
  HostFacts host;
  // Buckets of the downsampled curves (GPU busy, memory): 0 keeps the report's defaults, a few
  // hundred, enough for a page; ferret annotate asks for more, to be read on a zoomable timeline.
  int series_buckets = 0;
  bool queue_series = false;  // also the launch queue per device (DeviceTimeline::queue_series)
};

// A selector (--steps, --device, --window, --time) that matches nothing in a trace. Analysing
// something else instead would answer a question the user did not ask; the message names what
// the trace does hold.
class SelectionError : public InputError {
 public:
  using InputError::InputError;
};

// With at least this many inferred iterations the first is left out as cold (two would leave one).
inline constexpr std::size_t kInferredIterationsToDropFirst = 3;
// What the steps are when the trace has no ProfilerStep#N: "Optimizer.step#SGD.step", "DataLoader
// batches", "repeated aten::mm", ...
std::string iteration_marker_text(const Relations& rel);

enum class WindowSource {
  kSteps,       // ProfilerStep#N spans (all complete steps, or --steps)
  kAnnotation,  // --window NAME[#K]
  kTimeRange,   // --time A-B
  kWholeTrace,  // no steps and no selector: every event
};
const char* window_source_name(WindowSource source);  // "steps", "annotation", "time", "trace"

// A blocking call at the window's start or end (a synchronous copy, a device / stream / event
// sync) during which the trace shows no GPU work: it waits on work launched before profiling
// began (or after it ended), not on anything the window did. Rules keep it out of their evidence.
struct EdgeWait {
  EventIndex event = kNoEvent;
  bool at_start = true;  // else at the end
  std::int64_t duration_ns = 0;
  std::int64_t gpu_busy_ns = 0;  // GPU work of the trace during the call (below 10% of it)
};
// Shorter blocking calls are ordinary; an edge wait is worth a word from 1 ms.
inline constexpr std::int64_t kEdgeWaitMinNs = 1'000'000;
// An edge wait that starts within this of the window's start (or ends within it of the end) is
// the window's first (last) act and is cut off the window.
inline constexpr std::int64_t kEdgeWaitTrimSlackNs = 1'000'000;

// A stretch of time [start, end); a whole-trace window also holds the instant `end` itself (its
// last event's end), so an event ending the trace is inside it.
struct TimeWindow {
  std::int64_t start = 0;
  std::int64_t end = 0;
  bool inclusive_end = false;
  bool contains(std::int64_t t) const { return t >= start && (t < end || (inclusive_end && t == end)); }
};

// The window an analysis covers: the selected complete steps, a named span, a time range, or
// (for a trace without steps) the span of all its events. Built once per trace.
struct AnalysisContext {
  AnalysisOptions options;
  std::vector<Step> steps;  // selected steps, in time order (empty unless the window is steps)
  std::int64_t window_start_ns = 0;
  std::int64_t window_end_ns = 0;
  bool has_steps = false;
  WindowSource source = WindowSource::kWholeTrace;
  std::string label;                 // "ProfilerStep#5-10", "warmup#1", "20.0-35.0 ms", "whole trace"
  std::int64_t trace_start_ns = 0;   // the origin of --time
  std::vector<EdgeWait> edge_waits;  // by event index
  // Iterations inferred without ProfilerStep#N: the first, cold one, left out of `steps`.
  std::optional<Step> cold_first_step;
  std::int64_t edge_trimmed_ns = 0;  // cut off the window's edges (edge waits that open or close it)

  std::int64_t window_ns() const { return window_end_ns - window_start_ns; }
  TimeWindow window() const { return {window_start_ns, window_end_ns, whole_trace()}; }
  // GPU activity outside a selected window is clipped away; the whole trace clips nothing.
  bool whole_trace() const { return source == WindowSource::kWholeTrace; }
  bool device_selected(std::int32_t device) const { return !options.device || *options.device == device; }
  bool is_edge_wait(EventIndex e) const {
    for (const EdgeWait& w : edge_waits)
      if (w.event == e) return true;
    return false;
  }
  // A GPU activity the analyses count: on the selected device, and launched from inside the
  // trace (work queued before profiling began belongs to no step; it is reported apart).
  bool counts_gpu_event(const TraceModel& model, EventIndex e) const {
    return device_selected(model.pid[e]) && !model.relations.launched_before_trace_event(e);
  }
};

// The index in `steps` (sorted, disjoint) of the step whose [start, end) holds `t`, or -1.
int step_index_at(const std::vector<Step>& steps, std::int64_t t);

// Throws SelectionError when a selector matches nothing.
AnalysisContext make_analysis_context(const TraceModel& model, const AnalysisOptions& options);

}  // namespace ferret
