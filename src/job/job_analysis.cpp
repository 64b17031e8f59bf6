// The job: ranks numbered and ordered, then every cross-rank analysis.
#include "job/job_analysis.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "base/statistics.h"
#include "job/rank_files.h"

namespace ferret {

namespace {

// Ranks that do not carry distributedInfo get the number in their file name, else the smallest
// free number in input order. A number claimed twice is a warning and the later file is renumbered.
void number_ranks(std::vector<RankResult>& ranks, std::vector<std::string>& warnings) {
  std::set<int> taken;
  std::vector<std::size_t> unnumbered;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    RankResult& r = ranks[i];
    if (r.rank < 0) {
      if (const std::optional<int> from_name = rank_from_file_name(r.source)) {
        r.rank = *from_name;
        r.rank_source = RankSource::kFileName;
      }
    }
    if (r.rank >= 0 && !taken.insert(r.rank).second) {
      warnings.push_back(fmt::format("rank {} appears twice (again in {}); that file is numbered as the next free rank",
                                     r.rank, r.source));
      r.rank = -1;
    }
    if (r.rank < 0) unnumbered.push_back(i);
  }
  int next = 0;
  for (std::size_t i : unnumbered) {
    while (taken.count(next) != 0) ++next;
    ranks[i].rank = next;
    ranks[i].rank_source = RankSource::kOrder;
    taken.insert(next);
  }
}

}  // namespace

JobAnalysis analyze_job(std::vector<RankResult> ranks) {
  JobAnalysis job;
  number_ranks(ranks, job.warnings);
  std::stable_sort(ranks.begin(), ranks.end(),
                   [](const RankResult& a, const RankResult& b) { return a.rank < b.rank; });
  job.ranks = std::move(ranks);

  std::set<int> world_sizes;
  for (const RankResult& r : job.ranks) {
    if (!r.error.empty()) {
      job.warnings.push_back(fmt::format("rank {} ({}) could not be analysed: {}", r.rank, r.source, r.error));
      continue;
    }
    if (r.world_size > 0) world_sizes.insert(r.world_size);
  }
  if (world_sizes.size() == 1) {
    job.world_size = *world_sizes.begin();
    std::set<int> present;
    for (const RankResult& r : job.ranks) present.insert(r.rank);
    for (int r = 0; r < job.world_size; ++r)
      if (present.count(r) == 0) {
        ++job.missing_rank_count;
        if (job.missing_ranks.size() < 64) job.missing_ranks.push_back(r);
      }
    for (const RankResult& r : job.ranks)
      if (r.rank >= job.world_size)
        job.warnings.push_back(
            fmt::format("rank {} ({}) is outside the world size {}", r.rank, r.source, job.world_size));
  } else if (world_sizes.size() > 1) {
    std::string sizes;
    for (int w : world_sizes) sizes += fmt::format("{}{}", sizes.empty() ? "" : ", ", w);
    job.warnings.push_back("the traces disagree on the world size (" + sizes +
                           "): they may come from different jobs or runs");
  }

  std::vector<std::int64_t> steps;
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    const RankResult& r = job.ranks[i];
    if (!r.error.empty() || r.mean_step_ns <= 0) continue;
    steps.push_back(r.mean_step_ns);
    if (r.mean_step_ns > job.slowest_step_ns) {
      job.slowest_step_ns = r.mean_step_ns;
      job.slowest_rank_index = static_cast<std::int32_t>(i);
    }
  }
  job.median_step_ns = stats::median_ns(std::move(steps));

  job.matching = match_collectives(job.ranks);
  job.costs = collective_costs(job.ranks, job.matching);
  job.stragglers = find_stragglers(job.ranks, job.matching);
  return job;
}

}  // namespace ferret
