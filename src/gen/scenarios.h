// Synthetic Kineto traces of known bottlenecks, for tests, benchmarks and demos.
//
// Each scenario simulates a torch 2.x training job on an H100 (host threads, CUDA streams, the
// profiler's ids and flows) whose bottleneck is known by construction. What was built in is
// written into the trace itself, under the top-level key "ferret_ground_truth", computed from the
// generated events (not from ferret's analyses). docs/GEN.md describes every scenario and field.
// Output is a pure function of (scenario, steps, seed): the same options give the same bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/trace_writer.h"

namespace ferret {

struct ScenarioInfo {
  std::string name;     // "input-bound", ...
  std::string summary;  // one line for --help and --list
};

// All scenarios, in a stable order.
const std::vector<ScenarioInfo>& scenario_list();
std::vector<std::string> scenario_names();

struct ScenarioOptions {
  std::string name;    // one of scenario_names()
  std::string output;  // "-" writes to stdout
  OutputCompression compression = OutputCompression::kNone;
  int steps = 10;  // ProfilerStep spans to write (1 .. 100000)
  std::uint64_t seed = 1;
};

struct ScenarioResult {
  std::string ground_truth_json;  // the "ferret_ground_truth" object as written
  std::uint64_t events = 0;
  std::uint64_t json_bytes = 0;  // uncompressed size
  std::uint64_t file_bytes = 0;
};

// Throws std::invalid_argument for an unknown name or a bad step count, std::runtime_error when
// the output cannot be written.
ScenarioResult write_scenario(const ScenarioOptions& options);

}  // namespace ferret
