// What-if: the step time predicted when a cause is fixed. Each step is re-timed on its dependency
// graph (analysis/causal/step_graph.h) with the change, so that what the change frees is taken back by
// whatever the step then waits on (the GPU stream order, a sync that still waits, the host).
// `ferret whatif` prints it (report/trace/whatif_report.h, docs/CRITICAL_PATH.md).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/causal/step_graph.h"
#include "base/input_error.h"

namespace ferret {

struct WhatIfStep {
  std::int64_t number = -1;  // ProfilerStep#N; -1 for the pseudo-step of a trace without steps
  std::int64_t baseline_ns = 0;
  std::int64_t predicted_ns = 0;
};

struct WhatIfResult {
  RetimeChanges changes;
  bool has_steps = false;
  std::vector<WhatIfStep> steps;
  std::int64_t baseline_step_ns = 0;   // median over the steps
  std::int64_t predicted_step_ns = 0;  // median over the steps
  // Means over the steps: the statistic of the step breakdown, whose shares the findings' bounds
  // are, so a finding's prediction is the ratio of these (a median of 4 steps with a slow first
  // one can sit far from the mean).
  double baseline_mean_ns = 0;
  double predicted_mean_ns = 0;
  RetimeTouched touched;
  // The physical lower bound of a predicted step: the busiest device's own work in the window
  // (kernels, copies, fills: their union) per step. No change to the host can make a step shorter
  // than that. Applied to removals only: a --speedup shortens the very work the bound is made of.
  std::int32_t floor_device = -1;
  std::int64_t device_floor_ns = 0;
  bool floor_binds = false;  // some step's prediction was raised to it
};

WhatIfResult analyze_whatif(const TraceModel& model, const AnalysisContext& ctx, const RetimeChanges& changes);
// The same against a baseline already re-timed (the critical path's steps, in order): one
// re-timing instead of two, for the diagnosis, which asks for several changes of one trace.
// The busiest device's own work in the window, with and without communication kernels: the same
// for every change of one window, so the diagnosis computes it once for all its what-ifs.
struct DeviceWorkFloors {
  bool computed[2] = {false, false};               // [without_communication]
  std::pair<std::int32_t, std::int64_t> value[2];  // device, work
};
// Computes floors.value[without_communication] once (no-op when computed).
void fill_device_work_floor(const TraceModel& model, const AnalysisContext& ctx, bool without_communication,
                            DeviceWorkFloors& floors);
WhatIfResult analyze_whatif(const TraceModel& model, const AnalysisContext& ctx, const RetimeChanges& changes,
                            const std::vector<std::int64_t>& baseline_step_ns, const StepGraphOrder* order = nullptr,
                            DeviceWorkFloors* floors = nullptr);

// The causes a what-if can remove, one row each: the one place that names them, for `--remove`, its
// help, the report's lines, JSON, and the diagnosis's rules (whose ids map to rows by `rule`).
struct WhatIfRemoval {
  std::string_view name;                  // `--remove NAME`
  bool RetimeChanges::*flag;              // the change
  std::uint64_t RetimeTouched::*touched;  // what it counts
  std::string_view unit;                  // of the count ("span", "call", ...)
  std::string_view effect;                // what the re-timing does, for the report
};
std::span<const WhatIfRemoval> whatif_removal_table();
// "dataloader, host-sync, ...": the names, for help and messages.
std::string whatif_removal_names();
// Whether `changes` removes anything or speeds anything up.
bool whatif_changes_anything(const RetimeChanges& changes);
// `into` gains every removal and speed-up of `from`.
void merge_whatif_changes(RetimeChanges& into, const RetimeChanges& from);

// "--remove NAME": a name of the table into `changes`. Throws OptionError naming the accepted values.
void parse_whatif_removal(const std::string& text, RetimeChanges& changes);
// "--speedup PATTERN=K": a non-empty pattern and a finite factor K > 0. Throws OptionError.
void parse_whatif_speedup(const std::string& text, RetimeChanges& changes);
// The removals, in the words of the option ("dataloader", ...), in a fixed order.
std::vector<std::string> whatif_removals(const RetimeChanges& changes);

}  // namespace ferret
