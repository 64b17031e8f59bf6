#include "analysis/operator/roofline.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "analysis/classify.h"
#include "analysis/operator/tensor_cores.h"
#include "model/gpu_specs.h"

namespace ferret {

namespace {

bool is_gpu_work_kind(EventKind k) {
  return k == EventKind::kKernel || k == EventKind::kMemcpy || k == EventKind::kMemset;
}

// The op a launch's GPU work is attributed to: the innermost enclosing cpu_op with a cost model,
// else the innermost one. Whether a name has a cost model is cached by its interned id.
class AttributionTarget {
 public:
  explicit AttributionTarget(const TraceModel& model) : model_(model) {}

  EventIndex of(EventIndex innermost) {
    const Relations& rel = model_.relations;
    for (EventIndex p = innermost; p != kNoEvent;) {
      if (model_.kind[p] == EventKind::kCpuOp && has_cost_model(p)) return p;
      p = rel.parent.empty() ? kNoEvent : rel.parent[p];
    }
    return innermost;
  }

 private:
  bool has_cost_model(EventIndex op) {
    if (!model_.inductor_kernels.empty() && model_.inductor_kernel_of(op) != nullptr) return true;
    const StrId name = model_.name[op];
    const auto it = by_name_.find(name);
    if (it != by_name_.end()) return it->second;
    const bool has = op_kind_of(model_.strings.view(name)) != OpKind::kNone;
    by_name_.emplace(name, has);
    return has;
  }

  const TraceModel& model_;
  std::unordered_map<StrId, bool> by_name_;
};

struct GroupKey {
  StrId name, dims, types, concrete;
  auto operator<=>(const GroupKey&) const = default;
};

GroupKey group_key(const TraceModel& model, EventIndex op) {
  const OpArgs* args = model.op_args_of(op);
  return {model.name[op], args ? args->input_dims : kEmptyStr, args ? args->input_types : kEmptyStr,
          args ? args->concrete_inputs : kEmptyStr};
}

// Each GPU activity on `device` that an op in the window launched, with the op it is attributed
// to (AttributionTarget): kernels, copies and fills, not graph replays (their op is the capture's)
// nor communication kernels (the network bounds them, not the roofline's ceilings). fn(op, gpu).
template <typename Fn>
void for_each_attributed_gpu_work(const TraceModel& model, const AnalysisContext& ctx, int device, Fn&& fn) {
  const Relations& rel = model.relations;
  AttributionTarget target(model);
  std::unordered_map<StrId, bool> communication_kernel;  // by kernel name id
  EventIndex last_launch_op = kNoEvent, last_target = kNoEvent;
  const bool has_replays = !rel.graph_replays.empty();
  for (std::size_t li = 0; li < rel.launches.size(); ++li) {
    const EventIndex op = rel.launch_op[li];
    if (op == kNoEvent || !ctx.window().contains(model.ts_ns[op])) continue;
    for (std::uint32_t g = rel.launch_gpu_begin[li]; g < rel.launch_gpu_begin[li + 1]; ++g) {
      const EventIndex gpu = rel.launch_gpu[g];
      if (!is_gpu_work_kind(model.kind[gpu]) || model.pid[gpu] != device || !ctx.counts_gpu_event(model, gpu)) continue;
      if (has_replays && rel.replay_of(gpu) != nullptr) continue;
      if (model.kind[gpu] == EventKind::kKernel) {
        auto [it, fresh] = communication_kernel.try_emplace(model.name[gpu], false);
        if (fresh) it->second = is_communication_kernel(model.strings.view(model.name[gpu]));
        if (it->second) continue;
      }
      if (op != last_launch_op) {  // an op's launches come together: walk up once per op
        last_launch_op = op;
        last_target = target.of(op);
      }
      fn(last_target, gpu);
    }
  }
}

// GPU work launched by one op call, or summed over a group's calls.
struct GpuWork {
  std::uint64_t activities = 0;  // kernels, memcpys, memsets
  std::int64_t ns = 0;
  std::uint64_t kernels = 0;  // kernels only
  std::int64_t kernel_ns = 0;
  std::int64_t matrix_ns = 0;       // in Tensor / Matrix Core kernels
  std::int64_t narrow_ns = 0;       // in matrix kernels that name fp8, fp6 or fp4 formats
  std::uint8_t narrow_formats = 0;  // kFormat* bits of those kernels
  std::int64_t max_grid = -1;
  void add(const GpuWork& o) {
    activities += o.activities;
    ns += o.ns;
    kernels += o.kernels;
    kernel_ns += o.kernel_ns;
    matrix_ns += o.matrix_ns;
    narrow_ns += o.narrow_ns;
    narrow_formats |= o.narrow_formats;
    max_grid = std::max(max_grid, o.max_grid);
  }
};

constexpr std::uint8_t kFormatFp4 = 1, kFormatFp6 = 2, kFormatFp8 = 4, kFormatHalf = 8;

std::uint8_t format_bits(const KernelFormats& f) {
  if (!f.narrow()) return 0;
  return static_cast<std::uint8_t>((f.fp4 ? kFormatFp4 : 0) | (f.fp6 ? kFormatFp6 : 0) | (f.fp8 ? kFormatFp8 : 0) |
                                   (f.half ? kFormatHalf : 0));
}

// The format whose matrix rate bounds kernels named for narrow formats. A product of fp8 with fp6
// or fp4 runs at the fp8 rate (Blackwell's f8f6f4 MMA kinds, CDNA 4's mixed-format MFMA); fp6 or
// fp4 alone at their own rate. On a device with no matrix units for the format, the kernel widens
// the narrow weights in registers to the activations' format (the op's, else the bf16/fp16 its name
// spells) and the product runs at that format's rate. Sets `note` to say which.
Dtype narrow_kernel_dtype(std::uint8_t bits, const DevicePeaks& peaks, bool device_known, Dtype op_dtype,
                          std::string& note) {
  const bool fp8 = (bits & kFormatFp8) != 0, fp6 = (bits & kFormatFp6) != 0, fp4 = (bits & kFormatFp4) != 0;
  const Dtype narrow = fp8 ? Dtype::kFp8 : fp6 ? Dtype::kFp6 : Dtype::kFp4;
  const char* spelled = fp4 && fp8   ? "fp4 and fp8"
                        : fp6 && fp8 ? "fp6 and fp8"
                        : fp4 && fp6 ? "fp4 and fp6"
                                     : dtype_name(narrow);
  if (!device_known || peaks.matrix(narrow)) {
    note = (fp4 || fp6) && fp8 ? fmt::format("kernels name {} formats: the fp8 rate bounds a mixed product", spelled)
                               : fmt::format("kernels name {} formats", spelled);
    return narrow;
  }
  const Dtype wide = op_dtype == Dtype::kBf16 || op_dtype == Dtype::kFp16 ? op_dtype
                     : (bits & kFormatHalf) != 0                          ? Dtype::kBf16
                                                                          : Dtype::kUnknown;
  note = fmt::format("kernels name {} formats, which {} has no matrix units for: the weights are widened{}", spelled,
                     peaks.model.empty() ? "this device" : peaks.model,
                     wide == Dtype::kUnknown ? "" : fmt::format(" to {} in registers", dtype_name(wide)));
  return wide;
}

struct Accum {
  EventIndex first_op = kNoEvent;
  std::uint64_t calls = 0;
  GpuWork work;
};

// The device with the most GPU time launched by ops in the window, or the selected one.
int pick_device(const TraceModel& model, const AnalysisContext& ctx) {
  if (ctx.options.device) return *ctx.options.device;
  const Relations& rel = model.relations;
  std::map<int, std::int64_t> ns;
  for (std::size_t li = 0; li < rel.launches.size(); ++li)
    for (std::uint32_t g = rel.launch_gpu_begin[li]; g < rel.launch_gpu_begin[li + 1]; ++g) {
      const EventIndex gpu = rel.launch_gpu[g];
      if (is_gpu_work_kind(model.kind[gpu]) && ctx.window().contains(model.ts_ns[gpu]))
        ns[model.pid[gpu]] += std::max<std::int64_t>(0, model.dur_ns[gpu]);
    }
  int best = -1;
  std::int64_t best_ns = -1;
  for (const auto& [device, t] : ns)
    if (t > best_ns) {
      best = device;
      best_ns = t;
    }
  return best;
}

// JSON text as one line: whitespace dropped, one space after each comma ("[[768], [788, 768]]").
std::string compact_json_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (char c : text) {
    if (c == '"') in_string = !in_string;
    if (!in_string && (c == ' ' || c == '\n' || c == '\r' || c == '\t')) continue;
    out += c;
    if (!in_string && c == ',') out += ' ';
  }
  return out;
}

std::string figure_source(const DevicePeaks& p, bool from_file, const std::string& what) {
  if (from_file) return fmt::format("--peaks {}: {}", p.peaks_file, what);
  return fmt::format("{} {} (datasheet{})", p.model, what, p.sm_scale != 1 ? ", scaled by SM count" : "");
}

// The compute ceiling of a group: the matrix figure of its dtype (fp32 on Tensor Cores is TF32),
// or the vector figure; PyTorch computes half-precision and 8-bit elementwise math in fp32
// ("opmath"), so those fall back to the fp32 vector figure.
std::optional<double> compute_ceiling(const DevicePeaks& p, const RooflineGroup& g, std::string& source) {
  if (g.dtype == Dtype::kUnknown) return std::nullopt;
  if (g.matrix_units) {
    const Dtype d = g.dtype == Dtype::kFp32 ? Dtype::kTf32 : g.dtype;
    source = figure_source(p, p.matrix_from_file[static_cast<std::size_t>(d)], fmt::format("{} matrix", dtype_name(d)));
    return p.matrix(d);
  }
  Dtype d = g.dtype;
  if (!p.vector(d) && is_matrix_format(d)) d = Dtype::kFp32;
  source = figure_source(p, p.vector_from_file[static_cast<std::size_t>(d)],
                         d == g.dtype ? fmt::format("{} vector", dtype_name(d)) : "fp32 vector (opmath)");
  return p.vector(d);
}

void classify(const DevicePeaks& peaks, int sms, const GpuWork& w, RooflineGroup& g) {
  const double ns = static_cast<double>(g.kernel_ns);
  if (ns <= 0) return;
  if (g.flops_per_call >= 0) g.tflops_per_s = g.flops_per_call * static_cast<double>(g.calls) / ns / 1e3;
  if (g.bytes_per_call >= 0) g.tb_per_s = g.bytes_per_call * static_cast<double>(g.calls) / ns / 1e3;
  if (g.flops_per_call < 0 && g.bytes_per_call < 0) return;  // no cost model: unknown

  std::string compute_source;
  const std::optional<double> compute = compute_ceiling(peaks, g, compute_source);
  const std::optional<double> hbm = peaks.hbm_tb_per_s;
  const std::string hbm_source = figure_source(peaks, peaks.hbm_from_file, "HBM");
  const bool has_flops = g.flops_per_call > 0;
  const bool has_bytes = g.bytes_per_call > 0;
  if ((has_flops || has_bytes) && (!has_flops || compute) && (!has_bytes || hbm)) {
    const double calls = static_cast<double>(g.calls);
    const double compute_ns = has_flops ? g.flops_per_call / (*compute * 1e3) : 0;  // TFLOP/s = 1e3 FLOP/ns
    const double memory_ns = has_bytes ? g.bytes_per_call / (*hbm * 1e3) : 0;       // TB/s = 1e3 B/ns
    g.roofline_ns = calls * std::max(compute_ns, memory_ns);
  }

  // The mean kernel, memsets and copies left out (a GEMM's 1 us workspace memset is not the GEMM).
  const double mean_kernel_ns = w.kernels > 0 ? static_cast<double>(w.kernel_ns) / static_cast<double>(w.kernels)
                                              : ns / static_cast<double>(std::max<std::uint64_t>(1, g.kernels));
  const bool latency = mean_kernel_ns < static_cast<double>(kLatencyKernelNs) ||
                       (w.max_grid > 0 && sms > 0 && static_cast<double>(w.max_grid) < kLatencyGridFraction * sms);
  if (latency) {
    // Against the roofline at its own intensity: min(compute, intensity x bandwidth).
    if (has_flops && has_bytes && compute && hbm) {
      const double intensity = g.flops_per_call / g.bytes_per_call;  // FLOP/byte
      const double attainable = std::min(*compute, intensity * *hbm);
      g.peak_pct = 100 * g.tflops_per_s / attainable;
      g.peak_source = attainable == *compute ? compute_source : hbm_source;
    } else if (has_bytes && hbm && !has_flops) {
      g.peak_pct = 100 * g.tb_per_s / *hbm;
      g.peak_source = hbm_source;
    }
    g.bound = Bound::kLatency;
    return;
  }
  if (has_bytes && !has_flops && g.flops_per_call == 0) {
    if (!hbm) return;
    g.bound = Bound::kMemory;
    g.peak_pct = 100 * g.tb_per_s / *hbm;
    g.peak_source = hbm_source;
    return;
  }
  if (has_flops && has_bytes && compute && hbm) {
    const double ridge = *compute / *hbm;  // FLOP/byte: TFLOP/s over TB/s
    if (g.flops_per_call / g.bytes_per_call >= ridge) {
      g.bound = Bound::kCompute;
      g.peak_pct = 100 * g.tflops_per_s / *compute;
      g.peak_source = compute_source;
    } else {
      g.bound = Bound::kMemory;
      g.peak_pct = 100 * g.tb_per_s / *hbm;
      g.peak_source = hbm_source;
    }
    return;
  }
  if (has_flops && g.bytes_per_call < 0 && compute) {  // Inductor kernels without a byte count
    g.bound = Bound::kCompute;
    g.peak_pct = 100 * g.tflops_per_s / *compute;
    g.peak_source = compute_source;
    return;
  }
  if (g.note.empty())
    g.note = !compute
                 ? fmt::format("{} ceiling unknown for {}", g.matrix_units ? "matrix" : "vector", dtype_name(g.dtype))
                 : "HBM bandwidth unknown";
}

// GPU work launched in the window with no op around the launch call (a C++/CUDA extension, a
// Triton kernel launched directly): a group per activity name, "no operator: NAME", which the
// roofline cannot place (no shapes), so that its time is not missing from the table.
void add_no_operator_groups(const TraceModel& model, const AnalysisContext& ctx, RooflineResult& r) {
  const Relations& rel = model.relations;
  std::map<StrId, RooflineGroup> by_name;
  const bool has_replays = !rel.graph_replays.empty();
  for (std::size_t li = 0; li < rel.launches.size(); ++li) {
    if (rel.launch_op[li] != kNoEvent || !ctx.window().contains(model.ts_ns[rel.launches[li]])) continue;
    bool counted = false;
    for (std::uint32_t g = rel.launch_gpu_begin[li]; g < rel.launch_gpu_begin[li + 1]; ++g) {
      const EventIndex gpu = rel.launch_gpu[g];
      if (!is_gpu_work_kind(model.kind[gpu]) || model.pid[gpu] != r.device || !ctx.counts_gpu_event(model, gpu))
        continue;
      if ((has_replays && rel.replay_of(gpu) != nullptr) ||
          (model.kind[gpu] == EventKind::kKernel && is_communication_kernel(model.name_of(gpu))))
        continue;
      RooflineGroup& group = by_name[model.name[gpu]];
      if (!counted) ++group.calls;
      counted = true;
      ++group.kernels;
      const std::int64_t d = std::max<std::int64_t>(0, model.dur_ns[gpu]);
      group.kernel_ns += d;
      r.kernel_ns += d;
    }
  }
  for (auto& [name, group] : by_name) {
    group.op = "no operator: " + std::string(model.strings.view(name));
    group.note = "launched with no operator around it: no shapes to place it";
    r.groups.push_back(std::move(group));
  }
}

}  // namespace

const char* bound_name(Bound b) {
  switch (b) {
    case Bound::kCompute: return "compute";
    case Bound::kMemory: return "memory";
    case Bound::kLatency: return "latency";
    case Bound::kUnknown: return "unknown";
  }
  return "unknown";
}

double precision_step_roofline_ns(const RooflineResult& r, const RooflineGroup& g) {
  if (!is_matrix_op(g.kind) || g.matrix_units || g.dtype != Dtype::kFp32) return -1;
  if (g.flops_per_call <= 0 || g.bytes_per_call <= 0 || !r.peaks.hbm_tb_per_s) return -1;
  std::optional<double> peak = r.peaks.matrix(Dtype::kBf16);
  if (!peak) peak = r.peaks.matrix(Dtype::kFp16);
  if (!peak) return -1;
  return static_cast<double>(g.calls) *
         std::max(g.flops_per_call / (*peak * 1e3), g.bytes_per_call / 2 / (*r.peaks.hbm_tb_per_s * 1e3));
}

RooflineResult analyze_roofline(const TraceModel& model, const AnalysisContext& ctx) {
  RooflineResult r;
  r.device = pick_device(model, ctx);
  if (r.device < 0) return r;
  const DeviceProperties* props = find_device(model.info, r.device);
  const DeviceProperties none;
  r.peaks = device_peaks(props != nullptr ? *props : none, ctx.options.peaks ? &*ctx.options.peaks : nullptr);
  if (props == nullptr && r.peaks.note.empty()) r.peaks.note = "the trace lists no deviceProperties for this device";
  r.device_known =
      r.peaks.hbm_tb_per_s.has_value() ||
      std::any_of(r.peaks.matrix_tflops.begin(), r.peaks.matrix_tflops.end(), [](auto f) { return f.has_value(); }) ||
      std::any_of(r.peaks.vector_tflops.begin(), r.peaks.vector_tflops.end(), [](auto f) { return f.has_value(); });

  // One pass over launches: GPU time per attributed op.
  std::unordered_map<StrId, bool> matrix_kernel;           // by kernel name id
  std::unordered_map<StrId, std::uint8_t> kernel_formats;  // format_bits, by kernel name id
  // Per attributed op: a dense event -> slot table (4 bytes per event) instead of a hash map.
  constexpr std::uint32_t kNoSlot = UINT32_MAX;
  std::vector<std::uint32_t> slot_of;
  std::vector<EventIndex> slot_op;
  std::vector<GpuWork> per_op;
  for_each_attributed_gpu_work(model, ctx, r.device, [&](EventIndex to, EventIndex gpu) {
    if (slot_of.empty()) slot_of.assign(model.size(), kNoSlot);
    if (slot_of[to] == kNoSlot) {
      slot_of[to] = static_cast<std::uint32_t>(per_op.size());
      slot_op.push_back(to);
      per_op.emplace_back();
    }
    GpuWork& a = per_op[slot_of[to]];
    const std::int64_t d = std::max<std::int64_t>(0, model.dur_ns[gpu]);
    a.ns += d;
    ++a.activities;
    if (model.kind[gpu] == EventKind::kKernel) {
      ++a.kernels;
      a.kernel_ns += d;
      auto [it, fresh] = matrix_kernel.try_emplace(model.name[gpu], false);
      if (fresh) it->second = is_tensor_core_kernel(model.strings.view(model.name[gpu]));
      if (it->second) a.matrix_ns += d;
      auto [fit, ffresh] = kernel_formats.try_emplace(model.name[gpu], std::uint8_t{0});
      if (ffresh) fit->second = format_bits(matrix_kernel_formats(model.strings.view(model.name[gpu])));
      if (fit->second != 0) {
        a.narrow_ns += d;
        a.narrow_formats |= fit->second;
      }
      if (const KernelArgs* k = model.kernel_args_of(gpu); k != nullptr && k->grid[0] > 0)
        a.max_grid = std::max<std::int64_t>(
            a.max_grid, std::int64_t{k->grid[0]} * std::max(1, k->grid[1]) * std::max(1, k->grid[2]));
    }
  });

  // Groups by (op, dims, types, concrete inputs).
  std::map<GroupKey, Accum> groups;
  for (std::size_t i = 0; i < per_op.size(); ++i) {
    const EventIndex op = slot_op[i];
    const GpuWork& a = per_op[i];
    Accum& g = groups[group_key(model, op)];
    if (g.first_op == kNoEvent || op < g.first_op) g.first_op = op;
    ++g.calls;
    g.work.add(a);
    r.kernel_ns += a.ns;
  }

  const int sms = props != nullptr ? props->num_sms : -1;
  r.groups.reserve(groups.size());
  for (const auto& [key, acc] : groups) {
    RooflineGroup g;
    g.op = std::string(model.strings.view(key.name));
    g.input_dims = compact_json_text(model.strings.view(key.dims));
    g.input_types = compact_json_text(model.strings.view(key.types));
    g.first_op = acc.first_op;
    g.calls = acc.calls;
    g.kernels = acc.work.activities;
    g.kernel_ns = acc.work.ns;
    g.max_grid_blocks = acc.work.max_grid;
    g.matrix_units = acc.work.matrix_ns * 2 > acc.work.ns;
    const InductorKernelArgs* ind = model.inductor_kernel_of(acc.first_op);
    const OpCost cost = op_cost({g.op, model.strings.view(key.dims), model.strings.view(key.types),
                                 model.strings.view(key.concrete), ind ? ind->flop : -1, ind ? ind->num_gb : -1});
    g.kind = cost.kind;
    g.dtype = cost.dtype;
    g.flops_per_call = cost.flops;
    g.bytes_per_call = cost.bytes;
    g.note = cost.note;
    if (acc.work.narrow_ns * 2 > acc.work.kernel_ns && acc.work.narrow_formats != 0) {
      std::string format_note;
      g.dtype = narrow_kernel_dtype(acc.work.narrow_formats, r.peaks, r.device_known, cost.dtype, format_note);
      g.note = g.note.empty() ? format_note : g.note + "; " + format_note;
    }
    g.gemm_batch = cost.gemm_batch;
    g.gemm_m = cost.gemm_m;
    g.gemm_n = cost.gemm_n;
    g.gemm_k = cost.gemm_k;
    if (cost.flops >= 0 || cost.bytes >= 0) r.modelled_ns += acc.work.ns;
    classify(r.peaks, sms, acc.work, g);
    if (!r.device_known && g.bound == Bound::kUnknown && (cost.flops >= 0 || cost.bytes >= 0))
      g.note = g.note.empty() ? "device ceilings unknown" : g.note + "; device ceilings unknown";
    r.groups.push_back(std::move(g));
  }
  add_no_operator_groups(model, ctx, r);
  std::sort(r.groups.begin(), r.groups.end(), [](const RooflineGroup& a, const RooflineGroup& b) {
    return std::tie(b.kernel_ns, a.op, a.input_dims) < std::tie(a.kernel_ns, b.op, b.input_dims);
  });
  return r;
}

std::vector<std::vector<EventIndex>> roofline_groups_gpu_events(const TraceModel& model, const AnalysisContext& ctx,
                                                                const RooflineResult& r,
                                                                const std::vector<const RooflineGroup*>& groups) {
  std::vector<std::vector<EventIndex>> out(groups.size());
  if (r.device < 0 || groups.empty()) return out;
  std::map<GroupKey, std::size_t> wanted;
  for (std::size_t i = 0; i < groups.size(); ++i)
    if (groups[i]->first_op != kNoEvent) wanted.emplace(group_key(model, groups[i]->first_op), i);
  std::unordered_map<EventIndex, std::size_t> group_of_op;  // by attributed op; npos: none wanted
  for_each_attributed_gpu_work(model, ctx, r.device, [&](EventIndex op, EventIndex gpu) {
    auto [it, fresh] = group_of_op.try_emplace(op, std::string::npos);
    if (fresh) {
      const auto w = wanted.find(group_key(model, op));
      if (w != wanted.end()) it->second = w->second;
    }
    if (it->second != std::string::npos) out[it->second].push_back(gpu);
  });
  for (std::vector<EventIndex>& events : out) std::sort(events.begin(), events.end());
  return out;
}

}  // namespace ferret
