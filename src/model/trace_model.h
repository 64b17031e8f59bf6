// The columnar trace model: one row per trace event, typed side tables for the args that
// analyses read, and trace-level facts (devices, distributed info, versions, repairs).
//
// Every importer fills this model; every analysis reads only this model.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/column.h"
#include "model/string_table.h"

namespace ferret {

using EventIndex = std::uint32_t;
inline constexpr EventIndex kNoEvent = 0xFFFFFFFFu;
inline constexpr std::int64_t kNoId = INT64_MIN;  // absent correlation / External id / flow id

enum class EventKind : std::uint8_t {
  kCpuOp,
  kUserAnnotation,
  kGpuUserAnnotation,
  kPythonFunction,
  kCudaRuntime,  // also hip* runtime calls and mtia_* runtime
  kCudaDriver,   // cuLaunchKernel and friends
  kKernel,
  kMemcpy,
  kMemset,
  kSync,           // cuda_sync: GPU-side stream/event waits
  kCudaEvent,      // cuda_event: a cudaEventRecord reached on a stream (a marker, no GPU work)
  kMemoryInstant,  // [memory] allocation / free records
  kInstant,        // other instant events
  kFlowStart,
  kFlowEnd,
  kCounter,
  kMetadata,
  kOverhead,  // profiler overhead spans
  kOther,
};
inline constexpr int kEventKindCount = static_cast<int>(EventKind::kOther) + 1;
const char* event_kind_name(EventKind kind);  // stable snake_case name used in JSON output

inline bool is_gpu_activity(EventKind k) {
  return k == EventKind::kKernel || k == EventKind::kMemcpy || k == EventKind::kMemset || k == EventKind::kSync ||
         k == EventKind::kCudaEvent || k == EventKind::kGpuUserAnnotation;
}
// Work that occupies a device: kernels, copies and fills (not waits, events or labels).
inline bool is_device_work(EventKind k) {
  return k == EventKind::kKernel || k == EventKind::kMemcpy || k == EventKind::kMemset;
}
inline bool is_launch_api(EventKind k) { return k == EventKind::kCudaRuntime || k == EventKind::kCudaDriver; }
inline bool is_host_span(EventKind k) {
  return k == EventKind::kCpuOp || k == EventKind::kUserAnnotation || k == EventKind::kPythonFunction ||
         k == EventKind::kCudaRuntime || k == EventKind::kCudaDriver || k == EventKind::kOverhead;
}

inline constexpr std::int32_t kNoPriority = INT32_MIN;  // CUDA priorities are 0 or negative

// Kineto (2025+) puts cuda_sync events of stream N on their own row, tid N + this offset.
inline constexpr std::int32_t kSyncRowTidOffset = 1000000;

// Kernel launch configuration and CUPTI's occupancy estimate.
struct KernelArgs {
  EventIndex event = kNoEvent;
  std::int32_t grid[3] = {0, 0, 0};
  std::int32_t block[3] = {0, 0, 0};
  std::int32_t registers_per_thread = -1;
  std::int32_t shared_memory = -1;
  float blocks_per_sm = -1;
  float warps_per_sm = -1;
  float est_occupancy_pct = -1;         // "est. achieved occupancy %"
  StrId limiting_factor = kEmptyStr;    // occupancy.limitingFactors ("REGS|SMEM"), CUDA 12+ Kineto
  std::int32_t priority = kNoPriority;  // stream priority the kernel ran at (CUDA 13.1+ Kineto)
};

// Memcpy / memset payload.
struct CopyArgs {
  EventIndex event = kNoEvent;
  std::int64_t bytes = -1;
  float bandwidth_gbps = -1;  // "memory bandwidth (GB/s)"
};

// A CUDA/HIP graph node, as torch >= 2.10 records it ("graph id", "graph node id") on kernels,
// memcpys and memsets (replayed, or recorded while captured) and on launch calls made during a
// capture. A table of its own, filled only when a trace carries the keys: older traces pay nothing
// and the kernel and copy rows keep their size.
struct GraphNodeArgs {
  EventIndex event = kNoEvent;
  std::int64_t graph_id = kNoId;
  std::int64_t node_id = kNoId;
};

// Shapes and sequencing recorded on CPU ops (record_shapes=True).
struct OpArgs {
  EventIndex event = kNoEvent;
  StrId input_dims = kEmptyStr;   // raw JSON text of "Input Dims"
  StrId input_types = kEmptyStr;  // raw JSON text of "Input type"
  // Raw JSON text of "Input Strides" (torch 2.1+) and "Concrete Inputs" (scalar arguments as
  // strings: a convolution's stride, padding and dilation; torch 2.1+): the roofline's cost model
  // needs them where the shapes alone do not fix the work.
  StrId input_strides = kEmptyStr;
  StrId concrete_inputs = kEmptyStr;
  std::int32_t fwd_thread_id = -1;
  std::int64_t sequence_number = kNoId;
};

// Collective arguments on record_param_comms ops and NCCL kernels.
struct CollectiveArgs {
  EventIndex event = kNoEvent;
  StrId collective_name = kEmptyStr;
  StrId dtype = kEmptyStr;
  std::int64_t in_msg_nelems = -1;
  std::int64_t out_msg_nelems = -1;
  std::int32_t group_size = -1;
  std::int32_t rank = -1;
  StrId process_group_name = kEmptyStr;
  StrId process_group_ranks = kEmptyStr;  // raw JSON text
  std::int64_t seq = kNoId;
  std::int64_t comms_id = kNoId;  // "Comms Id": the same collective on the cpu_op and its kernel
};

// Inductor-generated kernels recorded as cpu_ops (kernel_backend "triton", ...): what a roofline
// needs from the compiler's own estimate.
struct InductorKernelArgs {
  EventIndex event = kNoEvent;
  StrId backend = kEmptyStr;  // "kernel_backend"
  StrId hash = kEmptyStr;     // "kernel_hash"
  std::int64_t flop = -1;     // "kernel_flop"
  double num_gb = -1;         // "kernel_num_gb": bytes moved, in GB
};

// A python_function frame's ids (with_stack=True); the call tree is Relations::python_parent.
struct PythonFrameArgs {
  EventIndex event = kNoEvent;
  std::int64_t id = kNoId;         // "Python id"
  std::int64_t parent_id = kNoId;  // "Python parent id"
};

// A [memory] instant: one allocation (bytes > 0) or free (bytes < 0).
struct MemoryArgs {
  EventIndex event = kNoEvent;
  std::int8_t device_type = -1;  // 0 CPU, 1 CUDA (as PyTorch's c10::DeviceType)
  std::int16_t device_id = -1;
  std::uint64_t addr = 0;
  std::int64_t bytes = 0;
  std::int64_t total_allocated = -1;
  std::int64_t total_reserved = -1;
};

// A sample of a 'C' counter event: one row per numeric series in its args.
struct CounterSample {
  EventIndex event = kNoEvent;
  StrId series = kEmptyStr;
  double value = 0;
};

struct DeviceProperties {
  int id = -1;
  std::string name;
  std::int64_t total_global_mem = -1;
  int compute_major = -1;
  int compute_minor = -1;
  int num_sms = -1;
  int max_threads_per_sm = -1;
  int regs_per_sm = -1;
  int warp_size = -1;
  std::int64_t shared_mem_per_sm = -1;
};

struct DistributedInfo {
  bool present = false;
  std::string backend;
  int rank = -1;
  int world_size = -1;
  std::string nccl_version;
};

enum class FormatGeneration : std::uint8_t {
  kUnknown,
  kLegacyAutograd,  // bare array from torch.autograd.profiler without Kineto
  kKineto18,        // torch 1.8-1.9: Operator/Runtime/Kernel categories
  kKineto110,       // torch 1.10-1.13: cpu_op/kernel with async_cpu_to_gpu flows
  kKineto2,         // torch 2.x: ac2g flows, ns decimal timestamps, baseTimeNanoseconds
  kKinetoModern,    // torch >= 1.10 categories without the clues that date it more precisely
};
const char* format_generation_name(FormatGeneration g);

enum class Platform : std::uint8_t { kUnknown, kCuda, kRocm, kMtia, kCpuOnly };
const char* platform_name(Platform p);

// One kind of repair or skip, with how often it happened and the first place it did.
struct Issue {
  std::string reason;
  std::uint64_t count = 0;
  std::string first_location;  // "byte 1234 (event #17)"
};

// Everything ingestion repaired or had to leave out. Keyed by reason; ordered for stable output.
struct IngestReport {
  std::map<std::string, Issue> repairs;
  std::map<std::string, Issue> skips;
  std::vector<std::string> notes;  // other facts worth telling (e.g. "trace truncated")
  bool truncated = false;
  std::uint64_t truncated_at_byte = 0;

  void repair(const std::string& reason, const std::string& where, std::uint64_t n = 1);
  void skip(const std::string& reason, const std::string& where, std::uint64_t n = 1);
  std::uint64_t repair_count() const;
  std::uint64_t skip_count() const;
  // One line per repair and skip ("repaired 3 x <reason> (first at byte 12 (event #1))"), then the
  // notes, each after `note_prefix`: what every report and API says about the loading.
  std::vector<std::string> lines(std::string_view note_prefix = "") const;
};

struct TraceInfo {
  std::string source;       // file path or "-"
  std::string compression;  // "gzip", "zstd", "none"
  std::uint64_t compressed_bytes = 0;
  std::uint64_t json_bytes = 0;  // uncompressed size
  FormatGeneration generation = FormatGeneration::kUnknown;
  Platform platform = Platform::kUnknown;
  std::int64_t schema_version = -1;
  std::optional<std::int64_t> base_time_ns;  // baseTimeNanoseconds
  std::string display_time_unit;
  std::string trace_name;
  std::map<std::string, std::string> versions;  // cupti_version, cuda_runtime_version, ...
  std::map<std::string, std::string> settings;  // record_shapes, profile_memory, with_stack, ...
  std::vector<DeviceProperties> devices;
  DistributedInfo distributed;
  std::vector<std::string> other_keys;  // unknown top-level keys, kept by name
};

// What the steps of a trace are (Relations::step_marker_kind).
enum class StepMarker : std::uint8_t { kProfilerStep, kOptimizer, kDataLoader, kRepeatedOps };
const char* step_marker_name(StepMarker m);  // "profiler_step", "optimizer", "dataloader", "repeated_ops"

// One ProfilerStep#N (or inferred iteration, Relations::step_marker) with its GPU-extended window.
struct Step {
  std::int64_t number = -1;
  EventIndex event = kNoEvent;
  std::int64_t start_ns = 0;    // the span's start, or the previous step's end if that is later
  std::int64_t cpu_end_ns = 0;  // end of the ProfilerStep span itself
  std::int64_t end_ns = 0;      // extended to the end of GPU work launched within the step
  std::uint64_t kernels = 0;    // kernels launched from inside the step
  // The step's own GPU work: first start .. last end of the activity launched inside it, or the
  // GPU-side copy of the step (gpu_user_annotation ProfilerStep#N) when the trace has one.
  // Both 0 when the step launched nothing.
  std::int64_t gpu_start_ns = 0;
  std::int64_t gpu_end_ns = 0;
  bool gpu_span_from_annotation = false;
};

// How a capture's launch calls were matched to the nodes of the graph it made (model/graphs.h).
enum class GraphNodeMapping : std::uint8_t {
  kNone,         // not matched: replays of that graph stay with their graph launch
  kNodeId,       // the captured launches carry their graph node ids
  kLaunchOrder,  // k-th captured launch = k-th smallest node id of the graph (counts equal)
};
const char* graph_node_mapping_name(GraphNodeMapping m);

// One stream capture: cudaStreamBeginCapture .. cudaStreamEndCapture (hip* alike) on one thread,
// the launch calls made inside it (captured_launches[launches_begin .. launches_end), by start
// time), and the graph whose replays it was matched to.
struct GraphCapture {
  EventIndex begin = kNoEvent;
  EventIndex end = kNoEvent;  // kNoEvent: the trace ends inside the capture
  std::uint32_t launches_begin = 0;
  std::uint32_t launches_end = 0;
  std::int64_t graph_id = kNoId;  // kNoId: matched to no replayed graph
  GraphNodeMapping mapping = GraphNodeMapping::kNone;
};

// A replayed GPU activity: launched by a graph launch call (cudaGraphLaunch, hipGraphLaunch,
// cuGraphLaunch, sharing its correlation id), or carrying a graph id with no launch call found.
struct GraphReplay {
  EventIndex gpu = kNoEvent;
  EventIndex graph_launch = kNoEvent;     // kNoEvent when the correlation matched no call
  EventIndex captured_launch = kNoEvent;  // the launch call that captured its node, when known
  std::int64_t graph_id = kNoId;
  std::int64_t node_id = kNoId;
};

// Relations between events, built once after ingestion (see model/relations.h).
// Sparse tables (GPU activity, launches) are sorted by event index and found by binary search,
// so relations cost 4 bytes per event plus a few per GPU activity.
struct Relations {
  bool built = false;
  // Host span nesting per (pid, tid): the innermost enclosing host span, or kNoEvent.
  std::vector<EventIndex> parent;
  // Every kernel / memcpy / memset / sync activity, with the runtime/driver call that launched it
  // (matched by correlation id), or kNoEvent.
  std::vector<EventIndex> gpu_events;
  std::vector<EventIndex> gpu_launcher;
  // Every runtime/driver call with a correlation id, with its innermost enclosing CPU op (or user
  // annotation) and the GPU activities it launched: launch_gpu[launch_gpu_begin[i] .. [i+1]).
  std::vector<EventIndex> launches;
  std::vector<EventIndex> launch_op;
  std::vector<std::uint32_t> launch_gpu_begin;
  std::vector<EventIndex> launch_gpu;
  std::vector<Step> steps;           // complete steps only, in time order
  std::optional<Step> dropped_step;  // an incomplete trailing step, if one was excluded
  // What marks the steps. A trace without ProfilerStep#N (a notebook's or script's profile with no
  // schedule) still repeats something each iteration; ferret takes, in order: the optimizer's step
  // spans, the DataLoader's next-batch spans, or a sequence of top-level operators that repeats
  // on the thread that drives the work. Steps are then numbered 1.. and `step_marker` names it.
  StepMarker step_marker_kind = StepMarker::kProfilerStep;
  std::string step_marker;                 // "Optimizer.step#SGD.step", ...; empty for ProfilerStep#N
  std::size_t step_marker_ops = 0;         // kRepeatedOps: top-level operators per iteration
  std::uint64_t nesting_repairs = 0;       // children that outlived their parent
  std::uint64_t unmatched_gpu = 0;         // GPU activity whose correlation matched no launch
  std::uint64_t launches_without_gpu = 0;  // kernel launch calls with no GPU activity in the trace
  // GPU work launched before the trace began (queued before profiling started, running while it
  // did): no launch in the trace, and a correlation id below every launch's or a start before the
  // first launch call. It belongs to no step; analyses leave it out and reports count it apart.
  std::vector<bool> launched_before_trace_bits;  // per event; empty when there is none
  std::uint64_t launched_before_trace = 0;
  std::int64_t launched_before_trace_ns = 0;  // summed durations
  bool launched_before_trace_event(EventIndex e) const {
    return !launched_before_trace_bits.empty() && launched_before_trace_bits[e];
  }
  // CUDA/HIP graphs (model/graphs.h). All empty for a trace without captures or graph launches.
  std::vector<GraphCapture> graph_captures;  // by start time
  std::vector<EventIndex> captured_launches;
  std::vector<GraphReplay> graph_replays;  // by GPU event index
  // Python call tree: per row of TraceModel::python_frames, the frame whose "Python id" is its
  // "Python parent id", or kNoEvent (a root, or a parent the trace does not hold).
  std::vector<EventIndex> python_parent;
  std::uint64_t python_orphans = 0;  // frames naming a parent id absent from the trace

  EventIndex launcher_of(EventIndex gpu_event) const;
  EventIndex op_of_launch(EventIndex launch) const;
  std::vector<EventIndex> gpu_of_launch(EventIndex launch) const;
  const GraphReplay* replay_of(EventIndex gpu_event) const;  // nullptr: not a graph replay
};

class TraceModel {
 public:
  // Core columns: one entry per event, in file order.
  Column<EventKind> kind;
  Column<char> phase;              // 'X', 'i', 's', 'f', 'M', 'C', ...
  Column<std::uint16_t> category;  // id in categories (small table)
  Column<StrId> name;
  PackedInt64Column ts_ns;   // as written (relative to base_time_ns when present)
  PackedInt64Column dur_ns;  // 0 for instants
  // pid/tid: OS ids for host events, device index / CUDA stream for GPU events. Ids given as
  // non-numeric strings or beyond 32 bits get a negative synthetic id, named in id_labels.
  Column<std::int32_t> pid;
  Column<std::int32_t> tid;
  PackedInt64Column correlation;  // correlation for launches/GPU work; flow id for flows
  PackedInt64Column external_id;

  // Side tables, each in event order (so lookups by event are binary searches).
  Column<KernelArgs, 12> kernel_args;
  Column<CopyArgs, 12> copy_args;
  Column<OpArgs, 12> op_args;
  Column<CollectiveArgs, 12> collective_args;
  Column<MemoryArgs, 12> memory_args;
  Column<CounterSample, 12> counters;
  Column<GraphNodeArgs, 12> graph_nodes;
  Column<InductorKernelArgs, 12> inductor_kernels;
  Column<PythonFrameArgs, 12> python_frames;

  StringTable strings;
  StringTable categories;                             // few distinct values; ids fit 16 bits
  std::map<std::int32_t, std::string> process_names;  // from 'M' events
  std::map<std::pair<std::int32_t, std::int32_t>, std::string> thread_names;
  std::map<std::int32_t, std::string> id_labels;  // synthetic pid/tid -> the text it stands for

  TraceInfo info;
  IngestReport report;
  Relations relations;

  std::size_t size() const { return kind.size(); }
  std::string_view name_of(EventIndex e) const { return strings.view(name[e]); }
  std::string_view category_of(EventIndex e) const { return categories.view(category[e]); }
  std::int64_t end_ns(EventIndex e) const { return ts_ns[e] + dur_ns[e]; }
  std::size_t memory_bytes() const;
  // Keeps the first n events (and the side-table rows of those), freeing the rest; allocates
  // nothing, so it can repair a model after an append ran out of memory half-way.
  void truncate_events(std::size_t n);
  // The first broken invariant, as text, or "" when there is none: every event column as long as
  // `kind`, kinds in range, name/category/side-table string ids interned, synthetic pid/tid ids
  // labelled, side-table rows naming existing events in event order (one per event, several
  // per event for counters), relations (once built) sized to the events. ModelBuilder keeps
  // them; tests and debug builds check them after loading.
  std::string check_invariants() const;

  // Side-table lookups by event (binary search: side tables are appended in event order).
  const KernelArgs* kernel_args_of(EventIndex e) const;
  const CopyArgs* copy_args_of(EventIndex e) const;
  const OpArgs* op_args_of(EventIndex e) const;
  const CollectiveArgs* collective_args_of(EventIndex e) const;
  const GraphNodeArgs* graph_node_of(EventIndex e) const;
  const InductorKernelArgs* inductor_kernel_of(EventIndex e) const;
  const PythonFrameArgs* python_frame_of(EventIndex e) const;
  // The python_function frame that called frame `e`, or kNoEvent (needs relations).
  EventIndex python_parent_of(EventIndex e) const;
};

}  // namespace ferret
