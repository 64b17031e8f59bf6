#include "report/trace/info_report.h"
#include "base/units.h"

#include <fmt/format.h>

#include "analysis/analysis.h"
#include "base/terminal_text.h"
#include "report/format.h"

namespace ferret {

namespace {

nlohmann::ordered_json issues_json(const std::map<std::string, Issue>& issues) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& [reason, issue] : issues)
    out.push_back({{"reason", reason}, {"count", issue.count}, {"first", issue.first_location}});
  return out;
}

nlohmann::ordered_json step_json(const Step& s) {
  return {{"number", s.number},
          {"start_ns", s.start_ns},
          {"cpu_end_ns", s.cpu_end_ns},
          {"end_ns", s.end_ns},
          {"duration_ns", s.end_ns - s.start_ns},
          {"kernels", s.kernels}};
}

}  // namespace

nlohmann::ordered_json info_json(const TraceModel& model, const TraceSummary& summary) {
  using json = nlohmann::ordered_json;
  const TraceInfo& info = model.info;
  json j;
  j["source"] = info.source;
  j["compression"] = info.compression;
  j["compressed_bytes"] = info.compressed_bytes;
  j["json_bytes"] = info.json_bytes;
  j["format"] = format_generation_name(info.generation);
  j["platform"] = platform_name(info.platform);
  j["schema_version"] = info.schema_version;
  j["base_time_ns"] = info.base_time_ns ? json(*info.base_time_ns) : json(nullptr);
  j["trace_name"] = info.trace_name;
  j["versions"] = info.versions;
  j["settings"] = info.settings;
  json devices = json::array();
  for (const auto& d : info.devices) {
    devices.push_back({{"id", d.id},
                       {"name", d.name},
                       {"total_global_mem", d.total_global_mem},
                       {"compute_capability", fmt::format("{}.{}", d.compute_major, d.compute_minor)},
                       {"num_sms", d.num_sms}});
  }
  j["devices"] = devices;
  const DistributedInfo& dist = info.distributed;
  j["distributed"] = dist.present ? json{{"backend", dist.backend},
                                         {"rank", dist.rank},
                                         {"world_size", dist.world_size},
                                         {"nccl_version", dist.nccl_version}}
                                  : json(nullptr);
  j["span"] = {{"first_ns", summary.first_ns},
               {"last_ns", summary.last_ns},
               {"duration_ns", summary.last_ns - summary.first_ns}};
  json steps = json::array();
  for (const Step& s : model.relations.steps) steps.push_back(step_json(s));
  j["steps"] = {
      {"count", model.relations.steps.size()},
      {"list", steps},
      {"dropped_incomplete", model.relations.dropped_step ? step_json(*model.relations.dropped_step) : json(nullptr)}};
  j["events"] = summary.events;
  json kinds = json::object();
  for (int k = 0; k < kEventKindCount; ++k) kinds[event_kind_name(static_cast<EventKind>(k))] = summary.by_kind[k];
  j["events_by_kind"] = kinds;
  json streams = json::array();
  for (const auto& s : summary.streams)
    streams.push_back({{"device", s.device},
                       {"stream", s.stream},
                       {"kernels", s.kernels},
                       {"memcpys", s.memcpys},
                       {"memsets", s.memsets},
                       {"other", s.other},
                       {"busy_ns", s.busy_ns}});
  j["streams"] = streams;
  json threads = json::array();
  for (const auto& t : summary.threads)
    threads.push_back({{"pid", t.pid}, {"tid", t.tid}, {"process", t.process}, {"name", t.name}, {"events", t.events}});
  j["threads"] = threads;
  j["relations"] = {{"nesting_repairs", model.relations.nesting_repairs},
                    {"gpu_without_launch", model.relations.unmatched_gpu},
                    {"launches_without_gpu", model.relations.launches_without_gpu},
                    {"python_frames_without_caller", model.relations.python_orphans}};
  j["recorded"] = {{"python_frames", summary.python_frames},
                   {"inductor_kernels", summary.inductor_kernels},
                   {"hardware_counter_series", summary.hardware_counter_series}};
  j["repairs"] = issues_json(model.report.repairs);
  j["skips"] = issues_json(model.report.skips);
  j["notes"] = model.report.notes;
  j["truncated"] = model.report.truncated;
  return j;
}

std::string info_text(const TraceModel& model, const TraceSummary& summary) {
  const TraceInfo& info = model.info;
  std::string out;
  // Every line is one line: names, versions and notes from the trace are escaped whole.
  auto line = [&](std::string_view label, const std::string& value) {
    out += fmt::format("  {:<14} {}\n", label, terminal_safe(value));
  };
  out += fmt::format("{}\n", terminal_safe(info.source));
  line("format", fmt::format("{} ({}), {} compression", format_generation_name(info.generation),
                             platform_name(info.platform), info.compression));
  line("size", info.compression == "none" ? human_bytes(info.json_bytes)
                                          : fmt::format("{} ({} compressed)", human_bytes(info.json_bytes),
                                                        human_bytes(info.compressed_bytes)));
  if (!info.versions.empty()) {
    std::string v;
    for (const auto& [key, value] : info.versions) v += fmt::format("{}{}={}", v.empty() ? "" : ", ", key, value);
    line("versions", v);
  }
  if (info.devices.empty()) {
    line("devices", "none listed");
  } else {
    for (const auto& d : info.devices)
      line(fmt::format("device {}", d.id),
           fmt::format("{} (CC {}.{}, {} SMs, {})", d.name.empty() ? "(unnamed)" : d.name, d.compute_major,
                       d.compute_minor, d.num_sms,
                       human_bytes(static_cast<std::uint64_t>(std::max<std::int64_t>(0, d.total_global_mem)))));
  }
  const DistributedInfo& dist = info.distributed;
  line("distributed", dist.present ? fmt::format("rank {} of {} ({}{})", dist.rank, dist.world_size,
                                                 dist.backend.empty() ? "backend unknown" : dist.backend,
                                                 dist.nccl_version.empty() ? "" : ", NCCL " + dist.nccl_version)
                                   : std::string("not recorded"));
  line("time span", fmt::format("{} ({} .. {} us)", human_duration(summary.last_ns - summary.first_ns),
                                summary.first_ns / 1000, summary.last_ns / 1000));
  const Relations& rel = model.relations;
  if (rel.steps.empty()) {
    line("steps", "none (no ProfilerStep#N spans)");
  } else {
    std::int64_t total = 0;
    for (const Step& s : rel.steps) total += s.end_ns - s.start_ns;
    line("steps",
         rel.step_marker_kind == StepMarker::kProfilerStep
             ? fmt::format("{} (ProfilerStep#{}..#{}), mean {}", rel.steps.size(), rel.steps.front().number,
                           rel.steps.back().number, human_duration(total / static_cast<std::int64_t>(rel.steps.size())))
             : fmt::format("none marked; {} iterations by {}, mean {}", rel.steps.size(), iteration_marker_text(rel),
                           human_duration(total / static_cast<std::int64_t>(rel.steps.size()))));
  }
  if (rel.dropped_step)
    line("", fmt::format("ProfilerStep#{} excluded as incomplete ({} kernels)", rel.dropped_step->number,
                         rel.dropped_step->kernels));
  out += fmt::format("  {:<14} {}\n", "events", summary.events);
  for (int k = 0; k < kEventKindCount; ++k)
    if (summary.by_kind[k] > 0)
      out += fmt::format("    {:<20} {:>10}\n", event_kind_name(static_cast<EventKind>(k)), summary.by_kind[k]);
  line("streams", std::to_string(summary.streams.size()));
  for (const auto& s : summary.streams)
    out += fmt::format("    device {} stream {:<6} {:>8} kernels {:>6} memcpy {:>6} memset  busy {}\n", s.device,
                       s.stream, s.kernels, s.memcpys, s.memsets, human_duration(s.busy_ns));
  // Newer profiler records, named only when present.
  std::string recorded;
  auto add = [&](const std::string& part) { recorded += (recorded.empty() ? "" : ", ") + part; };
  if (summary.python_frames > 0)
    add(fmt::format("{} Python frames ({} callers outside the trace)", summary.python_frames,
                    model.relations.python_orphans));
  if (summary.inductor_kernels > 0) add(fmt::format("{} Inductor kernels", summary.inductor_kernels));
  if (summary.hardware_counter_series > 0)
    add(fmt::format("{} hardware counter series", summary.hardware_counter_series));
  if (!recorded.empty()) line("recorded", recorded);
  line("threads", std::to_string(summary.threads.size()));
  for (const auto& t : summary.threads)
    out += fmt::format("    pid {:<8} tid {:<8} {:>9} events  {}\n", t.pid, t.tid, t.events,
                       terminal_safe(t.process.empty() ? t.name : t.name + " [" + t.process + "]"));
  const IngestReport& r = model.report;
  line("repairs", std::to_string(r.repair_count()));
  for (const auto& [reason, issue] : r.repairs)
    out += fmt::format("    {:>8} x {}\n", issue.count,
                       terminal_safe(reason + " (first at " + issue.first_location + ")"));
  line("skipped", std::to_string(r.skip_count()));
  for (const auto& [reason, issue] : r.skips)
    out += fmt::format("    {:>8} x {}\n", issue.count,
                       terminal_safe(reason + " (first at " + issue.first_location + ")"));
  for (const auto& note : r.notes) out += fmt::format("  note: {}\n", terminal_safe(note));
  return finish_text(out);
}

}  // namespace ferret
