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

const GpuTimelineResult& reported_timeline(const TraceAnalysis& a) {
  return a.hta_timeline ? *a.hta_timeline : a.timeline;
}

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
