// `ferret watch`'s recorder (docs/WATCH.md): runs a command and samples, until it ends, the CPU
// use of its process tree (ingest/process_tree) and, when a GPU source is given, each GPU's
// utilisation and memory (ingest/gpu_source), into a WatchSeries.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "ingest/proc/gpu_source.h"
#include "model/watch_series.h"

namespace ferret {

// The sampling interval's bounds, in milliseconds. The floor: CPU time is counted in clock ticks
// of 10 ms, so a 50 ms sample resolves 0.2 cores and a shorter one mostly measures the tick.
inline constexpr int kWatchMinIntervalMs = 50;
inline constexpr int kWatchMaxIntervalMs = 60000;

struct WatchRequest {
  std::vector<std::string> command;  // argv; the first word looked up on PATH
  int interval_ms = 500;
  // SIGINT and SIGTERM sent to ferret by another process (kill, a batch system) are passed to the
  // command, and ferret goes on sampling until it ends. A terminal's Ctrl-C reaches the command
  // directly (same process group) and is not sent twice.
  bool forward_signals = true;
};

// The command could not be started (not found, not executable): what posix_spawnp said.
struct WatchSpawnError : std::runtime_error {
  WatchSpawnError(const std::string& what, int error) : std::runtime_error(what), error(error) {}
  int error;  // the errno posix_spawnp returned
};

// Runs the command with ferret's stdin, stdout, stderr and environment, and samples it every
// interval until it ends. `gpu` may be null (CPU side only); `gpu_note` then says why, and goes
// into the series as is.
WatchSeries watch_command(const WatchRequest& request, GpuSource* gpu, const std::string& gpu_note);

}  // namespace ferret
