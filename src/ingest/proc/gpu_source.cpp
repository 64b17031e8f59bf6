#include "ingest/proc/gpu_source.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include <fmt/format.h>

namespace ferret {

namespace {

// The few NVML types ferret uses, declared from nvml.h's documented layouts (the header ships
// with the CUDA toolkit, not with Debian's free packages). nvmlReturn_t is an int enum.
using NvmlReturn = int;
using NvmlDevice = void*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlInsufficientSize = 7;
struct NvmlUtilization {  // nvmlUtilization_t
  unsigned int gpu;
  unsigned int memory;
};
struct NvmlMemory {  // nvmlMemory_t (v1)
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct NvmlProcessInfo {  // nvmlProcessInfo_t as _v2 and _v3 take it
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
constexpr unsigned kNvmlNameSize = 96;        // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned kNvmlVersionSize = 80;     // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
constexpr unsigned kMaxNvmlProcesses = 1024;  // a bound on what one device lists

class NvmlGpuSource final : public GpuSource {
 public:
  ~NvmlGpuSource() override {
    if (shutdown_ != nullptr) shutdown_();
    if (library_ != nullptr) ::dlclose(library_);
  }

  // Loads and initialises; false with `why_not` set.
  bool open(const char* library, std::string& why_not) {
    library_ = ::dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (library_ == nullptr) {
      why_not = fmt::format("no NVIDIA driver library ({} not found): GPU side not watched, CPU side only", library);
      return false;
    }
    bool missing = false;
    auto sym = [&](auto& fn, const char* name, bool required = true) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(library_, name));
      if (fn == nullptr && required) {
        missing = true;
        if (why_not.empty()) why_not = fmt::format("{} lacks {}: GPU side not watched, CPU side only", library, name);
      }
    };
    sym(init_, "nvmlInit_v2");
    sym(shutdown_, "nvmlShutdown");
    sym(count_, "nvmlDeviceGetCount_v2");
    sym(handle_, "nvmlDeviceGetHandleByIndex_v2");
    sym(utilization_, "nvmlDeviceGetUtilizationRates");
    sym(memory_, "nvmlDeviceGetMemoryInfo");
    sym(name_, "nvmlDeviceGetName");
    sym(driver_, "nvmlSystemGetDriverVersion", false);
    sym(processes_, "nvmlDeviceGetComputeRunningProcesses_v3", false);
    if (processes_ == nullptr) sym(processes_, "nvmlDeviceGetComputeRunningProcesses_v2", false);
    if (missing) {
      shutdown_ = nullptr;
      return false;
    }
    if (const NvmlReturn r = init_(); r != kNvmlSuccess) {
      shutdown_ = nullptr;
      why_not = fmt::format("NVML did not start (nvmlInit_v2 returned {}): GPU side not watched, CPU side only", r);
      return false;
    }
    unsigned count = 0;
    if (count_(&count) != kNvmlSuccess || count == 0) {
      why_not = "NVML sees no GPU: GPU side not watched, CPU side only";
      return false;
    }
    for (unsigned i = 0; i < count && i < 64; ++i) {
      NvmlDevice d = nullptr;
      if (handle_(i, &d) != kNvmlSuccess) continue;
      GpuDeviceInfo info;
      char name[kNvmlNameSize] = {};
      if (name_(d, name, kNvmlNameSize) == kNvmlSuccess) info.name.assign(name, ::strnlen(name, kNvmlNameSize));
      NvmlMemory m{};
      if (memory_(d, &m) == kNvmlSuccess) info.memory_total = m.total;
      handles_.push_back(d);
      infos_.push_back(std::move(info));
    }
    if (handles_.empty()) {
      why_not = "NVML lists GPUs but hands out none: GPU side not watched, CPU side only";
      return false;
    }
    char version[kNvmlVersionSize] = {};
    description_ = driver_ != nullptr && driver_(version, kNvmlVersionSize) == kNvmlSuccess
                       ? fmt::format("NVML (driver {})", std::string(version, ::strnlen(version, kNvmlVersionSize)))
                       : std::string("NVML");
    return true;
  }

  std::string description() const override { return description_; }
  std::vector<GpuDeviceInfo> devices() override { return infos_; }

  std::vector<GpuReading> read() override {
    std::vector<GpuReading> out(handles_.size());
    for (std::size_t i = 0; i < handles_.size(); ++i) {
      GpuReading& r = out[i];
      NvmlUtilization u{};
      NvmlMemory m{};
      if (utilization_(handles_[i], &u) != kNvmlSuccess || memory_(handles_[i], &m) != kNvmlSuccess) continue;
      r.ok = true;
      r.util_pct = std::min(u.gpu, 100u);
      r.mem_util_pct = std::min(u.memory, 100u);
      r.memory_used = m.used;
      if (processes_ == nullptr) continue;
      unsigned n = static_cast<unsigned>(buffer_.size());
      NvmlReturn rc = processes_(handles_[i], &n, buffer_.data());
      if (rc == kNvmlInsufficientSize && n <= kMaxNvmlProcesses) {
        buffer_.resize(n + 8);
        n = static_cast<unsigned>(buffer_.size());
        rc = processes_(handles_[i], &n, buffer_.data());
      }
      if (rc != kNvmlSuccess) continue;
      r.has_processes = true;
      for (unsigned k = 0; k < n && k < buffer_.size(); ++k)
        r.processes.emplace_back(buffer_[k].pid, buffer_[k].usedGpuMemory);
    }
    return out;
  }

 private:
  void* library_ = nullptr;
  NvmlReturn (*init_)() = nullptr;
  NvmlReturn (*shutdown_)() = nullptr;
  NvmlReturn (*count_)(unsigned*) = nullptr;
  NvmlReturn (*handle_)(unsigned, NvmlDevice*) = nullptr;
  NvmlReturn (*utilization_)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*memory_)(NvmlDevice, NvmlMemory*) = nullptr;
  NvmlReturn (*name_)(NvmlDevice, char*, unsigned) = nullptr;
  NvmlReturn (*driver_)(char*, unsigned) = nullptr;
  NvmlReturn (*processes_)(NvmlDevice, unsigned*, NvmlProcessInfo*) = nullptr;
  std::vector<NvmlDevice> handles_;
  std::vector<GpuDeviceInfo> infos_;
  std::vector<NvmlProcessInfo> buffer_ = std::vector<NvmlProcessInfo>(64);
  std::string description_;
};

}  // namespace

std::unique_ptr<GpuSource> open_nvml_gpu_source(std::string& why_not, const char* library) {
  why_not.clear();
  auto source = std::make_unique<NvmlGpuSource>();
  if (!source->open(library, why_not)) return nullptr;
  return source;
}

}  // namespace ferret
