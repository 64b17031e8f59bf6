#include "report/memory/memory_report.h"

#include <cmath>

#include <fmt/format.h>

#include "base/terminal_text.h"
#include "base/units.h"
#include "report/text_table.h"
#include "report/trace/analyze_report.h"

namespace ferret {

namespace {

using json = nlohmann::ordered_json;

std::string bytes(std::int64_t b) { return b < 0 ? "-" : human_bytes(static_cast<std::uint64_t>(b)); }

json pool_json(const PoolState& p) {
  return {{"pool", p.pool},
          {"segments", p.segments},
          {"blocks", p.blocks},
          {"reserved_bytes", p.reserved},
          {"allocated_bytes", p.allocated},
          {"active_bytes", p.active},
          {"requested_bytes", p.requested >= 0 ? json(p.requested) : json()},
          {"rounding_waste_bytes", p.requested >= 0 ? json(p.rounding_waste()) : json()},
          {"inactive_bytes", p.inactive},
          {"free_blocks", p.free_blocks},
          {"largest_free_block_bytes", p.largest_free},
          {"external_fragmentation_pct", std::round(1e5 * p.external_fragmentation()) / 1e3}};
}

json device_json(const DeviceAllocatorState& d) {
  json pools = json::array();
  for (const PoolState& p : d.pools) pools.push_back(pool_json(p));
  json pinning = json::array();
  for (const PinningSegment& s : d.pinning) {
    json splitters = json::array();
    for (const Splitter& sp : s.splitters) splitters.push_back({{"bytes", sp.size}, {"frame", sp.frame}});
    pinning.push_back({{"address", s.address},
                       {"total_bytes", s.total_size},
                       {"free_bytes", s.free_bytes},
                       {"active_bytes", s.active_bytes},
                       {"free_blocks", s.free_blocks},
                       {"splitters", splitters}});
  }
  json ooms = json::array();
  for (const OomState& o : d.ooms)
    ooms.push_back({{"requested_bytes", o.requested},
                    {"allocated_bytes", o.allocated},
                    {"reserved_bytes", o.reserved},
                    {"cached_free_bytes", o.cached_free()},
                    {"device_free_bytes", o.device_free >= 0 ? json(o.device_free) : json()},
                    {"time_us", o.time_us >= 0 ? json(o.time_us) : json()},
                    {"frame", o.frame}});
  return {{"device", d.device},
          {"total", pool_json(d.total)},
          {"pools", pools},
          {"expandable_segments", d.expandable_segments},
          {"pinning_segments", pinning},
          {"trace",
           {{"entries", d.trace_entries},
            {"allocs", d.allocs},
            {"frees", d.frees},
            {"segment_allocs", d.segment_allocs},
            {"segment_frees", d.segment_frees},
            {"peak_active_bytes", d.peak_active},
            {"peak_reserved_bytes", d.peak_reserved},
            {"ooms", ooms}}}};
}

json nullable(std::int64_t v) { return v >= 0 ? json(v) : json(); }

json summary_stat_json(const SummaryStat& s) {
  return {{"current", nullable(s.current)},
          {"peak", nullable(s.peak)},
          {"allocated", nullable(s.allocated)},
          {"freed", nullable(s.freed)}};
}

json summary_json(const MemorySummary& s) {
  json rows = json::object();
  for (std::size_t m = 0; m < kSummaryMetrics; ++m) {
    const SummaryRows& r = s.rows[m];
    if (!r.present) continue;
    json row = summary_stat_json(r.all);
    const SummaryMetric metric = static_cast<SummaryMetric>(m);
    if (metric != SummaryMetric::kOversizeAllocations && metric != SummaryMetric::kOversizeSegments) {
      row["large_pool"] = summary_stat_json(r.large_pool);
      row["small_pool"] = summary_stat_json(r.small_pool);
    }
    rows[summary_metric_key(metric)] = row;
  }
  return {{"kind", "summary"},
          {"line", s.line},
          {"device", s.device >= 0 ? json(s.device) : json()},
          {"ooms", nullable(s.ooms)},
          {"alloc_retries", nullable(s.alloc_retries)},
          {"complete", s.complete},
          {"units", s.binary_kb ? "KB/MB/GB (binary)" : "KiB/MiB/GiB"},
          {"bad_cells", s.bad_cells},
          {"rows", rows}};
}

json oom_message_json(const OomMessage& o) {
  json processes = json::array();
  for (std::size_t i = 0; i < o.processes.size(); ++i)
    processes.push_back({{"pid", o.processes[i].pid},
                         {"bytes", o.processes[i].bytes},
                         {"this_process", static_cast<int>(i) == o.self_index}});
  return {{"kind", "oom"},
          {"line", o.line},
          {"lines", o.lines},
          {"repeats", o.repeats},
          {"backend", o.backend},
          {"exception", o.exception},
          {"wording", o.torch2_wording ? "torch 2.x" : "torch 1.x"},
          {"device", o.device >= 0 ? json(o.device) : json()},
          {"requested_bytes", nullable(o.requested)},
          {"total_capacity_bytes", nullable(o.total_capacity)},
          {"device_free_bytes", nullable(o.device_free)},
          {"allowed_bytes", nullable(o.allowed)},
          {"process_in_use_bytes", nullable(o.process_in_use)},
          {"allocated_bytes", nullable(o.allocated)},
          {"reserved_bytes", nullable(o.reserved)},
          {"reserved_unallocated_bytes", nullable(o.reserved_unallocated)},
          {"private_pools_bytes", nullable(o.private_pools)},
          {"other_processes", o.other_processes()},
          {"other_processes_bytes", o.other_processes_bytes()},
          {"processes", processes}};
}

std::string count_text(std::int64_t v) { return v < 0 ? "-" : fmt::format("{}", v); }

std::string summary_heading(const MemorySummary& s) {
  return fmt::format("Summary at line {}, device {}: CUDA OOMs {}, cudaMalloc retries {}{}", s.line,
                     s.device >= 0 ? std::to_string(s.device) : "?", count_text(s.ooms), count_text(s.alloc_retries),
                     s.complete ? "" : " (cut short)");
}

std::string oom_heading(const OomMessage& o) {
  return fmt::format("Out of memory at line {}: {} device {}, {} requested{}", o.line, o.backend,
                     o.device >= 0 ? std::to_string(o.device) : "?", bytes(o.requested),
                     o.repeats > 1 ? fmt::format(" (printed {} times)", o.repeats) : "");
}

std::vector<std::vector<std::string>> summary_cells(const MemorySummary& s) {
  std::vector<std::vector<std::string>> rows;
  for (std::size_t m = 0; m < kSummaryMetrics; ++m) {
    const SummaryRows& r = s.rows[m];
    if (!r.present) continue;
    const SummaryMetric metric = static_cast<SummaryMetric>(m);
    const bool size = summary_metric_is_size(metric);
    auto cell = [&](std::int64_t v) { return size ? bytes(v) : count_text(v); };
    rows.push_back(
        {summary_metric_name(metric), cell(r.all.current), cell(r.all.peak), cell(r.all.allocated), cell(r.all.freed)});
  }
  return rows;
}

std::string oom_text_lines(const OomMessage& o) {
  std::string out;
  out += fmt::format("  device total {}, free {}{}\n", bytes(o.total_capacity), bytes(o.device_free),
                     o.allowed >= 0 ? ", allowed " + bytes(o.allowed) : "");
  out += fmt::format("  PyTorch: allocated {}, reserved {}, reserved but unallocated {}\n", bytes(o.allocated),
                     bytes(o.reserved), bytes(o.reserved_unallocated));
  if (o.process_in_use >= 0) out += fmt::format("  this process in use {}\n", bytes(o.process_in_use));
  if (o.other_processes() > 0)
    out += fmt::format("  other processes: {} holding {}\n", o.other_processes(), bytes(o.other_processes_bytes()));
  return out;
}
}  // namespace

json memory_json(const std::vector<MemoryReportInput>& inputs) {
  json snapshots = json::array();
  json texts = json::array();
  for (const MemoryReportInput& in : inputs) {
    if (in.is_text) {
      json summaries = json::array();
      for (const MemorySummary& s : in.text.summaries) summaries.push_back(summary_json(s));
      json ooms = json::array();
      for (const OomMessage& o : in.text.ooms) ooms.push_back(oom_message_json(o));
      json findings = json::array();
      for (const Finding& f : in.findings) findings.push_back(finding_json(f));
      texts.push_back({{"source", in.source},
                       {"kind", "text"},
                       {"lines", in.text.lines},
                       {"bytes", in.text.bytes},
                       {"long_lines", in.text.long_lines},
                       {"dropped", in.text.dropped_records},
                       {"summaries", summaries},
                       {"ooms", ooms},
                       {"findings", findings},
                       {"notes", in.text.notes}});
      continue;
    }
    json devices = json::array();
    for (const DeviceAllocatorState& d : in.state.devices) devices.push_back(device_json(d));
    json settings = json::object();
    for (const auto& [k, v] : in.state.settings) settings[k] = v;
    json findings = json::array();
    for (const Finding& f : in.findings) findings.push_back(finding_json(f));
    snapshots.push_back({{"source", in.source},
                         {"kind", "snapshot"},
                         {"devices", devices},
                         {"allocator_settings", settings},
                         {"findings", findings},
                         {"notes", in.state.notes}});
  }
  return {{"schema", "ferret.memory/1"}, {"snapshots", snapshots}, {"texts", texts}};
}

namespace {

std::string memory_text_input(const MemoryReportInput& in, const Style& st) {
  const MemoryText& t = in.text;
  std::string out =
      fmt::format("{}{}{} (text: {} memory summar{}, {} out-of-memory message{}, {} lines)\n", st.bold(),
                  terminal_safe(in.source), st.reset(), t.summaries.size(), t.summaries.size() == 1 ? "y" : "ies",
                  t.ooms.size(), t.ooms.size() == 1 ? "" : "s", t.lines);
  const std::size_t width = st.width > 0 ? st.width : kDefaultTextWidth;
  for (const MemorySummary& s : t.summaries) {
    out += '\n';  // appended apart: GCC 12 warns falsely (-Wrestrict) on "\n" + a temporary string
    out += summary_heading(s);
    out += '\n';
    const std::vector<std::vector<std::string>> rows = summary_cells(s);
    const TextTable table({{"metric", 22, 12},
                           {"current", 0, 0, true, 0, 2},
                           {"peak", 0, 0, true, 0, 2},
                           {"tot alloc", 0, 0, true, 2, 2},
                           {"tot freed", 0, 0, true, 1, 2}},
                          rows, 2, width);
    out += table.render(rows);
  }
  for (const OomMessage& o : t.ooms) {
    out += '\n';
    out += oom_heading(o);
    out += '\n';
    out += oom_text_lines(o);
  }
  out += findings_text(in.findings, st, st.width, /*with_rules=*/false);
  for (const std::string& n : t.notes) out += wrap("note: " + n, width, "  ");
  out += "\n";
  return out;
}

std::string memory_markdown_input(const MemoryReportInput& in) {
  const MemoryText& t = in.text;
  std::string out = "## Memory text " + escape_markdown(in.source, false) + "\n\n";
  for (const MemorySummary& s : t.summaries) {
    out += summary_heading(s) + "\n\n| metric | current | peak | tot alloc | tot freed |\n|---|---|---|---|---|\n";
    for (const std::vector<std::string>& r : summary_cells(s))
      out += fmt::format("| {} | {} | {} | {} | {} |\n", r[0], r[1], r[2], r[3], r[4]);
    out += "\n";
  }
  if (!t.ooms.empty()) {
    out +=
        "| line | device | requested | total | free | allocated | reserved | reserved unallocated | other processes |\n"
        "|---|---|---|---|---|---|---|---|---|\n";
    for (const OomMessage& o : t.ooms)
      out += fmt::format("| {} | {} {} | {} | {} | {} | {} | {} | {} | {} |\n", o.line, escape_markdown(o.backend),
                         o.device >= 0 ? std::to_string(o.device) : "?", bytes(o.requested), bytes(o.total_capacity),
                         bytes(o.device_free), bytes(o.allocated), bytes(o.reserved), bytes(o.reserved_unallocated),
                         o.other_processes() > 0 ? bytes(o.other_processes_bytes()) : "-");
    out += "\n";
  }
  out += findings_markdown(in.findings);
  for (const std::string& n : t.notes) out += "- note: " + escape_markdown(n, false) + "\n";
  return out;
}

}  // namespace

std::string memory_text(const std::vector<MemoryReportInput>& inputs, const Style& st) {
  std::string out;
  for (const MemoryReportInput& in : inputs) {
    if (in.is_text) {
      out += memory_text_input(in, st);
      continue;
    }
    out += fmt::format("{}{}{} (allocator snapshot)\n", st.bold(), terminal_safe(in.source), st.reset());
    if (in.state.devices.empty()) out += "  no segments: nothing was allocated\n";
    for (const DeviceAllocatorState& d : in.state.devices) {
      const PoolState& p = d.total;
      out += fmt::format("\nDevice {}: {} segment{}, {} block{}{}\n", d.device, p.segments, p.segments == 1 ? "" : "s",
                         p.blocks, p.blocks == 1 ? "" : "s", d.expandable_segments ? " (expandable segments)" : "");
      out += fmt::format("  reserved   {:>12}\n  allocated  {:>12}\n  active     {:>12}\n", bytes(p.reserved),
                         bytes(p.allocated), bytes(p.active));
      if (p.requested >= 0)
        out += fmt::format("  requested  {:>12}  (rounding waste {})\n", bytes(p.requested), bytes(p.rounding_waste()));
      out += fmt::format("  free       {:>12}  in {} blocks, largest {}, external fragmentation {:.1f}%\n",
                         bytes(p.inactive), p.free_blocks, bytes(p.largest_free), 100 * p.external_fragmentation());
      if (d.pools.size() > 1)
        for (const PoolState& q : d.pools)
          out += fmt::format("  pool {:<8} reserved {}, allocated {}, free {}\n", terminal_safe(q.pool),
                             bytes(q.reserved), bytes(q.allocated), bytes(q.inactive));
      if (!d.pinning.empty()) {
        out += "  segments pinning the most free memory:\n";
        for (const PinningSegment& s : d.pinning) {
          out += fmt::format("    {:#x}: {} free in {} blocks around {} in use", s.address, bytes(s.free_bytes),
                             s.free_blocks, bytes(s.active_bytes));
          if (!s.splitters.empty() && !s.splitters.front().frame.empty())
            out += fmt::format(" (largest: {} from {})", bytes(s.splitters.front().size),
                               terminal_safe(s.splitters.front().frame));
          out += "\n";
        }
      }
      if (d.trace_entries > 0) {
        out += fmt::format(
            "  device trace: {} actions, {} allocs, {} frees, {} segment allocs, {} segment frees; peak active {}, "
            "peak reserved {}\n",
            d.trace_entries, d.allocs, d.frees, d.segment_allocs, d.segment_frees, bytes(d.peak_active),
            bytes(d.peak_reserved));
        for (const OomState& o : d.ooms)
          out += fmt::format("  out of memory: {} requested with {} in use, {} reserved, {} cached free{}\n",
                             bytes(o.requested), bytes(o.allocated), bytes(o.reserved), bytes(o.cached_free()),
                             o.frame.empty() ? "" : " at " + terminal_safe(o.frame));
      }
    }
    if (!in.state.settings.empty()) {
      out += "\nAllocator settings\n";
      for (const auto& [k, v] : in.state.settings)
        out += fmt::format("  {} = {}\n", terminal_safe(k), terminal_safe(v));
    }
    out += findings_text(in.findings, st, st.width, /*with_rules=*/false);
    for (const std::string& n : in.state.notes)
      out += wrap("note: " + n, st.width > 0 ? st.width : kDefaultTextWidth, "  ");
    out += "\n";
  }
  return finish_text(out, st);
}

std::string memory_markdown(const std::vector<MemoryReportInput>& inputs) {
  std::string out;
  for (const MemoryReportInput& in : inputs) {
    if (in.is_text) {
      out += memory_markdown_input(in) + "\n";
      continue;
    }
    out += "## Allocator snapshot " + escape_markdown(in.source, false) + "\n\n";
    out +=
        "| device | reserved | allocated | requested | free | free blocks | largest free | fragmentation |\n"
        "|---|---|---|---|---|---|---|---|\n";
    for (const DeviceAllocatorState& d : in.state.devices) {
      const PoolState& p = d.total;
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {:.1f}% |\n", d.device, bytes(p.reserved),
                         bytes(p.allocated), bytes(p.requested), bytes(p.inactive), p.free_blocks,
                         bytes(p.largest_free), 100 * p.external_fragmentation());
    }
    out += '\n';
    out += findings_markdown(in.findings);
  }
  return finish_text(out);
}

}  // namespace ferret
