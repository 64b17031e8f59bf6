#include "analysis/nccl/nccl_setup.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "analysis/analysis.h"
#include "base/rank_list.h"
#include "model/gpu_specs.h"

namespace ferret {

namespace {

using ProcessKey = std::pair<std::uint32_t, std::int32_t>;             // host, pid
using GpuKey = std::tuple<std::uint32_t, std::int32_t, std::int32_t>;  // host, pid, device

struct ProcessInfo {
  std::string version;
  std::string build_cuda;
  int driver = -1;
  std::string network;
  std::map<std::string, std::string> env;
  std::uint64_t warnings = 0;
};

struct RankSeen {
  bool started = false;
  bool complete = false;
  std::uint32_t host = kNoHost;
  int pid = -1;
  int cuda_dev = -1;
  std::string bus_id;
};

struct CommGroup {
  std::string comm_id;
  int nranks = -1;
  int nnodes = -1;
  std::map<int, RankSeen> ranks;
};

// "NET/IB/0/GDRDMA" -> "NET/IB/GDRDMA"; "P2P/IPC/read" -> "P2P/IPC"; "SHM/direct/direct" -> "SHM".
std::string transport_key(const NcclTransport& t) {
  switch (t.kind) {
    case NcclTransportKind::kNet: return "NET/" + t.net + (t.gdr ? "/GDRDMA" : "");
    case NcclTransportKind::kP2P: return t.p2p_mode.empty() ? "P2P" : "P2P/" + t.p2p_mode;
    case NcclTransportKind::kShm: return "SHM";
    default: return t.text;
  }
}

void add_use(std::vector<NcclTransportUse>& uses, const NcclTransport& t) {
  const std::string key = transport_key(t);
  for (NcclTransportUse& u : uses)
    if (u.transport == key) {
      ++u.connections;
      return;
    }
  NcclTransportUse u;
  u.transport = key;
  u.kind = t.kind;
  u.net = t.net;
  u.gdr = t.gdr;
  u.connections = 1;
  uses.push_back(std::move(u));
}

void sort_uses(std::vector<NcclTransportUse>& uses) {
  std::sort(uses.begin(), uses.end(), [](const NcclTransportUse& a, const NcclTransportUse& b) {
    return a.connections != b.connections ? a.connections > b.connections : a.transport < b.transport;
  });
}

template <typename T>
void add_distinct(std::vector<T>& values, const T& value) {
  if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
}

bool is_socket(const std::string& net) { return net == "Socket"; }

}  // namespace

std::string NcclSetup::process_label(const std::string& host, int pid) const {
  const std::string key = fmt::format("{}:{}", host, pid);
  for (const auto& [process, ranks_of] : process_ranks)
    if (process == key && !ranks_of.empty())
      return ranks_of.size() == 1 ? fmt::format("rank {}", ranks_of.front())
                                  : fmt::format("ranks {}", format_rank_list(ranks_of));
  return key;
}

namespace {

// ---- the passes of analyze_nccl_setup, in the order it runs them ----------------------------------

using Processes = std::map<ProcessKey, ProcessInfo>;
using CommGroups = std::map<std::string, CommGroup>;

std::string version_text(const std::string& version, const std::string& build_cuda) {
  return version + (build_cuda.empty() ? "" : "+cuda" + build_cuda);
}

void count_input(const NcclLog& log, NcclSetup& s) {
  s.sources = log.sources;
  s.lines = log.total_lines();
  s.nccl_lines = log.total_nccl_lines();
  s.recognised = log.total_recognised();
  s.not_understood = log.total_not_understood();
  s.not_understood_samples = log.not_understood_samples;
}

// What each process printed about itself: version, driver, NCCL_* settings, warnings, network.
// Bare version lines with no process to pin them on go to s.unattributed_versions.
Processes gather_processes(const NcclLog& log, NcclSetup& s) {
  Processes processes;
  auto process_of = [&](const NcclOrigin& o) -> ProcessInfo* {
    if (o.host == kNoHost) return nullptr;
    return &processes[{o.host, o.pid}];
  };
  for (const NcclVersionRecord& v : log.versions) {
    ProcessInfo* p = process_of(v.origin);
    if (p == nullptr) {
      add_distinct(s.unattributed_versions, version_text(v.version, v.build_cuda));
      continue;
    }
    // A prefixed version line beats one inferred for a bare line.
    if (p->version.empty() || !v.origin.inferred) {
      p->version = v.version;
      p->build_cuda = v.build_cuda;
    }
  }
  for (const NcclDriverRecord& d : log.drivers)
    if (ProcessInfo* p = process_of(d.origin)) p->driver = d.driver_version;
  for (const NcclEnvRecord& e : log.env)
    if (ProcessInfo* p = process_of(e.origin)) p->env[e.name] = e.value;
  for (const NcclWarnRecord& w : log.warnings)
    if (ProcessInfo* p = process_of(w.origin)) ++p->warnings;
  for (const NcclNetRecord& n : log.net)
    if (n.event == NcclNetEvent::kUsingNetwork)
      if (ProcessInfo* p = process_of(n.origin)) p->network = n.name;
  return processes;
}

// Communicators by commId (by size before NCCL 2.12), with the ranks that logged Init START /
// COMPLETE and the node count of their graph lines.
CommGroups gather_communicators(const NcclLog& log) {
  CommGroups groups;
  std::map<std::tuple<std::uint32_t, std::int32_t, std::string>, std::string> group_of_comm;  // host, pid, ptr
  for (const NcclCommRecord& c : log.comms) {
    if (c.phase != NcclCommPhase::kStart && c.phase != NcclCommPhase::kComplete) continue;
    const std::string key = !c.comm_id.empty() ? c.comm_id : fmt::format("nranks {}", c.nranks);
    CommGroup& g = groups[key];
    g.comm_id = c.comm_id;
    g.nranks = c.nranks;
    RankSeen& r = g.ranks[c.rank];
    if (c.phase == NcclCommPhase::kStart)
      r.started = true;
    else
      r.complete = true;
    r.host = c.origin.host;
    r.pid = c.origin.pid;
    if (c.cuda_dev >= 0) r.cuda_dev = c.cuda_dev;
    if (!c.bus_id.empty()) r.bus_id = c.bus_id;
    group_of_comm[{c.origin.host, c.origin.pid, c.comm}] = key;
  }
  for (const NcclCommRecord& c : log.comms) {
    if (c.phase != NcclCommPhase::kInfo || c.nnodes < 0) continue;
    auto it = group_of_comm.find({c.origin.host, c.origin.pid, c.comm});
    if (it != group_of_comm.end()) groups[it->second].nnodes = std::max(groups[it->second].nnodes, c.nnodes);
  }
  return groups;
}

// The job's communicator: the largest by nranks, then by ranks seen.
const CommGroup* job_communicator(const CommGroups& groups) {
  const CommGroup* job = nullptr;
  for (const auto& [key, g] : groups)
    if (job == nullptr || g.nranks > job->nranks || (g.nranks == job->nranks && g.ranks.size() > job->ranks.size()))
      job = &g;
  return job;
}

// The last Init timings line of (host, pid, rank, nranks).
const NcclInitTimingRecord* timing_for(const NcclLog& log, std::uint32_t host, int pid, int rank, int nranks) {
  const NcclInitTimingRecord* found = nullptr;
  for (const NcclInitTimingRecord& t : log.init_timings)
    if (t.origin.host == host && t.origin.pid == pid && t.rank == rank && t.nranks == nranks) found = &t;
  return found;
}

NcclCommSummary summarize_communicator(const NcclLog& log, const CommGroup& g) {
  NcclCommSummary c;
  c.comm_id = g.comm_id;
  c.nranks = g.nranks;
  c.nnodes = g.nnodes;
  std::set<std::uint32_t> hosts;
  for (const auto& [rank, seen] : g.ranks) {
    c.ranks_started += seen.started;
    c.ranks_complete += seen.complete;
    if (seen.started && !seen.complete) c.incomplete_ranks.push_back(rank);
    hosts.insert(seen.host);
    const NcclInitTimingRecord* t = timing_for(log, seen.host, seen.pid, rank, g.nranks);
    if (t == nullptr || !(t->total_s > c.init_max_s)) continue;  // NaN never the slowest
    c.init_max_s = t->total_s;
    c.init_slowest_rank = rank;
    c.init_slowest_phase.clear();
    c.init_slowest_phase_s = -1;
    for (const auto& [phase, seconds] : t->phases)
      if (seconds > c.init_slowest_phase_s) c.init_slowest_phase = phase, c.init_slowest_phase_s = seconds;
  }
  // A log from a rank that printed only COMPLETE (its START filtered out) is not incomplete.
  std::vector<int> seen;
  seen.reserve(g.ranks.size());
  for (const auto& [rank, unused] : g.ranks) seen.push_back(rank);
  c.missing_ranks = missing_rank_ranges(seen, g.nranks);
  for (const auto& [first, last] : c.missing_ranks) c.missing_count += static_cast<std::int64_t>(last) - first + 1;
  c.hosts = static_cast<int>(hosts.size());
  return c;
}

// The job's communicator first, then the others by key.
void summarize_communicators(const NcclLog& log, const CommGroups& groups, const CommGroup* job, NcclSetup& s) {
  for (const auto& [key, g] : groups) {
    NcclCommSummary c = summarize_communicator(log, g);
    c.is_job = &g == job;
    if (c.is_job)
      s.comms.insert(s.comms.begin(), std::move(c));
    else
      s.comms.push_back(std::move(c));
  }
}

struct ConnectionUses {
  std::map<GpuKey, std::vector<NcclTransportUse>> by_gpu;
  std::map<std::uint32_t, std::vector<NcclTransportUse>> by_host;
  int largest_host_group = 0;  // ranks joined by P2P/SHM connections: one host
};

// Union-find over ranks: the two ends of a P2P/SHM connection share a host.
class SameHostGroups {
 public:
  void join(int a, int b) {
    const int ra = root(a), rb = root(b);
    if (ra != rb) parent_[ra] = rb;
  }
  int largest() {
    std::map<int, int> sizes;
    int best = 0;
    for (const auto& [rank, unused] : parent_) best = std::max(best, ++sizes[root(rank)]);
    return best;
  }

 private:
  std::map<int, int> parent_;
  int root(int r) {
    auto it = parent_.try_emplace(r, r).first;
    while (it->second != it->first) {
      auto up = parent_.find(it->second);
      it->second = up->second;  // path halving
      it = parent_.find(it->second);
    }
    return it->first;
  }
};

// The peer of each connection: the end that is not the rank that printed the line. That rank is
// known from the communicator lines of the printing process and device; else NCCL's habit
// decides (sends are printed on the sender, `[receive]` lines on the receiver).
void gather_peers(const NcclLog& log, NcclSetup& s, ConnectionUses& uses) {
  std::map<GpuKey, std::set<int>> ranks_of_gpu;
  for (const NcclCommRecord& c : log.comms)
    if (c.rank >= 0)
      ranks_of_gpu[{c.origin.host, c.origin.pid, c.cuda_dev >= 0 ? c.cuda_dev : c.origin.dev}].insert(c.rank);
  std::map<std::pair<int, int>, NcclPeer> peers;  // (printer, peer)
  SameHostGroups groups;
  for (const NcclConnectionRecord& c : log.connections) {
    if (c.from_rank < 0 || c.to_rank < 0 || c.from_rank == c.to_rank) continue;
    bool printed_by_receiver = c.direction == 'r';
    if (auto it = ranks_of_gpu.find({c.origin.host, c.origin.pid, c.origin.dev}); it != ranks_of_gpu.end()) {
      const bool from_is_self = it->second.contains(c.from_rank), to_is_self = it->second.contains(c.to_rank);
      if (from_is_self != to_is_self) printed_by_receiver = to_is_self;
    }
    const int printer = printed_by_receiver ? c.to_rank : c.from_rank;
    const int peer = printed_by_receiver ? c.from_rank : c.to_rank;
    const NcclTransport& t = log.transports[c.transport];
    NcclPeer& p = peers[{printer, peer}];
    p.rank = peer;
    p.from_rank = printer;
    add_use(p.transports, t);
    if (t.kind == NcclTransportKind::kNet) p.over_network = true;
    if (t.kind == NcclTransportKind::kP2P || t.kind == NcclTransportKind::kShm) {
      p.same_host = true;
      groups.join(printer, peer);
    }
  }
  for (auto& [pair, p] : peers) {
    sort_uses(p.transports);
    s.peers.push_back(std::move(p));
  }
  uses.largest_host_group = groups.largest();
}

// Transports per GPU, per host and job-wide, and the job's connection counts by kind.
ConnectionUses count_connections(const NcclLog& log, NcclSetup& s) {
  ConnectionUses uses;
  for (const NcclConnectionRecord& c : log.connections) {
    const NcclTransport& t = log.transports[c.transport];
    add_use(uses.by_gpu[{c.origin.host, c.origin.pid, c.origin.dev}], t);
    add_use(uses.by_host[c.origin.host], t);
    add_use(s.transports, t);
    switch (t.kind) {
      case NcclTransportKind::kP2P: ++s.intra_host_p2p; break;
      case NcclTransportKind::kShm: ++s.intra_host_shm; break;
      case NcclTransportKind::kNet:
        ++s.net_connections;
        if (is_socket(t.net)) {
          ++s.net_socket_connections;
        } else {
          ++s.net_ib_connections;
          if (!t.gdr) ++s.net_without_gdr;
        }
        break;
      default: break;
    }
  }
  sort_uses(s.transports);
  gather_peers(log, s, uses);
  return uses;
}

// One summary per rank of the job's communicator, and the job ranks of each process.
void summarize_job_ranks(const NcclLog& log, const CommGroup* job, const Processes& processes,
                         const ConnectionUses& uses, NcclSetup& s) {
  std::map<std::string, std::vector<int>> ranks_of_process;
  if (job != nullptr) {
    s.nranks = job->nranks;
    for (const auto& [rank, seen] : job->ranks) {
      NcclRankSummary r;
      r.rank = rank;
      r.host = std::string(log.host_name(seen.host));
      r.pid = seen.pid;
      r.cuda_dev = seen.cuda_dev;
      r.bus_id = seen.bus_id;
      r.init_started = seen.started;
      r.init_complete = seen.complete;
      if (auto it = processes.find({seen.host, seen.pid}); it != processes.end()) {
        r.version = it->second.version;
        r.build_cuda = it->second.build_cuda;
        r.driver_version = it->second.driver;
        r.network = it->second.network;
        r.warnings = it->second.warnings;
      }
      if (const NcclInitTimingRecord* t = timing_for(log, seen.host, seen.pid, rank, job->nranks)) {
        r.init_total_s = t->total_s;
        r.init_phases = t->phases;
      }
      if (auto it = uses.by_gpu.find({seen.host, seen.pid, seen.cuda_dev}); it != uses.by_gpu.end()) {
        r.transports = it->second;
        sort_uses(r.transports);
      }
      ranks_of_process[fmt::format("{}:{}", r.host, r.pid)].push_back(rank);
      s.ranks.push_back(std::move(r));
    }
  }
  for (auto& [process, ranks] : ranks_of_process) s.process_ranks.emplace_back(process, std::move(ranks));
}

// Host summaries by interned host, made on first mention, with the pids seen on each.
class HostTable {
 public:
  explicit HostTable(const NcclLog& log) : log_(log) {}
  NcclHostSummary* of(std::uint32_t host, int pid = -1) {
    if (host == kNoHost) return nullptr;
    NcclHostSummary& h = hosts_[host];
    if (h.host.empty()) h.host = std::string(log_.host_name(host));
    if (pid >= 0) pids_[host].insert(pid);
    return &h;
  }
  NcclHostSummary* of(const NcclOrigin& o) { return of(o.host, o.pid); }
  std::map<std::uint32_t, NcclHostSummary>& hosts() { return hosts_; }
  int processes_on(std::uint32_t host) { return static_cast<int>(pids_[host].size()); }

 private:
  const NcclLog& log_;
  std::map<std::uint32_t, NcclHostSummary> hosts_;
  std::map<std::uint32_t, std::set<int>> pids_;
};

void add_process_facts(HostTable& hosts, const Processes& processes) {
  for (const auto& [key, p] : processes) {
    NcclHostSummary* h = hosts.of(key.first, key.second);
    if (!p.version.empty()) add_distinct(h->versions, version_text(p.version, p.build_cuda));
    if (p.driver >= 0) add_distinct(h->drivers, p.driver);
    if (!p.network.empty()) add_distinct(h->networks, p.network);
    h->warnings += p.warnings;
  }
}

// NICs, plugins, bootstrap interface and link speed per host; a SHARP NIC marks the job CollNet.
void add_network_events(HostTable& hosts, const NcclLog& log, NcclSetup& s) {
  for (const NcclNetRecord& n : log.net) {
    NcclHostSummary* h = hosts.of(n.origin);
    if (h == nullptr) continue;
    switch (n.event) {
      case NcclNetEvent::kIbDevices:
        if (h->ib_nics.empty()) h->ib_nics = n.nics;
        for (const NcclNic& nic : n.nics) s.collnet = s.collnet || nic.sharp;  // "mlx5_0:1/IB/SHARP"
        break;
      case NcclNetEvent::kIbNoDevice:
        h->ib_no_device = true;
        if (h->ib_unavailable.empty() || n.name.starts_with("Failed to open")) h->ib_unavailable = n.name;
        break;
      case NcclNetEvent::kSocketDevices:
        if (h->socket_nics.empty()) h->socket_nics = n.nics;
        break;
      case NcclNetEvent::kPluginLoaded:
        if (n.collnet_plugin)
          h->collnet_plugin = true;
        else
          h->plugin = "loaded: " + n.name;
        break;
      case NcclNetEvent::kPluginAbsent:
        if (h->plugin.empty()) h->plugin = "none found";
        break;
      case NcclNetEvent::kBootstrap:
        if (h->bootstrap.empty()) h->bootstrap = n.name;
        break;
      case NcclNetEvent::kIbSpeed: h->nic_speed_gbps = std::max(h->nic_speed_gbps, n.speed_gbps); break;
      case NcclNetEvent::kUsingNetwork: break;
    }
  }
}

// GPU Direct RDMA, P2P and NVLS availability per host (and job-wide).
void add_gpu_link_events(HostTable& hosts, const NcclLog& log, NcclSetup& s) {
  for (const NcclGdrRecord& g : log.gdr) {
    NcclHostSummary* h = hosts.of(g.origin);
    if (h == nullptr) continue;
    if (g.enabled) {
      ++h->gdr_enabled;
    } else {
      ++h->gdr_disabled;
      const std::string name = !g.hca_name.empty() ? g.hca_name : fmt::format("HCA {}", g.hca);
      add_distinct(h->gdr_disabled_hcas, name);
    }
  }
  for (const NcclP2pDisabledRecord& p : log.p2p_disabled) {
    ++s.p2p_disabled_lines;
    if (NcclHostSummary* h = hosts.of(p.origin)) ++h->p2p_disabled_pairs;
  }
  for (const NcclNvlsRecord& n : log.nvls) {
    if (n.available) s.nvls_available = true;
    if (NcclHostSummary* h = hosts.of(n.origin)) h->nvls_available = std::max(h->nvls_available, n.available ? 1 : 0);
  }
}

// Every host that printed NCCL lines, with its job ranks; the job's host counts.
void summarize_hosts(const NcclLog& log, const Processes& processes, const ConnectionUses& uses, NcclSetup& s) {
  HostTable table(log);
  add_process_facts(table, processes);
  add_network_events(table, log, s);
  add_gpu_link_events(table, log, s);
  for (const auto& [host, host_uses] : uses.by_host) {
    if (NcclHostSummary* h = table.of(host)) {
      h->transports = host_uses;
      sort_uses(h->transports);
    }
  }
  for (const NcclRankSummary& r : s.ranks)
    for (auto& [idx, h] : table.hosts())
      if (h.host == r.host) h.ranks.push_back(r.rank);
  for (auto& [idx, h] : table.hosts()) {
    h.processes = table.processes_on(idx);
    if (!h.ranks.empty()) {
      ++s.hosts_in_job;
      s.max_ranks_per_host = std::max(s.max_ranks_per_host, static_cast<int>(h.ranks.size()));
    }
    if (h.collnet_plugin) s.collnet = true;
    s.hosts.push_back(std::move(h));
  }
  if (s.hosts_in_job == 0) s.hosts_in_job = static_cast<int>(s.hosts.size());  // no communicator lines
  s.max_ranks_per_host = std::max(s.max_ranks_per_host, uses.largest_host_group);
  s.hosts_at_least = s.hosts_in_job;
  if (!s.comms.empty()) s.hosts_at_least = std::max(s.hosts_at_least, s.comms.front().nnodes);
  // A peer over the network sits on another host, even when only one host's log was given.
  if (s.net_connections > 0) s.hosts_at_least = std::max(s.hosts_at_least, 2);
  s.multi_host = s.hosts_at_least >= 2;
}

std::string label_of(const NcclSetup& s, const NcclLog& log, const ProcessKey& key) {
  return s.process_label(std::string(log.host_name(key.first)), key.second);
}

void summarize_versions(const NcclLog& log, const Processes& processes, NcclSetup& s) {
  std::map<std::string, std::vector<std::string>> by_version;
  for (const auto& [key, p] : processes) {
    if (p.driver >= 0) add_distinct(s.drivers, p.driver);
    if (p.version.empty()) continue;
    by_version[version_text(p.version, p.build_cuda)].push_back(label_of(s, log, key));
  }
  for (auto& [version, labels] : by_version) {
    s.versions.push_back(version);
    s.version_processes.emplace_back(version, std::move(labels));
  }
  std::sort(s.drivers.begin(), s.drivers.end());
}

void summarize_channels(const NcclLog& log, NcclSetup& s) {
  if (!log.channel_counts.empty()) s.channels = log.channel_counts.front();
  std::set<std::tuple<int, int, int, int, int>> variants;
  for (const NcclChannelCountRecord& c : log.channel_counts) {
    // Not a CollNet signal: NCCL 2.2x prints a nonzero collnet count on hosts without SHARP.
    variants.insert({c.coll, c.collnet, c.nvls, c.p2p, c.p2p_per_peer});
  }
  s.channel_count_variants = static_cast<int>(variants.size());
  s.rings = static_cast<int>(log.rings.size());
}

// Each NCCL_* variable with the processes that printed each value; a process that echoes some
// settings but not this one counts as "<unset>".
void summarize_env(const NcclLog& log, const Processes& processes, NcclSetup& s) {
  std::vector<ProcessKey> echoing;  // processes that printed at least one NCCL_* setting
  std::set<std::string> names;
  for (const auto& [key, p] : processes)
    if (!p.env.empty()) {
      echoing.push_back(key);
      for (const auto& [name, value] : p.env) names.insert(name);
    }
  for (const std::string& name : names) {
    NcclEnvVariable v;
    v.name = name;
    std::map<std::string, std::vector<std::string>> by_value;
    for (const ProcessKey& key : echoing) {
      const ProcessInfo& p = processes.at(key);
      auto it = p.env.find(name);
      by_value[it == p.env.end() ? std::string("<unset>") : it->second].push_back(label_of(s, log, key));
    }
    v.mismatch = by_value.size() > 1;
    for (auto& [value, labels] : by_value) v.values.emplace_back(value, std::move(labels));
    s.env.push_back(std::move(v));
  }
}

// Distinct WARN messages (at most 1000; the line count still counts every one), most frequent first.
void summarize_warnings(const NcclLog& log, NcclSetup& s) {
  s.warning_lines = log.warnings.size();
  for (const NcclWarnRecord& w : log.warnings) {
    NcclWarning* found = nullptr;
    for (NcclWarning& x : s.warnings)
      if (x.message == w.message) found = &x;
    if (found == nullptr) {
      if (s.warnings.size() >= 1000) continue;
      s.warnings.push_back({w.message, w.where, 0, {}});
      found = &s.warnings.back();
    }
    ++found->count;
    const std::string label =
        w.origin.host == kNoHost ? std::string("unknown process") : label_of(s, log, {w.origin.host, w.origin.pid});
    if (found->processes.size() < 64) add_distinct(found->processes, label);
  }
  std::stable_sort(s.warnings.begin(), s.warnings.end(),
                   [](const NcclWarning& a, const NcclWarning& b) { return a.count > b.count; });
}

}  // namespace

NcclSetup analyze_nccl_setup(const NcclLog& log) {
  NcclSetup s;
  count_input(log, s);
  const Processes processes = gather_processes(log, s);
  const CommGroups groups = gather_communicators(log);
  const CommGroup* job = job_communicator(groups);
  summarize_communicators(log, groups, job, s);
  const ConnectionUses uses = count_connections(log, s);
  summarize_job_ranks(log, job, processes, uses, s);  // before any process_label: it names ranks
  summarize_hosts(log, processes, uses, s);
  summarize_versions(log, processes, s);
  summarize_channels(log, s);
  summarize_env(log, processes, s);
  summarize_warnings(log, s);
  return s;
}

// ---- bandwidth against the transport ---------------------------------------------------------------

namespace {

struct Ceiling {
  std::string transport;
  double gbps = -1;
  std::string basis;
};

// The network a job's inter-host connections use, with the per-host NIC count and speed.
Ceiling network_ceiling(const NcclSetup& s, const std::string& host) {
  std::uint64_t socket = s.net_socket_connections, rdma = s.net_ib_connections;
  const NcclHostSummary* h = nullptr;
  for (const NcclHostSummary& x : s.hosts)
    if (x.host == host) h = &x;
  if (h == nullptr && !s.hosts.empty()) h = &s.hosts.front();
  Ceiling c;
  if (socket == 0 && rdma == 0) {
    // No connection lines: trust "Using network".
    for (const NcclRankSummary& r : s.ranks) {
      if (r.network == "Socket")
        ++socket;
      else if (!r.network.empty())
        ++rdma;
    }
  }
  if (socket == 0 && rdma == 0) return c;
  if (socket >= rdma) {
    const int nics = h != nullptr && !h->socket_nics.empty() ? static_cast<int>(h->socket_nics.size()) : 1;
    c.transport = fmt::format("NET/Socket x{}", nics);
    c.gbps = nics * kAssumedSocketNicGbps;
    c.basis = fmt::format("{} interface{} x 12.5 GB/s (100 GbE assumed; the log does not print link speed)", nics,
                          nics == 1 ? "" : "s");
    return c;
  }
  const int nics = h != nullptr && !h->ib_nics.empty() ? static_cast<int>(h->ib_nics.size()) : 1;
  const bool measured_speed = h != nullptr && h->nic_speed_gbps > 0;
  const double per_nic = measured_speed ? h->nic_speed_gbps / 8.0 : kAssumedIbNicGbps;
  c.transport = fmt::format("NET/IB x{}{}", nics, s.net_without_gdr == 0 ? " (GDRDMA)" : "");
  c.gbps = nics * per_nic;
  c.basis = measured_speed
                ? fmt::format("{} NIC{} x {:.0f} Gb/s as NCCL printed", nics, nics == 1 ? "" : "s", h->nic_speed_gbps)
                : fmt::format("{} NIC{} x 50 GB/s (400 Gb/s InfiniBand assumed)", nics, nics == 1 ? "" : "s");
  return c;
}

Ceiling host_ceiling(const NcclSetup& s, const TraceModel& model) {
  Ceiling c;
  const GpuSpec* spec = nullptr;
  if (!model.info.devices.empty()) spec = match_gpu(model.info.devices.front()).spec;
  const bool shm = s.intra_host_shm > 0 && s.intra_host_shm >= s.intra_host_p2p;
  if (shm) {
    // Through host memory: bounded by the GPU's host link.
    c.transport = "SHM";
    if (spec != nullptr && spec->host_link_gbps) {
      c.transport += fmt::format(" ({})", spec->host_link);
      c.gbps = *spec->host_link_gbps;
      c.basis = fmt::format("{} host link of {}, vendor figure)", spec->host_link, spec->model);
    } else {
      c.basis = "GPU not recognised: host link unknown";
    }
    return c;
  }
  c.transport = "P2P";
  if (spec == nullptr) {
    c.basis = "GPU not recognised: NVLink / PCIe ceiling unknown";
    return c;
  }
  if (spec->scale_up_gbps && spec->scale_up_link != "none") {
    c.transport += fmt::format(" ({})", spec->scale_up_link);
    c.gbps = *spec->scale_up_gbps;
    c.basis = fmt::format("{} per direction of {}, vendor figure)", spec->scale_up_link, spec->model);
  } else if (spec->host_link_gbps) {
    c.transport += fmt::format(" ({})", spec->host_link);
    c.gbps = *spec->host_link_gbps;
    c.basis = fmt::format("{} has no NVLink: {}, vendor figure)", spec->model, spec->host_link);
  }
  return c;
}

}  // namespace

void add_bandwidth_checks(NcclSetup& setup, const TraceModel& model) {
  const AnalysisContext ctx = make_analysis_context(model, AnalysisOptions{});
  const CommunicationResult comm = analyze_communication(model, ctx);
  const int trace_rank = model.info.distributed.present ? model.info.distributed.rank : -1;
  std::string host;
  for (const NcclRankSummary& r : setup.ranks)
    if (r.rank == trace_rank) host = r.host;
  for (const CollectiveStats& k : comm.by_collective) {
    if (k.best_large_busbw_gbps < 0) continue;
    NcclBandwidthCheck b;
    b.trace = model.info.source;
    b.trace_rank = trace_rank;
    b.kind = k.kind;
    b.group_size = k.group_size;
    b.bytes = k.best_large_bytes;
    b.busbw_gbps = k.best_large_busbw_gbps;
    // A group larger than one host's ranks must cross the network; with no group size known,
    // assume the job's communicator.
    const int group = k.group_size > 0 ? k.group_size : setup.nranks;
    b.crosses_hosts = setup.multi_host && (setup.max_ranks_per_host <= 0 || group > setup.max_ranks_per_host);
    const Ceiling c = b.crosses_hosts ? network_ceiling(setup, host) : host_ceiling(setup, model);
    b.transport = c.transport.empty() ? "unknown" : c.transport;
    b.ceiling_gbps = c.gbps;
    b.ceiling_basis = c.basis;
    if (c.gbps > 0) {
      b.fraction = b.busbw_gbps / c.gbps;
      b.possible = b.busbw_gbps <= c.gbps * kCeilingTolerance;
    }
    setup.bandwidth.push_back(std::move(b));
  }
}

}  // namespace ferret
