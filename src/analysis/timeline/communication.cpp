#include "analysis/timeline/communication.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "analysis/classify.h"
#include "analysis/intervals.h"

namespace ferret {

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::kAllReduce: return "AllReduce";
    case Collective::kAllGather: return "AllGather";
    case Collective::kReduceScatter: return "ReduceScatter";
    case Collective::kBroadcast: return "Broadcast";
    case Collective::kReduce: return "Reduce";
    case Collective::kAllToAll: return "AllToAll";
    case Collective::kSendRecv: return "SendRecv";
    case Collective::kBarrier: return "Barrier";
    case Collective::kUnknown: return "Unknown";
  }
  return "Unknown";
}

namespace {

// Lower-case letters and digits only: "_all_gather_base" and "AllGather" both become "allgather...".
std::string squash(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c >= 'A' && c <= 'Z')
      out.push_back(static_cast<char>(c - 'A' + 'a'));
    else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
      out.push_back(c);
  }
  return out;
}

bool has(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

}  // namespace

Collective parse_collective(std::string_view text) {
  // The kernel's argument list ("(ncclDevComm*, unsigned long, ncclWork*)") says nothing here.
  const std::size_t paren = text.find('(');
  const std::string s = squash(paren == std::string_view::npos ? text : text.substr(0, paren));
  // Longest names first: "allreduce" and "reducescatter" both contain "reduce".
  if (has(s, "allreduce")) return Collective::kAllReduce;
  if (has(s, "reducescatter")) return Collective::kReduceScatter;
  if (has(s, "allgather")) return Collective::kAllGather;
  if (has(s, "alltoall")) return Collective::kAllToAll;
  if (has(s, "broadcast")) return Collective::kBroadcast;
  if (has(s, "sendrecv") || has(s, "send") || has(s, "recv")) return Collective::kSendRecv;
  if (has(s, "barrier")) return Collective::kBarrier;
  if (has(s, "reduce")) return Collective::kReduce;
  return Collective::kUnknown;
}

const char* nccl_protocol(std::string_view name) {
  name = name.substr(0, name.find('('));
  // Underscore-separated tokens; LL128 before LL.
  while (!name.empty()) {
    const std::size_t bar = name.find('_');
    const std::string_view token = name.substr(0, bar);
    if (token == "LL128") return "LL128";
    if (token == "LL") return "LL";
    if (token == "SIMPLE") return "SIMPLE";
    if (bar == std::string_view::npos) break;
    name.remove_prefix(bar + 1);
  }
  return "";
}

double bus_factor(Collective c, int n) {
  if (n < 1) return -1;
  const double nd = n;
  switch (c) {
    case Collective::kAllReduce: return 2.0 * (nd - 1) / nd;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll: return (nd - 1) / nd;
    case Collective::kBroadcast:
    case Collective::kReduce: return 1.0;
    default: return -1;
  }
}

int dtype_size(std::string_view dtype) {
  if (dtype.substr(0, 5) == "c10::") dtype.remove_prefix(5);
  const std::string s = squash(dtype);
  if (s == "float" || s == "float32" || s == "int" || s == "int32" || s == "uint32" || s == "complexhalf") return 4;
  if (s == "double" || s == "float64" || s == "long" || s == "longint" || s == "int64" || s == "uint64" ||
      s == "complexfloat")
    return 8;
  if (s == "half" || s == "float16" || s == "bfloat16" || s == "short" || s == "int16" || s == "uint16") return 2;
  if (s == "char" || s == "signedchar" || s == "byte" || s == "unsignedchar" || s == "int8" || s == "uint8" ||
      s == "bool" || s.rfind("float8", 0) == 0)
    return 1;
  if (s == "complexdouble") return 16;
  return 0;
}

namespace {

// Elements in a raw "Input Dims" value: the sum over its tensors of the product of their dims
// ("[[8, 1024, 8816]]" -> 72220672; "[[3], [4, 5]]" -> 23). -1 when it holds no tensor. A damaged
// value's huge dims saturate at the int64 maximum instead of overflowing.
std::int64_t elements_in_dims(std::string_view dims) {
  constexpr std::int64_t kSaturated = std::numeric_limits<std::int64_t>::max();
  std::int64_t total = -1, product = 1, number = 0;
  int depth = 0;
  bool in_number = false, tensor_has_dim = false;
  for (char c : dims) {
    if (c >= '0' && c <= '9') {
      number = number > (kSaturated - 9) / 10 ? kSaturated : number * 10 + (c - '0');
      in_number = true;
      continue;
    }
    if (in_number) {
      if (__builtin_mul_overflow(product, number, &product)) product = kSaturated;
      tensor_has_dim = true;
      number = 0;
      in_number = false;
    }
    if (c == '[') {
      ++depth;
      if (depth == 2) product = 1, tensor_has_dim = false;
    } else if (c == ']') {
      if (depth == 2 && tensor_has_dim && __builtin_add_overflow(total < 0 ? 0 : total, product, &total))
        total = kSaturated;
      --depth;
    }
  }
  return total;
}

// The first non-empty string in a raw "Input type" value (["float"] -> float).
std::string_view first_type(std::string_view types) {
  std::size_t i = 0;
  while (true) {
    const std::size_t open = types.find('"', i);
    if (open == std::string_view::npos) return {};
    const std::size_t close = types.find('"', open + 1);
    if (close == std::string_view::npos) return {};
    if (close > open + 1) return types.substr(open + 1, close - open - 1);
    i = close + 1;
  }
}

// Ranks in a raw "Process Group Ranks" value ("[0, 1]" -> 2); -1 when empty or absent.
int count_ranks(std::string_view ranks) {
  int digits_runs = 0;
  bool in_number = false;
  for (char c : ranks) {
    const bool digit = c >= '0' && c <= '9';
    if (digit && !in_number) ++digits_runs;
    in_number = digit;
  }
  return digits_runs > 0 ? digits_runs : -1;
}

// The nccl-tests size from element counts. `in`/`out` are -1 when unknown.
// Counts from a damaged trace can be anything: products saturate instead of overflowing.
std::int64_t saturating_product(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<std::int64_t>::max() : r;
}

std::int64_t nccl_test_elements(Collective kind, std::int64_t in, std::int64_t out, int group) {
  switch (kind) {
    case Collective::kAllGather:  // the whole gathered output
      if (out > 0) return out;
      return (in > 0 && group > 0) ? saturating_product(in, group) : -1;
    case Collective::kReduceScatter:  // the whole input being reduced
      if (in > 0) return in;
      return (out > 0 && group > 0) ? saturating_product(out, group) : -1;
    default: {
      const std::int64_t n = std::max(in, out);
      return n > 0 ? n : -1;
    }
  }
}

struct Resolved {
  Collective kind = Collective::kUnknown;
  std::int64_t bytes = -1;
  int group = -1;
  StrId process_group = kEmptyStr;
  std::int64_t seq = kNoId;
};

// Collective args (on the kernel or on record_param_comms) -> kind, size, group.
void apply_args(const TraceModel& model, const CollectiveArgs& a, Resolved& r) {
  const Collective kind = parse_collective(model.strings.view(a.collective_name));
  if (r.kind == Collective::kUnknown) r.kind = kind;
  int group = a.group_size > 0 ? a.group_size : count_ranks(model.strings.view(a.process_group_ranks));
  if (r.group < 0) r.group = group;
  if (r.process_group == kEmptyStr) r.process_group = a.process_group_name;
  if (r.seq == kNoId) r.seq = a.seq;
  const int size = dtype_size(model.strings.view(a.dtype));
  if (r.bytes < 0 && size > 0) {
    const std::int64_t n = nccl_test_elements(r.kind, a.in_msg_nelems, a.out_msg_nelems, r.group);
    if (n > 0) r.bytes = saturating_product(n, size);
  }
}

// A `nccl:<collective>` annotation (or cpu op): its name gives the kind; its recorded input
// shape and dtype give the size of the input tensor(s).
void apply_annotation(const TraceModel& model, EventIndex op, Resolved& r) {
  if (r.kind == Collective::kUnknown) r.kind = parse_collective(model.name_of(op).substr(5));
  if (r.bytes >= 0) return;
  const OpArgs* args = model.op_args_of(op);
  if (args == nullptr) return;
  const std::int64_t elements = elements_in_dims(model.strings.view(args->input_dims));
  const int size = dtype_size(first_type(model.strings.view(args->input_types)));
  if (elements <= 0 || size <= 0) return;
  const std::int64_t n = nccl_test_elements(r.kind, elements, -1, r.group);
  if (n > 0) r.bytes = saturating_product(n, size);
}

Resolved resolve(const TraceModel& model, EventIndex kernel) {
  Resolved r;
  const CollectiveArgs* own = model.collective_args_of(kernel);
  if (own != nullptr && own->collective_name != kEmptyStr) apply_args(model, *own, r);
  if (r.kind == Collective::kUnknown || r.bytes < 0 || r.group < 0) {
    // Walk out from the launch call: record_param_comms (args) wraps nccl:<name> (annotation).
    const EventIndex launch = model.relations.launcher_of(kernel);
    EventIndex annotation = kNoEvent;
    int depth = 0;
    for (EventIndex p = launch != kNoEvent ? model.relations.parent[launch] : kNoEvent; p != kNoEvent && depth < 32;
         p = model.relations.parent[p], ++depth) {
      const EventKind k = model.kind[p];
      if (k != EventKind::kCpuOp && k != EventKind::kUserAnnotation) continue;
      const CollectiveArgs* a = model.collective_args_of(p);
      if (a != nullptr && a->collective_name != kEmptyStr) {
        apply_args(model, *a, r);
        break;
      }
      if (annotation == kNoEvent && model.name_of(p).substr(0, 5) == "nccl:") annotation = p;
    }
    if (annotation != kNoEvent) apply_annotation(model, annotation, r);
  }
  if (r.kind == Collective::kUnknown) r.kind = parse_collective(model.name_of(kernel));
  return r;
}

struct DeviceIntervals {
  std::int32_t device;
  std::vector<Interval> comm;
  std::vector<Interval> compute;
  std::vector<Interval> exposed;  // comm - compute, once both are merged
};

DeviceIntervals& device_slot(std::vector<DeviceIntervals>& slots, std::int32_t device) {
  for (DeviceIntervals& s : slots)
    if (s.device == device) return s;
  slots.push_back({device, {}, {}, {}});
  return slots.back();
}

// One call from its event, device and resolved kind and size, with its bandwidths.
CollectiveCall make_call(const TraceModel& model, EventIndex e, std::int32_t device, const Resolved& r) {
  CollectiveCall c;
  c.kernel = e;
  c.device = device;
  c.kind = r.kind;
  c.start_ns = model.ts_ns[e];
  c.dur_ns = model.dur_ns[e];
  c.bytes = r.bytes;
  c.group_size = r.group;
  c.process_group = r.process_group;
  c.seq = r.seq;
  if (c.bytes >= 0 && c.dur_ns > 0) {
    c.algbw_gbps = static_cast<double>(c.bytes) / static_cast<double>(c.dur_ns);  // bytes/ns = GB/s
    // A group of one moves nothing: no bus bandwidth to speak of.
    const double factor = c.group_size >= 2 ? bus_factor(c.kind, c.group_size) : -1;
    if (factor >= 0) c.busbw_gbps = c.algbw_gbps * factor;
  }
  return c;
}

bool is_gloo_span(std::string_view name) { return name.starts_with("gloo:"); }

// Operators that only hand a collective over or wait for one: a thread inside them hides no
// communication.
bool is_collective_call_op(std::string_view name) {
  return name.starts_with("c10d::") || name.starts_with("gloo:") || name.starts_with("nccl:") ||
         name == "record_param_comms" || name.find("wait") != std::string_view::npos;
}

// gloo collectives: each `gloo:<collective>` span (on one of gloo's own threads, CPU tensors) is
// a call on kHostCollectiveDevice, sized from its recorded input like an nccl: annotation. What
// hides it is operator time on the process's other threads - the training thread computing while
// the collective runs; the rest of its time the training thread waits (DDP's end of backward).
void scan_gloo(const TraceModel& model, const AnalysisContext& ctx, std::vector<CollectiveCall>& calls,
               std::vector<DeviceIntervals>& slots) {
  // Names are interned: without a gloo name in the trace (NCCL jobs, single processes) no event
  // needs a look.
  bool any = false;
  for (std::size_t id = 0; id < model.strings.size() && !any; ++id)
    any = is_gloo_span(model.strings.view(static_cast<StrId>(id)));
  if (!any) return;
  const std::int64_t ws = ctx.window_start_ns, we = ctx.window_end_ns;
  std::vector<std::int8_t> gloo_name(model.strings.size(), -1);
  std::set<std::pair<std::int32_t, std::int32_t>> gloo_threads;
  std::vector<Interval> comm;
  for (std::size_t i = 0; i < model.size(); ++i) {
    const auto e = static_cast<EventIndex>(i);
    const EventKind k = model.kind[e];
    if ((k != EventKind::kUserAnnotation && k != EventKind::kCpuOp) || model.phase[e] != 'X') continue;
    const StrId name = model.name[e];
    if (gloo_name[name] < 0) gloo_name[name] = is_gloo_span(model.strings.view(name)) ? 1 : 0;
    if (gloo_name[name] != 1) continue;
    gloo_threads.insert({model.pid[e], model.tid[e]});
    const std::int64_t start = model.ts_ns[e], end = start + model.dur_ns[e];
    if (end <= ws || start >= we || model.dur_ns[e] <= 0) continue;
    comm.push_back({std::max(start, ws), std::min(end, we)});
    if (start < ws) continue;  // a call belongs to the window it starts in
    Resolved r;
    r.group = model.info.distributed.world_size > 0 ? model.info.distributed.world_size : -1;
    apply_annotation(model, e, r);
    calls.push_back(make_call(model, e, kHostCollectiveDevice, r));
  }
  if (comm.empty()) return;
  std::set<std::int32_t> gloo_pids;
  for (const auto& [pid, tid] : gloo_threads) gloo_pids.insert(pid);
  DeviceIntervals& slot = device_slot(slots, kHostCollectiveDevice);
  slot.comm = std::move(comm);
  std::vector<std::int8_t> handover(model.strings.size(), -1);
  for (std::size_t i = 0; i < model.size(); ++i) {
    const auto e = static_cast<EventIndex>(i);
    if (model.kind[e] != EventKind::kCpuOp || model.phase[e] != 'X' || !gloo_pids.contains(model.pid[e])) continue;
    if (gloo_threads.contains({model.pid[e], model.tid[e]})) continue;
    const std::int64_t start = model.ts_ns[e], end = start + model.dur_ns[e];
    if (end <= ws || start >= we) continue;
    const StrId name = model.name[e];
    if (handover[name] < 0) handover[name] = is_collective_call_op(model.strings.view(name)) ? 1 : 0;
    if (handover[name] == 1) continue;
    slot.compute.push_back({std::max(start, ws), std::min(end, we)});
  }
}

// One pass over the kernels: communication calls (resolved), and per device the communication
// and compute intervals clipped to the window. `slots` may be null when only calls are wanted;
// with them, gloo's host collectives join the calls (scan_gloo).
std::vector<CollectiveCall> scan(const TraceModel& model, const AnalysisContext& ctx,
                                 std::vector<DeviceIntervals>* slots) {
  std::vector<CollectiveCall> calls;
  if (slots != nullptr) scan_gloo(model, ctx, calls, *slots);
  // Names are interned: classify each distinct kernel name once.
  std::vector<std::int8_t> comm_name(model.strings.size(), -1);
  const std::int64_t ws = ctx.window_start_ns, we = ctx.window_end_ns;
  for (std::size_t i = 0; i < model.size(); ++i) {
    if (model.kind[i] != EventKind::kKernel) continue;
    const auto e = static_cast<EventIndex>(i);
    const std::int32_t device = model.pid[e];
    if (!ctx.counts_gpu_event(model, e)) continue;
    const std::int64_t start = model.ts_ns[e], end = start + model.dur_ns[e];
    if (end <= ws || start >= we) continue;
    const StrId name = model.name[e];
    if (comm_name[name] < 0) comm_name[name] = is_communication_kernel(model.strings.view(name)) ? 1 : 0;
    const bool comm = comm_name[name] == 1;
    if (slots != nullptr) {
      DeviceIntervals& slot = device_slot(*slots, device);
      (comm ? slot.comm : slot.compute).push_back({std::max(start, ws), std::min(end, we)});
    }
    if (!comm || start < ws) continue;  // a call belongs to the window it starts in
    const Resolved r = resolve(model, e);
    CollectiveCall c = make_call(model, e, device, r);
    c.protocol = nccl_protocol(model.strings.view(name));
    calls.push_back(c);
  }
  std::sort(calls.begin(), calls.end(), [](const CollectiveCall& a, const CollectiveCall& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.kernel < b.kernel;
  });
  return calls;
}

}  // namespace

std::vector<CollectiveCall> collect_collectives(const TraceModel& model, const AnalysisContext& ctx) {
  return scan(model, ctx, nullptr);
}

ParallelStyleShare parallel_style(std::int64_t all_reduce_ns, std::int64_t sharded_ns, std::int64_t all_to_all_ns,
                                  std::int64_t all_collectives_ns) {
  ParallelStyleShare out;
  if (all_collectives_ns <= 0) return out;
  const std::int64_t top = std::max({all_reduce_ns, sharded_ns, all_to_all_ns});
  if (2 * top < all_collectives_ns) return out;
  out.style = top == all_to_all_ns ? ParallelStyle::kAllToAll
              : top == sharded_ns  ? ParallelStyle::kSharded
                                   : ParallelStyle::kReplicated;
  out.share = static_cast<double>(top) / static_cast<double>(all_collectives_ns);
  return out;
}

const char* parallel_style_phrase(ParallelStyle s) {
  switch (s) {
    case ParallelStyle::kReplicated: return "all-reduce (replicated gradients, as DDP)";
    case ParallelStyle::kSharded: return "all-gather and reduce-scatter (sharded parameters, as FSDP or ZeRO)";
    case ParallelStyle::kAllToAll: return "all-to-all (sharded embedding tables or experts)";
    default: return "";
  }
}

namespace {

// Per collective: calls, time, bytes, bandwidths (algorithm and bus), and the parallelism style
// the mix of collectives suggests.
void summarise_by_collective(CommunicationResult& result) {
  std::array<CollectiveStats, kCollectiveCount> stats{};
  std::array<double, kCollectiveCount> bus_bytes{}, bus_time{};
  std::array<bool, kCollectiveCount> mixed_groups{};
  for (int k = 0; k < kCollectiveCount; ++k) stats[static_cast<std::size_t>(k)].kind = static_cast<Collective>(k);
  for (const CollectiveCall& c : result.calls) {
    const auto k = static_cast<std::size_t>(c.kind);
    CollectiveStats& s = stats[k];
    if (s.calls == 0)
      s.group_size = c.group_size;
    else if (s.group_size != c.group_size)
      mixed_groups[k] = true;
    ++s.calls;
    s.time_ns += c.dur_ns;
    if (c.bytes >= 0) {
      ++s.sized_calls;
      ++result.sized_calls;
      if (__builtin_add_overflow(s.bytes, c.bytes, &s.bytes)) s.bytes = std::numeric_limits<std::int64_t>::max();
      s.sized_time_ns += c.dur_ns;
    }
    if (c.group_size > 0) ++result.calls_with_group;
    if (c.busbw_gbps >= 0) {
      bus_bytes[k] += c.busbw_gbps * static_cast<double>(c.dur_ns);
      bus_time[k] += static_cast<double>(c.dur_ns);
      if (c.bytes >= kLargeMessageBytes && c.busbw_gbps > s.best_large_busbw_gbps) {
        s.best_large_busbw_gbps = c.busbw_gbps;
        s.best_large_bytes = c.bytes;
      }
    }
  }
  for (std::size_t k = 0; k < stats.size(); ++k) {
    CollectiveStats& s = stats[k];
    if (s.calls == 0) continue;
    if (mixed_groups[k]) s.group_size = -1;
    if (s.sized_time_ns > 0) s.algbw_gbps = static_cast<double>(s.bytes) / static_cast<double>(s.sized_time_ns);
    if (bus_time[k] > 0) s.busbw_gbps = bus_bytes[k] / bus_time[k];
    result.by_collective.push_back(s);
  }
  std::sort(result.by_collective.begin(), result.by_collective.end(),
            [](const CollectiveStats& a, const CollectiveStats& b) { return a.time_ns > b.time_ns; });
  {
    std::int64_t by_kind[kCollectiveCount] = {}, all = 0;
    for (const CollectiveStats& s : result.by_collective)
      by_kind[static_cast<int>(s.kind)] += s.time_ns, all += s.time_ns;
    result.style = parallel_style(
        by_kind[static_cast<int>(Collective::kAllReduce)],
        by_kind[static_cast<int>(Collective::kAllGather)] + by_kind[static_cast<int>(Collective::kReduceScatter)],
        by_kind[static_cast<int>(Collective::kAllToAll)], all);
  }
}

// Peer waits: per (collective, bytes, group size, process group), the excess over the fastest
// call; of it, what costs time is the part in the kernel's exposed tail (docs/DISTRIBUTED.md).
void measure_peer_waits(CommunicationResult& result) {
  std::map<std::tuple<int, std::int64_t, std::int32_t, StrId>, std::vector<const CollectiveCall*>> same_calls;
  for (const CollectiveCall& c : result.calls)
    if (c.bytes > 0 && c.kind != Collective::kBarrier && c.kind != Collective::kUnknown)
      same_calls[{static_cast<int>(c.kind), c.bytes, c.group_size, c.process_group}].push_back(&c);
  for (const auto& [key, calls] : same_calls) {
    if (calls.size() < kPeerWaitMinCalls) continue;
    std::int64_t fastest = calls.front()->dur_ns;
    for (const CollectiveCall* c : calls) fastest = std::min(fastest, c->dur_ns);
    for (const CollectiveCall* c : calls) {
      const std::int64_t wait = c->dur_ns - fastest;
      result.peer_wait_ns += wait;
      result.peer_wait_basis_ns += c->dur_ns;
      result.peer_wait_floor_ns += fastest;
      result.peer_wait_exposed_ns += std::min(wait, std::max<std::int64_t>(0, c->exposed_ns - fastest));
      result.peer_wait_exposed_basis_ns += c->exposed_ns;
    }
  }
}

}  // namespace

CommunicationResult analyze_communication(const TraceModel& model, const AnalysisContext& ctx) {
  CommunicationResult result;
  const DistributedInfo& dist = model.info.distributed;
  result.backend = dist.backend;
  result.rank = dist.rank;
  result.world_size = dist.world_size;
  result.window_ns = ctx.window_ns();

  std::vector<DeviceIntervals> slots;
  result.calls = scan(model, ctx, &slots);
  result.present = !result.calls.empty();
  result.on_host = result.present && std::all_of(result.calls.begin(), result.calls.end(), [](const CollectiveCall& c) {
                     return c.device == kHostCollectiveDevice;
                   });

  summarise_by_collective(result);

  // Exposure: on each device, communication minus compute; across devices, the union (wall time
  // during which some device waits on communication that nothing hides).
  std::vector<Interval> comm_all, exposed_all;
  for (DeviceIntervals& slot : slots) {
    merge_intervals(slot.comm);
    merge_intervals(slot.compute);
    if (slot.comm.empty()) continue;
    const std::int64_t comm = total_length(slot.comm);
    result.comm_device_ns += comm;
    result.overlapped_ns += total_length(intersect(slot.comm, slot.compute));
    slot.exposed = subtract(slot.comm, slot.compute);
    comm_all.insert(comm_all.end(), slot.comm.begin(), slot.comm.end());
    exposed_all.insert(exposed_all.end(), slot.exposed.begin(), slot.exposed.end());
  }
  for (CollectiveCall& c : result.calls)
    for (const DeviceIntervals& slot : slots)
      if (slot.device == c.device) c.exposed_ns = covered_length(slot.exposed, c.start_ns, c.start_ns + c.dur_ns);
  merge_intervals(comm_all);
  merge_intervals(exposed_all);
  result.comm_ns = total_length(comm_all);
  result.exposed_ns = total_length(exposed_all);
  if (result.window_ns > 0) {
    result.comm_share = static_cast<double>(result.comm_ns) / static_cast<double>(result.window_ns);
    result.exposed_share = static_cast<double>(result.exposed_ns) / static_cast<double>(result.window_ns);
  }
  if (result.comm_device_ns > 0)
    result.overlap_share = static_cast<double>(result.overlapped_ns) / static_cast<double>(result.comm_device_ns);

  measure_peer_waits(result);

  for (const Step& s : ctx.steps) {
    CommunicationStep row;
    row.step = s.number;
    row.duration_ns = s.end_ns - s.start_ns;
    row.comm_ns = covered_length(comm_all, s.start_ns, s.end_ns);
    row.exposed_ns = covered_length(exposed_all, s.start_ns, s.end_ns);
    if (row.duration_ns > 0) {
      row.comm_share = static_cast<double>(row.comm_ns) / static_cast<double>(row.duration_ns);
      row.exposed_share = static_cast<double>(row.exposed_ns) / static_cast<double>(row.duration_ns);
    }
    result.steps.push_back(row);
  }
  return result;
}

}  // namespace ferret
