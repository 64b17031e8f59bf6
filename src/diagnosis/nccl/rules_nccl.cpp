// NCCL setup rules. They read NcclSetup (analysis/nccl_setup) and emit findings of the
// distributed dimension. The log says how NCCL is set up, not how long anything took, so these
// findings carry no Amdahl bound (max_speedup 1) except where a trace measured the bandwidth.
#include "diagnosis/nccl/rules_nccl.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/rank_list.h"
#include "base/text.h"
#include "base/units.h"
#include "diagnosis/rule_registry.h"
#include "diagnosis/verdict.h"

namespace ferret {

namespace {

double count(std::uint64_t n) { return static_cast<double>(n); }

bool is_socket_net(const std::string& net) { return net == "Socket"; }

std::string env_value(const NcclSetup& s, const std::string& name) {
  for (const NcclEnvVariable& v : s.env)
    if (v.name == name)
      for (const auto& [value, processes] : v.values)
        if (value != "<unset>") return value;
  return {};
}

std::string join(const std::vector<std::string>& items, std::size_t limit, const char* sep = ", ") {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < limit; ++i) {
    if (i > 0) out += sep;
    out += items[i];
  }
  if (items.size() > limit) out += fmt::format("{}and {} more", sep, items.size() - limit);
  return out;
}

// ---- nccl-socket-transport ------------------------------------------------------------------------
// Threshold: any inter-host connection over NET/Socket (or "Using network Socket" without
// connection lines) on a job that spans >= 2 hosts. Why: the socket transport moves data through
// the kernel's TCP stack and host memory; a 100 GbE interface tops out at 12.5 GB/s against
// ~50 GB/s per 400 Gb/s InfiniBand NIC (400 Gb/s = 50 GB/s), and NCCL's docs call sockets the
// fallback when no RDMA network is found.
void rule_socket_transport(const NcclSetup& s, std::vector<Finding>& out) {
  if (!s.multi_host) return;
  std::uint64_t socket_ranks = 0;
  for (const NcclRankSummary& r : s.ranks) socket_ranks += r.network == "Socket";
  const bool by_connections = s.net_socket_connections > 0;
  if (!by_connections && !(s.net_connections == 0 && socket_ranks > 0)) return;
  std::vector<std::string> no_ib_hosts, ib_hosts, missing_verbs;
  for (const NcclHostSummary& h : s.hosts) {
    if (h.ib_no_device) no_ib_hosts.push_back(h.host);
    if (!h.ib_nics.empty()) ib_hosts.push_back(h.host);
    if (h.ib_unavailable.starts_with("Failed to open")) missing_verbs.push_back(h.host);
  }
  std::string missing_verbs_text;  // the first such line, as NCCL printed it
  for (const NcclHostSummary& h : s.hosts)
    if (missing_verbs_text.empty() && h.ib_unavailable.starts_with("Failed to open"))
      missing_verbs_text = h.ib_unavailable;
  std::vector<int> socket_peers;  // distinct, ascending
  for (const NcclPeer& p : s.peers)
    for (const NcclTransportUse& u : p.transports)
      if (u.kind == NcclTransportKind::kNet && is_socket_net(u.net)) socket_peers.push_back(p.rank);
  std::sort(socket_peers.begin(), socket_peers.end());
  socket_peers.erase(std::unique(socket_peers.begin(), socket_peers.end()), socket_peers.end());
  const std::string ib_disable = env_value(s, "NCCL_IB_DISABLE");
  // From one host's log the job's hosts are known only as "at least".
  const std::string hosts_text =
      s.hosts_at_least > s.hosts_in_job ? fmt::format(">= {}", s.hosts_at_least) : fmt::format("{}", s.hosts_at_least);
  Finding f = finding_for("nccl-socket-transport");
  if (by_connections && s.hosts_at_least > s.hosts_in_job && !socket_peers.empty())
    f.title = fmt::format("NCCL reaches rank{} {} on another host over TCP sockets ({} NET/Socket connections)",
                          socket_peers.size() == 1 ? "" : "s", fit_width(format_rank_list(socket_peers), 30),
                          s.net_socket_connections);
  else if (by_connections)
    f.title = fmt::format("NCCL talks between {} hosts over TCP sockets ({} NET/Socket connections)", hosts_text,
                          s.net_socket_connections);
  else
    f.title = fmt::format("NCCL uses the socket network on a {}-host job ({} ranks say `Using network Socket`)",
                          hosts_text, socket_ranks);
  f.layer = Layer::kHardware;
  f.severity = Severity::kHigh;
  f.detail =
      "Inter-host traffic goes through the kernel's TCP stack instead of RDMA: at most ~12.5 GB/s per 100 GbE "
      "interface, against ~50 GB/s per 400 Gb/s InfiniBand NIC.";
  if (!missing_verbs.empty())
    f.detail += fmt::format(
        " Root cause: NCCL could not load the InfiniBand verbs library on {} ({}: `{}`), so it could not use any "
        "RDMA NIC and fell back to sockets.",
        missing_verbs.size() == 1 ? "host" : "hosts", join(missing_verbs, 4), missing_verbs_text);
  if (ib_disable == "1") f.detail += " NCCL_IB_DISABLE=1 is set: InfiniBand was turned off on purpose.";
  if (!no_ib_hosts.empty() && missing_verbs.empty())
    f.detail += fmt::format(" NCCL found no InfiniBand device on {} ({}).", no_ib_hosts.size() == 1 ? "host" : "hosts",
                            join(no_ib_hosts, 4));
  if (!ib_hosts.empty() && !no_ib_hosts.empty())
    f.detail +=
        fmt::format(" Other hosts do have IB NICs ({}): the job runs at the speed of the slowest.", join(ib_hosts, 4));
  f.evidence = {{"socket_connections", count(s.net_socket_connections), "count"},
                {"rdma_connections", count(s.net_ib_connections), "count"},
                {"hosts", static_cast<double>(s.hosts_at_least), "count"},
                {"hosts_without_ib", static_cast<double>(no_ib_hosts.size()), "count"}};
  if (!socket_peers.empty()) f.evidence.push_back({"socket_peers", static_cast<double>(socket_peers.size()), "count"});
  if (!missing_verbs.empty())
    f.fixes.push_back(
        "Install the RDMA user-space libraries where the job runs (in the container image): `apt-get install "
        "libibverbs1 ibverbs-providers` (rdma-core; `dnf install rdma-core libibverbs` on RHEL), then check "
        "`ldconfig -p | grep libibverbs` and `ibv_devinfo`");
  if (ib_disable == "1") f.fixes.push_back("Unset `NCCL_IB_DISABLE` (it is 1 here) on every host");
  f.fixes.push_back(
      "Check the RDMA NICs on each host: `ibv_devinfo` (state PORT_ACTIVE) or `ibstat`; in containers "
      "pass them in: `docker run --device=/dev/infiniband --cap-add=IPC_LOCK ...` (Kubernetes: the RDMA "
      "device plugin)");
  f.fixes.push_back(
      "Point NCCL at the RDMA NICs: `export NCCL_IB_HCA=mlx5` and keep `NCCL_SOCKET_IFNAME` for the "
      "bootstrap interface only");
  f.fixes.push_back(
      "On AWS EFA / other fabrics: install the vendor's NCCL net plugin (aws-ofi-nccl) and confirm "
      "`NET/Plugin: Loaded net plugin` in the log");
  f.threshold =
      "any NET/Socket connection to a peer on another host, seen from one rank's log or all (sockets ~12.5 GB/s "
      "per 100 GbE vs ~50 GB/s per 400 Gb/s IB NIC)";
  out.push_back(std::move(f));
}

// ---- nccl-gdr-disabled ----------------------------------------------------------------------------
// Threshold: on a multi-host job, any RDMA network connection without `/GDRDMA`, or a `GPU Direct
// RDMA Disabled` line. Why: without GPU Direct RDMA the NIC cannot read GPU memory, so NCCL stages
// every message through host memory (an extra PCIe round trip and CPU-side proxy copies), as
// NCCL's environment documentation for NCCL_NET_GDR_LEVEL describes.
void rule_gdr_disabled(const NcclSetup& s, std::vector<Finding>& out) {
  if (!s.multi_host) return;
  int disabled_lines = 0;
  std::vector<std::string> hosts;
  for (const NcclHostSummary& h : s.hosts)
    if (h.gdr_disabled > 0) {
      disabled_lines += h.gdr_disabled;
      hosts.push_back(fmt::format("{} ({})", h.host, join(h.gdr_disabled_hcas, 3)));
    }
  const bool rdma = s.net_ib_connections > 0;
  if (!(rdma && s.net_without_gdr > 0) && !(disabled_lines > 0 && (rdma || s.net_connections == 0))) return;
  Finding f = finding_for("nccl-gdr-disabled");
  f.title = s.net_without_gdr > 0
                ? fmt::format("GPU Direct RDMA unused: {} of {} network connections stage data through host memory",
                              s.net_without_gdr, s.net_ib_connections)
                : fmt::format("GPU Direct RDMA disabled on {} host{}", hosts.size(), hosts.size() == 1 ? "" : "s");
  f.layer = Layer::kHardware;
  f.severity = Severity::kMedium;
  f.detail =
      "Without GPU Direct RDMA the NIC cannot read or write GPU memory: NCCL copies each message to a host "
      "buffer first, which costs PCIe bandwidth, CPU proxy time and latency on every inter-host transfer.";
  if (!hosts.empty()) f.detail += " NCCL printed `GPU Direct RDMA Disabled` on " + join(hosts, 4) + ".";
  f.evidence = {{"connections_without_gdr", count(s.net_without_gdr), "count"},
                {"rdma_connections", count(s.net_ib_connections), "count"},
                {"gdr_disabled_lines", static_cast<double>(disabled_lines), "count"}};
  f.fixes = {
      "Load the peer-memory module on every host: `sudo modprobe nvidia-peermem` and check `lsmod | grep peermem`",
      "Or use DMA-BUF instead of peermem (recent kernels and drivers): `export NCCL_DMABUF_ENABLE=1`",
      "When the log says `distance X > Y`, allow GDR across the PCIe topology: `export NCCL_NET_GDR_LEVEL=SYS` (or "
      "PHB), after checking `nvidia-smi topo -m` for the GPU-NIC path",
  };
  f.threshold =
      "any RDMA network connection without GDRDMA, or a `GPU Direct RDMA Disabled` line, on a multi-host job "
      "(NCCL docs, NCCL_NET_GDR_LEVEL)";
  out.push_back(std::move(f));
}

// ---- nccl-p2p-disabled ----------------------------------------------------------------------------
// Threshold: any SHM connection (GPU to GPU of one host through host memory), a `P2P is disabled`
// line or NCCL_P2P_DISABLE=1. Why: NCCL prefers P2P whenever two GPUs can reach each other; SHM
// bounces data through host memory over PCIe (<= 64 GB/s on PCIe 5) where NVLink 4 gives 450 GB/s
// per direction (NVIDIA's NVLink 4 figure).
void rule_p2p_disabled(const NcclSetup& s, std::vector<Finding>& out) {
  const std::string p2p_disable = env_value(s, "NCCL_P2P_DISABLE");
  if (s.intra_host_shm == 0 && s.p2p_disabled_lines == 0 && p2p_disable != "1") return;
  std::vector<std::string> hosts;
  for (const NcclHostSummary& h : s.hosts) {
    std::uint64_t shm = 0;
    for (const NcclTransportUse& u : h.transports)
      if (u.kind == NcclTransportKind::kShm) shm += u.connections;
    if (shm > 0 || h.p2p_disabled_pairs > 0) hosts.push_back(h.host);
  }
  Finding f = finding_for("nccl-p2p-disabled");
  f.title = s.intra_host_shm > 0
                ? fmt::format("Peer-to-peer off: {} connections between GPUs of one host go through host memory (SHM)",
                              s.intra_host_shm)
                : "Peer-to-peer between GPUs of one host is disabled";
  f.layer = p2p_disable == "1" ? Layer::kFramework : Layer::kHardware;
  f.severity = s.intra_host_shm > 0 ? Severity::kHigh : Severity::kMedium;
  f.detail =
      "NCCL moves data between GPUs of one host through shared host memory instead of NVLink or PCIe "
      "peer-to-peer: every byte crosses PCIe twice, at a fraction of NVLink's bandwidth.";
  if (p2p_disable == "1") f.detail += " NCCL_P2P_DISABLE=1 is set in the environment.";
  if (s.p2p_disabled_lines > 0)
    f.detail += fmt::format(
        " NCCL printed `P2P is disabled between ... GPUs` {} time{}: the driver reports that the "
        "GPUs cannot access each other (virtual machine, IOMMU/ACS, or a hardware fault).",
        s.p2p_disabled_lines, s.p2p_disabled_lines == 1 ? "" : "s");
  if (!hosts.empty()) f.detail += " Hosts: " + join(hosts, 4) + ".";
  f.evidence = {{"shm_connections", count(s.intra_host_shm), "count"},
                {"p2p_connections", count(s.intra_host_p2p), "count"},
                {"p2p_disabled_lines", count(s.p2p_disabled_lines), "count"}};
  if (p2p_disable == "1") f.fixes.push_back("Unset `NCCL_P2P_DISABLE` on every host");
  f.fixes.push_back(
      "Check peer access: `nvidia-smi topo -p2p r` should say OK between the GPUs; `nvidia-smi topo -m` "
      "shows NV# for NVLink");
  f.fixes.push_back(
      "Bare-metal PCIe: disable ACS in the BIOS and boot with `iommu=pt` so that peer-to-peer works; in "
      "a VM ask for a shape with NVLink or P2P passthrough");
  f.fixes.push_back("Containers: run with `--ipc=host` (or `--shm-size=16g`) so that CUDA IPC works between processes");
  f.threshold =
      "any SHM connection between GPUs of one host, a `P2P is disabled` line or NCCL_P2P_DISABLE=1 "
      "(SHM over PCIe <= 64 GB/s vs NVLink4 450 GB/s, vendor figures)";
  out.push_back(std::move(f));
}

// ---- nccl-version-mismatch ------------------------------------------------------------------------
// Threshold: two processes report different NCCL versions. Why: NCCL's wire protocol and
// algorithms change between releases; ranks of one communicator must run the same library (NCCL's
// release notes and maintainers ask for one version per job), else init fails or hangs.
void rule_version_mismatch(const NcclSetup& s, std::vector<Finding>& out) {
  if (s.versions.size() < 2) return;
  std::vector<std::string> parts;
  for (const auto& [version, processes] : s.version_processes)
    parts.push_back(fmt::format("{} on {}", version, join(processes, 3)));
  Finding f = finding_for("nccl-version-mismatch");
  f.title = fmt::format("NCCL version mismatch: {} versions across ranks ({})", s.versions.size(), join(s.versions, 3));
  f.layer = Layer::kFramework;
  f.severity = Severity::kHigh;
  f.detail = fmt::format(
      "The ranks do not run the same NCCL: {}. Mixed versions can fail at init, hang in the first "
      "collective or pick different algorithms per rank.",
      join(parts, 4, "; "));
  f.evidence = {{"distinct_versions", static_cast<double>(s.versions.size()), "count"}};
  f.fixes = {
      "Run every rank from the same container image / environment",
      "Compare on each host: `python -c \"import torch; print(torch.__version__, torch.cuda.nccl.version())\"` and "
      "`pip list | grep nvidia-nccl`",
      "Look for a stray libnccl on `LD_LIBRARY_PATH` or `LD_PRELOAD` on the odd hosts",
  };
  f.threshold = "any two processes with different NCCL versions (one NCCL version per communicator)";
  out.push_back(std::move(f));
}

// ---- nccl-driver-mismatch -------------------------------------------------------------------------
// Threshold: different cudaDriverVersion values across processes. Low: CUDA drivers are
// backward compatible, but a mixed fleet is a common root of "only these hosts are slow".
void rule_driver_mismatch(const NcclSetup& s, std::vector<Finding>& out) {
  if (s.drivers.size() < 2) return;
  std::vector<std::string> drivers;
  for (int d : s.drivers) drivers.push_back(fmt::format("{}.{}", d / 1000, (d % 1000) / 10));
  Finding f = finding_for("nccl-driver-mismatch");
  f.title = fmt::format("CUDA driver differs across hosts: {}", join(drivers, 4));
  f.layer = Layer::kHardware;
  f.severity = Severity::kLow;
  f.detail =
      "NCCL printed different cudaDriverVersion values. Drivers are backward compatible, but a mixed fleet "
      "often explains hosts that behave differently.";
  f.evidence = {{"distinct_drivers", static_cast<double>(s.drivers.size()), "count"}};
  f.fixes = {"Check `nvidia-smi --query-gpu=driver_version --format=csv` on every host and align them"};
  f.threshold = "different cudaDriverVersion across processes (ferret)";
  out.push_back(std::move(f));
}

// ---- nccl-config-mismatch -------------------------------------------------------------------------
// Threshold: an NCCL_* variable echoed with different values (or set on some processes only)
// among processes that echo their settings. Interface and HCA names may legitimately differ per
// host, so when only those differ the finding is low.
constexpr std::string_view kPerHostVariables[] = {"NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_DEBUG_FILE",
                                                  "NCCL_TOPO_FILE", "NCCL_TOPO_DUMP_FILE"};

void rule_config_mismatch(const NcclSetup& s, std::vector<Finding>& out) {
  std::vector<std::string> lines;
  bool only_per_host = true;
  int differing = 0;
  for (const NcclEnvVariable& v : s.env) {
    if (!v.mismatch) continue;
    ++differing;
    if (std::find(std::begin(kPerHostVariables), std::end(kPerHostVariables), v.name) == std::end(kPerHostVariables))
      only_per_host = false;
    std::vector<std::string> parts;
    for (const auto& [value, processes] : v.values) parts.push_back(fmt::format("{} on {}", value, join(processes, 3)));
    lines.push_back(v.name + ": " + join(parts, 3, "; "));
  }
  if (differing == 0) return;
  Finding f = finding_for("nccl-config-mismatch");
  f.title = fmt::format("NCCL settings differ between ranks: {} variable{}", differing, differing == 1 ? "" : "s");
  f.layer = Layer::kFramework;
  f.severity = only_per_host ? Severity::kLow : Severity::kMedium;
  f.detail =
      "Ranks were started with different NCCL_* environments, so they may choose different transports or "
      "algorithms: " +
      join(lines, 5, " | ") + ".";
  f.evidence = {{"variables_differing", static_cast<double>(differing), "count"}};
  f.fixes = {
      "Export the same NCCL_* variables on every host: `torchrun` inherits the shell; with Slurm use `srun "
      "--export=ALL`, with MPI `mpirun -x NCCL_IB_HCA -x NCCL_SOCKET_IFNAME ...`",
      "Print the environment each rank sees: `env | grep ^NCCL_` at the top of the job script",
  };
  f.threshold =
      "any NCCL_* variable with different values across processes that echo their settings (ferret); low "
      "when only interface/HCA/file names differ";
  out.push_back(std::move(f));
}

// ---- nccl-missing-ranks ---------------------------------------------------------------------------
// Threshold: the job's communicator has nranks N but fewer ranks logged Init START/COMPLETE, or a
// rank started init and never completed it (high: that is what an init hang looks like).
// At most kMaxMissingRankFindings communicators get a finding each; the rest are counted in one
// more, so a log of thousands of hung communicators does not give thousands of findings.
constexpr std::size_t kMaxMissingRankFindings = 16;
void rule_missing_ranks(const NcclSetup& s, std::vector<Finding>& out) {
  std::size_t emitted = 0;
  std::size_t more = 0, more_incomplete = 0;
  for (const NcclCommSummary& c : s.comms) {
    if (!c.is_job && c.incomplete_ranks.empty()) continue;
    if (c.missing_ranks.empty() && c.incomplete_ranks.empty()) continue;
    if (emitted == kMaxMissingRankFindings) {
      ++more;
      more_incomplete += !c.incomplete_ranks.empty();
      continue;
    }
    ++emitted;
    const std::int64_t logged = c.nranks - c.missing_count;
    Finding f = finding_for("nccl-missing-ranks");
    f.layer = Layer::kFramework;
    if (!c.incomplete_ranks.empty()) {
      f.title =
          fmt::format("{} of {} ranks started NCCL init and never completed it", c.incomplete_ranks.size(), c.nranks);
      f.severity = Severity::kHigh;
    } else {
      f.title = fmt::format("Ranks missing from the logs: {} of {} logged, missing {}", logged, c.nranks,
                            fit_width(format_rank_ranges(c.missing_ranks), 30));
      f.severity = Severity::kMedium;
    }
    f.detail = fmt::format("Communicator {}with {} ranks: ", c.comm_id.empty() ? "" : c.comm_id + " ", c.nranks);
    if (!c.missing_ranks.empty())
      f.detail += fmt::format("no line from rank{} {} (their logs were not given, or they never reached NCCL init). ",
                              c.missing_count == 1 ? "" : "s", format_rank_ranges(c.missing_ranks));
    if (!c.incomplete_ranks.empty())
      f.detail += fmt::format("rank{} {} printed Init START but no Init COMPLETE: init hung or failed there. ",
                              c.incomplete_ranks.size() == 1 ? "" : "s", format_rank_list(c.incomplete_ranks));
    f.evidence = {{"nranks", static_cast<double>(c.nranks), "count"},
                  {"ranks_logged", static_cast<double>(logged), "count"},
                  {"ranks_missing", static_cast<double>(c.missing_count), "count"},
                  {"ranks_incomplete", static_cast<double>(c.incomplete_ranks.size()), "count"}};
    f.fixes = {
        "Give ferret every rank's log: `export NCCL_DEBUG_FILE=/shared/nccl.%h.%p.log` writes one file per process",
        "For a rank stuck in init: check it reaches the bootstrap address (`NCCL_SOCKET_IFNAME`, firewall), and set "
        "`TORCH_NCCL_ASYNC_ERROR_HANDLING=1` with a finite `timeout=` in `init_process_group` so the job fails fast",
    };
    f.threshold = "fewer ranks with Init START/COMPLETE than nranks, or START without COMPLETE (ferret)";
    out.push_back(std::move(f));
  }
  if (more == 0) return;
  Finding f = finding_for("nccl-missing-ranks");
  f.layer = Layer::kFramework;
  f.severity = more_incomplete > 0 ? Severity::kHigh : Severity::kMedium;
  f.title = fmt::format("{} more communicators with missing or incomplete ranks", more);
  f.detail = fmt::format(
      "Beyond the {} communicators above, {} more have ranks missing from the logs or ranks that started init and "
      "never completed it ({} of them); the communicators table lists them all.",
      kMaxMissingRankFindings, more, more_incomplete);
  f.evidence = {{"communicators", static_cast<double>(more), "count"},
                {"communicators_incomplete", static_cast<double>(more_incomplete), "count"}};
  f.fixes = {
      "Give ferret every rank's log: `export NCCL_DEBUG_FILE=/shared/nccl.%h.%p.log` writes one file per process"};
  f.threshold = "fewer ranks with Init START/COMPLETE than nranks, or START without COMPLETE (ferret)";
  out.push_back(std::move(f));
}

// ---- nccl-slow-init -------------------------------------------------------------------------------
// Threshold: a communicator's slowest rank takes > 5 s in `Init timings` (medium > 60 s). Source:
// NVIDIA/nccl#534, where a maintainer called 5-6 s per init "a lot more than it should" and an
// 8x H100 node measured 2.5 s with NCCL 2.22. Init is paid once per communicator and on every
// restart, so it matters most for elastic jobs and many sub-communicators.
constexpr double kSlowInitSeconds = 5.0;
constexpr double kVerySlowInitSeconds = 60.0;

std::string init_phase_fix(const std::string& phase) {
  if (phase == "kernels")
    return "`kernels` dominates (loading NCCL's device code): enable persistence mode (`sudo nvidia-smi -pm 1`) and "
           "keep `CUDA_MODULE_LOADING=LAZY`";
  if (phase == "bootstrap")
    return "`bootstrap` dominates (the out-of-band TCP exchange): set `NCCL_SOCKET_IFNAME` to the fast data interface "
           "and check that hostnames resolve quickly";
  if (phase == "topo")
    return "`topo` dominates (topology detection): enable persistence mode and, on VMs, give NCCL the topology with "
           "`NCCL_TOPO_FILE`";
  if (phase == "connections")
    return "`connections` dominates: with NCCL >= 2.22 keep `NCCL_RUNTIME_CONNECT=1` so that connections are made on "
           "first use";
  return fmt::format("`{}` dominates: re-run with `NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP` to see where the time goes",
                     phase);
}

void rule_slow_init(const NcclSetup& s, std::vector<Finding>& out) {
  const NcclCommSummary* slowest = nullptr;
  for (const NcclCommSummary& c : s.comms)
    if (c.init_max_s > kSlowInitSeconds && (slowest == nullptr || c.init_max_s > slowest->init_max_s)) slowest = &c;
  if (slowest == nullptr) return;
  const NcclCommSummary& c = *slowest;
  Finding f = finding_for("nccl-slow-init");
  f.title = fmt::format(
      "Slow NCCL init: {:.1f} s on rank {} ({} ranks){}", c.init_max_s, c.init_slowest_rank, c.nranks,
      c.init_slowest_phase.empty() ? "" : fmt::format(", {} {:.1f} s", c.init_slowest_phase, c.init_slowest_phase_s));
  f.layer = Layer::kFramework;
  f.severity = c.init_max_s > kVerySlowInitSeconds ? Severity::kMedium : Severity::kLow;
  f.detail = fmt::format(
      "Creating the {}-rank communicator took {:.2f} s on its slowest rank (NCCL's `Init timings`). "
      "A healthy 8-GPU node initialises in about 2-3 s; the time is paid again on every restart and "
      "for every sub-communicator.",
      c.nranks, c.init_max_s);
  f.evidence = {{"init_seconds", c.init_max_s, "s"}, {"nranks", static_cast<double>(c.nranks), "count"}};
  if (!c.init_slowest_phase.empty()) f.evidence.push_back({"slowest_phase_seconds", c.init_slowest_phase_s, "s"});
  if (!c.init_slowest_phase.empty()) f.fixes.push_back(init_phase_fix(c.init_slowest_phase));
  f.fixes.push_back(
      "Create fewer communicators: reuse process groups, and pass `device_id=` to "
      "`init_process_group` so that sub-groups can be split from the default one (ncclCommSplit)");
  f.threshold =
      "slowest rank's Init timings total > 5 s, > 60 s medium (NVIDIA/nccl#534: 5-6 s is \"a lot more than "
      "it should\", 8x H100 ~2.5 s)";
  out.push_back(std::move(f));
}

// ---- nccl-warnings --------------------------------------------------------------------------------
// Threshold: any `NCCL WARN` line. NCCL warns only about failures or fallbacks; high when a
// message names a timeout, a closed connection or an error.
void rule_warnings(const NcclSetup& s, std::vector<Finding>& out) {
  if (s.warning_lines == 0) return;
  bool severe = false;
  std::vector<std::string> lines;
  for (const NcclWarning& w : s.warnings) {
    for (std::string_view word : {"imeout", "closed", "rror", "ailed", "abort", "Abort"})
      if (w.message.find(word) != std::string::npos) severe = true;
    lines.push_back(fmt::format("{}x \"{}\" ({})", w.count, fit_width(w.message, 100), join(w.processes, 3)));
  }
  Finding f = finding_for("nccl-warnings");
  f.title = fmt::format("{} NCCL WARN line{} ({} distinct)", s.warning_lines, s.warning_lines == 1 ? "" : "s",
                        s.warnings.size());
  f.layer = Layer::kFramework;
  f.severity = severe ? Severity::kHigh : Severity::kMedium;
  f.detail = "NCCL warned: " + join(lines, 3, "; ") + ".";
  f.evidence = {{"warn_lines", count(s.warning_lines), "count"},
                {"distinct_warnings", static_cast<double>(s.warnings.size()), "count"}};
  f.fixes = {
      "Read the earliest WARN first: later ones usually follow from it",
      "Re-run with `NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET` to see what NCCL tried before the warning",
  };
  f.threshold = "any NCCL WARN line; high when it names a timeout, error, failure or closed connection (ferret)";
  out.push_back(std::move(f));
}

// ---- nccl-busbw-vs-transport ----------------------------------------------------------------------
// Needs a trace. Threshold: the fastest call of >= 16 MiB reaches < 25% of the transport's ceiling
// (the same margin as the trace rule low-busbw: nccl-tests reach ~75-85% of peak on large
// messages), or exceeds the ceiling by more than 10% (impossible on that transport).
constexpr double kLowTransportShare = 0.25;

void rule_bandwidth(const NcclSetup& s, std::vector<Finding>& out) {
  const NcclBandwidthCheck* impossible = nullptr;
  const NcclBandwidthCheck* low = nullptr;
  for (const NcclBandwidthCheck& b : s.bandwidth) {
    if (b.fraction < 0) continue;
    if (!b.possible && (impossible == nullptr || b.fraction > impossible->fraction)) impossible = &b;
    if (b.fraction < kLowTransportShare && (low == nullptr || b.fraction < low->fraction)) low = &b;
  }
  auto base = [&](const NcclBandwidthCheck& b, Finding& f) {
    f.layer = Layer::kHardware;
    f.evidence = {{"busbw_gbps", b.busbw_gbps, "GB/s"},
                  {"ceiling_gbps", b.ceiling_gbps, "GB/s"},
                  {"ceiling_pct", 100.0 * b.fraction, "%"},
                  {"message_bytes", static_cast<double>(b.bytes), "bytes"},
                  {"group_size", static_cast<double>(b.group_size), "count"}};
  };
  if (impossible != nullptr) {
    const NcclBandwidthCheck& b = *impossible;
    Finding f = finding_for("nccl-busbw-impossible");
    f.title = fmt::format("{} bus bandwidth {:.1f} GB/s is not possible over {} ({:.1f} GB/s)", collective_name(b.kind),
                          b.busbw_gbps, b.transport, b.ceiling_gbps);
    base(b, f);
    f.severity = Severity::kMedium;
    f.detail = fmt::format(
        "The trace ({}) measured {:.1f} GB/s on a {} call of {}, {:.0f}% of the {} ceiling ({}). "
        "Either the trace and the logs come from different runs or machines, or this group does "
        "not use the transport the log shows (a sub-group inside one host, NVLS/CollNet offload).",
        b.trace, b.busbw_gbps, collective_name(b.kind), human_bytes(static_cast<std::uint64_t>(b.bytes)),
        100.0 * b.fraction, b.transport, b.ceiling_basis);
    f.fixes = {
        "Collect the trace and NCCL_DEBUG=INFO logs from the same run (`NCCL_DEBUG_FILE=nccl.%h.%p.log` next "
        "to the profiler output)"};
    f.threshold = "busbw > 110% of the transport's ceiling (vendor link figures)";
    out.push_back(std::move(f));
  }
  if (low != nullptr) {
    const NcclBandwidthCheck& b = *low;
    Finding f = finding_for("nccl-busbw-low");
    f.title = fmt::format("{} reaches {:.1f} GB/s, {:.0f}% of {} ({:.0f} GB/s)", collective_name(b.kind), b.busbw_gbps,
                          100.0 * b.fraction, b.transport, b.ceiling_gbps);
    base(b, f);
    f.severity = Severity::kMedium;
    f.detail = fmt::format(
        "The fastest {} of >= 16 MiB in the trace ({}, {}) moved {:.1f} GB/s bus bandwidth; the "
        "transport NCCL chose ({}) allows {:.0f} GB/s ({}). Each call's time also holds the wait "
        "for the slowest rank, so a straggler shows up here too.",
        collective_name(b.kind), b.trace, human_bytes(static_cast<std::uint64_t>(b.bytes)), b.busbw_gbps, b.transport,
        b.ceiling_gbps, b.ceiling_basis);
    f.fixes = {
        "Measure the link alone: `all_reduce_perf -b 64M -e 1G -f 2 -g 1` from nccl-tests with the same launcher",
        "Remove protocol/algorithm overrides (`unset NCCL_PROTO NCCL_ALGO`) and check the channel count in the log",
    };
    f.threshold = "fastest >= 16 MiB call < 25% of the transport's ceiling (ferret, from nccl-tests' ~80% of peak)";
    out.push_back(std::move(f));
  }
}

void nccl_rules(const NcclSetup& setup, std::vector<Finding>& found) {
  rule_socket_transport(setup, found);
  rule_gdr_disabled(setup, found);
  rule_p2p_disabled(setup, found);
  rule_version_mismatch(setup, found);
  rule_driver_mismatch(setup, found);
  rule_config_mismatch(setup, found);
  rule_missing_ranks(setup, found);
  rule_slow_init(setup, found);
  rule_warnings(setup, found);
  rule_bandwidth(setup, found);
}

constexpr RuleInfo kNcclRules[] = {
    judging("nccl-network",
            RuleInfo{"nccl-socket-transport", RuleSource::kNccl, Dimension::kDistributed, RuleRole::kCause}),
    RuleInfo{"nccl-gdr-disabled", RuleSource::kNccl, Dimension::kDistributed, RuleRole::kCause},
    RuleInfo{"nccl-p2p-disabled", RuleSource::kNccl, Dimension::kDistributed, RuleRole::kCause},
    RuleInfo{"nccl-version-mismatch", RuleSource::kNccl, Dimension::kDistributed, RuleRole::kCause},
    RuleInfo{"nccl-driver-mismatch", RuleSource::kNccl, Dimension::kDistributed, RuleRole::kCause},
    RuleInfo{"nccl-config-mismatch", RuleSource::kNccl, Dimension::kDistributed, RuleRole::kCause},
    RuleInfo{"nccl-missing-ranks", RuleSource::kNccl, Dimension::kDistributed, RuleRole::kCause},
    RuleInfo{"nccl-slow-init", RuleSource::kNccl, Dimension::kDistributed, RuleRole::kCause},
    RuleInfo{"nccl-warnings", RuleSource::kNccl, Dimension::kDistributed, RuleRole::kCause},
    // The logs' bandwidth check and the trace's low-busbw judge the same collectives.
    judging("collective-bandwidth",
            RuleInfo{"nccl-busbw-low", RuleSource::kNccl, Dimension::kDistributed, RuleRole::kCause}),
    RuleInfo{"nccl-busbw-impossible", RuleSource::kNccl, Dimension::kDistributed, RuleRole::kCause},
};

}  // namespace

FERRET_RULE_FAMILY(nccl){"rules_nccl", 10, kNcclRules, rule_run<nccl_rules>()};

void rules_nccl(const NcclSetup& setup, std::vector<Finding>& out) {
  std::vector<Finding> found;
  run_rule_families(setup, found);
  // The policy of the trace and job paths: with no time measured (max_speedup 1) it ranks by
  // severity, and the verdict leads.
  rank_and_lead_with_verdict(found);
  out.insert(out.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
}

}  // namespace ferret
