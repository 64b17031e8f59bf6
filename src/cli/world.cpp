#include "cli/world.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#if defined(FERRET_HAVE_MPI)
#include <mpi.h>
#endif

namespace ferret::cli {

bool launched_by_mpi_launcher() {
  // Open MPI, Slurm (srun --mpi=pmix / pmi2), MPICH / Intel MPI (hydra's PMI).
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    const char* value = std::getenv(var);
    if (value != nullptr && std::atoi(value) > 1) return true;
  }
  // PMIx does not always export the size; its rank says a launcher is there.
  return std::getenv("PMIX_RANK") != nullptr && std::getenv("OMPI_COMM_WORLD_RANK") != nullptr;
}

#if defined(FERRET_HAVE_MPI)

bool built_with_mpi() { return true; }

World world_start() {
  World w;
  if (!launched_by_mpi_launcher()) return w;
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised && MPI_Init(nullptr, nullptr) != MPI_SUCCESS) throw std::runtime_error("MPI_Init failed");
  w.mpi = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  return w;
}

std::vector<std::vector<std::uint8_t>> world_gather(const World& w, const std::vector<std::uint8_t>& mine) {
  if (!w.mpi) return {mine};
  // Sizes first, then the bytes. int counts limit one process's share to 2 GiB of rank results,
  // about a thousand ranks of 10,000 collectives each per process.
  if (mine.size() > static_cast<std::size_t>(INT32_MAX))
    throw std::runtime_error("this process's rank results exceed 2 GiB: start more MPI processes");
  const int my_size = static_cast<int>(mine.size());
  std::vector<int> sizes(w.rank == 0 ? static_cast<std::size_t>(w.size) : 0);
  MPI_Gather(&my_size, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> displs;
  std::vector<std::uint8_t> all;
  if (w.rank == 0) {
    long long total = 0;
    for (int s : sizes) {
      displs.push_back(static_cast<int>(total));
      total += s;
    }
    if (total > INT32_MAX) throw std::runtime_error("rank results exceed 2 GiB in all: analyse fewer ranks at once");
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(mine.data(), my_size, MPI_BYTE, all.data(), sizes.data(), displs.data(), MPI_BYTE, 0, MPI_COMM_WORLD);
  std::vector<std::vector<std::uint8_t>> out;
  if (w.rank == 0)
    for (std::size_t p = 0; p < sizes.size(); ++p)
      out.emplace_back(all.begin() + displs[p], all.begin() + displs[p] + sizes[p]);
  return out;
}

int world_broadcast(const World& w, int value) {
  if (w.mpi) MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return value;
}

void world_stop(World& w) {
  if (w.mpi) MPI_Finalize();
  w.mpi = false;
}

#else

bool built_with_mpi() { return false; }
World world_start() { return {}; }
std::vector<std::vector<std::uint8_t>> world_gather(const World&, const std::vector<std::uint8_t>& mine) {
  return {mine};
}
int world_broadcast(const World&, int value) { return value; }
void world_stop(World&) {}

#endif

void exec_sibling_binary(const std::string& name) {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return;
  self[n] = '\0';
  std::string dir(self);
  dir.resize(dir.rfind('/') + 1);
  const std::string sibling = dir + name;
  if (::access(sibling.c_str(), X_OK) != 0) return;
  // The original arguments, from /proc/self/cmdline (NUL-separated).
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string arg; std::getline(in, arg, '\0');) args.push_back(arg);
  if (args.empty()) return;
  args[0] = sibling;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  ::execv(sibling.c_str(), argv.data());
}

}  // namespace ferret::cli
