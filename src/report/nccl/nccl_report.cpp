#include "report/nccl/nccl_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/rank_list.h"
#include "ingest/nccl/nccl_log_parser.h"
#include "report/text_table.h"
#include "report/trace/analyze_report.h"

namespace ferret {

namespace {

using json = nlohmann::ordered_json;

constexpr std::size_t kMaxTextRanks = 64;     // rank rows in the text report; JSON has all
constexpr std::size_t kMaxTextPeerRanks = 8;  // ranks whose peers the text report lists

std::string driver_text(int driver) {
  return driver < 0 ? std::string("-") : fmt::format("{}.{}", driver / 1000, (driver % 1000) / 10);
}

std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (const std::string& s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

std::string transports_text(const std::vector<NcclTransportUse>& uses) {
  std::vector<std::string> parts;
  for (const NcclTransportUse& u : uses) parts.push_back(fmt::format("{} {}", u.transport, u.connections));
  return parts.empty() ? std::string("-") : join(parts);
}

std::string host_network(const NcclHostSummary& h) {
  if (!h.ib_nics.empty()) return fmt::format("IB x{}", h.ib_nics.size());
  if (!h.networks.empty()) return join(h.networks, "/");
  if (!h.socket_nics.empty()) return fmt::format("Socket x{}", h.socket_nics.size());
  return "-";
}

std::string gdr_text(const NcclHostSummary& h) {
  if (h.gdr_disabled > 0 && h.gdr_enabled == 0) return "off";
  if (h.gdr_disabled > 0) return "partly";
  if (h.gdr_enabled > 0) return "on";
  for (const NcclTransportUse& u : h.transports)
    if (u.kind == NcclTransportKind::kNet && u.gdr) return "on";
  return "-";
}

std::string channels_text(const NcclChannelCountRecord& c) {
  std::vector<std::string> parts;
  if (c.coll >= 0) parts.push_back(fmt::format("{} coll", c.coll));
  if (c.collnet >= 0) parts.push_back(fmt::format("{} collnet", c.collnet));
  if (c.nvls >= 0) parts.push_back(fmt::format("{} nvls", c.nvls));
  if (c.p2p >= 0) parts.push_back(fmt::format("{} p2p", c.p2p));
  if (c.p2p_per_peer >= 0) parts.push_back(fmt::format("{} p2p per peer", c.p2p_per_peer));
  return parts.empty() ? std::string("not printed") : join(parts);
}

std::string job_network(const NcclSetup& s) {
  if (s.net_connections == 0) {
    std::vector<std::string> names;
    for (const NcclHostSummary& h : s.hosts)
      for (const std::string& n : h.networks)
        if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    return names.empty() ? std::string("not printed") : join(names, "/") + " (no inter-host connections logged)";
  }
  std::string out;
  if (s.net_ib_connections > 0)
    out += fmt::format("RDMA {} connections ({} with GDRDMA)", s.net_ib_connections,
                       s.net_ib_connections - s.net_without_gdr);
  if (s.net_socket_connections > 0)
    out += fmt::format("{}Socket {} connections", out.empty() ? "" : ", ", s.net_socket_connections);
  return out;
}

// "2 hosts"; ">= 2 hosts (1 logged; peers over NET/Socket)" when the connections (or nNodes) show
// hosts whose logs were not given: never "1 host" for a job that talks over the network.
std::string job_hosts_text(const NcclSetup& s) {
  const int logged = s.nranks > 0 ? s.hosts_in_job : static_cast<int>(s.hosts.size());
  const int hosts = std::max(logged, s.hosts_at_least);
  if (hosts <= logged) return fmt::format("{} host{}", hosts, hosts == 1 ? "" : "s");
  std::vector<std::string> nets;
  for (const NcclTransportUse& u : s.transports)
    if (u.kind == NcclTransportKind::kNet && std::find(nets.begin(), nets.end(), "NET/" + u.net) == nets.end())
      nets.push_back("NET/" + u.net);
  const bool from_nnodes = !s.comms.empty() && s.comms.front().nnodes == hosts;
  return fmt::format("{}{} hosts ({} logged; {})", from_nnodes ? "" : ">= ", hosts, logged,
                     from_nnodes ? "nNodes in the graph line" : "peers reached over " + join(nets, ", "));
}

// Per rank whose log was given, its peers grouped by transport: "rank 0 -> rank 1: P2P/IPC (same
// host); ranks 2-3: NET/Socket (another host)". At most `max_lines` ranks (0: all).
std::vector<std::string> peer_lines(const NcclSetup& s, std::size_t max_lines) {
  std::vector<std::string> lines;
  std::size_t i = 0;
  while (i < s.peers.size()) {
    const int from = s.peers[i].from_rank;
    std::vector<std::pair<std::string, std::vector<int>>> groups;  // transports text -> peers
    for (; i < s.peers.size() && s.peers[i].from_rank == from; ++i) {
      const NcclPeer& p = s.peers[i];
      std::vector<std::string> names;
      for (const NcclTransportUse& u : p.transports) names.push_back(u.transport);
      std::string key = join(names, " + ");
      key += p.over_network ? " (another host)" : (p.same_host ? " (same host)" : "");
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
      if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
      it->second.push_back(p.rank);
    }
    if (max_lines > 0 && lines.size() == max_lines) {
      lines.push_back("... more ranks (--json lists every pair)");
      break;
    }
    std::vector<std::string> parts;
    for (const auto& [key, ranks] : groups)
      parts.push_back(fmt::format("rank{} {}: {}", ranks.size() == 1 ? "" : "s", format_rank_list(ranks), key));
    lines.push_back(fmt::format("rank {} -> {}", from, join(parts, "; ")));
  }
  return lines;
}

json uses_json(const std::vector<NcclTransportUse>& uses) {
  json a = json::array();
  for (const NcclTransportUse& u : uses)
    a.push_back({{"transport", u.transport},
                 {"kind", nccl_transport_kind_name(u.kind)},
                 {"net", u.net},
                 {"gdr", u.gdr},
                 {"connections", u.connections}});
  return a;
}

json nics_json(const std::vector<NcclNic>& nics) {
  json a = json::array();
  for (const NcclNic& n : nics) a.push_back({{"name", n.name}, {"port", n.port}, {"link", n.link}, {"sharp", n.sharp}});
  return a;
}

json optional_number(double v) { return v < 0 ? json(nullptr) : json(round3(v)); }
json optional_int(long long v) { return v < 0 ? json(nullptr) : json(v); }

}  // namespace

namespace {

// The files read: their lines, and what was damaged, cut, split or stopped.
std::string text_inputs(const NcclSetup& s, const std::vector<NcclInputError>& errors, const Style& st) {
  std::string out;
  // The colour codes (8 bytes when on) take no columns.
  out += wrap(fmt::format("{}NCCL logs{}: {} file{}, {} lines, {} NCCL lines ({} understood, {} not understood)",
                          st.bold(), st.reset(), s.sources.size(), s.sources.size() == 1 ? "" : "s", s.lines,
                          s.nccl_lines, s.recognised, s.not_understood),
              st.width + (st.enabled ? 8 : 0), "");
  for (const NcclInputError& e : errors)
    out += wrap(fmt::format("not read: {}: {}", e.source, e.error), st.width, "  ");
  for (const NcclSource& src : s.sources) {
    if (!src.damage.empty()) out += wrap(fmt::format("damaged: {}: {}", src.name, src.damage), st.width, "  ");
    if (src.long_lines > 0)
      out += wrap(fmt::format("{}: {} line{} longer than {} KiB cut", src.name, src.long_lines,
                              src.long_lines == 1 ? "" : "s", kMaxLineBytes / 1024),
                  st.width, "  ");
    if (src.interleaved_lines > 0)
      out += wrap(fmt::format("{}: {} line{} holding another rank's line glued on, split and read as two", src.name,
                              src.interleaved_lines, src.interleaved_lines == 1 ? "" : "s"),
                  st.width, "  ");
    if (!src.stopped.empty()) out += wrap(fmt::format("stopped: {}: {}", src.name, src.stopped), st.width, "  ");
    if (src.implausible_lines > 0) {
      out += wrap(fmt::format("{}: {} line{} with an implausible value ignored", src.name, src.implausible_lines,
                              src.implausible_lines == 1 ? "" : "s"),
                  st.width, "  ");
      for (const std::string& note : src.implausible_samples) out += wrap(note, st.width, "    ");
    }
  }
  if (s.nccl_lines == 0) {
    out +=
        "\nNo NCCL_DEBUG=INFO lines found. Run the job with `NCCL_DEBUG=INFO` (and, for one file per\n"
        "process, `NCCL_DEBUG_FILE=nccl.%h.%p.log`).\n";
  }
  return out;
}

// The job in three lines: ranks, hosts and versions; the network; intra-host transports.
std::string text_job(const NcclSetup& s, const Style& st) {
  std::string out;
  std::string job = s.nranks > 0 ? fmt::format("{} ranks on {}", s.nranks, job_hosts_text(s))
                                 : fmt::format("no communicator lines; {}", job_hosts_text(s));
  if (!s.versions.empty())
    job += ", NCCL " + join(s.versions, " / ");
  else if (!s.unattributed_versions.empty())
    job += ", NCCL " + join(s.unattributed_versions, " / ");
  if (!s.drivers.empty()) {
    std::vector<std::string> drivers;
    for (int d : s.drivers) drivers.push_back(driver_text(d));
    job += ", CUDA driver " + join(drivers, " / ");
  }
  out += wrap(fmt::format("{}Job{}: {}", st.bold(), st.reset(), job), st.width + (st.enabled ? 8 : 0), "");
  out += wrap(fmt::format("Network: {}", job_network(s)), st.width, "");
  out += wrap(fmt::format("Intra-host: {} P2P, {} SHM connections; channels: {}{}{}", s.intra_host_p2p,
                          s.intra_host_shm, channels_text(s.channels), s.nvls_available ? "; NVLS available" : "",
                          s.collnet ? "; CollNet/SHARP" : ""),
              st.width, "");
  return out;
}

// Each rank's transport to its peers.
std::string text_peers(const NcclSetup& s, const Style& st) {
  std::string out;
  if (!s.peers.empty()) {
    out += '\n';
    out += wrap(fmt::format("{}Peers{} (transport to each rank, from the connection lines)", st.bold(), st.reset()),
                st.width + (st.enabled ? 8 : 0), "");
    for (const std::string& line : peer_lines(s, kMaxTextPeerRanks)) out += wrap(line, st.width, "  ");
  }
  return out;
}

// The hosts table, with each host's transports and notes.
std::string text_hosts(const NcclSetup& s, const Style& st) {
  std::string out;
  if (!s.hosts.empty()) {
    out += fmt::format("\n{}Hosts{} ({})\n", st.bold(), st.reset(), s.hosts.size());
    std::vector<std::vector<std::string>> rows;
    for (const NcclHostSummary& h : s.hosts)
      rows.push_back({h.host, h.ranks.empty() ? "-" : format_rank_list(h.ranks), std::to_string(h.processes),
                      h.versions.empty() ? "-" : join(h.versions, "/"), host_network(h), gdr_text(h)});
    rows = plain_cells(std::move(rows));  // log text: no colour of its own reaches the terminal
    // Names shrink first; on a narrow terminal the GDR state goes, then the process count.
    const TextTable table({{"host", 24, 6},
                           {"ranks", 16, 5},
                           {"procs", 0, 5, true, 1},
                           {"NCCL", 20, 6},
                           {"network", 12, 7},
                           {"GDR", 0, 3, false, 2}},
                          rows, 2, st.width);
    out += table.header();
    for (std::size_t i = 0; i < s.hosts.size(); ++i) {
      const NcclHostSummary& h = s.hosts[i];
      out += table.row(rows[i]);
      out += wrap("transports: " + transports_text(h.transports), st.width, "    ");
      std::vector<std::string> notes;
      if (h.ib_no_device)
        notes.push_back("NET/IB: " + (h.ib_unavailable.empty() ? std::string("no device found") : h.ib_unavailable));
      if (!h.socket_nics.empty() && h.ib_nics.empty()) {
        std::vector<std::string> names;
        for (const NcclNic& n : h.socket_nics) names.push_back(n.name);
        notes.push_back("sockets on " + join(names, "/"));
      }
      if (!h.plugin.empty()) notes.push_back("net plugin " + h.plugin);
      if (h.gdr_disabled > 0) notes.push_back("GDR disabled for " + join(h.gdr_disabled_hcas));
      if (h.p2p_disabled_pairs > 0) notes.push_back(fmt::format("P2P disabled {}x", h.p2p_disabled_pairs));
      if (h.nvls_available == 0) notes.push_back("no NVLS");
      if (!h.bootstrap.empty()) notes.push_back("bootstrap " + h.bootstrap);
      if (h.warnings > 0) notes.push_back(fmt::format("{} WARN", h.warnings));
      if (!notes.empty()) out += wrap(join(notes, "; "), st.width, "    ");
    }
  }
  return out;
}

// The ranks table (the first kMaxTextRanks).
std::string text_ranks(const NcclSetup& s, const Style& st) {
  std::string out;
  if (!s.ranks.empty()) {
    out += fmt::format("\n{}Ranks{} ({} of {} logged)\n", st.bold(), st.reset(), s.ranks.size(), s.nranks);
    std::vector<std::vector<std::string>> rows;
    for (const NcclRankSummary& r : s.ranks) {
      if (rows.size() == kMaxTextRanks) break;
      const std::string init = r.init_total_s >= 0 ? fmt::format("{:.2f}", r.init_total_s)
                                                   : (r.init_complete ? "ok" : (r.init_started ? "START" : "-"));
      rows.push_back({std::to_string(r.rank), r.host, std::to_string(r.pid), std::to_string(r.cuda_dev), r.bus_id,
                      r.version.empty() ? "-" : r.version, init, transports_text(r.transports)});
    }
    rows = plain_cells(std::move(rows));  // log text: no colour of its own reaches the terminal
    // Transports take what the others leave; bus id, then pid, then device drop out when narrow.
    const TextTable table({{"rank", 0, 4, true},
                           {"host", 20, 6},
                           {"pid", 0, 3, true, 2},
                           {"dev", 0, 3, true, 1},
                           {"busId", 16, 5, false, 3},
                           {"NCCL", 16, 5},
                           {"init s", 0, 6, true},
                           {"transports", 60, 12}},
                          rows, 2, st.width);
    out += table.render(rows);
    if (s.ranks.size() > kMaxTextRanks)
      out += fmt::format("  ... {} more ranks (--json lists every rank)\n", s.ranks.size() - kMaxTextRanks);
  }
  return out;
}

// The communicators table, with missing and incomplete ranks.
std::string text_communicators(const NcclSetup& s, const Style& st) {
  std::string out;
  if (!s.comms.empty()) {
    out += fmt::format("\n{}Communicators{} ({})\n", st.bold(), st.reset(), s.comms.size());
    std::vector<std::vector<std::string>> rows;
    for (const NcclCommSummary& c : s.comms)
      rows.push_back({c.comm_id.empty() ? "(no commId)" : c.comm_id, std::to_string(c.nranks),
                      std::to_string(c.ranks_started), std::to_string(c.ranks_complete), std::to_string(c.hosts),
                      c.init_max_s >= 0 ? fmt::format("{:.2f} s", c.init_max_s) : "-", c.is_job ? "job" : ""});
    rows = plain_cells(std::move(rows));  // log text: no colour of its own reaches the terminal
    const TextTable table({{"commId", 20, 8},
                           {"nranks", 0, 6, true},
                           {"started", 0, 7, true},
                           {"complete", 0, 8, true},
                           {"hosts", 0, 5, true, 2},
                           {"init max", 0, 8, true, 1},
                           {"", 0, 3}},
                          rows, 2, st.width);
    out += table.header();
    for (std::size_t i = 0; i < s.comms.size(); ++i) {
      const NcclCommSummary& c = s.comms[i];
      out += table.row(rows[i]);
      if (!c.missing_ranks.empty())
        out += wrap(fmt::format("missing ranks ({}): {}", c.missing_count, format_rank_ranges(c.missing_ranks)),
                    st.width, "    ");
      if (!c.incomplete_ranks.empty())
        out += wrap("START without COMPLETE: " + format_rank_list(c.incomplete_ranks), st.width, "    ");
    }
  }
  return out;
}

// NCCL_* as NCCL echoed it, values that differ between processes marked.
std::string text_environment(const NcclSetup& s, const Style& st) {
  std::string out;
  if (!s.env.empty()) {
    out += fmt::format("\n{}Environment{} (NCCL_* as NCCL echoed it)\n", st.bold(), st.reset());
    for (const NcclEnvVariable& v : s.env) {
      if (!v.mismatch) {
        out += wrap(fmt::format("{}={} ({} process{})", v.name, v.values.front().first, v.values.front().second.size(),
                                v.values.front().second.size() == 1 ? "" : "es"),
                    st.width, "  ");
        continue;
      }
      std::vector<std::string> parts;
      for (const auto& [value, processes] : v.values)
        parts.push_back(fmt::format("{} on {}", value, fit_width(join(processes), 40)));
      out +=
          wrap(fmt::format("{}{}{} DIFFERS: {}", st.yellow(), v.name, st.reset(), join(parts, "; ")), st.width, "  ");
    }
  }
  return out;
}

// The distinct WARN lines (the first 10).
std::string text_warnings(const NcclSetup& s, const Style& st) {
  std::string out;
  if (s.warning_lines > 0) {
    out += fmt::format("\n{}Warnings{} ({} line{}, {} distinct)\n", st.bold(), st.reset(), s.warning_lines,
                       s.warning_lines == 1 ? "" : "s", s.warnings.size());
    std::size_t shown = 0;
    for (const NcclWarning& w : s.warnings) {
      if (++shown > 10) break;
      out += wrap(fmt::format("{}x {}{}\"{}\" ({})", w.count, w.where, w.where.empty() ? "" : " ",
                              fit_width(w.message, 200), fit_width(join(w.processes), 60)),
                  st.width, "  ");
    }
  }
  return out;
}

// Each collective's bus bandwidth against its transport's ceiling.
std::string text_bandwidth(const NcclSetup& s, const Style& st) {
  std::string out;
  if (!s.bandwidth.empty()) {
    out += fmt::format("\n{}Bandwidth against the transport{} (fastest call >= 16 MiB)\n", st.bold(), st.reset());
    for (const NcclBandwidthCheck& b : s.bandwidth) {
      std::string verdict;
      if (b.fraction < 0)
        verdict = "ceiling unknown";
      else
        verdict =
            fmt::format("{:.0f}% of {:.1f} GB/s{}", 100 * b.fraction, b.ceiling_gbps, b.possible ? "" : ": impossible");
      out += wrap(fmt::format("{} {}, group {}: busbw {:.1f} GB/s = {}", collective_name(b.kind),
                              human_bytes(static_cast<std::uint64_t>(std::max<std::int64_t>(0, b.bytes))), b.group_size,
                              b.busbw_gbps, verdict),
                  st.width, "  ");
      out +=
          wrap(fmt::format("over {}{}{}", b.transport, b.ceiling_basis.empty() ? "" : "; ceiling: ", b.ceiling_basis),
               st.width, "    ");
    }
  }
  return out;
}

// A few NCCL lines ferret did not understand.
std::string text_not_understood(const NcclSetup& s, const Style& st) {
  std::string out;
  if (s.not_understood > 0 && !s.not_understood_samples.empty()) {
    out += '\n';
    out += wrap(fmt::format("{}Not understood{}: {} NCCL line{} (ignored), e.g.", st.bold(), st.reset(),
                            s.not_understood, s.not_understood == 1 ? "" : "s"),
                st.width + (st.enabled ? 8 : 0), "");
    for (std::size_t i = 0; i < s.not_understood_samples.size() && i < 3; ++i)
      out += "  " + fit_width(s.not_understood_samples[i], st.width - 2) + "\n";
  }
  return out;
}

}  // namespace

std::string nccl_text(const NcclSetup& s, const std::vector<Finding>& findings,
                      const std::vector<NcclInputError>& errors, const Style& st) {
  std::string out = text_inputs(s, errors, st) + text_job(s, st) + text_peers(s, st) + text_hosts(s, st) +
                    text_ranks(s, st) + text_communicators(s, st) + text_environment(s, st) + text_warnings(s, st) +
                    text_bandwidth(s, st) + text_not_understood(s, st);
  out += findings_text(findings, st, st.width, /*with_rules=*/true);
  return finish_text(out, st);
}

namespace {

// "sources", "errors", "lines", "not_understood_samples".
void json_inputs(const NcclSetup& s, const std::vector<NcclInputError>& errors, json& j) {
  json sources = json::array();
  for (const NcclSource& src : s.sources)
    sources.push_back({{"name", src.name},
                       {"compression", src.compression},
                       {"bytes", src.bytes},
                       {"lines", src.lines},
                       {"nccl_lines", src.nccl_lines},
                       {"recognised", src.recognised},
                       {"not_understood", src.not_understood},
                       {"long_lines", src.long_lines},
                       {"interleaved_lines", src.interleaved_lines},
                       {"implausible_lines", src.implausible_lines},
                       {"implausible_samples", src.implausible_samples},
                       {"stopped", src.stopped},
                       {"damage", src.damage}});
  j["sources"] = sources;
  json errs = json::array();
  for (const NcclInputError& e : errors) errs.push_back({{"source", e.source}, {"error", e.error}});
  j["errors"] = errs;
  j["lines"] = {
      {"read", s.lines}, {"nccl", s.nccl_lines}, {"recognised", s.recognised}, {"not_understood", s.not_understood}};
  j["not_understood_samples"] = s.not_understood_samples;
}

// "job": ranks, hosts, versions, channels, connections, transports.
void json_job(const NcclSetup& s, json& j) {
  const NcclChannelCountRecord& c = s.channels;
  j["job"] = {{"nranks", optional_int(s.nranks)},
              {"hosts", s.hosts_in_job},
              {"hosts_at_least", s.hosts_at_least},
              {"multi_host", s.multi_host},
              {"max_ranks_per_host", s.max_ranks_per_host},
              {"nccl_versions", s.versions},
              {"unattributed_versions", s.unattributed_versions},
              {"cuda_drivers", s.drivers},
              {"channels",
               {{"coll", optional_int(c.coll)},
                {"collnet", optional_int(c.collnet)},
                {"nvls", optional_int(c.nvls)},
                {"p2p", optional_int(c.p2p)},
                {"p2p_per_peer", optional_int(c.p2p_per_peer)},
                {"variants", s.channel_count_variants},
                {"ring_lines", s.rings}}},
              {"nvls_available", s.nvls_available},
              {"collnet", s.collnet},
              {"connections",
               {{"p2p", s.intra_host_p2p},
                {"shm", s.intra_host_shm},
                {"net", s.net_connections},
                {"net_socket", s.net_socket_connections},
                {"net_rdma", s.net_ib_connections},
                {"net_rdma_without_gdr", s.net_without_gdr}}},
              {"p2p_disabled_lines", s.p2p_disabled_lines},
              {"transports", uses_json(s.transports)}};
}

// "hosts".
void json_hosts(const NcclSetup& s, json& j) {
  json hosts = json::array();
  for (const NcclHostSummary& h : s.hosts)
    hosts.push_back({{"host", h.host},
                     {"ranks", h.ranks},
                     {"processes", h.processes},
                     {"nccl_versions", h.versions},
                     {"cuda_drivers", h.drivers},
                     {"networks", h.networks},
                     {"ib_nics", nics_json(h.ib_nics)},
                     {"ib_no_device", h.ib_no_device},
                     {"ib_unavailable", h.ib_unavailable},
                     {"socket_nics", nics_json(h.socket_nics)},
                     {"nic_speed_gbps", optional_number(h.nic_speed_gbps)},
                     {"bootstrap", h.bootstrap},
                     {"net_plugin", h.plugin},
                     {"collnet_plugin", h.collnet_plugin},
                     {"gdr_enabled_lines", h.gdr_enabled},
                     {"gdr_disabled_lines", h.gdr_disabled},
                     {"gdr_disabled_hcas", h.gdr_disabled_hcas},
                     {"p2p_disabled_pairs", h.p2p_disabled_pairs},
                     {"nvls_available", h.nvls_available < 0 ? json(nullptr) : json(h.nvls_available == 1)},
                     {"transports", uses_json(h.transports)},
                     {"warnings", h.warnings}});
  j["hosts"] = hosts;
}

// "peers".
void json_peers(const NcclSetup& s, json& j) {
  json peers = json::array();
  for (const NcclPeer& p : s.peers)
    peers.push_back({{"rank", p.rank},
                     {"from_rank", p.from_rank},
                     {"over_network", p.over_network},
                     {"same_host", p.same_host},
                     {"transports", uses_json(p.transports)}});
  j["peers"] = peers;
}

// "ranks", with each one's init phases.
void json_ranks(const NcclSetup& s, json& j) {
  json ranks = json::array();
  for (const NcclRankSummary& r : s.ranks) {
    json phases = json::object();
    for (const auto& [name, seconds] : r.init_phases) phases[name] = round3(seconds);
    ranks.push_back({{"rank", r.rank},
                     {"host", r.host},
                     {"pid", r.pid},
                     {"cuda_dev", optional_int(r.cuda_dev)},
                     {"bus_id", r.bus_id},
                     {"init_started", r.init_started},
                     {"init_complete", r.init_complete},
                     {"nccl_version", r.version},
                     {"build_cuda", r.build_cuda},
                     {"cuda_driver", optional_int(r.driver_version)},
                     {"network", r.network},
                     {"init_seconds", optional_number(r.init_total_s)},
                     {"init_phases_seconds", phases},
                     {"transports", uses_json(r.transports)},
                     {"warnings", r.warnings}});
  }
  j["ranks"] = ranks;
}

// "communicators".
void json_communicators(const NcclSetup& s, json& j) {
  json comms = json::array();
  for (const NcclCommSummary& cm : s.comms) {
    // Inclusive [first, last] ranges: the size follows the ranks logged, never nranks.
    json missing = json::array();
    for (const auto& [first, last] : cm.missing_ranks) missing.push_back(json::array({first, last}));
    comms.push_back({{"comm_id", cm.comm_id},
                     {"job", cm.is_job},
                     {"nranks", cm.nranks},
                     {"ranks_started", cm.ranks_started},
                     {"ranks_complete", cm.ranks_complete},
                     {"missing_ranks", missing},
                     {"missing_count", cm.missing_count},
                     {"incomplete_ranks", cm.incomplete_ranks},
                     {"hosts", cm.hosts},
                     {"nnodes", optional_int(cm.nnodes)},
                     {"init_max_seconds", optional_number(cm.init_max_s)},
                     {"init_slowest_rank", optional_int(cm.init_slowest_rank)},
                     {"init_slowest_phase", cm.init_slowest_phase},
                     {"init_slowest_phase_seconds", optional_number(cm.init_slowest_phase_s)}});
  }
  j["communicators"] = comms;
}

// "environment".
void json_environment(const NcclSetup& s, json& j) {
  json env = json::array();
  for (const NcclEnvVariable& v : s.env) {
    json values = json::array();
    for (const auto& [value, processes] : v.values) values.push_back({{"value", value}, {"processes", processes}});
    env.push_back({{"name", v.name}, {"mismatch", v.mismatch}, {"values", values}});
  }
  j["environment"] = env;
}

// "warnings".
void json_warnings(const NcclSetup& s, json& j) {
  json warnings = json::array();
  for (const NcclWarning& w : s.warnings)
    warnings.push_back({{"message", w.message}, {"where", w.where}, {"count", w.count}, {"processes", w.processes}});
  j["warnings"] = {{"lines", s.warning_lines}, {"distinct", warnings}};
}

// "bandwidth".
void json_bandwidth(const NcclSetup& s, json& j) {
  json bandwidth = json::array();
  for (const NcclBandwidthCheck& b : s.bandwidth)
    bandwidth.push_back({{"trace", b.trace},
                         {"trace_rank", optional_int(b.trace_rank)},
                         {"collective", collective_name(b.kind)},
                         {"group_size", optional_int(b.group_size)},
                         {"bytes", optional_int(b.bytes)},
                         {"busbw_gbps", round3(b.busbw_gbps)},
                         {"crosses_hosts", b.crosses_hosts},
                         {"transport", b.transport},
                         {"ceiling_gbps", optional_number(b.ceiling_gbps)},
                         {"ceiling_basis", b.ceiling_basis},
                         {"fraction_of_ceiling", optional_number(b.fraction)},
                         {"possible", b.possible}});
  j["bandwidth"] = bandwidth;
}

}  // namespace

json nccl_json(const NcclSetup& s, const std::vector<Finding>& findings, const std::vector<NcclInputError>& errors) {
  json j;
  j["schema"] = "ferret.nccl/1";
  json_inputs(s, errors, j);
  json_job(s, j);
  json_hosts(s, j);
  json_peers(s, j);
  json_ranks(s, j);
  json_communicators(s, j);
  json_environment(s, j);
  json_warnings(s, j);
  json_bandwidth(s, j);
  json fs = json::array();
  for (const Finding& f : findings) fs.push_back(finding_json(f));
  j["findings"] = fs;
  return j;
}

std::string nccl_markdown(const NcclSetup& s, const std::vector<Finding>& findings,
                          const std::vector<NcclInputError>& errors) {
  auto md = [](std::string_view text) { return escape_markdown(text); };
  std::string out = "## NCCL setup\n\n";
  out += fmt::format("{} file{}, {} lines, {} NCCL lines ({} understood, {} not understood).", s.sources.size(),
                     s.sources.size() == 1 ? "" : "s", s.lines, s.nccl_lines, s.recognised, s.not_understood);
  if (s.nranks > 0) out += fmt::format(" **{} ranks on {}**", s.nranks, md(job_hosts_text(s)));
  if (!s.versions.empty()) out += ", NCCL " + md(join(s.versions, " / "));
  out += ". Network: " + md(job_network(s)) + "\n\n";
  for (const NcclInputError& e : errors) out += "- not read: " + md(e.source) + ": " + md(e.error) + "\n";
  bool notes = !errors.empty();
  for (const NcclSource& src : s.sources) {
    if (!src.stopped.empty()) out += "- stopped: " + md(src.name) + ": " + md(src.stopped) + "\n", notes = true;
    for (const std::string& note : src.implausible_samples) out += "- ignored: " + md(note) + "\n", notes = true;
  }
  if (notes) out += "\n";

  out += findings_markdown(findings, /*with_rules=*/true);

  if (!s.peers.empty()) {
    out += "\n### Peers\n\n";
    for (const std::string& line : peer_lines(s, 0)) out += "- " + md(line) + "\n";
  }
  if (!s.hosts.empty()) {
    out += "\n### Hosts\n\n| host | ranks | NCCL | network | GDR | transports |\n|---|---|---|---|---|---|\n";
    for (const NcclHostSummary& h : s.hosts)
      out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", md(h.host),
                         h.ranks.empty() ? "-" : format_rank_list(h.ranks),
                         md(h.versions.empty() ? "-" : join(h.versions, "/")), md(host_network(h)), gdr_text(h),
                         md(transports_text(h.transports)));
  }
  if (!s.ranks.empty()) {
    out +=
        "\n### Ranks\n\n| rank | host | pid | dev | NCCL | init s | transports |\n|---:|---|---:|---:|---|---:|---|\n";
    for (const NcclRankSummary& r : s.ranks)
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", r.rank, md(r.host), r.pid, r.cuda_dev,
                         md(r.version.empty() ? "-" : r.version),
                         r.init_total_s >= 0 ? fmt::format("{:.2f}", r.init_total_s) : "-",
                         md(transports_text(r.transports)));
  }
  if (!s.env.empty()) {
    out += "\n### NCCL environment\n\n| variable | values |\n|---|---|\n";
    for (const NcclEnvVariable& v : s.env) {
      std::vector<std::string> parts;
      for (const auto& [value, processes] : v.values) parts.push_back(value + " on " + join(processes));
      out += fmt::format("| {}{} | {} |\n", md(v.name), v.mismatch ? " (differs)" : "", md(join(parts, "; ")));
    }
  }
  if (!s.warnings.empty()) {
    out += "\n### Warnings\n\n| count | where | message | processes |\n|---:|---|---|---|\n";
    for (const NcclWarning& w : s.warnings)
      out += fmt::format("| {} | {} | {} | {} |\n", w.count, md(w.where), md(w.message), md(join(w.processes)));
  }
  if (!s.bandwidth.empty()) {
    out +=
        "\n### Bandwidth against the transport\n\n| collective | size | busbw GB/s | transport | ceiling GB/s | "
        "share |\n|---|---:|---:|---|---:|---:|\n";
    for (const NcclBandwidthCheck& b : s.bandwidth)
      out += fmt::format(
          "| {} | {} | {:.1f} | {} | {} | {} |\n", collective_name(b.kind),
          human_bytes(static_cast<std::uint64_t>(std::max<std::int64_t>(0, b.bytes))), b.busbw_gbps, md(b.transport),
          b.ceiling_gbps > 0 ? fmt::format("{:.1f}", b.ceiling_gbps) : "?",
          b.fraction >= 0 ? fmt::format("{:.0f}%{}", 100 * b.fraction, b.possible ? "" : " (impossible)") : "?");
  }
  return finish_text(out);
}

}  // namespace ferret
