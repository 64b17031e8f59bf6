// Writing a torch.profiler (Kineto) trace as the two `ferret gen` simulators build it: the single-
// rank scenarios (scenarios.cpp, scenario_*.cpp) and the multi-rank job (job_simulation.cpp, job.cpp).
//
// What is here is what both simulate the same way: deterministic randomness, the trace events and
// their serialization, the host timeline of one process (host spans with the profiler's ids,
// runtime calls, kernel launches and copies with their correlation and ac2g flows), the document's
// header, process metadata and closing records. The simulators keep their models, their own
// timing decisions and their ground truth. Every byte written here is part of the generators'
// output, which must stay a pure function of their options.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/trace_writer.h"

namespace ferret::kineto {

constexpr std::int64_t us(std::int64_t n) { return n * 1000; }

// A duration to draw uniformly from [lo, hi] ns; {v, v} is the fixed value v. Helpers take
// ranges and draw in a fixed order themselves, because C++ leaves the evaluation order of
// function arguments unspecified: two draws in one argument list would make the output depend
// on the compiler.
struct Range {
  std::int64_t lo, hi;
};

// Deterministic randomness. std::mt19937_64's output is fixed by the standard; the standard
// distributions are not (libstdc++ and libc++ differ), so the few used here are written out.
class Random {
 public:
  explicit Random(std::uint64_t seed) : engine_(seed) {}

  // Uniform in [lo, hi]. The modulo bias (< 2^-40 for these ranges) does not matter here.
  std::int64_t between(std::int64_t lo, std::int64_t hi) {
    const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
    return lo + static_cast<std::int64_t>(engine_() % span);
  }
  std::int64_t draw(Range r) { return between(r.lo, r.hi); }
  // `value` scaled by a random factor within +-`percent` percent (in steps of 0.1%).
  std::int64_t jitter(std::int64_t value, int percent) {
    return value * between(1000 - 10 * percent, 1000 + 10 * percent) / 1000;
  }
  std::uint64_t bits() { return engine_(); }

 private:
  std::mt19937_64 engine_;
};

// `value` rounded to `decimals` places, for the ground truth's shares.
double rounded(double value, int decimals = 6);

// Intervals [start, end) in ns.
using Interval = std::pair<std::int64_t, std::int64_t>;
// Sorts `v` and merges overlapping or touching intervals.
std::vector<Interval> merged_intervals(std::vector<Interval> v);
// Total length of the union.
std::int64_t union_length(std::vector<Interval> v);
// Length of the intersection of two sets of disjoint intervals, each sorted by start.
std::int64_t overlap_length(const std::vector<Interval>& a, const std::vector<Interval>& b);

// "0, 1, ..., n-1": a process group's ranks as Kineto lists them.
std::string rank_list(int n);

// ---------------------------------------------------------------------------------------------
// Kernels: the launch configuration CUPTI reports with each one.
struct KernelShape {
  std::string_view name;
  std::array<std::int64_t, 3> grid;
  std::array<std::int64_t, 3> block;
  std::int64_t registers;
  std::int64_t shared_memory;
  std::int64_t occupancy_pct;
};

// Builds the members of an args object in insertion order.
class Args {
 public:
  Args& integer(std::string_view key, std::int64_t value);
  Args& string(std::string_view key, std::string_view value);
  Args& raw(std::string_view key, std::string_view json);
  // numerator / denominator printed with `decimals` places, by integer arithmetic.
  Args& ratio(std::string_view key, std::uint64_t numerator, std::uint64_t denominator, int decimals);
  Args& merge(const Args& other);
  const std::string& text() const { return text_; }
  bool empty() const { return text_.empty(); }

 private:
  void key_(std::string_view key);
  std::string text_;
};

// "Input Dims" / "Input type" members as record_shapes=True writes them.
Args shapes(std::string_view dims, std::string_view types);

// The args CUPTI gives a kernel on an H100 (132 SMs).
Args kernel_args(const KernelShape& k, std::int64_t external_id, std::int32_t device, std::int32_t stream,
                 std::int64_t correlation);

// One trace event, serialized in Kineto's field order.
struct TraceEvent {
  char phase = 'X';           // 'X' span, 'i' instant, 's'/'f' flow
  std::string_view category;  // static text
  std::string name;
  std::int32_t pid = 0;
  std::int32_t tid = 0;
  std::int64_t ts = 0;  // ns; `offset` is added when written
  std::int64_t dur = 0;
  std::int64_t flow_id = 0;
  std::string args;  // members of the args object, already JSON
};

void append_event(std::string& out, const TraceEvent& e, std::int64_t offset);
// Time order, enclosing spans before the spans they contain.
void sort_for_writing(std::vector<TraceEvent>& events);
void write_events(TraceWriter& writer, const std::vector<TraceEvent>& events, std::int64_t offset);

// ---------------------------------------------------------------------------------------------
// Ids that run across the whole trace, as the profiler assigns them.
struct ProfilerIds {
  std::int64_t correlation = 0;     // CUPTI correlation ids of runtime calls
  std::int64_t external = 1;        // External id of CPU ops and annotations
  std::int64_t event_index = 0;     // "Ev Idx" of CPU ops and instants
  std::int64_t sequence = 0;        // autograd "Sequence number"
  std::int64_t collective_seq = 0;  // NCCL "Seq"
};

enum class GpuKind { kKernel, kCommunication, kCopy };

struct GpuSpan {
  std::int64_t start = 0, end = 0;
  GpuKind kind = GpuKind::kKernel;
};

// How a cudaMemcpyAsync's call length is drawn. The scenarios draw only the length they use; the
// job simulator draws both (the tail of a waiting call, then an asynchronous call's length) for
// every copy. Each generator's random stream, and so its output, depends on its way.
enum class CopyCallDraws { kUsedOnly, kBoth };

// One host process driving one GPU, as the profiler sees it: host spans on the current thread,
// runtime calls with their GPU work, flows between them. Times are ns on the simulator's clock.
// With record=false the same timeline runs (same ids, same draws) without building event text.
class HostTimeline {
 public:
  struct Process {
    std::int32_t pid = 0, tid = 0, device = 0;
    std::int32_t nccl_stream = -1;  // work launched here counts as communication
  };
  HostTimeline(ProfilerIds& ids, Random& rng, Process process, bool record = true,
               CopyCallDraws copy_draws = CopyCallDraws::kUsedOnly);

  std::int64_t now() const { return now_; }
  void advance(std::int64_t ns) { now_ += ns; }
  // A new step at `now`: events and GPU spans start empty; streams and ids carry on.
  void restart(std::int64_t now);
  // Host work continues on another thread (the main thread blocks while autograd runs).
  void on_thread(std::int32_t tid) { process_.tid = tid; }

  // Opens a host span (cpu_op or user_annotation) with Kineto's External id and Ev Idx.
  void open(std::string_view category, std::string_view name, const Args& extra = {});
  void close();
  // A closed host span at explicit times (e.g. work inside a span placed afterwards).
  void span(std::string_view category, std::string_view name, std::int64_t start, std::int64_t dur,
            const Args& extra = {});
  std::int64_t innermost_external_id() const { return open_.empty() ? 0 : open_.back().external_id; }

  // Where a launch's GPU work lands (its kernel and ac2g flow end), to be timed later.
  struct Launched {
    GpuSpan span;
    std::int64_t kernel_event = -1, flow_event = -1;  // indices in events(), -1 when not recorded
  };
  // cudaLaunchKernel from the innermost open op: the runtime span, the kernel on `stream`, and
  // the ac2g flow between them. The kernel starts when the stream is free, a little after the
  // launch call returns, and not before `not_before` (a cudaStreamWaitEvent dependency).
  GpuSpan launch(const KernelShape& k, std::int64_t kernel_ns, std::int64_t launch_ns, std::int32_t stream,
                 std::int64_t not_before = 0, const Args& kernel_extra = {}, std::string_view api = "cudaLaunchKernel",
                 std::int64_t cbid = 211);
  // The events of a launch whose kernel starts at `start` (the caller's timing); the stream and
  // the GPU spans are the caller's to update.
  Launched launch_at(const KernelShape& k, std::int64_t kernel_ns, std::int64_t launch_ns, std::int32_t stream,
                     std::int64_t start, const Args& kernel_extra, std::string_view api, std::int64_t cbid,
                     std::int64_t correlation, std::int64_t external);
  // cudaMemcpyAsync and its copy. `host_waits`: pageable memory makes the call synchronous.
  void memcpy(std::string_view name, std::int64_t bytes, std::int64_t copy_ns, bool host_waits, std::int32_t stream);
  // A runtime call without GPU work (cudaStreamWaitEvent, cudaMalloc, ...).
  void runtime(std::string_view api, std::int64_t dur, std::int64_t cbid);
  // cudaStreamSynchronize: the host waits until `stream` drains; `sync_event`: CUPTI's cuda_sync
  // activity ("Stream Sync") shows the wait on the GPU side.
  void synchronize(std::int32_t stream, bool sync_event = false);
  // tensor.item(): a 4-byte copy to pageable host memory on `stream`, which waits for everything
  // queued.
  void item(std::int32_t stream);

  std::int64_t stream_free(std::int32_t stream) const;
  void set_stream_free(std::int32_t stream, std::int64_t at) { stream_free_[stream] = at; }

  bool recording() const { return record_; }
  std::vector<TraceEvent>& events() { return events_; }
  std::vector<GpuSpan>& gpu() { return gpu_; }
  const std::vector<GpuSpan>& gpu() const { return gpu_; }
  std::size_t open_spans() const { return open_.size(); }
  Random& rng() { return rng_; }
  ProfilerIds& ids() { return ids_; }
  const Process& process() const { return process_; }

 protected:
  void runtime_event(std::string_view api, std::int64_t dur, std::int64_t correlation, std::int64_t external,
                     std::int64_t cbid);
  std::int64_t flow(char phase, std::int64_t id, std::int32_t pid, std::int32_t tid, std::int64_t ts);
  std::int64_t push(TraceEvent&& e);

  struct Open {
    TraceEvent event;
    std::int64_t external_id = 0;
  };
  ProfilerIds& ids_;
  Random& rng_;
  Process process_;
  bool record_;
  CopyCallDraws copy_draws_;
  std::int64_t now_ = 0;
  std::vector<Open> open_;
  std::vector<TraceEvent> events_;
  std::vector<GpuSpan> gpu_;
  std::map<std::int32_t, std::int64_t> stream_free_;
};

// An op chain ("aten::linear" > "aten::addmm") launching one kernel on `stream`, with host
// overheads around the launch as eager PyTorch spends them (dispatch, shape checks, allocation);
// `outer_args` go on the outermost op.
GpuSpan op_kernel(HostTimeline& t, std::span<const std::string_view> ops, const Args& outer_args, const KernelShape& k,
                  std::int64_t kernel_ns, std::int64_t launch_ns, std::int64_t overhead_ns, std::int32_t stream);

// The first two spans of an autograd node: evaluate_function > Node, with a third of
// `overhead_ns` after each.
void open_autograd_node(HostTimeline& t, std::string_view node, std::int64_t sequence, std::int64_t overhead_ns);

// DDP's reducer around one bucket's all-reduce: record_param_comms (with the collective's args) >
// nccl:all_reduce > cudaEventRecord, cudaStreamWaitEvent (the NCCL stream waits for the compute
// stream). The caller launches the NCCL kernel in between; close_all_reduce ends both spans.
void open_all_reduce(HostTimeline& t, const Args& collective);
void close_all_reduce(HostTimeline& t);
// The same around any collective, its annotation named as torch names it ("nccl:_all_gather_base").
void open_collective(HostTimeline& t, const Args& collective, std::string_view annotation);
inline void close_collective(HostTimeline& t) { close_all_reduce(t); }

// ---------------------------------------------------------------------------------------------
// The document around the events.
struct DistributedInfo {
  int rank = 0;
  int world_size = 1;
  std::string_view nccl_version;
};

struct TraceHeader {
  int devices = 1;  // H100s of the node in deviceProperties
  std::optional<DistributedInfo> distributed;
  std::string_view cuda_runtime_version, cupti_version, cuda_driver_version;
  bool profile_memory = false;
  std::uint64_t trace_id_high = 0, trace_id_low = 0;
};

inline constexpr std::int64_t kH100Memory = 85018279936;  // "NVIDIA H100 80GB HBM3" as CUDA reports it
inline constexpr std::int64_t kH100Sms = 132;

// The root keys Kineto writes before traceEvents.
void write_header(TraceWriter& writer, const TraceHeader& header);

// The process and thread names of one python process and its GPU, at `ts` ns.
struct ProcessNames {
  std::int32_t pid = 0, main_tid = 0, autograd_tid = 0, device = 0;
  std::vector<std::int32_t> streams;
};
void write_metadata(TraceWriter& writer, const ProcessNames& names, std::int64_t ts);

// Kineto's closing records: the profiler's own span and the iteration/window markers.
void write_profiler_markers(TraceWriter& writer, std::int64_t start, std::int64_t end);

// The root keys after traceEvents.
void write_trailer(TraceWriter& writer, std::string_view ground_truth_json, std::string_view trace_name,
                   std::int64_t base_time_ns);

}  // namespace ferret::kineto
