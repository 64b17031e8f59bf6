// Distributed rules: how much of the step is communication, how much of it nothing hides, and
// whether the bus bandwidth NCCL reaches fits the link. They read CommunicationResult and the
// NCCL rows of HardwareResult.
#include <algorithm>

#include <fmt/format.h>

#include "analysis/classify.h"
#include "base/units.h"
#include "diagnosis/communication_fixes.h"
#include "diagnosis/rule_registry.h"
#include "diagnosis/rules.h"

namespace ferret {

namespace {

// The collectives that cost the most: by exposed time (what a wait in them costs the step), or
// by duration; calls with nothing exposed are not where exposed communication happens.
Occurrences collective_sites(const CommunicationResult& c, bool exposed) {
  LongestIntervals keep;
  std::uint64_t count = 0;
  for (const CollectiveCall& call : c.calls) {
    if (exposed && call.exposed_ns <= 0) continue;
    ++count;
    keep.offer({call.start_ns, call.start_ns + call.dur_ns});
  }
  Occurrences o = keep.take();
  o.count = count;
  return o;
}

std::string window_phrase(const TraceAnalysis& a) {
  return a.context.has_steps ? "of step time" : std::string("of the ") + window_noun(a);
}

// Per-step figure when the window is made of steps, else the total.
double per_step_ms(const TraceAnalysis& a, std::int64_t ns) {
  const std::size_t steps = a.context.steps.size();
  return steps > 0 ? ns_to_ms(ns) / static_cast<double>(steps) : ns_to_ms(ns);
}

std::string top_collectives(const CommunicationResult& c) {
  std::string s;
  for (std::size_t i = 0; i < c.by_collective.size() && i < 3; ++i) {
    const CollectiveStats& k = c.by_collective[i];
    if (!s.empty()) s += ", ";
    s += fmt::format("{} {} call{} {:.1f} ms", collective_name(k.kind), k.calls, k.calls == 1 ? "" : "s",
                     ns_to_ms(k.time_ns));
  }
  return s;
}

// Severity by the exposed share, the part of communication that costs wall time. Levels follow
// XProf's input-pipeline levels (>= 5% moderate, >= 20% high), the same "waiting, not working"
// kind of time.
constexpr double kExposedModerate = 0.05;
constexpr double kExposedHigh = 0.20;

Severity exposed_severity(double exposed_share) {
  if (exposed_share >= kExposedHigh) return Severity::kHigh;
  if (exposed_share >= kExposedModerate) return Severity::kMedium;
  return Severity::kLow;
}

// communication-heavy. Threshold: communication > 10% of step time (TensorBoard profiler
// plugin's distributed recommendation). Communication that compute hides costs nothing now, so
// the Amdahl share is the exposed part and severity follows it.
constexpr double kCommunicationHeavyShare = 0.10;

void rule_communication_heavy(const TraceAnalysis& a, std::vector<Finding>& out) {
  const CommunicationResult& c = a.communication;
  if (!c.present || c.comm_share <= kCommunicationHeavyShare) return;
  Finding f = finding_for("communication-heavy");
  f.title = fmt::format("Communication-heavy: {} run {:.0f}% {} ({:.0f}% exposed)",
                        c.on_host ? "gloo collectives" : "NCCL kernels", share_to_pct(c.comm_share), window_phrase(a),
                        share_to_pct(c.exposed_share));
  f.layer = Layer::kMacro;
  f.severity = exposed_severity(c.exposed_share);
  f.detail = fmt::format(
      "{} were active {:.1f} ms {} ({:.1f} ms per step): {}. {:.0f}% of that time overlapped {}. The volume is "
      "the lever here: fewer or smaller collectives per sample.",
      c.on_host ? "gloo collectives (on the host's gloo threads)" : "Communication kernels", ns_to_ms(c.comm_ns),
      a.context.has_steps ? "over the steps" : std::string("in the ") + window_noun(a), per_step_ms(a, c.comm_ns),
      top_collectives(c), share_to_pct(c.overlap_share),
      c.on_host ? "operators on the training thread" : "compute kernels");
  f.evidence = {{"communication_pct", share_to_pct(c.comm_share), "%"},
                {"exposed_communication_pct", share_to_pct(c.exposed_share), "%"},
                {"overlap_pct", share_to_pct(c.overlap_share), "%"},
                {"communication_ms", ns_to_ms(c.comm_ns), "ms"},
                {"communication_calls", static_cast<double>(c.calls.size()), "count"}};
  f.fixes = volume_fixes(c.style, c.on_host);
  f.time_share = c.exposed_share;
  f.max_speedup = amdahl_speedup(c.exposed_share);
  f.threshold = "communication > 10% of step time (TensorBoard plugin); severity by exposed share >= 5% / >= 20%";
  f.where = collective_sites(c, false);
  out.push_back(std::move(f));
}

// exposed-communication. Threshold: exposed (not overlapped by compute kernels) communication
// >= 5% of step time, high >= 20% - ferret's, on XProf's levels for waiting time. HTA reports
// the overlap but sets no threshold; the plugin's 10% counts hidden communication too.
// When calls of the same collective and size (groups covering at least half of the communication)
// spend at least half of their exposed time above the fastest call's duration
// (CommunicationResult::peer_wait_exposed_ns), the rank mostly waits for a late peer: it says so,
// and the fix is the late rank.
constexpr double kPeerWaitShare = 0.5;
void rule_exposed_communication(const TraceAnalysis& a, std::vector<Finding>& out) {
  const CommunicationResult& c = a.communication;
  if (!c.present || c.exposed_share < kExposedModerate) return;
  Finding f = finding_for("exposed-communication");
  const char* backend = c.on_host ? "gloo" : "NCCL";
  f.title = fmt::format("Exposed communication: {:.0f}% {} waits on {} with no compute to hide it",
                        share_to_pct(c.exposed_share), window_phrase(a), backend);
  f.layer = Layer::kFramework;
  f.severity = exposed_severity(c.exposed_share);
  f.detail = fmt::format(
      "{:.1f} ms {} of communication ran with {}; only {:.0f}% of communication time overlapped compute. "
      "Collectives issued after backward finishes, or buckets too small to start early, leave the {} idle while "
      "gradients move.",
      per_step_ms(a, c.exposed_ns), a.context.has_steps ? "per step" : std::string("in the ") + window_noun(a),
      c.on_host ? "the training thread in no operator (gloo collectives run on their own threads; the training "
                  "thread waits for them)"
                : "no compute kernel beside it on the same GPU",
      share_to_pct(c.overlap_share), c.on_host ? "training thread" : "GPU");
  f.evidence = {{"exposed_communication_pct", share_to_pct(c.exposed_share), "%"},
                {"exposed_communication_ms_per_step", per_step_ms(a, c.exposed_ns), "ms"},
                {"overlap_pct", share_to_pct(c.overlap_share), "%"},
                {"communication_pct", share_to_pct(c.comm_share), "%"}};
  // Mostly waiting for peers: the lever is the late rank, not the volume or the overlap.
  const double waiting = c.peer_wait_basis_ns > 0 && 2 * c.peer_wait_basis_ns >= c.comm_device_ns
                             ? static_cast<double>(c.peer_wait_ns) / static_cast<double>(c.peer_wait_basis_ns)
                             : -1;
  // Of the exposed time, the waiting: a wait hidden behind the rank's own compute costs nothing.
  const double exposed_waiting =
      waiting >= 0 && c.peer_wait_exposed_basis_ns > 0
          ? static_cast<double>(c.peer_wait_exposed_ns) / static_cast<double>(c.peer_wait_exposed_basis_ns)
          : -1;
  const bool mostly_waiting = exposed_waiting >= kPeerWaitShare;
  if (waiting >= 0) {
    f.evidence.push_back({"peer_wait_pct_of_communication", share_to_pct(waiting), "%"});
    f.detail += fmt::format(
        " Calls of the same collective and size took {:.1f} ms in all where their fastest calls would have taken "
        "{:.1f} ms: at least {:.0f}% of this communication is this rank waiting for a late peer (or a contended "
        "link), not moving data; {:.0f}% of their exposed time is such waiting.",
        ns_to_ms(c.peer_wait_basis_ns), ns_to_ms(c.peer_wait_floor_ns), share_to_pct(waiting),
        share_to_pct(std::max(0.0, exposed_waiting)));
    f.evidence.push_back({"peer_wait_pct_of_exposed", share_to_pct(std::max(0.0, exposed_waiting)), "%"});
  }
  if (mostly_waiting) {
    f.title = fmt::format(
        "Exposed communication: {:.0f}% {} waits on {}, mostly for a late peer ({:.0f}% of its exposed "
        "collective time is waiting)",
        share_to_pct(c.exposed_share), window_phrase(a), backend, share_to_pct(exposed_waiting));
    f.detail += " One rank's trace cannot say which peer is late; it is among the ranks whose traces were not given.";
    f.fixes = {
        "Find the late rank: `ferret analyze rank*.json.gz` with every rank's trace of the same steps names the "
        "straggler and splits each collective into waiting and transfer",
        "Common causes of one late rank: an uneven data shard or sequence lengths (bucket by length), a rank doing "
        "extra work (logging, checkpointing, evaluation on rank 0 only), a slower or throttled GPU "
        "(`nvidia-smi -q -d PERFORMANCE` on every node), a busy host",
    };
  } else {
    f.fixes = overlap_fixes(c.style, c.on_host);
  }
  f.time_share = c.exposed_share;
  f.max_speedup = amdahl_speedup(c.exposed_share);
  f.threshold = "exposed communication >= 5% of step time, >= 20% high (ferret, on XProf's levels)";
  f.where = collective_sites(c, true);
  out.push_back(std::move(f));
}

// low-busbw. The fastest call of >= 16 MiB (kLargeMessageBytes) per collective reaches < 25% of
// the scale-up link's peak per direction. Why: nccl-tests reach ~75-85% of NVLink peak on large
// messages (A100 ~230 of 300 GB/s, H100 ~360+ of 450 GB/s); 16 MiB messages sit lower on the
// curve, so 25% leaves a wide margin. The fastest call is used because every call's duration on
// one rank also holds the wait for the slowest peer. Only groups of <= 8 ranks are compared: they
// fit one 8-GPU NVLink node; larger groups cross the network, whose speed the trace does not say.
constexpr double kLowBusbwShare = 0.25;
constexpr int kMaxScaleUpGroup = 8;

void rule_low_busbw(const TraceAnalysis& a, std::vector<Finding>& out) {
  const NcclLinkUse* worst = nullptr;
  for (const NcclLinkUse& u : a.hardware.nccl) {
    if (u.best_large_efficiency < 0 || u.group_size < 2 || u.group_size > kMaxScaleUpGroup) continue;
    if (u.best_large_efficiency >= kLowBusbwShare) continue;
    if (worst == nullptr || u.best_large_efficiency < worst->best_large_efficiency) worst = &u;
  }
  if (worst == nullptr) return;
  const NcclLinkUse& u = *worst;
  const CommunicationResult& c = a.communication;
  // Time the exposed communication would lose at link speed: the exposed part shrinks by the
  // ratio of achieved to peak bandwidth (an upper bound on the gain).
  const double share = std::max(0.0, c.exposed_share * (1.0 - u.best_large_efficiency));
  Finding f = finding_for("low-busbw");
  f.title = fmt::format("Low NCCL bandwidth: {} reaches {:.1f} GB/s bus bandwidth, {:.0f}% of {} ({:.0f} GB/s)",
                        collective_name(u.kind), u.best_large_busbw_gbps, share_to_pct(u.best_large_efficiency), u.link,
                        u.link_gbps);
  f.layer = Layer::kHardware;
  f.severity = share >= kExposedModerate ? Severity::kMedium : Severity::kLow;
  f.detail = fmt::format(
      "On GPU {}, the fastest {} of >= 16 MiB ({:.1f} MiB, group of {}) moved {:.1f} GB/s bus bandwidth (nccl-tests "
      "convention); the time-weighted mean over {} call{} was {:.1f} GB/s. The {} peak is {:.0f} GB/s per direction. "
      "Traffic that should ride {} is taking a slower path (PCIe, shared memory through the host, or the network "
      "socket transport), or a peer arrives late every time.",
      u.device, collective_name(u.kind), bytes_to_mib(static_cast<double>(u.best_large_bytes)), u.group_size,
      u.best_large_busbw_gbps, u.calls, u.calls == 1 ? "" : "s", u.busbw_gbps, u.link, u.link_gbps, u.link);
  const bool amd = u.link.find("Infinity") != std::string::npos;
  if (u.best_large_protocol == "LL") {
    // LL carries 4 data bytes per 8-byte store (the rest is a flag), so it tops out near half the
    // link; NCCL's tuner picks it for small messages only, unless told otherwise or it believes
    // the path is slow.
    f.detail += fmt::format(
        " The kernel ran NCCL's LL protocol on a {:.0f} MiB message: LL moves at most about half of the link's "
        "bandwidth and NCCL picks it for large messages only when NCCL_PROTO forces it or the path looks slow.",
        bytes_to_mib(static_cast<double>(u.best_large_bytes)));
  }
  f.evidence = {{"best_large_busbw_gbps", u.best_large_busbw_gbps, "GB/s"},
                {"mean_busbw_gbps", u.busbw_gbps, "GB/s"},
                {"link_peak_gbps", u.link_gbps, "GB/s"},
                {"link_efficiency_pct", share_to_pct(u.best_large_efficiency), "%"},
                {"group_size", static_cast<double>(u.group_size), "count"},
                {"exposed_communication_pct", share_to_pct(c.exposed_share), "%"}};
  f.fixes = {
      "Check the transport NCCL picked: `NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH torchrun ...` and look for "
      "`via P2P/IPC` or `NVLS` (good) versus `via SHM`, `NET/Socket` or `NET/IB : No device found` (slow path)",
      amd ? "Check the topology: `rocm-smi --showtopo` (XGMI between the GPUs, not PCIE) and `amd-smi xgmi` (link "
            "status and bandwidth)"
          : "Check the topology: `nvidia-smi topo -m` (NV# between the GPUs, not PHB/SYS) and `nvidia-smi nvlink "
            "--status`",
      std::string("Do not disable peer-to-peer: unset `NCCL_P2P_DISABLE` / `NCCL_SHM_DISABLE`; in containers pass "
                  "`--ipc=host` (or a large `--shm-size`) so NCCL can use ") +
          (amd ? "HIP IPC" : "CUDA IPC"),
      "Remove protocol/algorithm overrides (`unset NCCL_PROTO NCCL_ALGO`); to test, `NCCL_PROTO=Simple` for "
      "large messages should raise bus bandwidth",
      "Across nodes: pin NCCL to the RDMA NICs - `NCCL_IB_HCA=mlx5 NCCL_SOCKET_IFNAME=<data-iface>` - and confirm "
      "`NET/IB` and `GDRDMA` in the NCCL_DEBUG log",
  };
  f.time_share = share;
  f.max_speedup = amdahl_speedup(share);
  // The what-if: the communication kernels at link speed (their time times the efficiency), re-timed
  // with the compute that overlaps them.
  fix_speeds_up_device_work(f, "communication kernels at link speed", 1.0, 1.0 - u.best_large_efficiency,
                            is_communication_kernel);
  f.threshold =
      "fastest >= 16 MiB call < 25% of scale-up link peak, groups of <= 8 ranks (ferret, from nccl-tests' "
      "~80% of peak on large messages)";
  out.push_back(std::move(f));
}

}  // namespace

void rules_distributed(const TraceAnalysis& a, std::vector<Finding>& out) {
  rule_communication_heavy(a, out);
  rule_exposed_communication(a, out);
  rule_low_busbw(a, out);
}

namespace {
constexpr RuleInfo kDistributedRules[] = {
    // Communication costs what compute does not hide: exposed-communication measures exactly that.
    removes(explaining(kExplainsIdleHost, RuleInfo{"communication-heavy",
                                                   RuleSource::kTrace,
                                                   Dimension::kDistributed,
                                                   RuleRole::kCause,
                                                   {},
                                                   "exposed-communication"}),
            &RetimeChanges::remove_exposed_communication),
    removes(explaining(kExplainsIdleHost, RuleInfo{"exposed-communication", RuleSource::kTrace, Dimension::kDistributed,
                                                   RuleRole::kCause}),
            &RetimeChanges::remove_exposed_communication),
    judging("collective-bandwidth", explaining(kExplainsIdleHost, RuleInfo{"low-busbw", RuleSource::kTrace,
                                                                           Dimension::kDistributed, RuleRole::kCause})),
};
}  // namespace

FERRET_RULE_FAMILY(distributed){"rules_distributed", 70, kDistributedRules, rule_run<rules_distributed>()};

}  // namespace ferret
