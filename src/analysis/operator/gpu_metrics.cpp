#include "analysis/operator/gpu_metrics.h"

#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <unordered_map>

#include "analysis/classify.h"
#include "analysis/intervals.h"
#include "analysis/operator/tensor_cores.h"
#include "base/text.h"
#include "model/gpu_specs.h"
#include "model/relations.h"

namespace ferret {

namespace {

// What a kernel's name says, worked out once per distinct name.
enum KernelNameBits : std::uint8_t {
  kKnown = 1,
  kTensorCore = 2,
  kMatmulConv = 4,
  kCommunication = 8,
};

std::uint8_t kernel_name_flags(std::string_view name) {
  std::uint8_t flags = kKnown;
  if (is_communication_kernel(name)) return flags | kCommunication;
  if (is_tensor_core_kernel(name)) flags |= kTensorCore;
  if (is_matmul_or_conv_kernel(name)) flags |= kMatmulConv;
  return flags;
}

// One kernel on the device's timeline; blocks_per_sm <= 0 when its launch size is unknown.
struct KernelSpan {
  std::int64_t start;
  std::int64_t end;
  float blocks_per_sm;
};

struct DeviceAccumulator {
  DeviceMetrics metrics;
  std::vector<KernelSpan> kernels;
  double occupancy_weighted = 0;  // sum of occupancy% x clipped ns
  std::int64_t occupancy_ns = 0;
  double non_matmul_occupancy_weighted = 0;
  bool has_blocks_per_sm = false;
};

// |union of kernels| within the windows. Kernels are sorted by start.
std::int64_t busy_ns(const std::vector<KernelSpan>& kernels, const std::vector<Interval>& windows) {
  std::int64_t busy = 0;
  std::int64_t run_start = 0, run_end = 0;
  bool open = false;
  for (const KernelSpan& k : kernels) {
    if (open && k.start <= run_end) {
      run_end = std::max(run_end, k.end);
      continue;
    }
    if (open) busy += covered_length(windows, run_start, run_end);
    run_start = k.start;
    run_end = k.end;
    open = true;
  }
  if (open) busy += covered_length(windows, run_start, run_end);
  return busy;
}

// Integral over time of min(1, sum of running kernels' blocks per SM), within the windows (the
// plugin's "approximated SM efficiency"). Kernels are sorted by start; a min-heap of end times
// holds the running ones, so the sweep costs log(concurrent kernels) per kernel, not a sort of
// every start and end. The sum restarts from exactly 0 whenever nothing runs, so float rounding
// cannot leak into idle time.
double sm_busy_ns(const std::vector<KernelSpan>& kernels, const std::vector<Interval>& windows) {
  struct Running {
    std::int64_t end;
    float blocks_per_sm;
    bool operator>(const Running& o) const { return end > o.end; }
  };
  std::priority_queue<Running, std::vector<Running>, std::greater<Running>> running;
  double busy = 0;
  double blocks = 0;
  std::int64_t t = 0;
  auto advance_to = [&](std::int64_t to) {
    if (!running.empty() && to > t) busy += std::min(1.0, blocks) * static_cast<double>(covered_length(windows, t, to));
    t = std::max(t, to);
  };
  auto retire_until = [&](std::int64_t limit) {
    while (!running.empty() && running.top().end <= limit) {
      advance_to(running.top().end);
      blocks -= running.top().blocks_per_sm;
      running.pop();
      if (running.empty()) blocks = 0;
    }
  };
  for (const KernelSpan& k : kernels) {
    if (k.blocks_per_sm <= 0) continue;
    retire_until(k.start);
    advance_to(k.start);
    blocks += k.blocks_per_sm;
    running.push({k.end, k.blocks_per_sm});
  }
  retire_until(std::numeric_limits<std::int64_t>::max());
  return busy;
}

// Which PM-sampling metric a counter series (or its event name) is.
enum class HardwareMetric : std::uint8_t { kUnknown, kNone, kSmActive, kTensorActive };

HardwareMetric hardware_metric(std::string_view name) {
  auto starts = [&](std::string_view p) { return name.substr(0, p.size()) == p; };
  if (starts("sm__pipe_tensor") || starts("Tensor Active")) return HardwareMetric::kTensorActive;
  if (starts("sm__cycles_active") || starts("SM Active")) return HardwareMetric::kSmActive;
  return HardwareMetric::kNone;
}

struct CounterPoint {
  std::int64_t ts;
  double value;
};

// Time-weighted mean of a step function (each value holds until the next point) within the
// windows; the covered time goes to `covered_ns`. -1 when no interval falls in the windows.
double time_weighted_mean(std::vector<CounterPoint>& points, const std::vector<Interval>& windows,
                          std::int64_t& covered_ns) {
  std::stable_sort(points.begin(), points.end(),
                   [](const CounterPoint& a, const CounterPoint& b) { return a.ts < b.ts; });
  double weighted = 0;
  covered_ns = 0;
  for (std::size_t i = 0; i + 1 < points.size(); ++i) {
    const std::int64_t ns = covered_length(windows, points[i].ts, points[i + 1].ts);
    weighted += points[i].value * static_cast<double>(ns);
    covered_ns += ns;
  }
  return covered_ns > 0 ? weighted / static_cast<double>(covered_ns) : -1;
}

// The passes of analyze_gpu_metrics over one trace's window, sharing what they look up once: the
// windows, each device's accumulator, the kernels' name classes.
class GpuMetricsPasses {
 public:
  GpuMetricsPasses(const TraceModel& model, const AnalysisContext& ctx, std::vector<Interval> windows)
      : model_(model),
        ctx_(ctx),
        rel_(model.relations),
        windows_(std::move(windows)),
        window_ns_(total_length(windows_)),
        lo_(windows_.front().start),
        hi_(windows_.back().end),
        properties_of_(model.info),
        name_flags_(model.strings.size(), 0) {
    count_kernels_per_device();
  }

  // Pass 1: every kernel. GPU activity and the kernel-args side table are both in event order, so
  // one merge walk finds each kernel's launch configuration without a search.
  void kernels() {
    std::size_t args_row = 0;
    std::int32_t current_id = -1;
    DeviceAccumulator* current = nullptr;  // the last kernel's device: kernels come in runs per device
    const std::size_t args_rows = model_.kernel_args.size();
    for (const EventIndex e : rel_.gpu_events) {
      if (model_.kind[e] != EventKind::kKernel || !ctx_.counts_gpu_event(model_, e)) continue;
      const std::int64_t start = model_.ts_ns[e], end = model_.end_ns(e);
      const std::int64_t ns = clipped_ns(start, end);
      if (ns <= 0) continue;
      while (args_row < args_rows && model_.kernel_args[args_row].event < e) ++args_row;
      const KernelArgs* args =
          (args_row < args_rows && model_.kernel_args[args_row].event == e) ? &model_.kernel_args[args_row] : nullptr;
      if (model_.pid[e] != current_id || current == nullptr) {
        current_id = model_.pid[e];
        current = &device_of(current_id);
      }
      add_kernel(*current, e, start, end, ns, args);
    }
  }

  // Pass 2: kernels launched by Tensor-Core-eligible operators. A launch belongs to its innermost
  // CPU op; the op counts as eligible when it or an enclosing op is (aten::linear -> aten::addmm,
  // ConvolutionBackward0 -> aten::convolution_backward).
  void eligible_kernels() {
    op_eligible_.assign(model_.size(), -1);
    name_eligible_.assign(model_.strings.size(), -1);
    const bool has_replays = !rel_.graph_replays.empty();
    for (std::size_t i = 0; i < rel_.launches.size(); ++i) {
      if (rel_.launch_gpu_begin[i] == rel_.launch_gpu_begin[i + 1] || rel_.launch_op[i] == kNoEvent) continue;
      // A graph launch's kernels belong to the ops that captured them (below), not the op around it.
      if (has_replays && rel_.replay_of(rel_.launch_gpu[rel_.launch_gpu_begin[i]]) != nullptr) continue;
      if (!eligible(rel_.launch_op[i])) continue;
      for (std::uint32_t g = rel_.launch_gpu_begin[i]; g < rel_.launch_gpu_begin[i + 1]; ++g)
        count_eligible(rel_.launch_gpu[g]);
    }
    for (const GraphReplay& r : rel_.graph_replays) {
      const EventIndex op = r.captured_launch != kNoEvent ? rel_.op_of_launch(r.captured_launch) : kNoEvent;
      if (op != kNoEvent && eligible(op)) count_eligible(r.gpu);
    }
  }

  // Pass 3: PM sampling counters, per device (the counter events' pid) and metric.
  void counters() {
    if (model_.counters.empty()) return;
    std::uint16_t hw_category = 0;
    for (std::size_t c = 1; c < model_.categories.size(); ++c)
      if (model_.categories.view(static_cast<StrId>(c)) == "hardware_counters")
        hw_category = static_cast<std::uint16_t>(c);
    if (hw_category == 0) return;
    std::vector<HardwareMetric> metric_of(model_.strings.size(), HardwareMetric::kUnknown);
    auto metric = [&](StrId id) {
      HardwareMetric& m = metric_of[id];
      if (m == HardwareMetric::kUnknown) m = hardware_metric(model_.strings.view(id));
      return m;
    };
    for (const CounterSample& c : model_.counters) {
      const EventIndex e = c.event;
      if (model_.category[e] != hw_category || !ctx_.device_selected(model_.pid[e])) continue;
      if (devices_.find(model_.pid[e]) == devices_.end()) continue;  // only devices that ran kernels
      // The series is the metric ("sm__cycles_active...": 71.5) or a value of the event's metric.
      HardwareMetric m = metric(c.series);
      if (m == HardwareMetric::kNone) m = metric(model_.name[e]);
      if (m == HardwareMetric::kSmActive)
        sm_active_[model_.pid[e]].push_back({model_.ts_ns[e], c.value});
      else if (m == HardwareMetric::kTensorActive)
        tensor_active_[model_.pid[e]].push_back({model_.ts_ns[e], c.value});
    }
  }

  // Each device's shares, from what the passes summed.
  GpuMetricsResult result() {
    GpuMetricsResult result;
    for (auto& [id, acc] : devices_) result.devices.push_back(finish(id, acc));
    return result;
  }

 private:
  // Kernels per device, counted first so that each device reserves room for its own kernels only:
  // reserving the whole trace's GPU events on every device costs devices x events of memory (with
  // huge pages, at least 2 MiB a device however few kernels it ran).
  void count_kernels_per_device() {
    int last_pid = 0;
    std::size_t* last = nullptr;  // kernels come in runs per device
    for (const EventIndex e : rel_.gpu_events) {
      if (model_.kind[e] != EventKind::kKernel) continue;
      if (last == nullptr || model_.pid[e] != last_pid) {
        last_pid = model_.pid[e];
        last = &kernels_on_[last_pid];
      }
      ++*last;
    }
  }

  // The trace's device properties by id, looked up once per device rather than scanned (a trace
  // may list as many devices as it has kernels); a device they do not list by id takes those of a
  // node whose listed devices are all one model (model/gpu_specs.h).
  DeviceAccumulator& device_of(int id) {
    auto [it, inserted] = devices_.try_emplace(id);
    if (!inserted) return it->second;
    if (auto n = kernels_on_.find(id); n != kernels_on_.end()) it->second.kernels.reserve(n->second);
    DeviceMetrics& m = it->second.metrics;
    m.device = id;
    m.window_ns = window_ns_;
    m.rocm = model_.info.platform == Platform::kRocm;
    const DeviceProperties* p = properties_of_.find(id);
    m.identified_by = identified_by(model_.info, id);
    if (p != nullptr) {
      m.name = p->name;
      m.compute_major = p->compute_major;
      m.compute_minor = p->compute_minor;
      m.num_sms = p->num_sms;
    }
    return it->second;
  }

  std::uint8_t flags_of(EventIndex e) {
    std::uint8_t& f = name_flags_[model_.name[e]];
    if (f == 0) f = kernel_name_flags(model_.name_of(e));
    return f;
  }

  // Kernel time within the windows (usually one window: the selected steps touch each other).
  std::int64_t clipped_ns(std::int64_t start, std::int64_t end) const {
    if (end <= lo_ || start >= hi_) return 0;
    return covered_length(windows_, start, end);
  }

  void add_kernel(DeviceAccumulator& acc, EventIndex e, std::int64_t start, std::int64_t end, std::int64_t ns,
                  const KernelArgs* args) {
    DeviceMetrics& m = acc.metrics;
    const std::uint8_t flags = flags_of(e);
    ++m.kernels;
    m.kernel_ns += ns;
    float blocks_per_sm = 0;
    if (!(flags & kCommunication)) m.compute_kernel_ns += ns;
    if (flags & kTensorCore) m.tensor_core_ns += ns;
    if (flags & kMatmulConv) m.matmul_conv_ns += ns;
    if (args) {
      // CUPTI's "blocks per SM" is grid blocks / SM count; derive it when only the grid is given.
      blocks_per_sm = args->blocks_per_sm;
      const double grid = static_cast<double>(args->grid[0]) * args->grid[1] * args->grid[2];
      if (blocks_per_sm <= 0 && grid > 0 && m.num_sms > 0) blocks_per_sm = static_cast<float>(grid / m.num_sms);
      if (blocks_per_sm > 0) acc.has_blocks_per_sm = true;
      if (args->est_occupancy_pct >= 0) {
        acc.occupancy_weighted += static_cast<double>(args->est_occupancy_pct) * static_cast<double>(ns);
        acc.occupancy_ns += ns;
        if (!(flags & (kMatmulConv | kCommunication))) {
          acc.non_matmul_occupancy_weighted += static_cast<double>(args->est_occupancy_pct) * static_cast<double>(ns);
          m.non_matmul_occupancy_ns += ns;
        }
      }
    }
    acc.kernels.push_back({start, end, blocks_per_sm});
  }

  // Answers are memoised per event along the walked chain, so each span is examined once.
  bool eligible(EventIndex op) {
    chain_.clear();
    bool answer = false;
    for (EventIndex p = op; p != kNoEvent; p = rel_.parent[p]) {
      if (op_eligible_[p] >= 0) {
        answer = op_eligible_[p] == 1;
        break;
      }
      chain_.push_back(p);
      const EventKind k = model_.kind[p];
      if (k != EventKind::kCpuOp && k != EventKind::kUserAnnotation) continue;
      std::int8_t& by_name = name_eligible_[model_.name[p]];
      if (by_name < 0) by_name = is_tensor_core_eligible_op(model_.name_of(p)) ? 1 : 0;
      if (by_name == 1) {
        answer = true;
        break;
      }
    }
    for (EventIndex q : chain_) op_eligible_[q] = answer ? 1 : 0;
    return answer;
  }

  void count_eligible(EventIndex e) {
    if (model_.kind[e] != EventKind::kKernel || !ctx_.counts_gpu_event(model_, e)) return;
    const std::int64_t ns = clipped_ns(model_.ts_ns[e], model_.end_ns(e));
    if (ns <= 0) return;
    const std::uint8_t flags = flags_of(e);
    if (flags & kCommunication) return;
    DeviceMetrics& m = device_of(model_.pid[e]).metrics;
    m.tc_eligible_ns += ns;
    if (!(flags & kTensorCore)) m.tc_eligible_without_tc_ns += ns;
    if (!(flags & kMatmulConv)) m.matmul_conv_ns += ns;  // not yet counted by its name
  }

  DeviceMetrics finish(int id, DeviceAccumulator& acc) {
    auto pct = [](std::int64_t part, std::int64_t whole) {
      return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
    };
    DeviceMetrics& m = acc.metrics;
    auto by_start = [](const KernelSpan& a, const KernelSpan& b) { return a.start < b.start; };
    if (!std::is_sorted(acc.kernels.begin(), acc.kernels.end(), by_start))
      std::sort(acc.kernels.begin(), acc.kernels.end(), by_start);
    m.kernel_busy_ns = busy_ns(acc.kernels, windows_);
    m.utilization_pct = pct(m.kernel_busy_ns, window_ns_);
    if (acc.has_blocks_per_sm)
      m.sm_efficiency_pct = 100.0 * sm_busy_ns(acc.kernels, windows_) / static_cast<double>(window_ns_);
    if (acc.occupancy_ns > 0) m.achieved_occupancy_pct = acc.occupancy_weighted / static_cast<double>(acc.occupancy_ns);
    if (m.non_matmul_occupancy_ns > 0)
      m.non_matmul_occupancy_pct = acc.non_matmul_occupancy_weighted / static_cast<double>(m.non_matmul_occupancy_ns);
    m.tensor_core_pct = pct(m.tensor_core_ns, m.kernel_ns);
    m.tc_eligible_pct = pct(m.tc_eligible_ns, m.kernel_ns);
    m.tc_eligible_without_tc_pct = pct(m.tc_eligible_without_tc_ns, m.kernel_ns);
    m.matmul_conv_pct = pct(m.matmul_conv_ns, m.compute_kernel_ns);
    std::int64_t covered = 0;
    if (auto it = sm_active_.find(id); it != sm_active_.end()) {
      m.measured_sm_active_pct = time_weighted_mean(it->second, windows_, covered);
      m.measured_coverage_pct = pct(covered, window_ns_);
    }
    if (auto it = tensor_active_.find(id); it != tensor_active_.end())
      m.measured_tensor_active_pct = time_weighted_mean(it->second, windows_, covered);
    return std::move(m);
  }

  const TraceModel& model_;
  const AnalysisContext& ctx_;
  const Relations& rel_;
  const std::vector<Interval> windows_;
  const std::int64_t window_ns_;
  const std::int64_t lo_, hi_;
  const DeviceIndex properties_of_;
  std::unordered_map<int, std::size_t> kernels_on_;
  std::map<int, DeviceAccumulator> devices_;
  std::vector<std::uint8_t> name_flags_;
  std::vector<std::int8_t> op_eligible_, name_eligible_;
  std::vector<EventIndex> chain_;
  std::map<int, std::vector<CounterPoint>> sm_active_, tensor_active_;
};

}  // namespace

GpuMetricsResult analyze_gpu_metrics(const TraceModel& model, const AnalysisContext& ctx) {
  std::vector<Interval> windows;
  if (ctx.has_steps) {
    for (const Step& s : ctx.steps) windows.push_back({s.start_ns, s.end_ns});
  } else {
    windows.push_back({ctx.window_start_ns, ctx.window_end_ns});
  }
  merge_intervals(windows);
  if (windows.empty()) return {};
  GpuMetricsPasses passes(model, ctx, std::move(windows));
  passes.kernels();
  passes.eligible_kernels();
  passes.counters();
  return passes.result();
}

bool device_is_amd(const DeviceMetrics& d) {
  return d.rocm || contains(d.name, "AMD") || contains(d.name, "Radeon") || contains(d.name, "Instinct");
}

bool device_is_nvidia(const DeviceMetrics& d) {
  if (device_is_amd(d)) return false;
  return d.compute_major >= 0 || contains(d.name, "NVIDIA") || contains(d.name, "Tesla") ||
         contains(d.name, "GeForce") || contains(d.name, "Quadro");
}

std::string matrix_unit_name(const DeviceMetrics& d) {
  if (device_is_amd(d)) return "Matrix Cores";
  return device_is_nvidia(d) ? "Tensor Cores" : "";
}

std::string multiprocessor_name(const DeviceMetrics& d) {
  if (device_is_amd(d)) return "CU";
  return device_is_nvidia(d) ? "SM" : "compute-unit";
}

}  // namespace ferret
