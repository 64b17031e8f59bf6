#include "job/scaling.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "base/statistics.h"

namespace ferret {

namespace {

// Solves the least-squares problem min |X b - y| for up to 3 columns by the normal equations
// (Gaussian elimination with partial pivoting). Returns false when X'X is singular.
template <std::size_t K>
bool least_squares(const std::vector<std::array<double, K>>& x, const std::vector<double>& y,
                   std::array<double, K>& b) {
  std::array<std::array<double, K + 1>, K> m{};
  for (std::size_t r = 0; r < x.size(); ++r)
    for (std::size_t i = 0; i < K; ++i) {
      for (std::size_t j = 0; j < K; ++j) m[i][j] += x[r][i] * x[r][j];
      m[i][K] += x[r][i] * y[r];
    }
  for (std::size_t col = 0; col < K; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < K; ++r)
      if (std::fabs(m[r][col]) > std::fabs(m[pivot][col])) pivot = r;
    if (std::fabs(m[pivot][col]) < 1e-12 * (1 + std::fabs(m[col][col]))) return false;
    std::swap(m[col], m[pivot]);
    for (std::size_t r = 0; r < K; ++r) {
      if (r == col) continue;
      const double f = m[r][col] / m[col][col];
      for (std::size_t c = col; c <= K; ++c) m[r][c] -= f * m[col][c];
    }
  }
  for (std::size_t i = 0; i < K; ++i) b[i] = m[i][K] / m[i][i];
  return true;
}

double bandwidth_term(int n) { return 2.0 * (n - 1) / n; }
double latency_term(int n) { return 2.0 * (n - 1); }

}  // namespace

ScalingRun summarize_scaling_run(const JobAnalysis& job, const std::string& source) {
  ScalingRun run;
  run.source = source;
  std::vector<std::int64_t> steps, compute, comm, exposed;
  std::size_t step_count = 0;
  std::set<std::int32_t> devices;
  for (const RankResult& r : job.ranks) {
    if (!r.error.empty() || r.steps.empty()) continue;
    ++run.ranks;
    const auto n = static_cast<std::int64_t>(r.steps.size());
    step_count = std::max(step_count, r.steps.size());
    steps.push_back(r.mean_step_ns);
    std::int64_t c = 0;
    for (const RankStep& s : r.steps) c += s.compute_kernel_ns;
    compute.push_back(c / n);
    comm.push_back(r.comm_ns / n);
    exposed.push_back(r.exposed_comm_ns / n);
    if (!r.collectives.empty() && !devices.insert(r.collectives.front().device).second) run.spans_hosts = true;
  }
  run.world_size = job.world_size > 0 ? job.world_size : run.ranks;
  run.spans_hosts = run.spans_hosts || job.matching.clock_groups > 1 || run.world_size > 8;
  run.step_ns = stats::median_ns(steps);
  run.compute_ns = stats::median_ns(compute);
  run.comm_ns = stats::median_ns(comm);
  run.exposed_ns = stats::median_ns(exposed);
  std::int64_t transfer = 0;
  for (const MatchedCall& call : job.matching.calls) transfer += call.transfer_ns;
  run.transfer_ns = step_count > 0 ? transfer / static_cast<std::int64_t>(step_count) : 0;
  return run;
}

ScalingAnalysis analyze_scaling(std::vector<ScalingRun> runs, std::vector<int> project_to) {
  ScalingAnalysis result;
  std::stable_sort(runs.begin(), runs.end(),
                   [](const ScalingRun& a, const ScalingRun& b) { return a.world_size < b.world_size; });
  for (std::size_t i = 1; i < runs.size(); ++i)
    if (runs[i].world_size == runs[i - 1].world_size)
      result.warnings.push_back(fmt::format("two runs have world size {} ({} and {}): both are used",
                                            runs[i].world_size, runs[i - 1].source, runs[i].source));
  result.runs = std::move(runs);
  if (result.runs.empty()) return result;
  const double base = static_cast<double>(result.runs.front().step_ns);
  for (ScalingRun& r : result.runs) r.efficiency = r.step_ns > 0 ? base / static_cast<double>(r.step_ns) : 0;

  // Fit on the runs that use the same kind of link as the largest one.
  const ScalingRun& largest = result.runs.back();
  std::vector<const ScalingRun*> used;
  for (const ScalingRun& r : result.runs)
    if (r.spans_hosts == largest.spans_hosts && r.world_size >= 2 && r.transfer_ns > 0) used.push_back(&r);
  ScalingFit& fit = result.fit;
  fit.runs_used = static_cast<int>(used.size());
  std::set<int> sizes;
  for (const ScalingRun* r : used) sizes.insert(r->world_size);
  if (sizes.size() < 2) {
    fit.why_not = fmt::format("{} world size{} with matched collectives {}: at least 2 are needed", sizes.size(),
                              sizes.size() == 1 ? "" : "s", largest.spans_hosts ? "across hosts" : "on one host");
    return result;
  }
  std::vector<double> y;
  for (const ScalingRun* r : used) y.push_back(static_cast<double>(r->transfer_ns));
  if (sizes.size() >= 3) {
    std::vector<std::array<double, 3>> x;
    for (const ScalingRun* r : used) x.push_back({1.0, bandwidth_term(r->world_size), latency_term(r->world_size)});
    std::array<double, 3> b{};
    fit.fitted = least_squares(x, y, b);
    fit.c_ns = b[0];
    fit.beta_ns = b[1];
    fit.alpha_ns = b[2];
  } else {
    std::vector<std::array<double, 2>> x;
    for (const ScalingRun* r : used) x.push_back({bandwidth_term(r->world_size), latency_term(r->world_size)});
    std::array<double, 2> b{};
    fit.fitted = least_squares(x, y, b);
    fit.beta_ns = b[0];
    fit.alpha_ns = b[1];
  }
  if (!fit.fitted) {
    fit.why_not = "the runs' world sizes do not determine the model";
    return result;
  }
  for (const ScalingRun* r : used) {
    const double model =
        fit.c_ns + fit.beta_ns * bandwidth_term(r->world_size) + fit.alpha_ns * latency_term(r->world_size);
    fit.max_error_pct = std::max(fit.max_error_pct, 100.0 * std::fabs(model - static_cast<double>(r->transfer_ns)) /
                                                        static_cast<double>(r->transfer_ns));
  }
  if (project_to.empty())
    for (int f : {2, 4, 8}) project_to.push_back(largest.world_size * f);
  for (int n : project_to) {
    if (n < 2) continue;
    ScalingProjection p;
    p.world_size = n;
    const double transfer = fit.c_ns + fit.beta_ns * bandwidth_term(n) + fit.alpha_ns * latency_term(n);
    p.transfer_ns = std::llround(transfer);
    p.step_ns = largest.step_ns + std::llround(transfer - static_cast<double>(largest.transfer_ns));
    p.efficiency = p.step_ns > 0 ? base / static_cast<double>(p.step_ns) : 0;
    result.projections.push_back(p);
  }
  return result;
}

}  // namespace ferret
