#include "gen/kineto_emitter.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace ferret::kineto {

double rounded(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

std::vector<Interval> merged_intervals(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& iv : v) {
    if (!out.empty() && iv.first <= out.back().second)
      out.back().second = std::max(out.back().second, iv.second);
    else
      out.push_back(iv);
  }
  return out;
}

std::int64_t union_length(std::vector<Interval> v) {
  std::int64_t total = 0;
  for (const auto& [s, e] : merged_intervals(std::move(v))) total += e - s;
  return total;
}

std::int64_t overlap_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::int64_t total = 0;
  for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    const std::int64_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (hi > lo) total += hi - lo;
    if (a[i].second < b[j].second)
      ++i;
    else
      ++j;
  }
  return total;
}

std::string rank_list(int n) {
  std::string ranks;
  for (int r = 0; r < n; ++r) ranks += fmt::format("{}{}", r ? ", " : "", r);
  return ranks;
}

// ---------------------------------------------------------------------------------------------
Args& Args::integer(std::string_view key, std::int64_t value) {
  key_(key);
  append_int(text_, value);
  return *this;
}

Args& Args::string(std::string_view key, std::string_view value) {
  key_(key);
  append_json_string(text_, value);
  return *this;
}

Args& Args::raw(std::string_view key, std::string_view json) {
  key_(key);
  text_ += json;
  return *this;
}

Args& Args::ratio(std::string_view key, std::uint64_t numerator, std::uint64_t denominator, int decimals) {
  key_(key);
  append_ratio(text_, numerator, denominator, decimals);
  return *this;
}

Args& Args::merge(const Args& other) {
  if (!other.text_.empty()) {
    if (!text_.empty()) text_ += ", ";
    text_ += other.text_;
  }
  return *this;
}

void Args::key_(std::string_view key) {
  if (!text_.empty()) text_ += ", ";
  append_json_string(text_, key);
  text_ += ": ";
}

Args shapes(std::string_view dims, std::string_view types) {
  return Args().raw("Input Dims", dims).raw("Input type", types);
}

namespace {
std::string triplet(const std::array<std::int64_t, 3>& v) { return fmt::format("[{}, {}, {}]", v[0], v[1], v[2]); }
}  // namespace

Args kernel_args(const KernelShape& k, std::int64_t external_id, std::int32_t device, std::int32_t stream,
                 std::int64_t correlation) {
  const std::int64_t blocks = k.grid[0] * k.grid[1] * k.grid[2];
  const std::int64_t warps_per_block = (k.block[0] * k.block[1] * k.block[2] + 31) / 32;
  Args a;
  a.integer("External id", external_id)
      .integer("queued", 0)
      .integer("device", device)
      .integer("context", 1)
      .integer("stream", stream)
      .integer("correlation", correlation)
      .integer("registers per thread", k.registers)
      .integer("shared memory", k.shared_memory)
      .ratio("blocks per SM", static_cast<std::uint64_t>(blocks), kH100Sms, 6)
      .ratio("warps per SM", static_cast<std::uint64_t>(blocks * warps_per_block), kH100Sms, 6)
      .raw("grid", triplet(k.grid))
      .raw("block", triplet(k.block))
      .integer("est. achieved occupancy %", k.occupancy_pct);
  return a;
}

void append_event(std::string& out, const TraceEvent& e, std::int64_t offset) {
  out += "{\"ph\": \"";
  out.push_back(e.phase);
  out += "\", ";
  const bool flow = e.phase == 's' || e.phase == 'f';
  if (flow) {
    out += "\"id\": ";
    append_int(out, e.flow_id);
    out += ", ";
  } else {
    out += "\"cat\": ";
    append_json_string(out, e.category);
    if (e.phase == 'i') out += ", \"s\": \"t\"";
    out += ", \"name\": ";
    append_json_string(out, e.name);
    out += ", ";
  }
  out += "\"pid\": ";
  append_int(out, e.pid);
  out += ", \"tid\": ";
  append_int(out, e.tid);
  out += ", \"ts\": ";
  append_micros(out, e.ts + offset);
  if (e.phase == 'X') {
    out += ", \"dur\": ";
    append_micros(out, e.dur);
  }
  if (flow) {
    out += ", \"cat\": \"ac2g\", \"name\": \"ac2g\"";
    if (e.phase == 'f') out += ", \"bp\": \"e\"";
  }
  if (!e.args.empty()) {
    out += ", \"args\": {";
    out += e.args;
    out += "}";
  }
  out += "}";
}

void sort_for_writing(std::vector<TraceEvent>& events) {
  std::stable_sort(events.begin(), events.end(),
                   [](const TraceEvent& a, const TraceEvent& b) { return a.ts != b.ts ? a.ts < b.ts : a.dur > b.dur; });
}

void write_events(TraceWriter& writer, const std::vector<TraceEvent>& events, std::int64_t offset) {
  std::string text;
  for (const TraceEvent& e : events) {
    text.clear();
    append_event(text, e, offset);
    writer.event(text);
  }
}

// ---------------------------------------------------------------------------------------------
HostTimeline::HostTimeline(ProfilerIds& ids, Random& rng, Process process, bool record, CopyCallDraws copy_draws)
    : ids_(ids), rng_(rng), process_(process), record_(record), copy_draws_(copy_draws) {}

void HostTimeline::restart(std::int64_t now) {
  events_.clear();
  gpu_.clear();
  now_ = now;
}

void HostTimeline::open(std::string_view category, std::string_view name, const Args& extra) {
  Open o;
  o.external_id = ids_.external++;
  const std::int64_t ev_idx = ids_.event_index++;
  o.event.ts = now_;
  if (record_) {
    o.event.category = category;
    o.event.name = std::string(name);
    o.event.pid = process_.pid;
    o.event.tid = process_.tid;
    o.event.args = Args().integer("External id", o.external_id).merge(extra).integer("Ev Idx", ev_idx).text();
  }
  open_.push_back(std::move(o));
}

void HostTimeline::close() {
  if (open_.empty()) throw std::logic_error("HostTimeline::close without open");
  TraceEvent e = std::move(open_.back().event);
  open_.pop_back();
  e.dur = now_ - e.ts;
  if (e.dur <= 0) throw std::logic_error("host span of zero length: " + e.name);
  if (record_) events_.push_back(std::move(e));
}

void HostTimeline::span(std::string_view category, std::string_view name, std::int64_t start, std::int64_t dur,
                        const Args& extra) {
  const std::int64_t external = ids_.external++;
  const std::int64_t ev_idx = ids_.event_index++;
  if (!record_) return;
  TraceEvent e;
  e.category = category;
  e.name = std::string(name);
  e.pid = process_.pid;
  e.tid = process_.tid;
  e.ts = start;
  e.dur = dur;
  e.args = Args().integer("External id", external).merge(extra).integer("Ev Idx", ev_idx).text();
  events_.push_back(std::move(e));
}

GpuSpan HostTimeline::launch(const KernelShape& k, std::int64_t kernel_ns, std::int64_t launch_ns, std::int32_t stream,
                             std::int64_t not_before, const Args& kernel_extra, std::string_view api,
                             std::int64_t cbid) {
  const std::int64_t correlation = ids_.correlation++;
  const std::int64_t external = innermost_external_id();
  // Braced lists evaluate in order: the queue gap is drawn before the launch latency.
  const std::int64_t start = std::max(
      {stream_free(stream) + rng_.between(800, 2000), now_ + launch_ns + rng_.between(1500, 4000), not_before});
  Launched l = launch_at(k, kernel_ns, launch_ns, stream, start, kernel_extra, api, cbid, correlation, external);
  l.span.kind = stream == process_.nccl_stream ? GpuKind::kCommunication : GpuKind::kKernel;
  stream_free_[stream] = l.span.end;
  gpu_.push_back(l.span);
  return l.span;
}

HostTimeline::Launched HostTimeline::launch_at(const KernelShape& k, std::int64_t kernel_ns, std::int64_t launch_ns,
                                               std::int32_t stream, std::int64_t start, const Args& kernel_extra,
                                               std::string_view api, std::int64_t cbid, std::int64_t correlation,
                                               std::int64_t external) {
  Launched l;
  runtime_event(api, launch_ns, correlation, external, cbid);
  flow('s', correlation, process_.pid, process_.tid, now_);
  if (record_) {
    TraceEvent kernel;
    kernel.category = "kernel";
    kernel.name = std::string(k.name);
    kernel.pid = process_.device;
    kernel.tid = stream;
    kernel.ts = start;
    kernel.dur = kernel_ns;
    kernel.args = kernel_args(k, external, process_.device, stream, correlation).merge(kernel_extra).text();
    l.kernel_event = push(std::move(kernel));
    l.flow_event = flow('f', correlation, process_.device, stream, start);
  }
  now_ += launch_ns;
  l.span = {start, start + kernel_ns, GpuKind::kKernel};
  return l;
}

void HostTimeline::memcpy(std::string_view name, std::int64_t bytes, std::int64_t copy_ns, bool host_waits,
                          std::int32_t stream) {
  const std::int64_t correlation = ids_.correlation++;
  const std::int64_t external = innermost_external_id();
  const std::int64_t queue_gap = rng_.between(800, 2000), issue_latency = rng_.between(2000, 4000);
  const std::int64_t start = std::max(stream_free(stream) + queue_gap, now_ + issue_latency);
  std::int64_t call_ns = 0;
  if (copy_draws_ == CopyCallDraws::kBoth) {
    const std::int64_t tail = rng_.between(2000, 5000), async_call = rng_.between(6000, 10000);
    call_ns = host_waits ? start + copy_ns + tail - now_ : async_call;
  } else {
    call_ns = host_waits ? start + copy_ns + rng_.between(2000, 5000) - now_ : rng_.between(6000, 10000);
  }
  runtime_event("cudaMemcpyAsync", call_ns, correlation, external, 51);
  flow('s', correlation, process_.pid, process_.tid, now_);
  if (record_) {
    TraceEvent copy;
    copy.category = "gpu_memcpy";
    copy.name = std::string(name);
    copy.pid = process_.device;
    copy.tid = stream;
    copy.ts = start;
    copy.dur = copy_ns;
    copy.args =
        Args()
            .integer("External id", external)
            .integer("device", process_.device)
            .integer("context", 1)
            .integer("stream", stream)
            .integer("correlation", correlation)
            .integer("bytes", bytes)
            .ratio("memory bandwidth (GB/s)", static_cast<std::uint64_t>(bytes), static_cast<std::uint64_t>(copy_ns), 6)
            .text();
    push(std::move(copy));
    flow('f', correlation, process_.device, stream, start);
  }
  stream_free_[stream] = start + copy_ns;
  now_ += call_ns;
  gpu_.push_back({start, start + copy_ns, GpuKind::kCopy});
}

void HostTimeline::runtime(std::string_view api, std::int64_t dur, std::int64_t cbid) {
  runtime_event(api, dur, ids_.correlation++, innermost_external_id(), cbid);
  now_ += dur;
}

void HostTimeline::synchronize(std::int32_t stream, bool sync_event) {
  const std::int64_t correlation = ids_.correlation++;
  const std::int64_t least = rng_.between(2000, 4000), after_drain = rng_.between(2000, 5000);
  const std::int64_t dur = std::max(least, stream_free(stream) + after_drain - now_);
  runtime_event("cudaStreamSynchronize", dur, correlation, innermost_external_id(), 131);
  if (sync_event && record_) {
    TraceEvent e;
    e.category = "cuda_sync";
    e.name = "Stream Sync";
    e.pid = process_.device;
    e.tid = stream;
    e.ts = now_ + 1000;
    e.dur = dur - 1500;
    e.args = Args()
                 .integer("External id", innermost_external_id())
                 .string("cuda_sync_kind", "Stream Sync")
                 .integer("stream", stream)
                 .integer("correlation", correlation)
                 .integer("device", process_.device)
                 .integer("context", 1)
                 .text();
    push(std::move(e));
  }
  now_ += dur;
}

void HostTimeline::item(std::int32_t stream) {
  const Args scalar = shapes("[[]]", "[\"float\"]");
  open("cpu_op", "aten::item", scalar);
  advance(rng_.between(2000, 4000));
  open("cpu_op", "aten::_local_scalar_dense", scalar);
  advance(rng_.between(3000, 6000));
  memcpy("Memcpy DtoH (Device -> Pageable)", 4, rng_.between(1200, 1800), true, stream);
  advance(rng_.between(1000, 3000));
  close();
  advance(rng_.between(1000, 2000));
  close();
}

std::int64_t HostTimeline::stream_free(std::int32_t stream) const {
  auto it = stream_free_.find(stream);
  return it == stream_free_.end() ? 0 : it->second;
}

void HostTimeline::runtime_event(std::string_view api, std::int64_t dur, std::int64_t correlation,
                                 std::int64_t external, std::int64_t cbid) {
  if (!record_) return;
  TraceEvent e;
  e.category = "cuda_runtime";
  e.name = std::string(api);
  e.pid = process_.pid;
  e.tid = process_.tid;
  e.ts = now_;
  e.dur = dur;
  e.args = Args().integer("External id", external).integer("cbid", cbid).integer("correlation", correlation).text();
  push(std::move(e));
}

std::int64_t HostTimeline::flow(char phase, std::int64_t id, std::int32_t pid, std::int32_t tid, std::int64_t ts) {
  if (!record_) return -1;
  TraceEvent e;
  e.phase = phase;
  e.flow_id = id;
  e.pid = pid;
  e.tid = tid;
  e.ts = ts;
  return push(std::move(e));
}

std::int64_t HostTimeline::push(TraceEvent&& e) {
  events_.push_back(std::move(e));
  return static_cast<std::int64_t>(events_.size()) - 1;
}

GpuSpan op_kernel(HostTimeline& t, std::span<const std::string_view> ops, const Args& outer_args, const KernelShape& k,
                  std::int64_t kernel_ns, std::int64_t launch_ns, std::int64_t overhead_ns, std::int32_t stream) {
  Random& rng = t.rng();
  bool outer = true;
  for (std::string_view op : ops) {
    t.open("cpu_op", op, outer ? outer_args : Args());
    outer = false;
    t.advance(overhead_ns / static_cast<std::int64_t>(ops.size()) + rng.between(200, 800));
  }
  const GpuSpan span = t.launch(k, kernel_ns, launch_ns, stream);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    t.advance(rng.between(500, 1500));
    t.close();
  }
  return span;
}

void open_autograd_node(HostTimeline& t, std::string_view node, std::int64_t sequence, std::int64_t overhead_ns) {
  const Args node_args =
      t.recording() ? Args().integer("Sequence number", sequence).integer("Fwd thread id", 1) : Args();
  t.open("cpu_op", t.recording() ? fmt::format("autograd::engine::evaluate_function: {}", node) : std::string(),
         node_args);
  t.advance(overhead_ns / 3 + t.rng().between(200, 600));
  t.open("cpu_op", node, node_args);
  t.advance(overhead_ns / 3 + t.rng().between(200, 600));
}

void open_all_reduce(HostTimeline& t, const Args& collective) { open_collective(t, collective, "nccl:all_reduce"); }

void open_collective(HostTimeline& t, const Args& collective, std::string_view annotation) {
  Random& rng = t.rng();
  t.open("cpu_op", "record_param_comms", collective);
  t.advance(rng.between(us(3), us(6)));
  t.open("user_annotation", annotation);
  t.advance(rng.between(us(2), us(4)));
  t.runtime("cudaEventRecord", rng.between(1500, 3000), 135);
  t.runtime("cudaStreamWaitEvent", rng.between(1200, 2500), 147);
}

void close_all_reduce(HostTimeline& t) {
  Random& rng = t.rng();
  t.advance(rng.between(us(2), us(4)));
  t.close();
  t.advance(rng.between(us(2), us(5)));
  t.close();
}

// ---------------------------------------------------------------------------------------------
void write_header(TraceWriter& writer, const TraceHeader& h) {
  writer.header("schemaVersion", "1");
  std::string properties = "[";
  for (int id = 0; id < h.devices; ++id) {
    properties += fmt::format(
        "{}\n    {{\n      \"id\": {}, \"name\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": {},\n"
        "      \"computeMajor\": 9, \"computeMinor\": 0,\n"
        "      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n"
        "      \"regsPerBlock\": 65536, \"regsPerMultiprocessor\": 65536, \"warpSize\": 32,\n"
        "      \"sharedMemPerBlock\": 49152, \"sharedMemPerMultiprocessor\": 233472,\n"
        "      \"numSms\": {}, \"sharedMemPerBlockOptin\": 232448\n    }}",
        id ? "," : "", id, kH100Memory, kH100Sms);
  }
  properties += "\n  ]";
  writer.header("deviceProperties", properties);
  if (h.distributed) {
    const DistributedInfo& d = *h.distributed;
    writer.header(
        "distributedInfo",
        fmt::format("{{\"backend\": \"nccl\", \"rank\": {}, \"world_size\": {}, \"pg_count\": 1, \"pg_config\": "
                    "[{{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": \"cuda:nccl\", "
                    "\"pg_size\": {}, \"ranks\": [{}]}}], \"nccl_version\": \"{}\"}}",
                    d.rank, d.world_size, d.world_size, rank_list(d.world_size), d.nccl_version));
  }
  writer.header("cuda_runtime_version", h.cuda_runtime_version);
  writer.header("cupti_version", h.cupti_version);
  writer.header("cuda_driver_version", h.cuda_driver_version);
  writer.header("record_shapes", "1");
  writer.header("profile_memory", h.profile_memory ? "1" : "0");
  writer.header("with_stack", "0");
  writer.header("trace_id", fmt::format("\"{:016X}{:016X}\"", h.trace_id_high, h.trace_id_low));
}

void write_metadata(TraceWriter& writer, const ProcessNames& n, std::int64_t ts) {
  std::string text;
  auto meta = [&](std::string_view kind, std::int32_t pid, std::int32_t tid, std::string_view key,
                  std::string_view value) {
    text = "{\"name\": ";
    append_json_string(text, kind);
    text += ", \"ph\": \"M\", \"ts\": ";
    append_micros(text, ts);
    text += fmt::format(", \"pid\": {}, \"tid\": {}, \"args\": {{", pid, tid);
    append_json_string(text, key);
    text += ": ";
    append_json_string(text, value);
    text += "}}";
    writer.event(text);
  };
  const std::string gpu = fmt::format("GPU {}", n.device);
  meta("process_name", n.pid, 0, "name", "python");
  meta("process_labels", n.pid, 0, "labels", "CPU");
  meta("thread_name", n.pid, n.main_tid, "name", fmt::format("thread {} (python)", n.main_tid));
  meta("thread_name", n.pid, n.autograd_tid, "name",
       fmt::format("thread {} (pt_autograd_{})", n.autograd_tid, n.device));
  meta("process_name", n.device, 0, "name", gpu);
  meta("process_labels", n.device, 0, "labels", gpu);
  for (std::int32_t stream : n.streams)
    meta("thread_name", n.device, stream, "name", fmt::format("stream {} ", stream));
}

void write_profiler_markers(TraceWriter& writer, std::int64_t start, std::int64_t end) {
  std::string text =
      "{\"ph\": \"X\", \"cat\": \"Trace\", \"name\": \"PyTorch Profiler (0)\", \"pid\": \"Spans\", "
      "\"tid\": \"PyTorch Profiler\", \"ts\": ";
  append_micros(text, start);
  text += ", \"dur\": ";
  append_micros(text, end - start);
  text += ", \"args\": {\"Op count\": 0}}";
  writer.event(text);
  text =
      "{\"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", \"s\": \"g\", \"pid\": \"Traces\", "
      "\"tid\": \"Trace PyTorch Profiler\", \"ts\": ";
  append_micros(text, start);
  text += "}";
  writer.event(text);
  text = "{\"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\", \"pid\": \"\", \"tid\": \"\", \"ts\": ";
  append_micros(text, end + us(35));
  text += "}";
  writer.event(text);
}

void write_trailer(TraceWriter& writer, std::string_view ground_truth_json, std::string_view trace_name,
                   std::int64_t base_time_ns) {
  writer.header("ferret_ground_truth", ground_truth_json);
  writer.header("traceName", fmt::format("\"{}\"", trace_name));
  writer.header("displayTimeUnit", "\"ms\"");
  writer.header("baseTimeNanoseconds", std::to_string(base_time_ns));
}

}  // namespace ferret::kineto
