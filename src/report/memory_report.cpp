#include "report/memory_report.h"

#include <cmath>

#include <fmt/format.h>

#include "base/terminal_text.h"
#include "base/units.h"
#include "report/analyze_report.h"

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

}  // namespace

json memory_json(const std::vector<MemoryReportInput>& inputs) {
  json snapshots = json::array();
  for (const MemoryReportInput& in : inputs) {
    json devices = json::array();
    for (const DeviceAllocatorState& d : in.state.devices) devices.push_back(device_json(d));
    json settings = json::object();
    for (const auto& [k, v] : in.state.settings) settings[k] = v;
    json findings = json::array();
    for (const Finding& f : in.findings) findings.push_back(finding_json(f));
    snapshots.push_back({{"source", in.source},
                         {"devices", devices},
                         {"allocator_settings", settings},
                         {"findings", findings},
                         {"notes", in.state.notes}});
  }
  return {{"schema", "ferret.memory/1"}, {"snapshots", snapshots}};
}

std::string memory_text(const std::vector<MemoryReportInput>& inputs, const Style& st) {
  std::string out;
  for (const MemoryReportInput& in : inputs) {
    out += fmt::format("{}{}{} (allocator snapshot)\n", st.bold(), terminal_safe(in.source), st.reset());
    if (in.state.devices.empty()) out += "  no segments: nothing was allocated\n";
    for (const DeviceAllocatorState& d : in.state.devices) {
      const PoolState& p = d.total;
      out += fmt::format("\nDevice {}: {} segments, {} blocks{}\n", d.device, p.segments, p.blocks,
                         d.expandable_segments ? " (expandable segments)" : "");
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
    for (const std::string& n : in.state.notes) out += "  note: " + terminal_safe(n) + "\n";
    out += "\n";
  }
  return out;
}

std::string memory_markdown(const std::vector<MemoryReportInput>& inputs) {
  std::string out;
  for (const MemoryReportInput& in : inputs) {
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
    out += "\n" + findings_markdown(in.findings);
  }
  return out;
}

}  // namespace ferret
