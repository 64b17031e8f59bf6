// `ferret analyze --json`: one trace's analyses and diagnosis as a ferret.analysis/1 document
// (docs/ANALYSIS_JSON.md), and the finding objects every JSON document shares.
#include <cmath>

#include "report/trace/analyze_report.h"
#include "report/trace/roofline_report.h"

namespace ferret {

namespace {

using json = nlohmann::ordered_json;

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

// traces[].causality: who waits on whom on each device (analysis/causal/causality.h).
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

// Curves for the first kCurveDevices devices: a rank's trace holds one node's GPUs at most, and a
// trace naming thousands of devices must not turn into megabytes of curves.
constexpr std::size_t kCurveDevices = 16;

// "host": the machine and build, when the caller recorded them.
void add_host_json(const TraceAnalysis& a, json& j) {
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
}

// "window": what was analysed, the workload, and what the window holds.
void add_window_json(const TraceAnalysis& a, json& j) {
  const TraceModel& m = *a.model;
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
}

// "steps" (each step's breakdown), "breakdown_us" and "breakdown_pct" (the mean step's).
void add_steps_json(const TraceAnalysis& a, json& j) {
  const TraceModel& m = *a.model;
  const AnalysisContext& c = a.context;
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
}

// "gpus": per device, utilization and the kernel-level efficiency metrics.
void add_gpus_json(const TraceAnalysis& a, json& j) {
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
}

// "temporal": the GPU timeline's idle, compute and non-compute time, launches, graphs, busy curves.
void add_temporal_json(const TraceAnalysis& a, json& j) {
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
}

// "hot_spots": operators by device time, host time and shape; kernels with what launched them.
void add_hot_spots_json(const TraceAnalysis& a, json& j) {
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
}

// "memory": each device's peaks and allocation curve.
void add_memory_json(const TraceAnalysis& a, json& j) {
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
}

// "communication": shares and per-collective bandwidth.
void add_communication_json(const TraceAnalysis& a, json& j) {
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
}

}  // namespace

json analyze_json(const TraceAnalysis& a, const Diagnosis& d) {
  const TraceModel& m = *a.model;
  json j;
  j["source"] = m.info.source;
  j["format"] = format_generation_name(m.info.generation);
  j["platform"] = platform_name(m.info.platform);
  add_host_json(a, j);
  add_window_json(a, j);
  add_steps_json(a, j);
  add_gpus_json(a, j);
  add_temporal_json(a, j);
  add_hot_spots_json(a, j);
  j["host_python"] = host_python_json(a.python_frames);
  j["critical_path"] = critical_path_json(a.critical_path);
  j["causality"] = causality_json(a.causality);
  j["roofline"] = roofline_json(a.roofline);
  add_memory_json(a, j);
  add_communication_json(a, j);
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

}  // namespace ferret
