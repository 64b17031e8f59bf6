// The processes that analyse one job together. Without MPI, one process (rank 0 of 1). In the
// `ferret-mpi` build, started by mpirun or srun, one MPI process per launched task: each
// analyses its share of the rank traces and process 0 gathers the compact per-rank results
// (job/rank_result.h) and writes the report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "job/job_runner.h"

namespace ferret::cli {

struct World {
  int rank = 0;
  int size = 1;
  bool mpi = false;  // MPI was started (and must be finalised by world_stop)
};

// True when an MPI launcher (Open MPI's mpirun, Slurm's srun with PMI/PMIx, MPICH's hydra) started
// this process with more than one task.
bool launched_by_mpi_launcher();
// True in the build linked with MPI (ferret-mpi).
bool built_with_mpi();

// Starts MPI in the MPI build when launched by an MPI launcher; otherwise the world of one.
World world_start();
// Every process's bytes, in process order, on process 0; the others get an empty vector.
std::vector<std::vector<std::uint8_t>> world_gather(const World& world, const std::vector<std::uint8_t>& mine);
// Process 0's value on every process.
int world_broadcast(const World& world, int value);
void world_stop(World& world);

// The world as the job runner's transport (job/job_runner.h).
class WorldProcessGroup : public ProcessGroup {
 public:
  explicit WorldProcessGroup(const World& world) : world_(world) {}
  int process() const override { return world_.rank; }
  int processes() const override { return world_.size; }
  std::vector<std::vector<std::uint8_t>> gather(const std::vector<std::uint8_t>& mine) override {
    return world_gather(world_, mine);
  }
  int broadcast(int value) override { return world_broadcast(world_, value); }

 private:
  const World& world_;
};

// Replaces this process with a sibling build beside the running binary (ferret-torch, ferret-mpi)
// with the same arguments. Returns only when there is none.
void exec_sibling_binary(const std::string& name);

}  // namespace ferret::cli
