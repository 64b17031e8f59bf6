// Trace summary: what is in a trace (counts by kind, time span, streams, threads, steps).
// The basis of `ferret info`.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/trace_model.h"

namespace ferret {

struct StreamSummary {
  std::int32_t device = 0;
  std::int32_t stream = 0;
  std::uint64_t kernels = 0, memcpys = 0, memsets = 0, other = 0;
  std::int64_t busy_ns = 0;  // summed durations (not the union)
};

struct ThreadSummary {
  std::int32_t pid = 0;
  std::int32_t tid = 0;
  std::string name;     // from thread_name metadata, or the id's label
  std::string process;  // from process_name metadata, or the id's label
  std::uint64_t events = 0;
};

struct TraceSummary {
  std::array<std::uint64_t, kEventKindCount> by_kind{};
  std::uint64_t events = 0;
  std::int64_t first_ns = 0, last_ns = 0;  // span of all timed events (relative ts)
  std::vector<StreamSummary> streams;
  std::vector<ThreadSummary> threads;
  // Newer profiler records, counted for `ferret info`.
  std::uint64_t python_frames = 0;            // python_function frames with their Python ids
  std::uint64_t inductor_kernels = 0;         // Inductor kernel cpu_ops (kernel_backend, ...)
  std::uint64_t hardware_counter_series = 0;  // distinct PM sampling series (hardware_counters)
};

TraceSummary summarize_trace(const TraceModel& model);

}  // namespace ferret
