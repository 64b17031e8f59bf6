#include "gen/scenarios.h"

#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gen/kineto_emitter.h"
#include "gen/scenario_step.h"

namespace ferret {

namespace {

using kineto::GpuKind;
using kineto::GpuSpan;
using kineto::Random;
using kineto::rounded;
using kineto::us;
using scenario::kAutogradTid;
using scenario::kComputeStream;
using scenario::kDevice;
using scenario::kHostPid;
using scenario::kMainTid;
using scenario::kNcclStream;
using scenario::Scenario;
using scenario::StepTimeline;

constexpr std::int64_t kBaseTimeNs = 1717171200000000000;  // baseTimeNanoseconds: 2024-05-31T16:00:00Z
constexpr std::int64_t kTraceStartNs = 2417385114000;      // first ts, relative to baseTimeNanoseconds
constexpr std::int64_t kFirstStepNumber = 5;               // schedule(wait=1, warmup=4): ProfilerStep#5 first

// The one registry of scenarios: --list, --help and the name lookup all read it.
struct ScenarioEntry {
  std::string_view name;
  std::string_view summary;
  std::unique_ptr<Scenario> (*make)(Random& rng);
};

constexpr ScenarioEntry kScenarios[] = {
    {"input-bound", "40% of every step waits in the DataLoader while the GPU idles", scenario::make_input_bound},
    {"launch-bound", "1400 kernels of 2-5 us per step behind 10-20 us launch calls: the GPU mostly idles",
     scenario::make_launch_bound},
    {"compute-bound", "large fp32 SIMT sgemm kernels (no Tensor Cores) keep the GPU over 90% busy",
     scenario::make_compute_bound},
    {"communication-heavy", "NCCL all-reduce over a slow network takes ~35% of each step, mostly exposed",
     scenario::make_communication_heavy},
    {"fragmented-memory", "variable sequence lengths leave reserved memory far above allocated",
     scenario::make_fragmented_memory},
};

std::unique_ptr<Scenario> make_scenario(std::string_view name, Random& rng) {
  for (const ScenarioEntry& entry : kScenarios)
    if (entry.name == name) return entry.make(rng);
  std::string known;
  for (const std::string& n : scenario_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument(fmt::format("unknown scenario \"{}\" (known: {})", name, known));
}

// The root keys Kineto writes before traceEvents, for an H100 node running torch 2.3.
void write_leading_header(TraceWriter& writer, const Scenario& scenario, Random& rng) {
  kineto::TraceHeader h;
  h.devices = scenario.world_size() > 1 ? 8 : 1;  // every GPU of the node is visible
  h.distributed = kineto::DistributedInfo{0, scenario.world_size(), "2.20.5"};
  h.cuda_runtime_version = "12040";
  h.cupti_version = "22";
  h.cuda_driver_version = "12040";
  h.profile_memory = scenario.profiles_memory();
  h.trace_id_high = rng.bits();  // separate statements: the draws are sequenced
  h.trace_id_low = rng.bits();
  kineto::write_header(writer, h);
}

void write_metadata(TraceWriter& writer, bool nccl_stream) {
  kineto::ProcessNames names{kHostPid, kMainTid, kAutogradTid, kDevice, {kComputeStream}};
  if (nccl_stream) names.streams.push_back(kNcclStream);
  kineto::write_metadata(writer, names, kTraceStartNs);
}

}  // namespace

const std::vector<ScenarioInfo>& scenario_list() {
  static const std::vector<ScenarioInfo> kList = [] {
    std::vector<ScenarioInfo> list;
    for (const ScenarioEntry& entry : kScenarios) list.push_back({std::string(entry.name), std::string(entry.summary)});
    return list;
  }();
  return kList;
}

std::vector<std::string> scenario_names() {
  std::vector<std::string> names;
  for (const ScenarioInfo& s : scenario_list()) names.push_back(s.name);
  return names;
}

ScenarioResult write_scenario(const ScenarioOptions& options) {
  if (options.steps < 1 || options.steps > 100000)
    throw std::invalid_argument(fmt::format("steps must be between 1 and 100000 (got {})", options.steps));
  // Mixing the name in keeps the scenarios' random streams apart for the same seed.
  std::uint64_t stream = 0;
  for (const char c : options.name) stream = stream * 131 + static_cast<unsigned char>(c);
  Random rng(options.seed * 0x9E3779B97F4A7C15ULL + stream);
  std::unique_ptr<Scenario> scenario = make_scenario(options.name, rng);

  OutputFile out(options.output, options.compression);
  TraceWriter writer(out);
  write_leading_header(writer, *scenario, rng);
  write_metadata(writer, scenario->world_size() > 1);

  kineto::ProfilerIds ids;
  ids.correlation = 41207;
  ids.sequence = 3174;
  std::int64_t step_start = kTraceStartNs + us(412);  // the profiler starts shortly before step 1
  std::int64_t total_step_ns = 0, busy_ns = 0, kernels = 0;
  for (int i = 0; i < options.steps; ++i) {
    StepTimeline t(ids, rng);
    t.open("user_annotation", fmt::format("ProfilerStep#{}", kFirstStepNumber + i));
    scenario->build_step(t);
    t.close();
    const std::int64_t step_ns = t.now();
    std::vector<std::pair<std::int64_t, std::int64_t>> kernel_spans;
    for (const GpuSpan& g : t.gpu()) {
      if (g.kind == GpuKind::kCopy) continue;
      if (g.end > step_ns) throw std::logic_error("GPU work outlives its step");
      kernel_spans.emplace_back(g.start, g.end);
    }
    kernels += static_cast<std::int64_t>(kernel_spans.size());
    busy_ns += kineto::union_length(std::move(kernel_spans));
    total_step_ns += step_ns;

    kineto::sort_for_writing(t.events());
    kineto::write_events(writer, t.events(), step_start);
    step_start += step_ns;
  }
  kineto::write_profiler_markers(writer, kTraceStartNs, step_start + us(20));

  nlohmann::ordered_json truth;
  truth["generator"] = "ferret gen scenario";
  truth["scenario"] = options.name;
  truth["seed"] = options.seed;
  truth["steps"] = options.steps;
  truth["first_step"] = kFirstStepNumber;
  truth["device"] = "NVIDIA H100 80GB HBM3";
  truth["step_ns"] = total_step_ns / options.steps;
  truth["kernels"] = kernels;
  truth["gpu_busy_share"] = rounded(static_cast<double>(busy_ns) / static_cast<double>(total_step_ns));
  scenario->add_ground_truth(truth);

  ScenarioResult result;
  result.ground_truth_json = truth.dump();
  kineto::write_trailer(writer, result.ground_truth_json,
                        fmt::format("/tmp/ferret-gen/{}-seed{}.pt.trace.json", options.name, options.seed),
                        kBaseTimeNs);
  writer.finish();
  out.close();
  result.events = writer.events();
  result.json_bytes = out.bytes_in();
  result.file_bytes = out.bytes_out();
  return result;
}

}  // namespace ferret
