// GPU utilisation and memory, read while a command runs (`ferret watch`, docs/WATCH.md). The
// source is an interface so that tests hand in given series; the real one is NVML, opened with
// dlopen("libnvidia-ml.so.1") so that ferret neither links nor needs the NVIDIA driver: without
// it, `ferret watch` watches the CPU side only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ferret {

struct GpuDeviceInfo {
  std::string name;
  std::uint64_t memory_total = 0;
};

// One device at one moment.
struct GpuReading {
  bool ok = false;          // false: the device did not answer this time
  double util_pct = 0;      // utilization.gpu: share of the last sample period a kernel ran
  double mem_util_pct = 0;  // utilization.memory: share of it device memory was read or written
  std::uint64_t memory_used = 0;
  bool has_processes = false;                                      // the compute processes could be listed
  std::vector<std::pair<std::uint32_t, std::uint64_t>> processes;  // pid, bytes used (~0: unknown)
};

class GpuSource {
 public:
  virtual ~GpuSource() = default;
  // What is read: "NVML (driver 550.54.15)", "fake".
  virtual std::string description() const = 0;
  // The devices, in the order read() reports them.
  virtual std::vector<GpuDeviceInfo> devices() = 0;
  virtual std::vector<GpuReading> read() = 0;
};

// NVML through dlopen of `library`. nullptr, with `why_not` set to one line, when the library is
// absent, lacks a function ferret uses, fails to initialise or sees no device.
std::unique_ptr<GpuSource> open_nvml_gpu_source(std::string& why_not, const char* library = "libnvidia-ml.so.1");

}  // namespace ferret
