// What an NCCL_DEBUG=INFO log says about a job's setup: per rank and per host, the NCCL version,
// the network and transports NCCL chose, init time, NCCL_* settings and warnings, with the
// mismatches between ranks laid out; and, given a trace of the same job, how the bus bandwidth it
// measured compares with the ceiling of the transport the log claims.
//
// Identity: a process is (host, pid); a rank is a GPU of one process, named by the communicator
// lines (`comm 0x.. rank R nranks N cudaDev D ...`). The job's communicator is the largest one
// (by nranks, then by ranks seen); sub-communicators (tensor/pipeline groups) are listed too.
// Connections (`Channel .. via ..`) are attributed to the process and device that printed them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analysis/timeline/communication.h"
#include "model/nccl_log.h"
#include "model/trace_model.h"

namespace ferret {

// Connections of one transport, as printed in `via ...` (e.g. "NET/IB/0/GDRDMA").
struct NcclTransportUse {
  std::string transport;  // the clause without the NIC index: "NET/IB/GDRDMA", "P2P/IPC", "SHM"
  NcclTransportKind kind = NcclTransportKind::kUnknown;
  std::string net;  // "IB", "Socket", ... for NET
  bool gdr = false;
  std::uint64_t connections = 0;
};

// A rank as the connection lines show it from the rank that printed them: the transports used to
// reach it. NET means another host (NCCL takes the network only between hosts unless P2P and SHM
// are both disabled); P2P and SHM mean the printing rank's host. From rank 0's log alone this says
// which peers sit on other hosts.
struct NcclPeer {
  int rank = -1;                             // the peer
  int from_rank = -1;                        // the rank whose log line reaches it
  std::vector<NcclTransportUse> transports;  // most connections first
  bool over_network = false;                 // some connection to it is NET/*
  bool same_host = false;                    // some connection to it is P2P or SHM
};

struct NcclRankSummary {
  int rank = -1;
  std::string host;
  int pid = -1;
  int cuda_dev = -1;
  std::string bus_id;
  bool init_started = false;
  bool init_complete = false;
  std::string version;       // "2.18.5"; "" when this rank's process printed none
  std::string build_cuda;    // "12.2"
  int driver_version = -1;   // cudaDriverVersion as printed (12020)
  double init_total_s = -1;  // Init timings
  std::vector<std::pair<std::string, double>> init_phases;
  std::string network;                       // "Using network X" of its process
  std::vector<NcclTransportUse> transports;  // connections its process printed for this GPU
  std::uint64_t warnings = 0;                // WARN lines of its process
};

struct NcclHostSummary {
  std::string host;
  std::vector<int> ranks;             // job ranks on this host
  int processes = 0;                  // distinct pids that printed NCCL lines
  std::vector<std::string> versions;  // distinct NCCL versions
  std::vector<int> drivers;           // distinct cudaDriverVersion values
  std::vector<std::string> networks;  // distinct "Using network" names
  std::vector<NcclNic> ib_nics;       // NET/IB : Using ... (first process that printed it)
  bool ib_no_device = false;          // NET/IB : No device found. (or a reason below)
  // Why NCCL could not use InfiniBand, as printed: "Failed to open libibverbs.so[.1]" (the root
  // cause when printed: the verbs library is missing) wins over "No device found".
  std::string ib_unavailable;
  std::vector<NcclNic> socket_nics;            // NET/Socket : Using ...
  std::string bootstrap;                       // bootstrap interface
  std::string plugin;                          // "loaded: NAME", "none found", "" (not printed)
  bool collnet_plugin = false;                 // a SHARP / coll plugin was loaded
  double nic_speed_gbps = -1;                  // NET/IB : Made virtual device ... speed= (Gb/s)
  int gdr_enabled = 0;                         // GPU Direct RDMA Enabled lines
  int gdr_disabled = 0;                        // GPU Direct RDMA Disabled lines
  std::vector<std::string> gdr_disabled_hcas;  // 'mlx5_0', ...
  int p2p_disabled_pairs = 0;                  // P2P is disabled between ... lines
  int nvls_available = -1;                     // 1 available, 0 not, -1 not printed
  std::vector<NcclTransportUse> transports;
  std::uint64_t warnings = 0;
};

struct NcclCommSummary {
  std::string comm_id;  // "" for NCCL without commId (grouped by size then)
  int nranks = -1;
  int ranks_started = 0;   // distinct ranks with Init START
  int ranks_complete = 0;  // distinct ranks with Init COMPLETE
  // Ranks of 0..nranks-1 never logged (neither START nor COMPLETE), as inclusive ranges
  // [first, last], ascending: one entry per gap between the ranks seen, so the size follows the
  // log, never nranks. missing_count is the number of ranks they cover.
  std::vector<std::pair<int, int>> missing_ranks;
  std::int64_t missing_count = 0;
  std::vector<int> incomplete_ranks;  // START without COMPLETE
  int hosts = 0;
  int nnodes = -1;         // `nNodes` of the graph line, when printed
  double init_max_s = -1;  // slowest rank's Init timings total
  int init_slowest_rank = -1;
  std::string init_slowest_phase;  // the largest phase of that rank
  double init_slowest_phase_s = -1;
  bool is_job = false;  // the job's communicator
};

// One NCCL_* variable: the values seen and which processes printed each.
struct NcclEnvVariable {
  std::string name;
  std::vector<std::pair<std::string, std::vector<std::string>>> values;  // value -> process labels; "<unset>"
  bool mismatch = false;  // differs between processes that echo their environment
};

struct NcclWarning {
  std::string message;
  std::string where;  // "misc/socket.cc:441"
  std::uint64_t count = 0;
  std::vector<std::string> processes;  // labels ("rank 3", "host:pid")
};

// Bus bandwidth measured in a trace against the transport the log claims (vendor link figures).
struct NcclBandwidthCheck {
  std::string trace;
  int trace_rank = -1;
  Collective kind = Collective::kUnknown;
  int group_size = -1;
  std::int64_t bytes = -1;     // size of the fastest large call
  double busbw_gbps = -1;      // fastest call >= kLargeMessageBytes
  bool crosses_hosts = false;  // group larger than the ranks of one host
  std::string transport;       // "NET/IB x4 (GDRDMA)", "P2P (NVLink4)", "SHM (PCIe5 x16)"
  double ceiling_gbps = -1;    // -1 unknown
  std::string ceiling_basis;   // where the figure comes from
  double fraction = -1;        // busbw / ceiling
  bool possible = true;        // busbw <= ceiling x kCeilingTolerance
};

// Bus bandwidth beyond the ceiling by more than this is called impossible on that transport:
// nccl-tests' busbw is measured against the same nominal figures and stays below them, so 10%
// covers clock and rounding noise in one rank's kernel durations.
inline constexpr double kCeilingTolerance = 1.10;
// The log does not print link speeds. Per-NIC figures used when it does not say (vendor figures:
// 400 Gb/s InfiniBand ~ 50 GB/s; sockets: a 100 GbE interface, 12.5 GB/s, the fast end of
// what cloud GPU hosts give one interface).
inline constexpr double kAssumedIbNicGbps = 50.0;
inline constexpr double kAssumedSocketNicGbps = 12.5;

struct NcclSetup {
  // Input accounting.
  std::vector<NcclSource> sources;
  std::uint64_t lines = 0;
  std::uint64_t nccl_lines = 0;
  std::uint64_t recognised = 0;
  std::uint64_t not_understood = 0;
  std::vector<std::string> not_understood_samples;

  int nranks = -1;       // of the job's communicator; -1 when no communicator line was seen
  int hosts_in_job = 0;  // hosts that printed lines of the job
  // At least this many hosts run the job: hosts_in_job, the graph line's nNodes, and 2 when a
  // peer is reached over the network (from one rank's log hosts_in_job is 1).
  int hosts_at_least = 0;
  bool multi_host = false;  // hosts_at_least >= 2
  // The most ranks seen on one host: from the ranks each host logged, and from P2P/SHM
  // connections (the two ends share a host).
  int max_ranks_per_host = 0;
  std::vector<NcclPeer> peers;         // by (from_rank, rank): every pair joined by a connection line
  std::vector<NcclRankSummary> ranks;  // job ranks seen, by rank
  std::vector<NcclHostSummary> hosts;  // every host that printed NCCL lines
  std::vector<NcclCommSummary> comms;  // job's first
  std::vector<std::string> versions;   // distinct NCCL versions across processes
  std::vector<std::pair<std::string, std::vector<std::string>>> version_processes;  // version -> processes
  std::vector<int> drivers;                                                         // distinct cudaDriverVersion values
  std::vector<std::string> unattributed_versions;  // bare version lines with no process to pin them on
  NcclChannelCountRecord channels;                 // the first channel-count line (job level)
  int channel_count_variants = 0;                  // distinct channel-count lines
  int rings = 0;                                   // ring lines (one per channel per rank)
  std::vector<NcclTransportUse> transports;        // job-wide
  std::uint64_t intra_host_p2p = 0;                // P2P connections
  std::uint64_t intra_host_shm = 0;                // SHM connections (GPU <-> GPU through host memory)
  std::uint64_t net_connections = 0;
  std::uint64_t net_socket_connections = 0;
  std::uint64_t net_ib_connections = 0;  // NET over IB, IBext, or a plugin RDMA network
  std::uint64_t net_without_gdr = 0;     // NET (not Socket) connections without GDRDMA
  std::uint64_t p2p_disabled_lines = 0;
  bool nvls_available = false;
  bool collnet = false;  // a coll (SHARP) plugin loaded or an IB NIC listed with /SHARP
  std::vector<NcclEnvVariable> env;
  std::vector<NcclWarning> warnings;
  std::uint64_t warning_lines = 0;
  std::vector<NcclBandwidthCheck> bandwidth;                            // filled by add_bandwidth_checks
  std::vector<std::pair<std::string, std::vector<int>>> process_ranks;  // "host:pid" -> job ranks

  // The label of a process in reports: "rank 3" (or "ranks 0-7") when known, else "host:pid".
  std::string process_label(const std::string& host, int pid) const;
};

NcclSetup analyze_nccl_setup(const NcclLog& log);

// Compares the trace's collectives with the transport ceilings and appends to setup.bandwidth.
void add_bandwidth_checks(NcclSetup& setup, const TraceModel& model);

}  // namespace ferret
