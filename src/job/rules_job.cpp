// Job rules: what only the ranks together show. Each rule names its threshold and its source.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "base/units.h"
#include "diagnosis/communication_fixes.h"
#include "diagnosis/rule_registry.h"
#include "job/job_diagnosis.h"

namespace ferret {

namespace {

Severity by_share(double share) {
  // XProf's levels for time lost waiting (>= 5% moderate, >= 20% high), as the one-rank rules use.
  if (share >= 0.20) return Severity::kHigh;
  if (share >= 0.05) return Severity::kMedium;
  return Severity::kLow;
}

int rank_of(const JobAnalysis& job, std::int32_t index) { return job.ranks[static_cast<std::size_t>(index)].rank; }

const ActivityExcess* activity(const Straggler& s, StragglerCause c) {
  for (const ActivityExcess& a : s.activities)
    if (a.cause == c) return &a;
  return nullptr;
}

// rank-straggler. Threshold: a rank last at more than half of the matched calls (HTA's straggler:
// the rank whose collectives start last, consistently), whose lateness costs the others at least
// 1% of the median step (below that, skew is noise a fix cannot win back).
constexpr double kStragglerMinStepShare = 0.01;

// The straggler the rule reports first (stragglers come most costly first), or nullptr: the other
// rules judge the job given it, whatever order they run in.
const Straggler* reported_straggler(const JobAnalysis& job) {
  for (const Straggler& s : job.stragglers.stragglers)
    if (s.step_share >= kStragglerMinStepShare) return &s;
  return nullptr;
}

void rule_straggler(const JobAnalysis& job, std::vector<Finding>& out) {
  for (const Straggler& s : job.stragglers.stragglers) {
    if (s.step_share < kStragglerMinStepShare) continue;
    const int rank = rank_of(job, s.rank_index);
    Finding f = finding_for("rank-straggler");
    f.cause = fmt::format("rank-straggler-{}", rank);
    f.layer = Layer::kMacro;
    f.severity = by_share(s.step_share);
    f.time_share = s.step_share;
    f.max_speedup = amdahl_speedup(s.step_share);
    // Extra host syncs make the host work after them cost GPU time: that excess is the evidence.
    const ActivityExcess* cause =
        activity(s, s.cause == StragglerCause::kHostSync ? StragglerCause::kHostWork : s.cause);
    std::string why;
    switch (s.cause) {
      case StragglerCause::kUnexplained: why = "the trace does not show why"; break;
      case StragglerCause::kCompute:
        why =
            fmt::format("its GPU computes {:.1f} ms more per step than the median rank", ns_to_ms(cause->excess_ns()));
        break;
      case StragglerCause::kInput:
        why = fmt::format("it waits for input {:.1f} ms more per step than the median rank",
                          ns_to_ms(cause->excess_ns()));
        break;
      case StragglerCause::kHostSync:
        why = fmt::format(
            "it syncs with the GPU {:.0f} more times per step than the median rank, and its host then "
            "works {:.1f} ms more with the GPU idle",
            s.host_syncs_per_step - s.others_host_syncs_per_step, ns_to_ms(cause->excess_ns()));
        break;
      case StragglerCause::kHostWork:
        why = fmt::format("its host runs operators and launches {:.1f} ms more per step than the median rank",
                          ns_to_ms(cause->excess_ns()));
        break;
    }
    f.title = fmt::format(
        "Straggler: rank {} is the last to arrive in {} of {} {}, costing the others {:.1f} ms per "
        "step ({:.0f}%); {}",
        rank, s.steps_last, s.steps, s.steps == s.calls ? "collectives" : "steps", ns_to_ms(s.cost_per_step_ns),
        100 * s.step_share, why);
    f.detail = fmt::format(
        "Every collective ends on all ranks together, so all other ranks wait for the last one to arrive. Rank {} "
        "holds up the most delayed collective in {:.0f}% of the steps; it starts last at {} of its {} matched calls, "
        "{:.2f} ms after the next-latest rank on average, and the others spend {:.2f} ms more per step in exposed "
        "communication than it does. "
        "Per step, against the median of the other ranks: GPU compute {:.1f} vs {:.1f} ms, input wait {:.1f} vs {:.1f} "
        "ms, host syncs {:.1f} vs {:.1f} ms, host operators and launches {:.1f} vs {:.1f} ms.",
        rank, 100 * s.last_share, s.times_last, s.calls, ns_to_ms(s.mean_lateness_ns), ns_to_ms(s.cost_per_step_ns),
        ns_to_ms(s.activities[0].rank_ns), ns_to_ms(s.activities[0].others_median_ns),
        ns_to_ms(s.activities[1].rank_ns), ns_to_ms(s.activities[1].others_median_ns),
        ns_to_ms(s.activities[2].rank_ns), ns_to_ms(s.activities[2].others_median_ns),
        ns_to_ms(s.activities[3].rank_ns), ns_to_ms(s.activities[3].others_median_ns));
    f.detail +=
        fmt::format(" Host syncs per step: {:.1f} vs {:.1f}.", s.host_syncs_per_step, s.others_host_syncs_per_step);
    f.evidence = {{"straggler_rank", static_cast<double>(rank), ""},
                  {"last_share_pct", 100 * s.last_share, "%"},
                  {"lateness_per_step_ms", ns_to_ms(s.lateness_per_step_ns), "ms"},
                  {"cost_per_step_ms", ns_to_ms(s.cost_per_step_ns), "ms"},
                  {"mean_lateness_ms", ns_to_ms(s.mean_lateness_ns), "ms"},
                  {"step_share_pct", 100 * s.step_share, "%"}};
    if (cause != nullptr) f.evidence.push_back({"cause_excess_per_step_ms", ns_to_ms(cause->excess_ns()), "ms"});
    f.evidence.push_back({"host_syncs_per_step", s.host_syncs_per_step, "count"});
    switch (s.cause) {
      case StragglerCause::kCompute:
        f.fixes = {
            fmt::format("Check rank {}'s GPU for lower clocks or throttling: `nvidia-smi -q -d PERFORMANCE,CLOCK` "
                        "on its node (power cap, thermal slowdown, a degraded part).",
                        rank),
            "Give every rank the same work: bucket samples by sequence length or image size, pad to a common "
            "shape, and shard the dataset evenly (DistributedSampler with drop_last=True).",
            "If the slow rank runs extra work (evaluation, logging, EMA updates on rank 0), move it off the "
            "training step or spread it across ranks."};
        break;
      case StragglerCause::kInput:
        f.fixes = {fmt::format("Feed rank {} faster: DataLoader(num_workers=N, pin_memory=True, prefetch_factor=4, "
                               "persistent_workers=True).",
                               rank),
                   "Check the storage and CPU of its node: a slower local disk, a network file system, or CPU shared "
                   "with other jobs; stage the data locally.",
                   "Shard the dataset so that every rank reads the same amount (uneven shards make one rank wait)."};
        break;
      case StragglerCause::kHostSync:
        f.fixes = {fmt::format("Remove the host syncs on rank {}: `.item()`, `.cpu()`, `print(loss)` or metric logging "
                               "in the step; log every N steps, or accumulate on the GPU and read once.",
                               rank),
                   "Rank 0 often logs and checkpoints for everyone: do it asynchronously or every N steps."};
        break;
      case StragglerCause::kHostWork:
        f.fixes = {fmt::format("Rank {}'s CPU issues work slower: check for CPU contention on its node (other "
                               "processes, DataLoader workers on the same cores) and pin threads "
                               "(OMP_NUM_THREADS, taskset / numactl).",
                               rank),
                   "Cut launch overhead on every rank (CUDA graphs, torch.compile) so that host speed matters less."};
        break;
      case StragglerCause::kUnexplained:
        f.fixes = {fmt::format("Inspect rank {}'s node: GPU clocks and throttling (`nvidia-smi -q -d PERFORMANCE`), "
                               "other load on the node, and its network link (`ferret nccl` on NCCL_DEBUG=INFO logs).",
                               rank),
                   "Record a longer trace of the slow rank and one other and compare them with `ferret diff`."};
        break;
    }
    f.threshold =
        "last to arrive in > 50% of steps (HTA: consistently over steps) and costing >= 1% of the median step; "
        "severity by the step share (XProf levels: 5% moderate, 20% high)";
    out.push_back(std::move(f));
  }
}

// job-exposed-communication. Threshold: the median rank's exposed communication >= 5% of its
// window (XProf's moderate level for time the device waits). The one-rank rule uses the plugin's
// 10% of total communication; here the exposed part is what a fix can win on every rank.
constexpr double kExposedShare = 0.05;

void rule_exposed_communication(const JobAnalysis& job, std::vector<Finding>& out) {
  std::vector<double> shares;
  for (const RankResult& r : job.ranks)
    if (r.error.empty() && r.window_ns > 0 && r.comm_ns > 0)
      shares.push_back(static_cast<double>(r.exposed_comm_ns) / static_cast<double>(r.window_ns));
  if (shares.size() < 2) return;
  std::sort(shares.begin(), shares.end());
  // The median of an even count is the mean of the middle two (shares[n / 2] alone is the larger
  // one: with two ranks, the maximum).
  const std::size_t mid = shares.size() / 2;
  double median = shares.size() % 2 == 1 ? shares[mid] : (shares[mid - 1] + shares[mid]) / 2;
  // With a straggler, the others' exposed communication is mostly waiting for it (its own rule);
  // what remains exposed on the straggler, which waits for nobody, is the communication itself.
  const Straggler* reported = reported_straggler(job);
  const RankResult* straggler =
      reported != nullptr ? &job.ranks[static_cast<std::size_t>(reported->rank_index)] : nullptr;
  if (straggler != nullptr && straggler->window_ns > 0)
    median = static_cast<double>(straggler->exposed_comm_ns) / static_cast<double>(straggler->window_ns);
  if (median < kExposedShare) return;
  // What the collectives are decides the fix.
  std::map<Collective, std::int64_t> time_by_kind;
  std::int64_t all = 0;
  for (const CollectiveCost& c : job.costs) {
    const std::int64_t t = c.mean_duration_ns * static_cast<std::int64_t>(c.calls);
    time_by_kind[c.kind] += t;
    all += t;
  }
  const ParallelStyleShare style =
      parallel_style(time_by_kind[Collective::kAllReduce],
                     time_by_kind[Collective::kAllGather] + time_by_kind[Collective::kReduceScatter],
                     time_by_kind[Collective::kAllToAll], all);
  Finding f = finding_for("job-exposed-communication");
  f.layer = Layer::kFramework;
  f.severity = by_share(median);
  f.time_share = median;
  f.max_speedup = amdahl_speedup(median);
  const std::string whose = straggler != nullptr ? fmt::format("rank {}, which waits for nobody,", straggler->rank)
                                                 : std::string("the median rank");
  f.title =
      fmt::format("Communication not hidden: on {} {:.0f}% of the time only collectives run", whose, 100 * median);
  f.detail = fmt::format(
      "Over {} ranks, exposed communication (collectives with no compute beside them) takes {:.0f}% of the "
      "time on {} ({:.0f}% to {:.0f}% across ranks). Hiding it behind compute, or doing less of it, wins that time "
      "on every rank.",
      shares.size(), 100 * median, whose, 100 * shares.front(), 100 * shares.back());
  f.evidence = {{"median_exposed_pct", 100 * median, "%"},
                {"min_exposed_pct", 100 * shares.front(), "%"},
                {"max_exposed_pct", 100 * shares.back(), "%"}};
  f.fixes = overlap_fixes(style, false);
  f.threshold = "median rank's exposed communication >= 5% of its time (XProf's moderate level for waiting time)";
  out.push_back(std::move(f));
}

// collective-skew. Threshold: over all matched calls, waiting is at least half of the time ranks
// spend in collectives (the rest is transfer), no single straggler explains it (the skew moves
// between ranks: load imbalance, jitter), and the waiting that no compute hides is at least 1% of
// the ranks' time, the straggler rule's floor. Waiting inside an NCCL kernel while backward still
// computes beside it costs nothing: a healthy DDP job "waits" most of its collective time.
constexpr double kWaitShare = 0.5;
constexpr double kMinExposedWaitShare = 0.01;

void rule_waiting(const JobAnalysis& job, std::vector<Finding>& out) {
  std::int64_t wait = 0, total = 0, exposed_wait = 0;
  for (const MatchedCall& call : job.matching.calls)
    for (const Participant& p : call.participants) {
      const std::int64_t w = std::max<std::int64_t>(0, p.dur_ns - call.transfer_ns);
      total += p.dur_ns;
      wait += w;
      // The wait comes first in the kernel, then the transfer. Compute beside a collective is what
      // ran before it, so what it leaves exposed is the kernel's tail: the transfer first, then
      // the end of the wait.
      exposed_wait += std::min(w, std::max<std::int64_t>(0, p.exposed_ns - call.transfer_ns));
    }
  if (total <= 0) return;
  const double share = static_cast<double>(wait) / static_cast<double>(total);
  if (share < kWaitShare) return;
  if (reported_straggler(job) != nullptr) return;  // the straggler is the cause
  std::int64_t window = 0;
  for (const RankResult& r : job.ranks) window += r.error.empty() ? r.window_ns : 0;
  const double time_share = window > 0 ? static_cast<double>(exposed_wait) / static_cast<double>(window) : 0;
  if (time_share < kMinExposedWaitShare) return;
  Finding f = finding_for("collective-skew");
  f.layer = Layer::kFramework;
  f.severity = by_share(time_share);
  f.time_share = time_share;
  f.max_speedup = amdahl_speedup(time_share);
  f.title = fmt::format("Collectives mostly wait: {:.0f}% of the time in collectives is waiting for other ranks",
                        100 * share);
  f.detail = fmt::format(
      "The shortest duration of each call across ranks approximates its transfer; the rest is waiting for the last "
      "rank. Waiting is {:.0f}% of collective time; {:.1f}% of all ranks' time is waiting that no compute hides. No "
      "rank is last consistently: the work differs between ranks from step to step.",
      100 * share, 100 * time_share);
  f.evidence = {{"wait_share_pct", 100 * share, "%"}, {"exposed_wait_time_share_pct", 100 * time_share, "%"}};
  f.fixes = {
      "Balance the work per rank: sequence-length bucketing or packing, the same number of samples per rank "
      "(DistributedSampler(drop_last=True)), and the same shapes.",
      "Remove per-rank work that varies: data augmentation with variable cost, logging on some ranks only."};
  f.threshold =
      "waiting >= 50% of collective time with no consistent straggler (HTA's convention: shortest duration across "
      "ranks approximates transfer), and waiting no compute hides >= 1% of the ranks' time (the straggler "
      "rule's floor)";
  out.push_back(std::move(f));
}

// slow-collective-transport. Threshold: large messages (>= 16 MiB, past the latency-bound range)
// whose bus bandwidth is below 25% of the GPU's scale-up link when the ranks share one clock
// (one host), or below 50% of 400 Gb/s InfiniBand (25 GB/s) when they span several hosts.
constexpr double kIntraHostEfficiency = 0.25;
constexpr double kInterHostGbps = 25.0;
// Nodes hold at most this many GPUs (DGX/HGX: 8): a larger world spans hosts.
constexpr int kGpusPerHost = 8;

// Whether the ranks run on more than one host. Traces do not name their host, but ranks on
// different clocks, two ranks driving the same GPU index, or more ranks than a node has GPUs
// all say so. Hosts whose clocks agree within 100 us still count as one unless the rest tells.
bool spans_hosts(const JobAnalysis& job) {
  if (job.matching.clock_groups > 1 || job.world_size > kGpusPerHost) return true;
  std::set<std::int32_t> devices;
  std::size_t ranks = 0;
  for (const RankResult& r : job.ranks) {
    if (!r.error.empty() || r.collectives.empty()) continue;
    ++ranks;
    const std::int32_t device = r.collectives.front().device;
    if (device >= 0 && !devices.insert(device).second) return true;  // -1: unknown, not a repeat
  }
  return ranks > static_cast<std::size_t>(kGpusPerHost);
}

void rule_slow_transport(const JobAnalysis& job, std::vector<Finding>& out) {
  const bool multi_host = spans_hosts(job);
  for (const CollectiveCost& c : job.costs) {
    if (c.bucket < 3 || c.bucket >= kSizeBuckets || c.busbw_gbps <= 0) continue;
    const double expected = multi_host ? kInterHostGbps : (c.link_gbps > 0 ? kIntraHostEfficiency * c.link_gbps : -1);
    if (expected <= 0 || c.busbw_gbps >= expected) continue;
    Finding f = finding_for("slow-collective-transport");
    f.layer = Layer::kHardware;
    std::int64_t window = 0;
    for (const RankResult& r : job.ranks) window = std::max(window, r.error.empty() ? r.window_ns : 0);
    // At the expected bandwidth every transfer would take busbw/expected of its time. The gain is
    // an upper bound: transfers that compute already hides win nothing.
    const double saved = static_cast<double>(c.transfer_ns) * (1.0 - c.busbw_gbps / expected);
    const double share = window > 0 ? std::min(1.0, saved / static_cast<double>(window)) : 0;
    f.severity = by_share(share);
    f.time_share = share;
    f.max_speedup = amdahl_speedup(share);
    f.title = fmt::format(
        "{} of {} reaches {:.1f} GB/s bus bandwidth, {}", collective_name(c.kind), size_bucket_label(c.bucket),
        c.busbw_gbps,
        multi_host ? fmt::format("below {:.0f} GB/s expected between hosts", kInterHostGbps)
                   : fmt::format("{:.0f}% of {} ({:.0f} GB/s)", 100 * c.busbw_gbps / c.link_gbps, c.link, c.link_gbps));
    f.detail = fmt::format(
        "Transfer time is the shortest duration of each call across ranks, so waiting for late ranks is already "
        "taken out: {} calls moved {:.1f} MiB in {:.2f} ms of transfer. {}",
        c.calls, static_cast<double>(c.bytes) / (1 << 20), ns_to_ms(c.transfer_ns),
        multi_host ? "The ranks span several hosts: the network between them is the likely limit."
                   : "The ranks look like one host (one clock, distinct GPUs): NVLink/P2P should carry this traffic.");
    f.evidence = {{"busbw_gbps", c.busbw_gbps, "GB/s"},
                  {"algbw_gbps", c.algbw_gbps, "GB/s"},
                  {"expected_gbps", expected, "GB/s"},
                  {"calls", static_cast<double>(c.calls), "count"}};
    f.fixes = {
        "Read the transport NCCL chose: run with NCCL_DEBUG=INFO and `ferret nccl` on the logs (socket fallback, "
        "GPU Direct RDMA disabled, P2P disabled).",
        multi_host ? "Check the network: NCCL_IB_HCA / NCCL_SOCKET_IFNAME pointing at the fast NICs, the NCCL "
                     "network plugin installed, and all-reduce bandwidth with nccl-tests between the hosts."
                   : "Check `nvidia-smi topo -m` for NVLink between the GPUs, and that NCCL_P2P_DISABLE is unset."};
    f.threshold =
        "large messages (>= 16 MiB) below 25% of the scale-up link on one host, or below 25 GB/s (half of "
        "400 Gb/s InfiniBand) across hosts (vendor link figures); hosts: several clocks, a GPU index "
        "used twice, or more than 8 ranks";
    out.push_back(std::move(f));
  }
}

void job_rules(const JobAnalysis& job, std::vector<Finding>& out) {
  rule_straggler(job, out);
  rule_exposed_communication(job, out);
  rule_waiting(job, out);
  rule_slow_transport(job, out);
}

constexpr std::string_view kRecordJobCommunication =
    "No rule named why communication stays exposed; on NCCL, record the transport: `NCCL_DEBUG=INFO "
    "NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH` logs from every rank (`ferret nccl LOG...` reads them); and traces of every "
    "rank with `record_shapes=True` so message sizes show";

constexpr RuleInfo kJobRules[] = {
    RuleInfo{"rank-straggler", RuleSource::kJob, Dimension::kDistributed, RuleRole::kCause},
    RuleInfo{"job-exposed-communication",
             RuleSource::kJob,
             Dimension::kDistributed,
             RuleRole::kSymptom,
             {},
             {},
             kRecordJobCommunication,
             true},
    RuleInfo{"collective-skew", RuleSource::kJob, Dimension::kDistributed, RuleRole::kCause},
    // Exposed communication on a job: a slow transport makes every collective take longer to hide.
    explaining(kExplainsExposedJobCommunication,
               RuleInfo{"slow-collective-transport", RuleSource::kJob, Dimension::kDistributed, RuleRole::kCause}),
};

}  // namespace

FERRET_RULE_FAMILY(job){"rules_job", 10, kJobRules, rule_run<job_rules>()};

JobDiagnosis diagnose_job(const JobAnalysis& job) {
  JobDiagnosis d;
  run_rule_families(job, d.findings);
  // One policy with the trace and NCCL paths (docs/RULES.md#the-verdict): a slow transport is why
  // communication stays exposed, so it is the verdict over it.
  const Finding* top = rank_and_lead_with_verdict(d.findings);

  // The ranks' own verdicts, grouped.
  std::map<std::string, std::size_t> slot;
  for (const RankResult& r : job.ranks) {
    if (!r.error.empty()) continue;
    const std::string id = r.findings.empty() ? "" : r.findings.front().id;
    auto [it, added] = slot.try_emplace(id, d.rank_verdicts.size());
    if (added) d.rank_verdicts.push_back({id, r.verdict, {}});
    d.rank_verdicts[it->second].ranks.push_back(r.rank);
  }
  std::stable_sort(d.rank_verdicts.begin(), d.rank_verdicts.end(),
                   [](const auto& a, const auto& b) { return a.ranks.size() > b.ranks.size(); });

  if (top != nullptr) {
    d.verdict = verdict_of(*top);
    // The bound is a ceiling, shown beside the finding, not in the headline (docs/RULES.md, the
    // verdict, 5): no job-level what-if predicts it yet.
    d.verdict.headline = top->title + ".";
  } else if (!d.rank_verdicts.empty()) {
    // Low-severity job findings are no verdict (as for one trace), but they are not nothing.
    const auto& common = d.rank_verdicts.front();
    d.verdict.headline =
        fmt::format("No cross-rank bottleneck ({}). {} of {} ranks: {}",
                    d.findings.empty() ? "no straggler, communication hidden" : "only minor cross-rank findings, below",
                    common.ranks.size(), job.ranks.size(), common.title);
  } else {
    d.verdict.headline = "No rank could be analysed.";
  }
  return d;
}

}  // namespace ferret
