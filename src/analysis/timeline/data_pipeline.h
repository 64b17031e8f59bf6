// The data pipeline as the trace shows it: how much of each step the training loop spends in
// "enumerate(DataLoader)#..." / "enumerate(DataPipe)#..." (waiting for the next batch), and how much
// of that wait leaves the GPU with nothing to do (the part a faster input pipeline buys back).
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/intervals.h"

namespace ferret {

struct DataLoaderStep {
  std::int64_t number = -1;  // ProfilerStep#N; -1 for the pseudo-step of a trace without steps
  std::int64_t start_ns = 0;
  std::int64_t duration_ns = 0;
  std::int64_t dataloader_ns = 0;        // union of DataLoader spans within the step window
  std::int64_t gpu_idle_waiting_ns = 0;  // of that, time when the GPU (selected device) ran nothing
  std::uint32_t calls = 0;               // DataLoader calls made by the step (CPU span holds the start)
  std::int64_t longest_call_ns = 0;

  double dataloader_pct() const { return share(dataloader_ns); }
  double gpu_idle_waiting_pct() const { return share(gpu_idle_waiting_ns); }

 private:
  double share(std::int64_t ns) const {
    return duration_ns > 0 ? 100.0 * static_cast<double>(ns) / static_cast<double>(duration_ns) : 0.0;
  }
};

struct DataPipelineResult {
  bool has_steps = false;  // false: one pseudo-step spans the whole trace
  std::vector<DataLoaderStep> steps;
  std::uint64_t calls = 0;  // DataLoader calls in the selected steps

  // Means over steps; shares are of the mean step (sum over sum).
  double average_step_ns = 0;
  double average_dataloader_ns = 0;
  double average_gpu_idle_waiting_ns = 0;
  double average_calls_per_step = 0;
  double dataloader_pct = 0;
  double gpu_idle_waiting_pct = 0;

  std::int64_t longest_call_ns = 0;
  std::int64_t longest_call_step = -1;  // the step that made it
  Occurrences call_sites;               // the longest outermost calls in the steps, by time

  // The iterator class in the span name tells how the DataLoader was built:
  // "_SingleProcessDataLoaderIter" means num_workers=0 (batches load on the training thread),
  // "_MultiProcessingDataLoaderIter" means worker processes.
  bool single_process_loader = false;
  bool multi_process_loader = false;
};

DataPipelineResult analyze_data_pipeline(const TraceModel& model, const AnalysisContext& ctx);

}  // namespace ferret
