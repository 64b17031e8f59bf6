// A rank of a hand-made job: the fields every cross-rank test sets the same way (distributedInfo
// rank and world size, NCCL, steps, one process group "0"); steps and collectives are the test's.
#pragma once

#include <string>

#include "job/rank_result.h"

namespace ferret::test {

inline RankResult hand_made_rank(int rank, int world_size) {
  RankResult r;
  r.source = "rank-" + std::to_string(rank) + ".json";
  r.rank = rank;
  r.rank_source = RankSource::kDistributedInfo;
  r.world_size = world_size;
  r.backend = "nccl";
  r.has_steps = true;
  r.process_groups = {"0"};
  return r;
}

}  // namespace ferret::test
