#include "report/trace/analyze_report.h"

#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "report/trace/roofline_report.h"

namespace ferret {

namespace {

using json = nlohmann::ordered_json;

std::string trace_line(const TraceAnalysis& a) {
  const TraceModel& m = *a.model;
  std::string line = fmt::format("{} ({}, {})", m.info.source, format_generation_name(m.info.generation),
                                 platform_name(m.info.platform));
  if (!m.info.devices.empty() && !m.info.devices.front().name.empty()) line += ", " + m.info.devices.front().name;
  if (m.info.distributed.present && m.info.distributed.world_size > 0)
    line += fmt::format(", rank {} of {}", m.info.distributed.rank, m.info.distributed.world_size);
  return line;
}

// "62.5% of GPU busy time replayed by CUDA graphs (2 graph launches, 6 kernels)", or "" without replays.
std::string graph_replay_line(const TraceAnalysis& a) {
  const GpuTimelineResult& t = a.timeline;
  if (t.launch.graph_activities == 0) return {};
  return fmt::format("{:.1f}% of GPU busy time replayed by {} graphs ({} graph launch{}, {} kernel{})",
                     t.graph_replayed_pct(), a.model->info.platform == Platform::kRocm ? "HIP" : "CUDA",
                     t.launch.graph_launches, t.launch.graph_launches == 1 ? "" : "es", t.launch.graph_kernels,
                     t.launch.graph_kernels == 1 ? "" : "s");
}

// traces[].critical_path: what bounds each step on its dependency graph (analysis/causal/critical_path.h).
json critical_path_json(const CriticalPathResult& c) {
  auto breakdown = [](const auto& ns) {
    json out = json::object();
    for (int k = 0; k < kPathCategoryCount; ++k)
      out[path_category_key(static_cast<PathCategory>(k))] = round3(ns_to_us(static_cast<double>(ns[k])));
    return out;
  };
  json steps = json::array();
  for (const CriticalPathStep& s : c.steps)
    steps.push_back({{"step", s.number < 0 ? json(nullptr) : json(s.number)},
                     {"duration_us", round3(ns_to_us(static_cast<double>(s.duration_ns)))},
                     {"bound_by", path_category_key(s.bound_by)},
                     {"breakdown_us", breakdown(s.ns)}});
  if (c.steps.empty()) return {{"bound_by", nullptr}, {"mean", nullptr}, {"steps", steps}};
  return {{"bound_by", path_category_key(c.bound_by)},
          {"mean", {{"duration_us", round3(ns_to_us(c.mean_duration_ns))}, {"breakdown_us", breakdown(c.mean_ns)}}},
          {"steps", steps}};
}

// Python frames holding the host while the GPU idles (analysis/causal/python_frames.h).
json host_python_json(const PythonFramesResult& p) {
  auto us = [](std::int64_t ns) { return round3(ns_to_us(static_cast<double>(ns))); };
  auto rows = [&](const std::vector<PythonFrameStat>& frames) {
    json out = json::array();
    for (const PythonFrameStat& f : frames)
      out.push_back({{"frame", f.frame},
                     {"calls", f.calls},
                     {"gpu_idle_inclusive_us", us(f.inclusive_ns)},
                     {"gpu_idle_self_us", us(f.self_ns)},
                     {"host_us", us(f.host_ns)},
                     {"depth", f.depth},
                     {"preprocessing", f.preprocessing ? json(f.preprocessing) : json(nullptr)}});
    return out;
  };
  return {{"recorded", p.recorded},
          {"pid", p.pid},
          {"tid", p.tid},
          {"frames", p.frames},
          {"gpu_idle_us", us(p.gpu_idle_ns)},
          {"gpu_idle_in_python_us", us(p.python_idle_ns)},
          {"gpu_idle_in_python_outside_ops_us", us(p.python_only_idle_ns)},
          {"preprocessing_us", us(p.preprocessing_ns)},
          {"gpu_idle_in_preprocessing_us", us(p.preprocessing_idle_ns)},
          {"preprocessing_kinds", p.preprocessing_kinds},
          {"top", rows(p.top)},
          {"top_self", rows(p.top_self)},
          {"preprocessing", rows(p.preprocessing)}};
}

// Where the operator table put replayed GPU time, or "" without replays.
std::string replay_attribution_line(const HotSpotsResult& h) {
  if (h.replayed_device_ns <= 0) return {};
  const std::int64_t to_ops = h.replayed_device_ns - h.replayed_unattributed_ns;
  if (h.replayed_unattributed_ns == 0)
    return fmt::format("graph replays ({}) are counted for the ops that captured them", human_duration(to_ops));
  if (to_ops == 0)
    return fmt::format("graph replays ({}) are shown as graph-replay rows: no capture in the trace was matched to them",
                       human_duration(h.replayed_unattributed_ns));
  return fmt::format(
      "graph replays: {} counted for the ops that captured them, {} in graph-replay rows (capture not matched)",
      human_duration(to_ops), human_duration(h.replayed_unattributed_ns));
}

// The window the report covers (docs/WINDOWS.md).
std::string window_line(const TraceAnalysis& a) {
  const StepBreakdownResult& b = a.breakdown;
  const AnalysisContext& c = a.context;
  switch (c.source) {
    case WindowSource::kSteps: {
      const Relations& rel = a.model->relations;
      if (rel.step_marker_kind == StepMarker::kProfilerStep)
        return fmt::format("{} step{} (ProfilerStep#{}..#{}), mean {}", b.steps.size(), b.steps.size() == 1 ? "" : "s",
                           b.steps.front().number, b.steps.back().number,
                           human_duration(static_cast<std::int64_t>(b.average_duration_ns)));
      // No ProfilerStep#N: say first what the steps are, and what the cold first one cost.
      std::string line =
          fmt::format("no ProfilerStep spans: {} iteration{} {}..{} by {}, mean {}", b.steps.size(),
                      b.steps.size() == 1 ? "" : "s", b.steps.front().number, b.steps.back().number,
                      iteration_marker_text(rel), human_duration(static_cast<std::int64_t>(b.average_duration_ns)));
      if (c.cold_first_step)
        line += fmt::format("; iteration {} ({}) left out as cold", c.cold_first_step->number,
                            human_duration(c.cold_first_step->end_ns - c.cold_first_step->start_ns));
      return line;
    }
    case WindowSource::kAnnotation:
      return fmt::format("window: the span {} ({}), GPU work it launched included", c.label,
                         human_duration(c.window_ns()));
    case WindowSource::kTimeRange:
      return fmt::format("window: {} from the trace start ({})", c.label, human_duration(c.window_ns()));
    case WindowSource::kWholeTrace: break;
  }
  return fmt::format("no ProfilerStep spans: the whole trace ({}) is one window", human_duration(c.window_ns()));
}

// "workload: training (1,204 backward ops, 4 optimizer steps)" (analysis/timeline/workload.h).
std::string workload_line(const TraceAnalysis& a) {
  return fmt::format("workload: {} ({})", workload_name(a.workload.kind), a.workload.evidence);
}

// "host: AMD EPYC, 2 CPUs, torch uses 1 thread; AVX-512 BF16; BLAS: ..." when the run recorded it.
std::string host_line(const TraceAnalysis& a) {
  const HostFacts& h = a.context.options.host;
  return h.recorded() ? "host: " + h.describe() : "";
}

// Who waited on whom in the window, on the busiest device (analysis/causal/causality.h); "" without GPU work.
std::string causality_line(const TraceAnalysis& a) {
  const CausalityResult& c = a.causality;
  if (c.busiest < 0) return "";
  const DeviceCausality& d = c.devices[static_cast<std::size_t>(c.busiest)];
  if (d.window_ns <= 0) return "";
  const auto pct = [&](std::int64_t ns) { return 100.0 * static_cast<double>(ns) / static_cast<double>(d.window_ns); };
  std::string line = fmt::format(
      "who waits: device {} waited on the host {:.1f}% of the window, the host on the device {:.1f}%, both worked "
      "{:.1f}%, neither {:.1f}%",
      d.device, pct(d.device_waited_on_host_ns), pct(d.host_waited_on_device_ns), pct(d.both_busy_ns),
      pct(d.neither_ns));
  if (d.launched > 0)
    line += fmt::format("; launch to start: median {}, p90 {}", human_duration(d.median_launch_to_start_ns),
                        human_duration(d.p90_launch_to_start_ns));
  if (d.stalls > 0)
    line += fmt::format("; {} stall{} with work queued ({:.1f}%)", d.stalls, d.stalls == 1 ? "" : "s", pct(d.stall_ns));
  return line;
}

// What kind of window this is, and what was kept out of it: GPU work queued before profiling
// began (model/relations.cpp) and blocking waits at its edges (analysis/analysis.cpp).
std::string window_notes(const TraceAnalysis& a) {
  const Relations& r = a.model->relations;
  std::vector<std::string> notes;
  const WindowActivity activity = a.window_activity.activity;
  if (activity == WindowActivity::kGraphCapture)
    notes.push_back("this window is graph capture, not a steady state");
  else if (activity == WindowActivity::kInitialisation)
    notes.push_back("this window is mostly initialisation, not a steady state");
  else if (activity == WindowActivity::kMicrobenchmark)
    notes.push_back("this window is a micro-benchmark loop, not a training or inference step");
  else if (activity == WindowActivity::kUnknown)
    notes.push_back("no ProfilerStep marks a steady state in this window");
  if (r.launched_before_trace > 0)
    notes.push_back(
        fmt::format("{} GPU activit{} ({}) ran work queued before profiling began: left out of every "
                    "figure",
                    r.launched_before_trace, r.launched_before_trace == 1 ? "y" : "ies",
                    human_duration(r.launched_before_trace_ns)));
  if (a.context.edge_trimmed_ns > 0)
    notes.push_back(fmt::format("{} of blocking wait on work from outside the window cut off its edge",
                                human_duration(a.context.edge_trimmed_ns)));
  if (notes.empty()) return "";
  std::string out = notes.front();
  for (std::size_t i = 1; i < notes.size(); ++i) out += "; " + notes[i];
  out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out + ".";
}

// " (3 steps)" / " (one annotated span)": what the analysis window is made of; "" for the whole
// trace or a time range (the window line above says so).
std::string window_count_text(const TraceAnalysis& a) {
  if (a.context.source == WindowSource::kSteps && !a.breakdown.steps.empty())
    return fmt::format(" ({} step{})", a.breakdown.steps.size(), a.breakdown.steps.size() == 1 ? "" : "s");
  if (a.context.source == WindowSource::kAnnotation) return " (the span " + a.context.label + ")";
  return "";
}

const GpuTimelineResult& reported_timeline(const TraceAnalysis& a) {
  return a.hta_timeline ? *a.hta_timeline : a.timeline;
}

// What ingestion repaired, skipped and noted, one line each (text and Markdown reports).
std::vector<std::string> input_lines(const IngestReport& r) { return r.lines("note: "); }

// The GPU section: per device its utilization, efficiency, occupancy and matrix-unit share (each
// share naming what it is a share of), then the timeline's idle / compute split.
std::string gpu_text(const TraceAnalysis& a, const Style& st, std::size_t width) {
  std::string out;
  if (!a.gpu_metrics.devices.empty()) {
    out += fmt::format("\n{}GPU{}\n", st.bold(), st.reset());
    for (const DeviceMetrics& g : a.gpu_metrics.devices) {
      out += fmt::format("  device {} {}\n", g.device,
                         fit_width(g.name.empty() ? std::string("unknown device") : g.name, width - 12));
      // Each share names what it is a share of.
      out += wrap(fmt::format("utilization: kernels busy {:.1f}% of the {} window{}", g.utilization_pct,
                              human_duration(g.window_ns), window_count_text(a)),
                  width, "    ");
      // Matrix units by the vendor's name for them; none named on devices whose units ferret does not know.
      const std::string units = matrix_unit_name(g);
      out += wrap(
          fmt::format(
              "{} efficiency {} of the window, occupancy {} of kernel time{}", multiprocessor_name(g),
              g.sm_efficiency_pct < 0 ? std::string("n/a") : fmt::format("{:.1f}%", g.sm_efficiency_pct),
              g.achieved_occupancy_pct < 0 ? std::string("n/a") : fmt::format("{:.1f}%", g.achieved_occupancy_pct),
              units.empty() ? std::string() : fmt::format(", {} {:.1f}% of kernel time", units, g.tensor_core_pct)),
          width, "    ");
      // SM efficiency above is estimated from launch sizes; PM sampling measures it.
      if (g.measured_sm_active_pct >= 0 || g.measured_tensor_active_pct >= 0)
        out += wrap(fmt::format("measured: SM active {}  Tensor active {}  ({:.0f}% of window sampled)",
                                g.measured_sm_active_pct < 0 ? std::string("n/a")
                                                             : fmt::format("{:.1f}%", g.measured_sm_active_pct),
                                g.measured_tensor_active_pct < 0 ? std::string("n/a")
                                                                 : fmt::format("{:.1f}%", g.measured_tensor_active_pct),
                                g.measured_coverage_pct),
                    width, "    ");
    }
  }
  if (const GpuTimelineResult& tl = reported_timeline(a); tl.has_gpu) {
    const TemporalBreakdown& t = tl.overall;
    out += wrap(fmt::format("timeline{}: idle {:.1f}%, compute {:.1f}%, non-compute {:.1f}% of the {} from the first "
                            "GPU activity to the last",
                            a.hta_timeline ? " (HTA's definition)" : "", t.idle_pct(), t.compute_pct(),
                            t.non_compute_pct(), human_duration(t.span_ns)),
                width, "  ");
    if (const std::string graphs = graph_replay_line(a); !graphs.empty()) out += wrap(graphs, width, "  ");
  }
  return out;
}

}  // namespace

std::string analyze_text(const TraceAnalysis& a, const Diagnosis& d, const Style& st) {
  const std::size_t width = st.width;
  // Table rows: "  NAME  DURATION(12)  CALLS(8) calls", the name column taking what is left
  // (46 at 80 columns).
  const std::size_t name_width = width > 34 + 12 ? width - 34 : 12;
  std::string out;
  out += fmt::format("{}{}{}\n", st.bold(), fit_width(trace_line(a), width), st.reset());
  out += fmt::format("{}\n", fit_width(window_line(a), width));
  out += wrap(workload_line(a), width, "");
  if (const std::string host = host_line(a); !host.empty()) out += wrap(host, width, "");
  if (const std::string notes = window_notes(a); !notes.empty()) out += wrap(notes, width, "");
  if (const std::string who = causality_line(a); !who.empty()) out += wrap(who, width, "");
  out += '\n';
  out += st.bold();
  out += wrap(d.verdict.headline, width, "");
  out += st.reset();

  // Macro: where each step's time goes.
  const StepBreakdownResult& b = a.breakdown;
  if (!b.steps.empty()) {
    out += fmt::format("\n{}Step time breakdown{} (mean per {})\n", st.bold(), st.reset(),
                       b.has_steps ? "step" : "window");
    for (int c = 0; c < kStepCategoryCount; ++c) {
      const auto cat = static_cast<StepCategory>(c);
      const double pct = b.average_pct_of(cat);
      // The bar takes what the width leaves after the 39 columns of text, at most 30.
      const double bar_columns = static_cast<double>(std::min<std::size_t>(30, width > 49 ? width - 39 : 10));
      const int bar = static_cast<int>(std::lround(std::clamp(pct, 0.0, 100.0) / 100.0 * bar_columns));
      out += fmt::format("  {:<14} {:>12} {:>6.1f}%  {}{}{}\n", step_category_label(cat),
                         human_duration(static_cast<std::int64_t>(b.average_of(cat))), pct, st.cyan(),
                         std::string(static_cast<std::size_t>(bar), '#'), st.reset());
    }
  }
  out += gpu_text(a, st, width);

  // Operator layer: where the time goes by op and by kernel.
  const HotSpotsResult& h = a.hot_spots;
  const bool device_view = h.gpu_activities > 0;
  const std::vector<OpStat>& ops = device_view ? h.ops_by_device : h.ops_by_host;
  if (!ops.empty()) {
    out += fmt::format("\n{}Top operators{} by {} self time\n", st.bold(), st.reset(), device_view ? "GPU" : "host");
    std::vector<const OpStat*> shown;
    std::vector<std::string> names;
    for (const OpStat& op : ops)
      if ((device_view ? op.device_self_ns : op.host_self_ns) > 0) shown.push_back(&op), names.push_back(op.name);
    const std::vector<std::string> fitted = fit_names(names, name_width);
    for (std::size_t i = 0; i < shown.size(); ++i)
      out +=
          fmt::format("  {:<{}} {:>12} {:>8} calls\n", fitted[i], name_width,
                      human_duration(device_view ? shown[i]->device_self_ns : shown[i]->host_self_ns), shown[i]->calls);
    if (const std::string replays = replay_attribution_line(h); device_view && !replays.empty())
      out += wrap(replays, width, "  ");
  }
  if (!h.kernels.empty()) {
    out += fmt::format("\n{}Top kernels{} by total time\n", st.bold(), st.reset());
    std::vector<std::string> names;
    for (const KernelStat& k : h.kernels) names.push_back(k.name);
    const std::vector<std::string> fitted = fit_names(names, name_width);
    for (std::size_t i = 0; i < h.kernels.size(); ++i)
      out += fmt::format("  {:<{}} {:>12} {:>8} calls\n", fitted[i], name_width, human_duration(h.kernels[i].total_ns),
                         h.kernels[i].calls);
  }
  out += roofline_text(a.roofline, static_cast<std::size_t>(std::max(1, a.context.options.top_k)), st);
  const MemoryResult& mem = a.memory;
  for (const MemoryDevice& md : mem.devices) {
    if (md.device_type == 0 || md.peak_reserved < 0) continue;
    out += '\n';
    out += wrap(
        fmt::format("{}Memory{} device {}: peak allocated {}, peak reserved {}{}", st.bold(), st.reset(), md.device_id,
                    human_bytes(static_cast<std::uint64_t>(std::max<std::int64_t>(0, md.peak_allocated))),
                    human_bytes(static_cast<std::uint64_t>(md.peak_reserved)),
                    md.fragmentation_at_peak >= 0
                        ? fmt::format(", fragmentation at peak {:.0f}%", 100 * md.fragmentation_at_peak)
                        : std::string()),
        width + (st.enabled ? 8 : 0), "");
  }
  if (a.communication.present) {
    out += '\n';
    out += wrap(fmt::format("{}Communication{}: {:.1f}% of the window, {:.1f}% exposed, {:.1f}% overlapped by "
                            "compute",
                            st.bold(), st.reset(), 100 * a.communication.comm_share,
                            100 * a.communication.exposed_share, 100 * a.communication.overlap_share),
                width + (st.enabled ? 8 : 0), "");
  }

  out += findings_text(d.findings, st, width);
  const IngestReport& r = a.model->report;
  if (r.repair_count() + r.skip_count() > 0 || !r.notes.empty()) {
    out +=
        fmt::format("\n{}Input{}: {} repaired, {} skipped\n", st.bold(), st.reset(), r.repair_count(), r.skip_count());
    for (const std::string& line : input_lines(r)) out += wrap(line, width, "  ");
  }
  return finish_text(out, st);
}

json causality_json(const CausalityResult& c) {
  const auto us = [](std::int64_t ns) { return round3(ns_to_us(static_cast<double>(ns))); };
  json devices = json::array();
  for (const DeviceCausality& d : c.devices) {
    json reasons;
    for (int r = 0; r < kStartReasonCount; ++r) {
      const ReasonTotal& t = d.reasons[static_cast<std::size_t>(r)];
      reasons[start_reason_name(static_cast<StartReason>(r))] = {{"activities", t.activities},
                                                                 {"delay_us", us(t.delay_ns)}};
    }
    devices.push_back(
        {{"device", d.device},
         {"window_us", us(d.window_ns)},
         {"busy_us", us(d.busy_ns)},
         {"device_waited_on_host_us", us(d.device_waited_on_host_ns)},
         {"host_waited_on_device_us", us(d.host_waited_on_device_ns)},
         {"both_busy_us", us(d.both_busy_ns)},
         {"neither_us", us(d.neither_ns)},
         {"stalls",
          {{"count", d.stalls}, {"time_us", us(d.stall_ns)}, {"before_graph_work", d.stalls_before_graph_work}}},
         {"launched", d.launched},
         {"median_launch_to_start_us", us(d.median_launch_to_start_ns)},
         {"p90_launch_to_start_us", us(d.p90_launch_to_start_ns)},
         {"start_reasons", reasons}});
  }
  return {
      {"busiest_device", c.busiest < 0 ? json(nullptr) : json(c.devices[static_cast<std::size_t>(c.busiest)].device)},
      {"devices", devices}};
}

// NOLINTNEXTLINE(readability-function-size): over 120 lines from before the limit; split pending
json analyze_json(const TraceAnalysis& a, const Diagnosis& d) {
  const TraceModel& m = *a.model;
  json j;
  j["source"] = m.info.source;
  j["format"] = format_generation_name(m.info.generation);
  j["platform"] = platform_name(m.info.platform);
  if (const HostFacts& h = a.context.options.host; h.recorded()) {
    const double peak = h.fp32_peak_gflops();
    j["host"] = {{"cpu_model", h.cpu_model},
                 {"cpus", h.cpus > 0 ? json(h.cpus) : json(nullptr)},
                 {"threads", h.threads > 0 ? json(h.threads) : json(nullptr)},
                 {"cpu_flags", h.cpu_flags},
                 {"cpu_mhz", h.cpu_mhz > 0 ? json(round3(h.cpu_mhz)) : json(nullptr)},
                 {"cpu_capability", h.cpu_capability},
                 {"blas_info", h.blas_info},
                 {"blas", h.blas_name()},
                 {"blas_libraries", h.blas_libraries},
                 {"fp32_peak_gflops", peak > 0 ? json(round3(peak)) : json(nullptr)},
                 {"matmul_gflops", h.measured() ? json(round3(h.matmul_gflops)) : json(nullptr)},
                 {"matmul_size", h.measured() ? json(h.matmul_size) : json(nullptr)}};
  }
  const AnalysisContext& c = a.context;
  j["window"] = {
      {"source", window_source_name(c.source)},
      {"label", c.label},
      {"activity", window_activity_name(a.window_activity.activity)},
      {"workload",
       {{"kind", workload_name(a.workload.kind)},
        {"evidence", a.workload.evidence},
        {"backward_ops", a.workload.backward_ops},
        {"optimizer_steps", a.workload.optimizer_steps},
        {"server", a.workload.server.empty() ? json(nullptr) : json(a.workload.server)}}},
      {"start_us", round3(ns_to_us(static_cast<double>(c.window_start_ns)))},
      {"duration_us", round3(ns_to_us(static_cast<double>(c.window_ns())))},
      {"launched_before_trace",
       {{"activities", m.relations.launched_before_trace},
        {"time_us", round3(ns_to_us(static_cast<double>(m.relations.launched_before_trace_ns)))}}},
      {"edge_waits", a.window_activity.edge_waits.size()},
      {"edge_trimmed_us", round3(ns_to_us(static_cast<double>(c.edge_trimmed_ns)))},
      {"one_time_share_pct", round2(100 * a.window_activity.one_time_share)},
      {"captured_launches", a.window_activity.captured_launches},
      {"kernel_launches", a.window_activity.kernel_launches},
      {"inference_server",
       a.window_activity.inference_server.empty() ? json(nullptr) : json(a.window_activity.inference_server)}};
  const StepBreakdownResult& b = a.breakdown;
  json step_list = json::array();
  for (const StepCost& s : b.steps) {
    json cats;
    for (int c = 0; c < kStepCategoryCount; ++c)
      cats[step_category_key(static_cast<StepCategory>(c))] = round3(ns_to_us(static_cast<double>(s.ns[c])));
    step_list.push_back({{"number", s.number},
                         {"start_us", round3(ns_to_us(static_cast<double>(s.start_ns)))},
                         {"duration_us", round3(ns_to_us(static_cast<double>(s.duration_ns)))},
                         {"breakdown_us", cats}});
  }
  const Relations& rel = m.relations;
  j["steps"] = {
      {"count", b.has_steps ? b.steps.size() : 0},
      {"avg_us", round3(ns_to_us(b.average_duration_ns))},
      {"has_steps", b.has_steps},
      {"marker", step_marker_name(rel.step_marker_kind)},
      {"marker_name", rel.step_marker.empty() ? json(nullptr) : json(rel.step_marker)},
      {"marker_ops", rel.step_marker_kind == StepMarker::kRepeatedOps ? json(rel.step_marker_ops) : json(nullptr)},
      {"cold_first", c.cold_first_step
                         ? json{{"number", c.cold_first_step->number},
                                {"duration_us", round3(ns_to_us(static_cast<double>(c.cold_first_step->end_ns -
                                                                                    c.cold_first_step->start_ns)))}}
                         : json(nullptr)},
      {"list", step_list}};
  json breakdown_us, breakdown_pct;
  for (int c = 0; c < kStepCategoryCount; ++c) {
    const auto cat = static_cast<StepCategory>(c);
    breakdown_us[step_category_key(cat)] = round3(ns_to_us(b.average_of(cat)));
    breakdown_pct[step_category_key(cat)] = round2(b.average_pct_of(cat));
  }
  j["breakdown_us"] = breakdown_us;
  j["breakdown_pct"] = breakdown_pct;
  json gpus = json::array();
  for (const DeviceMetrics& g : a.gpu_metrics.devices) {
    gpus.push_back({{"device", g.device},
                    {"name", g.name},
                    {"utilization_pct", round2(g.utilization_pct)},
                    {"sm_efficiency_pct", g.sm_efficiency_pct < 0 ? json(nullptr) : json(round2(g.sm_efficiency_pct))},
                    {"achieved_occupancy_pct",
                     g.achieved_occupancy_pct < 0 ? json(nullptr) : json(round2(g.achieved_occupancy_pct))},
                    {"measured_sm_active_pct",
                     g.measured_sm_active_pct < 0 ? json(nullptr) : json(round2(g.measured_sm_active_pct))},
                    {"measured_tensor_active_pct",
                     g.measured_tensor_active_pct < 0 ? json(nullptr) : json(round2(g.measured_tensor_active_pct))},
                    {"measured_coverage_pct", round2(g.measured_coverage_pct)},
                    {"tensor_core_pct", round2(g.tensor_core_pct)},
                    {"tc_eligible_without_tc_pct", round2(g.tc_eligible_without_tc_pct)},
                    {"kernel_us", round3(ns_to_us(static_cast<double>(g.kernel_ns)))},
                    {"kernels", g.kernels},
                    {"multiprocessor", multiprocessor_name(g)},
                    {"matrix_units", matrix_unit_name(g).empty() ? json(nullptr) : json(matrix_unit_name(g))},
                    {"identified_by", g.identified_by}});
  }
  j["gpus"] = gpus;
  const GpuTimelineResult& tl = reported_timeline(a);
  const TemporalBreakdown& t = tl.overall;
  j["temporal"] = {
      {"definition", tl.definition == TimelineDefinition::kHta ? "hta" : "ferret"},
      {"idle_us", round3(ns_to_us(static_cast<double>(t.idle_ns)))},
      {"compute_us", round3(ns_to_us(static_cast<double>(t.compute_ns)))},
      {"non_compute_us", round3(ns_to_us(static_cast<double>(t.non_compute_ns)))},
      {"span_us", round3(ns_to_us(static_cast<double>(t.span_ns)))},
      {"idle_pct", round2(t.idle_pct())},
      {"compute_pct", round2(t.compute_pct())},
      {"non_compute_pct", round2(t.non_compute_pct())},
      {"comm_comp_overlap_pct", tl.comm_comp_overlap_pct < 0 ? json(nullptr) : json(round2(tl.comm_comp_overlap_pct))},
      {"launches", tl.launch.launches},
      {"short_kernels", tl.launch.short_kernels},
      {"median_launch_delay_us", round3(ns_to_us(static_cast<double>(tl.launch.median_delay_ns)))},
      {"graph_launches", tl.launch.graph_launches},
      {"graph_replayed_activities", tl.launch.graph_activities},
      {"graph_replayed_kernels", tl.launch.graph_kernels},
      {"graph_replayed_us", round3(ns_to_us(static_cast<double>(tl.graph_replayed_ns)))},
      {"graph_replayed_pct", round2(tl.graph_replayed_pct())}};
  // Curves for the first kCurveDevices devices: a rank's trace holds one node's GPUs at most, and
  // a trace naming thousands of devices must not turn into megabytes of curves.
  constexpr std::size_t kCurveDevices = 16;
  json busy_curves = json::array();
  std::size_t curves_left_out = 0;
  for (const DeviceTimeline& d : tl.devices) {
    if (d.busy_series.empty()) continue;
    if (busy_curves.size() == kCurveDevices) {
      ++curves_left_out;
      continue;
    }
    json pct = json::array();
    for (float v : d.busy_series) pct.push_back(std::round(1000.0 * v) / 10.0);  // 0.1% steps
    busy_curves.push_back(
        {{"device", d.device},
         {"start_us", round3(ns_to_us(static_cast<double>(d.span_start_ns)))},
         {"bucket_us", round3(ns_to_us(static_cast<double>(d.span_end_ns - d.span_start_ns)) / d.busy_series.size())},
         {"busy_pct", std::move(pct)}});
  }
  j["temporal"]["busy_curves"] = std::move(busy_curves);
  j["temporal"]["busy_curves_left_out"] = curves_left_out;
  auto op_json = [](const OpStat& op) {
    json o = {{"name", op.name},
              {"calls", op.calls},
              {"host_self_us", round3(ns_to_us(static_cast<double>(op.host_self_ns)))},
              {"host_total_us", round3(ns_to_us(static_cast<double>(op.host_total_ns)))},
              {"device_self_us", round3(ns_to_us(static_cast<double>(op.device_self_ns)))},
              {"device_total_us", round3(ns_to_us(static_cast<double>(op.device_total_ns)))},
              {"device_replayed_us", round3(ns_to_us(static_cast<double>(op.device_replayed_ns)))},
              {"graph_replay", op.graph_replay},
              {"no_operator", op.no_operator},
              {"launch_site", op.launch_site.empty() ? json(nullptr) : json(op.launch_site)}};
    if (!op.input_dims.empty()) o["input_dims"] = op.input_dims;
    if (!op.input_types.empty()) o["input_types"] = op.input_types;
    return o;
  };
  const HotSpotsResult& h = a.hot_spots;
  json by_device = json::array(), by_host = json::array(), by_shape = json::array(), kernels = json::array();
  for (const OpStat& op : h.ops_by_device) by_device.push_back(op_json(op));
  for (const OpStat& op : h.ops_by_host) by_host.push_back(op_json(op));
  for (const OpStat& op : h.shapes_by_device) by_shape.push_back(op_json(op));
  for (const KernelStat& k : h.kernels) {
    json paths = json::array();
    for (const KernelLaunchPath& p : k.launched_by)
      paths.push_back({{"op", p.op}, {"runtime", p.runtime}, {"calls", p.calls}});
    kernels.push_back(
        {{"name", k.name},
         {"kind", event_kind_name(k.kind)},
         {"calls", k.calls},
         {"total_us", round3(ns_to_us(static_cast<double>(k.total_ns)))},
         {"mean_us", round3(ns_to_us(k.mean_ns))},
         {"min_us", round3(ns_to_us(static_cast<double>(k.min_ns)))},
         {"max_us", round3(ns_to_us(static_cast<double>(k.max_ns)))},
         {"mean_occupancy_pct", k.mean_occupancy_pct < 0 ? json(nullptr) : json(round2(k.mean_occupancy_pct))},
         {"tensor_core", k.tensor_core},
         {"launched_by", paths}});
  }
  j["hot_spots"] = {{"ops_by_device", by_device},
                    {"ops_by_host", by_host},
                    {"ops_by_shape", by_shape},
                    {"kernels", kernels},
                    {"replayed_device_us", round3(ns_to_us(static_cast<double>(h.replayed_device_ns)))},
                    {"replayed_unattributed_us", round3(ns_to_us(static_cast<double>(h.replayed_unattributed_ns)))}};
  j["host_python"] = host_python_json(a.python_frames);
  j["critical_path"] = critical_path_json(a.critical_path);
  j["causality"] = causality_json(a.causality);
  j["roofline"] = roofline_json(a.roofline);
  json mem_devices = json::array();
  std::size_t memory_curves = 0;
  for (const MemoryDevice& md : a.memory.devices) {
    json curve = nullptr;
    if (!md.curve.allocated.empty() && memory_curves++ < kCurveDevices)
      curve = {{"start_us", round3(ns_to_us(static_cast<double>(md.curve.start_ns)))},
               {"bucket_us", round3(ns_to_us(static_cast<double>(md.curve.bucket_ns)))},
               {"allocated_bytes", md.curve.allocated},
               {"reserved_bytes", md.curve.reserved}};
    mem_devices.push_back({{"device_type", md.device_type},
                           {"device", md.device_id},
                           {"peak_allocated_bytes", md.peak_allocated},
                           {"peak_reserved_bytes", md.peak_reserved},
                           {"capacity_bytes", md.capacity_bytes},
                           {"fragmentation_at_peak",
                            md.fragmentation_at_peak < 0 ? json(nullptr) : json(round3(md.fragmentation_at_peak))},
                           {"allocations", md.allocations},
                           {"curve", std::move(curve)}});
  }
  j["memory"] = {{"present", a.memory.present},
                 {"devices", mem_devices},
                 {"allocations_per_step", round2(a.memory.allocations_per_step)}};
  json collectives = json::array();
  for (const CollectiveStats& c : a.communication.by_collective)
    collectives.push_back({{"collective", collective_name(c.kind)},
                           {"calls", c.calls},
                           {"time_us", round3(ns_to_us(static_cast<double>(c.time_ns)))},
                           {"bytes", c.bytes},
                           {"algbw_gbps", c.algbw_gbps < 0 ? json(nullptr) : json(round2(c.algbw_gbps))},
                           {"busbw_gbps", c.busbw_gbps < 0 ? json(nullptr) : json(round2(c.busbw_gbps))}});
  j["communication"] = {{"present", a.communication.present},
                        {"comm_pct", round2(100 * a.communication.comm_share)},
                        {"exposed_pct", round2(100 * a.communication.exposed_share)},
                        {"overlap_pct", round2(100 * a.communication.overlap_share)},
                        {"collectives", collectives}};
  json findings = json::array();
  for (const Finding& f : d.findings) findings.push_back(finding_json(f));
  j["findings"] = findings;
  j["verdict"] = {{"headline", d.verdict.headline},
                  {"bottleneck_found", d.verdict.bottleneck_found},
                  {"dimension", d.verdict.bottleneck_found ? json(dimension_name(d.verdict.dimension)) : json(nullptr)},
                  {"finding_id", d.verdict.finding_id},
                  {"max_speedup", round2(d.verdict.max_speedup)},
                  {"predicted_speedup",
                   d.verdict.predicted_speedup > 0 ? json(round2(d.verdict.predicted_speedup)) : json(nullptr)}};
  const IngestReport& r = m.report;
  json repairs = json::array(), skips = json::array();
  for (const auto& [reason, issue] : r.repairs)
    repairs.push_back({{"reason", reason}, {"count", issue.count}, {"first", issue.first_location}});
  for (const auto& [reason, issue] : r.skips)
    skips.push_back({{"reason", reason}, {"count", issue.count}, {"first", issue.first_location}});
  j["input"] = {{"repairs", repairs}, {"skips", skips}, {"notes", r.notes}, {"truncated", r.truncated}};
  return j;
}

std::string analyze_markdown(const TraceAnalysis& a, const Diagnosis& d) {
  std::string out;
  out += fmt::format("### ferret: {}\n\n", escape_markdown(trace_line(a)));
  out += fmt::format("**{}**\n\n", escape_markdown(d.verdict.headline, /*in_table=*/false));
  out += fmt::format("{}\n\n", escape_markdown(window_line(a)));
  out += fmt::format("{}\n\n", escape_markdown(workload_line(a)));
  if (const std::string host = host_line(a); !host.empty()) out += fmt::format("{}\n\n", escape_markdown(host));
  if (const std::string notes = window_notes(a); !notes.empty()) out += fmt::format("{}\n\n", escape_markdown(notes));
  if (const std::string who = causality_line(a); !who.empty()) out += fmt::format("{}\n\n", escape_markdown(who));
  const StepBreakdownResult& b = a.breakdown;
  if (!b.steps.empty()) {
    out += "| category | mean per step | share |\n|---|---:|---:|\n";
    for (int c = 0; c < kStepCategoryCount; ++c) {
      const auto cat = static_cast<StepCategory>(c);
      out += fmt::format("| {} | {} | {:.1f}% |\n", step_category_label(cat),
                         human_duration(static_cast<std::int64_t>(b.average_of(cat))), b.average_pct_of(cat));
    }
    out += "\n";
  }
  if (!a.gpu_metrics.devices.empty()) {
    out += fmt::format(
        "| GPU | busy, of the {} window{} | {} efficiency, of the window | occupancy, of kernel time | matrix "
        "units, of kernel time |\n|---|---:|---:|---:|---:|\n",
        human_duration(a.gpu_metrics.devices.front().window_ns), escape_markdown(window_count_text(a)),
        multiprocessor_name(a.gpu_metrics.devices.front()));
    for (const DeviceMetrics& g : a.gpu_metrics.devices)
      out += fmt::format(
          "| {} {} | {:.1f}% | {} | {} | {} |\n", g.device,
          escape_markdown(g.name.empty() ? std::string("unknown device") : g.name), g.utilization_pct,
          g.sm_efficiency_pct < 0 ? std::string("n/a") : fmt::format("{:.1f}%", g.sm_efficiency_pct),
          g.achieved_occupancy_pct < 0 ? std::string("n/a") : fmt::format("{:.1f}%", g.achieved_occupancy_pct),
          matrix_unit_name(g).empty() ? std::string("n/a (units unknown)")
                                      : fmt::format("{:.1f}% ({})", g.tensor_core_pct, matrix_unit_name(g)));
    out += "\n";
  }
  if (const std::string graphs = graph_replay_line(a); !graphs.empty())
    out += fmt::format("{}\n\n", escape_markdown(graphs));
  const HotSpotsResult& h = a.hot_spots;
  const bool device_view = h.gpu_activities > 0;
  const std::vector<OpStat>& ops = device_view ? h.ops_by_device : h.ops_by_host;
  if (!ops.empty()) {
    out += fmt::format("| operator | {} self time | calls |\n|---|---:|---:|\n", device_view ? "GPU" : "host");
    for (const OpStat& op : ops)
      out += fmt::format("| {} | {} | {} |\n", escape_markdown(op.name),
                         human_duration(device_view ? op.device_self_ns : op.host_self_ns), op.calls);
    out += "\n";
    if (const std::string replays = replay_attribution_line(h); device_view && !replays.empty())
      out += escape_markdown(replays) + "\n\n";
  }
  out += roofline_markdown(a.roofline, static_cast<std::size_t>(std::max(1, a.context.options.top_k)));
  out += findings_markdown(d.findings);
  const IngestReport& r = a.model->report;
  if (r.repair_count() + r.skip_count() > 0 || !r.notes.empty()) {
    out += fmt::format("\n**Input**: {} repaired, {} skipped\n\n", r.repair_count(), r.skip_count());
    for (const std::string& line : input_lines(r)) out += "- " + escape_markdown(line) + "\n";
  }
  return finish_text(out);
}

// ---- Findings, shared with the job report ---------------------------------------------------

namespace {
// A fix's own facts after it, in the text and Markdown reports (its finding's title is the line above).
std::string because_suffix(const Fix& fix) {
  std::string out;
  for (const std::string& b : fix.because) out += (out.empty() ? " (because " : "; ") + b;
  return out.empty() ? out : out + ")";
}

const char* severity_color(const Style& s, Severity sev) {
  switch (sev) {
    case Severity::kHigh: return s.red();
    case Severity::kMedium: return s.yellow();
    default: return s.dim();
  }
}

}  // namespace

nlohmann::ordered_json occurrences_json(const Occurrences& o) {
  json spans = json::array();
  for (const Interval& i : o.longest)
    spans.push_back(json::array({round3(ns_to_us(static_cast<double>(i.start))), round3(ns_to_us(i.length()))}));
  return {{"count", o.count}, {"spans_us", spans}};
}

nlohmann::ordered_json finding_json(const Finding& f) {
  json evidence = json::array();
  for (const Evidence& e : f.evidence)
    evidence.push_back({{"name", e.name}, {"value", round3(e.value)}, {"unit", e.unit}});
  json fixes = json::array(), because = json::array();
  for (const Fix& fix : f.fixes) {
    fixes.push_back(fix.text);
    because.push_back(applies_because(f, fix));
  }
  json left_out = json::array();
  for (const Finding::LeftOut& l : f.fixes_left_out) left_out.push_back({{"fix", l.fix}, {"because", l.because}});
  return {{"id", f.id},
          {"title", f.title},
          {"dimension", dimension_name(f.dimension)},
          {"layer", layer_name(f.layer)},
          {"severity", severity_name(f.severity)},
          {"detail", f.detail},
          {"evidence", evidence},
          {"fixes", fixes},
          {"applies_because", because},
          {"fixes_left_out", left_out},
          {"time_share", round3(f.time_share)},
          {"max_speedup", round2(f.max_speedup)},
          {"predicted_speedup",
           f.predicted_speedup > 0 ? nlohmann::ordered_json(round2(f.predicted_speedup)) : nlohmann::ordered_json()},
          {"threshold", f.threshold},
          {"where", occurrences_json(f.where)}};
}

std::string findings_text(const std::vector<Finding>& findings, const Style& st, std::size_t width, bool with_rules) {
  std::string out = fmt::format("\n{}Findings{} ({})\n", st.bold(), st.reset(), findings.size());
  if (findings.empty()) out += "  none\n";
  int rank = 0;
  for (const Finding& f : findings) {
    out += fmt::format("{:>3}. {}{:<6}{} {}\n", ++rank, severity_color(st, f.severity),
                       upper(severity_name(f.severity)), st.reset(), fit_width(f.title, width - 12));
    out += fmt::format("      {}{} / {}{}", st.dim(), dimension_name(f.dimension), layer_name(f.layer), st.reset());
    // The prediction is the gain; the Amdahl bound is its ceiling, beside it.
    if (f.predicted_speedup > 0)
      out += fmt::format("  predicted {:.2f}x", f.predicted_speedup) +
             (f.max_speedup > f.predicted_speedup + 0.005 ? fmt::format(" (ceiling {:.2f}x)", f.max_speedup) : "");
    else if (f.max_speedup > 1.005)
      out += fmt::format("  ceiling {:.2f}x (not predicted)", f.max_speedup);
    out += "\n";
    if (!f.detail.empty()) out += wrap(f.detail, width, "      ");
    std::string ev;
    for (const Evidence& e : f.evidence)
      ev += fmt::format("{}{}={}", ev.empty() ? "" : ", ", e.name, evidence_value_text(e.value, e.unit));
    if (!ev.empty()) out += wrap("evidence: " + ev, width, "      ");
    for (const Fix& fix : f.fixes) out += wrap("fix: " + fix.text + because_suffix(fix), width, "      ");
    if (with_rules && !f.threshold.empty()) out += wrap("rule: " + f.threshold, width, "      ");
  }
  return finish_text(out, st);
}

std::string findings_markdown(const std::vector<Finding>& findings, bool with_rules) {
  std::string out = "| # | severity | finding | layer | predicted | ceiling |\n|---:|---|---|---|---:|---:|\n";
  int rank = 0;
  for (const Finding& f : findings)
    out += fmt::format("| {} | {} | {} | {} / {} | {} | {:.2f}x |\n", ++rank, severity_name(f.severity),
                       escape_markdown(f.title), dimension_name(f.dimension), layer_name(f.layer),
                       f.predicted_speedup > 0 ? fmt::format("{:.2f}x", f.predicted_speedup) : std::string("-"),
                       f.max_speedup);
  if (findings.empty()) out += "| | | no findings | | | |\n";
  for (const Finding& f : findings) {
    if (f.fixes.empty()) continue;
    out += fmt::format("\n**{}**\n", escape_markdown(f.title, /*in_table=*/false));
    if (!f.detail.empty()) {
      out += '\n';
      out += escape_markdown(f.detail, /*in_table=*/false);
      out += '\n';
    }
    out += "\n";
    for (const Fix& fix : f.fixes)
      out += "- " + escape_markdown(fix.text + because_suffix(fix), /*in_table=*/false) + "\n";
    if (with_rules && !f.threshold.empty())
      out += "\n_Rule: " + escape_markdown(f.threshold, /*in_table=*/false) + "_\n";
  }
  return finish_text(out);
}

}  // namespace ferret
