// Scaling: runs of the same job at different world sizes, how step time and communication grow
// with the number of ranks, and what larger sizes would cost.
//
// Model (docs/DISTRIBUTED.md, "Scaling"): weak scaling, the per-rank batch fixed. The transfer
// time of a step's collectives follows the ring model of NCCL's all-reduce, fitted by least
// squares over the runs that span hosts like the largest one (same link):
//     transfer(n) = c + beta * 2(n-1)/n + alpha * 2(n-1)
// beta is the bytes over the bus bandwidth, alpha the latency of one ring hop summed over the
// step's calls, c what stays constant. A projected step is the largest run's step plus the extra
// transfer, all of it exposed: an upper bound when more communication could hide behind
// compute, and a floor only if the link or the topology changes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "job/job_analysis.h"

namespace ferret {

struct ScalingRun {
  std::string source;  // the run's directory
  int world_size = 0;  // distributedInfo's, else the ranks given
  int ranks = 0;       // ranks analysed
  bool spans_hosts = false;
  std::int64_t step_ns = 0;      // median over ranks of the mean step
  std::int64_t compute_ns = 0;   // per step, median over ranks
  std::int64_t comm_ns = 0;      // per step, median over ranks
  std::int64_t exposed_ns = 0;   // per step, median over ranks
  std::int64_t transfer_ns = 0;  // per step: matched calls' transfer (shortest duration) summed
  double efficiency = 1;         // step of the smallest run / this step
};

ScalingRun summarize_scaling_run(const JobAnalysis& job, const std::string& source);

struct ScalingFit {
  bool fitted = false;
  int runs_used = 0;  // runs of the largest run's kind (one host, or across hosts)
  double c_ns = 0;
  double beta_ns = 0;        // per step, at 2(n-1)/n = 1
  double alpha_ns = 0;       // per step, per unit of 2(n-1)
  double max_error_pct = 0;  // largest misfit over the runs used
  std::string why_not;       // when not fitted
};

struct ScalingProjection {
  int world_size = 0;
  std::int64_t transfer_ns = 0;
  std::int64_t step_ns = 0;
  double efficiency = 0;  // step of the smallest run / projected step
};

struct ScalingAnalysis {
  std::vector<ScalingRun> runs;  // by world size
  ScalingFit fit;
  std::vector<ScalingProjection> projections;
  std::vector<std::string> warnings;
};

// `project_to`: world sizes to project; empty = 2x, 4x and 8x the largest run.
ScalingAnalysis analyze_scaling(std::vector<ScalingRun> runs, std::vector<int> project_to = {});

}  // namespace ferret
