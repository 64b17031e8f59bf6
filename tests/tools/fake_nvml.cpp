// A stand-in for the NVIDIA driver's libnvidia-ml.so.1, with the C ABI of the NVML functions
// `ferret watch` resolves (types and return codes as nvml.h documents them), so the dlopen path,
// the struct layouts, the buffer-growing retry and the whole GPU side of the report run on
// machines without a GPU. Loaded through LD_LIBRARY_PATH by the tests. Scripted by environment
// variables read at nvmlInit_v2:
//   FAKE_NVML_INIT_RC    what nvmlInit_v2 returns (default 0, NVML_SUCCESS)
//   FAKE_NVML_GPUS       device count (default 1)
//   FAKE_NVML_UTIL       comma-separated utilization.gpu per device (default 50)
//   FAKE_NVML_EXTRA      processes of other jobs listed on every device (default 0)
// Device 0 also lists the caller's child processes (the watched command), read from /proc.
// Built twice: FAKE_NVML_WITHOUT_MEMORY leaves nvmlDeviceGetMemoryInfo out.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidArgument = 2;
constexpr int kInsufficientSize = 7;
constexpr unsigned long long kGiB = 1ULL << 30;

struct Utilization {  // nvmlUtilization_t
  unsigned int gpu;
  unsigned int memory;
};
struct Memory {  // nvmlMemory_t
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct ProcessInfo {  // nvmlProcessInfo_t (v2/v3)
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

struct Device {
  unsigned index = 0;
  unsigned util = 50;
};
std::vector<Device> g_devices;
unsigned g_extra = 0;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

std::vector<unsigned> children_of_caller() {
  std::vector<unsigned> out;
  std::ifstream in("/proc/self/task/" + std::to_string(::getpid()) + "/children");
  unsigned pid = 0;
  while (in >> pid) out.push_back(pid);
  return out;
}

}  // namespace

extern "C" {

int nvmlInit_v2() {
  const int rc = env_int("FAKE_NVML_INIT_RC", kSuccess);
  if (rc != kSuccess) return rc;
  g_devices.assign(static_cast<std::size_t>(env_int("FAKE_NVML_GPUS", 1)), Device{});
  std::stringstream utils(std::getenv("FAKE_NVML_UTIL") ? std::getenv("FAKE_NVML_UTIL") : "");
  std::string cell;
  for (unsigned i = 0; i < g_devices.size(); ++i) {
    g_devices[i].index = i;
    if (std::getline(utils, cell, ',')) g_devices[i].util = static_cast<unsigned>(std::atoi(cell.c_str()));
  }
  g_extra = static_cast<unsigned>(env_int("FAKE_NVML_EXTRA", 0));
  return kSuccess;
}

int nvmlShutdown() { return kSuccess; }

int nvmlDeviceGetCount_v2(unsigned* count) {
  *count = static_cast<unsigned>(g_devices.size());
  return kSuccess;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  if (index >= g_devices.size()) return kInvalidArgument;
  *device = &g_devices[index];
  return kSuccess;
}

int nvmlDeviceGetName(void* device, char* name, unsigned length) {
  std::snprintf(name, length, "Fake GPU %u", static_cast<Device*>(device)->index);
  return kSuccess;
}

int nvmlSystemGetDriverVersion(char* version, unsigned length) {
  std::snprintf(version, length, "999.1.2");
  return kSuccess;
}

int nvmlDeviceGetUtilizationRates(void* device, Utilization* u) {
  u->gpu = static_cast<Device*>(device)->util;
  u->memory = static_cast<Device*>(device)->util / 2;
  return kSuccess;
}

#ifndef FAKE_NVML_WITHOUT_MEMORY
int nvmlDeviceGetMemoryInfo(void* device, Memory* m) {
  m->total = 80 * kGiB;
  m->used = (10 + static_cast<Device*>(device)->index) * kGiB;
  m->free = m->total - m->used;
  return kSuccess;
}
#endif

// As NVML: with too small a buffer, the count needed and NVML_ERROR_INSUFFICIENT_SIZE.
int nvmlDeviceGetComputeRunningProcesses_v3(void* device, unsigned* count, ProcessInfo* infos) {
  std::vector<ProcessInfo> list;
  if (static_cast<Device*>(device)->index == 0)
    for (unsigned pid : children_of_caller()) list.push_back({pid, 2 * kGiB, 0, 0});
  for (unsigned k = 0; k < g_extra; ++k) list.push_back({4000000 + k, ~0ULL, 0, 0});  // memory not available
  if (*count < list.size()) {
    *count = static_cast<unsigned>(list.size());
    return kInsufficientSize;
  }
  for (std::size_t k = 0; k < list.size(); ++k) infos[k] = list[k];
  *count = static_cast<unsigned>(list.size());
  return kSuccess;
}

}  // extern "C"
