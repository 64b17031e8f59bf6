// What every `ferret gen scenario` model builds its steps with: the simulated machine (one Python
// process driving GPU 0 of an H100 node), a step's timeline, the Scenario interface and the op
// chains the models share. Each scenario lives in a scenario_<name>.cpp of its own and is
// registered once, in the table of gen/scenarios.cpp.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string_view>

#include <nlohmann/json.hpp>

#include "gen/kineto_emitter.h"

namespace ferret::scenario {

using kineto::Args;
using kineto::GpuKind;
using kineto::GpuSpan;
using kineto::KernelShape;
using kineto::Random;
using kineto::Range;
using kineto::rounded;
using kineto::shapes;
using kineto::TraceEvent;
using kineto::us;

// The simulated machine: one Python process driving GPU 0 of an H100 node.
inline constexpr std::int32_t kHostPid = 2917;
inline constexpr std::int32_t kMainTid = 2917;
inline constexpr std::int32_t kAutogradTid = 2985;  // torch's autograd engine thread for the CUDA device
inline constexpr std::int32_t kDevice = 0;
inline constexpr std::int32_t kComputeStream = 7;
inline constexpr std::int32_t kNcclStream = 20;

// One step's events on a timeline that starts at 0 (the step's start); the step is placed in
// the trace when it is written. Each step ends with the host waiting for the GPU (loss.item()),
// so no GPU work crosses from one step to the next, as in most training loops.
class StepTimeline : public kineto::HostTimeline {
 public:
  StepTimeline(kineto::ProfilerIds& ids, Random& rng)
      : HostTimeline(ids, rng, {kHostPid, kMainTid, kDevice, kNcclStream}) {}

  // Most work goes to the compute stream.
  using HostTimeline::launch;
  GpuSpan launch(const KernelShape& k, std::int64_t kernel_ns, std::int64_t launch_ns) {
    return launch(k, kernel_ns, launch_ns, kComputeStream);
  }
  using HostTimeline::memcpy;
  void memcpy(std::string_view name, std::int64_t bytes, std::int64_t copy_ns, bool host_waits) {
    memcpy(name, bytes, copy_ns, host_waits, kComputeStream);
  }
  void item() { HostTimeline::item(kComputeStream); }

  // A [memory] record of the caching allocator (profile_memory=True).
  void memory_record(std::int64_t bytes, std::uint64_t addr, std::int64_t total_allocated,
                     std::int64_t total_reserved) {
    TraceEvent e;
    e.phase = 'i';
    e.category = "cpu_instant_event";
    e.name = "[memory]";
    e.pid = kHostPid;
    e.tid = process().tid;
    e.ts = now_;
    Args a;
    a.integer("Total Reserved", total_reserved)
        .integer("Total Allocated", total_allocated)
        .integer("Bytes", bytes)
        .integer("Addr", static_cast<std::int64_t>(addr))
        .integer("Device Id", kDevice)
        .integer("Device Type", 1)
        .integer("Ev Idx", ids_.event_index++);
    e.args = a.text();
    events_.push_back(std::move(e));
  }

  // Everything recorded from `mark` on moves later by `delta`: used to insert a wait of a length
  // that is only known once the rest of the step is built.
  struct Mark {
    std::size_t events = 0, gpu = 0, open = 0;
    std::int64_t time = 0;
  };
  Mark mark() const { return {events_.size(), gpu_.size(), open_.size(), now_}; }
  void shift_since(const Mark& m, std::int64_t delta) {
    if (open_.size() != m.open) throw std::logic_error("shift_since with spans opened after the mark");
    for (std::size_t i = m.events; i < events_.size(); ++i) events_[i].ts += delta;
    for (std::size_t i = m.gpu; i < gpu_.size(); ++i) gpu_[i].start += delta, gpu_[i].end += delta;
    for (auto& [stream, free_at] : stream_free_)
      if (free_at >= m.time) free_at += delta;
    now_ += delta;
  }
};

// An op chain launching one kernel on the compute stream; draws kernel, launch, then overhead.
GpuSpan op_kernel(StepTimeline& t, std::initializer_list<std::string_view> ops, const Args& outer_args,
                  const KernelShape& k, Range kernel, Range launch, Range overhead);

// A scenario: a training step builder plus what it knows about itself.
class Scenario {
 public:
  explicit Scenario(Random& rng) : rng_(rng) {}
  virtual ~Scenario() = default;

  virtual int world_size() const { return 1; }
  virtual bool profiles_memory() const { return false; }
  // Builds one step after ProfilerStep#N opened at time 0; the runner closes it at t.now().
  virtual void build_step(StepTimeline& t) = 0;
  // Scenario-specific ground truth, after all steps.
  virtual void add_ground_truth(nlohmann::ordered_json& truth) const = 0;

 protected:
  Random& rng_;
};

// With worker processes the main process only dequeues a ready batch.
void short_dataloader_wait(StepTimeline& t);

// Host-to-device copy of a batch: aten::to > aten::_to_copy > aten::copy_ > cudaMemcpyAsync.
void copy_batch_to_device(StepTimeline& t, std::string_view dims, std::int64_t bytes, bool pinned);

// One autograd node: evaluate_function > Node > aten op, launching one kernel per entry of `work`
// (kernel durations drawn by the caller inside one braced list are evaluated in order).
struct KernelWork {
  const KernelShape* kernel;
  std::int64_t ns;
};

void backward_op(StepTimeline& t, std::string_view node, std::int64_t sequence, std::string_view op,
                 std::initializer_list<KernelWork> work, Range launch, Range overhead);

// The scenarios, one file each; gen/scenarios.cpp registers them under their names.
std::unique_ptr<Scenario> make_input_bound(Random& rng);
std::unique_ptr<Scenario> make_launch_bound(Random& rng);
std::unique_ptr<Scenario> make_compute_bound(Random& rng);
std::unique_ptr<Scenario> make_communication_heavy(Random& rng);
std::unique_ptr<Scenario> make_fragmented_memory(Random& rng);

}  // namespace ferret::scenario
