// The ranks every other rank waits for, and what they were doing instead (method in
// job_analysis.h).
#include <algorithm>
#include <map>

#include "base/statistics.h"
#include "job/job_analysis.h"

namespace ferret {

const char* straggler_cause_name(StragglerCause c) {
  switch (c) {
    case StragglerCause::kUnexplained: return "unexplained";
    case StragglerCause::kCompute: return "compute";
    case StragglerCause::kInput: return "input";
    case StragglerCause::kHostSync: return "host-sync";
    case StragglerCause::kHostWork: return "host-work";
  }
  return "unexplained";
}

namespace {

// Mean per step of one activity of a rank.
std::int64_t per_step(const RankResult& r, StragglerCause what) {
  if (r.steps.empty()) return 0;
  std::int64_t sum = 0;
  for (const RankStep& s : r.steps) {
    switch (what) {
      case StragglerCause::kCompute: sum += s.compute_kernel_ns; break;
      case StragglerCause::kInput: sum += s.dataloader_ns; break;
      case StragglerCause::kHostSync: sum += s.host_sync_ns; break;
      case StragglerCause::kHostWork:
        // Host time with the GPU idle: operators and runtime calls (the plugin's CPU Exec and
        // Runtime), the part of a slow host that makes a rank late.
        sum += s.category_ns[static_cast<std::size_t>(StepCategory::kCpuExec)] +
               s.category_ns[static_cast<std::size_t>(StepCategory::kRuntime)];
        break;
      case StragglerCause::kUnexplained: break;
    }
  }
  return sum / static_cast<std::int64_t>(r.steps.size());
}

double syncs_per_step(const RankResult& r) {
  if (r.steps.empty()) return 0;
  std::int64_t n = 0;
  for (const RankStep& s : r.steps) n += s.host_syncs;
  return static_cast<double>(n) / static_cast<double>(r.steps.size());
}

}  // namespace

StragglerResult find_stragglers(const std::vector<RankResult>& ranks, const CollectiveMatching& m) {
  StragglerResult result;
  result.ranks.resize(ranks.size());
  std::vector<std::int64_t> delay_sum(ranks.size(), 0);
  for (std::size_t r = 0; r < ranks.size(); ++r) result.ranks[r].rank_index = static_cast<std::int32_t>(r);
  // Per step, the call that waited longest for its last rank.
  std::map<std::int64_t, const MatchedCall*> worst_by_step;
  bool by_steps = true;
  for (const MatchedCall& call : m.calls) {
    std::vector<std::int64_t> starts;
    for (const Participant& p : call.participants) starts.push_back(p.start_ns);
    const std::int64_t median_start = stats::median_ns(std::move(starts));
    for (const Participant& p : call.participants) {
      RankLateness& l = result.ranks[static_cast<std::size_t>(p.rank_index)];
      ++l.calls;
      l.wait_ns += p.dur_ns - call.transfer_ns;
      delay_sum[static_cast<std::size_t>(p.rank_index)] += p.start_ns - median_start;
    }
    RankLateness& last = result.ranks[static_cast<std::size_t>(call.last_rank_index)];
    ++last.times_last;
    last.lateness_ns += call.lateness_ns;
    if (call.step < 0) by_steps = false;
    const MatchedCall*& worst = worst_by_step[call.step];
    if (worst == nullptr || call.lateness_ns > worst->lateness_ns) worst = &call;
  }
  if (by_steps) {
    result.steps = worst_by_step.size();
    for (const auto& [step, call] : worst_by_step)
      ++result.ranks[static_cast<std::size_t>(call->last_rank_index)].steps_last;
  } else {  // no steps: every call counts as one
    result.steps = m.calls.size();
    for (RankLateness& l : result.ranks) l.steps_last = l.times_last;
  }
  for (std::size_t r = 0; r < ranks.size(); ++r)
    if (result.ranks[r].calls > 0)
      result.ranks[r].mean_arrival_delay_ns = delay_sum[r] / static_cast<std::int64_t>(result.ranks[r].calls);

  std::vector<std::int64_t> steps;
  for (const RankResult& r : ranks)
    if (r.error.empty() && r.mean_step_ns > 0) steps.push_back(r.mean_step_ns);
  const std::int64_t median_step = stats::median_ns(steps);

  for (const RankLateness& l : result.ranks) {
    if (result.steps < (by_steps ? kStragglerMinSteps : kStragglerMinCalls)) break;
    const double share = static_cast<double>(l.steps_last) / static_cast<double>(result.steps);
    if (share <= kStragglerLastShare) continue;
    const RankResult& rank = ranks[static_cast<std::size_t>(l.rank_index)];
    Straggler s;
    s.rank_index = l.rank_index;
    s.times_last = l.times_last;
    s.calls = l.calls;
    s.steps_last = l.steps_last;
    s.steps = result.steps;
    s.last_share = share;
    s.mean_lateness_ns = l.lateness_ns / static_cast<std::int64_t>(std::max<std::uint64_t>(1, l.times_last));
    const auto step_count = static_cast<std::int64_t>(std::max<std::size_t>(1, rank.steps.size()));
    s.lateness_per_step_ns = l.lateness_ns / step_count;
    std::vector<std::int64_t> others_exposed;
    for (std::size_t o = 0; o < ranks.size(); ++o)
      if (static_cast<std::int32_t>(o) != l.rank_index && ranks[o].error.empty() && !ranks[o].steps.empty())
        others_exposed.push_back(ranks[o].exposed_comm_ns / static_cast<std::int64_t>(ranks[o].steps.size()));
    const std::int64_t exposed_gap = stats::median_ns(std::move(others_exposed)) - rank.exposed_comm_ns / step_count;
    s.cost_per_step_ns = std::clamp<std::int64_t>(exposed_gap, 0, s.lateness_per_step_ns);
    s.step_share = median_step > 0 ? static_cast<double>(s.cost_per_step_ns) / static_cast<double>(median_step) : 0;
    for (StragglerCause what :
         {StragglerCause::kCompute, StragglerCause::kInput, StragglerCause::kHostSync, StragglerCause::kHostWork}) {
      std::vector<std::int64_t> others;
      for (std::size_t o = 0; o < ranks.size(); ++o)
        if (static_cast<std::int32_t>(o) != l.rank_index && ranks[o].error.empty() && !ranks[o].steps.empty())
          others.push_back(per_step(ranks[o], what));
      s.activities.push_back({what, per_step(rank, what), stats::median_ns(std::move(others))});
    }
    const auto most = std::max_element(
        s.activities.begin(), s.activities.end(),
        [](const ActivityExcess& a, const ActivityExcess& b) { return a.excess_ns() < b.excess_ns(); });
    if (most->excess_ns() > 0 &&
        static_cast<double>(most->excess_ns()) >= kCauseExplainsShare * static_cast<double>(s.cost_per_step_ns))
      s.cause = most->cause;
    std::vector<double> others_syncs;
    for (std::size_t o = 0; o < ranks.size(); ++o)
      if (static_cast<std::int32_t>(o) != l.rank_index && ranks[o].error.empty() && !ranks[o].steps.empty())
        others_syncs.push_back(syncs_per_step(ranks[o]));
    std::sort(others_syncs.begin(), others_syncs.end());
    s.host_syncs_per_step = syncs_per_step(rank);
    s.others_host_syncs_per_step = others_syncs.empty() ? 0 : others_syncs[others_syncs.size() / 2];
    if (s.cause == StragglerCause::kHostWork && s.host_syncs_per_step >= s.others_host_syncs_per_step + 1)
      s.cause = StragglerCause::kHostSync;
    result.stragglers.push_back(std::move(s));
  }
  std::stable_sort(result.stragglers.begin(), result.stragglers.end(),
                   [](const Straggler& a, const Straggler& b) { return a.cost_per_step_ns > b.cost_per_step_ns; });
  return result;
}

}  // namespace ferret
