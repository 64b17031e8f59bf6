// Device ceilings: the vendors' datasheet figures as data, and matching a trace's
// deviceProperties entry to one row of it.
//
// Figures are peak ceilings from vendor datasheets (tensor figures dense, never "with sparsity").
// A figure the datasheet does not give is std::nullopt here and stays unknown: a row never borrows
// another GPU's number, and an unmatched device gets no figures at all.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "model/trace_model.h"

namespace ferret {

using Figure = std::optional<double>;

struct GpuSpec {
  std::string_view model;   // "H100 SXM5"
  std::string_view vendor;  // "NVIDIA", "AMD"
  // Name patterns, case-insensitive, alternatives separated by '|': one of `any_of` must occur in
  // the device name, every one of `all_of` and none of `none_of`.
  std::string_view any_of;
  std::string_view all_of;
  std::string_view none_of;
  int cc_major = -1;  // compute capability (AMD: gfx major/minor as the trace reports them)
  int cc_minor = -1;
  int sms = -1;      // SMs / CUs; -1 unknown
  Figure memory_gb;  // nominal capacity (GB as the datasheet prints it)
  Figure hbm_tbps;   // memory bandwidth, TB/s
  Figure fp32_tflops;
  Figure tf32_tflops;
  Figure fp16_tflops;
  Figure bf16_tflops;
  Figure fp8_tflops;
  std::string_view host_link;      // "PCIe5 x16"; empty when unknown
  Figure host_link_gbps;           // per direction, GB/s
  std::string_view scale_up_link;  // "NVLink4"; "none" for parts without one
  Figure scale_up_gbps;            // per GPU, per direction, GB/s
};

// The whole table, most specific rows first.
std::span<const GpuSpec> gpu_spec_table();

struct GpuMatch {
  const GpuSpec* spec = nullptr;  // nullptr: unknown device, every ceiling unknown
  bool by_properties = false;     // matched by CC + SM count + memory because the name was empty
  std::string note;               // why there is no match, or how it was made
};

// Matches by name substrings, then confirms with compute capability and SM count (when the trace
// gives them). Rows sharing a name pattern (A100 40 GB / 80 GB) are told apart by memory size.
// A device with an empty name is matched by its properties alone when exactly one row fits.
GpuMatch match_gpu(const DeviceProperties& device);

// The trace's properties of the device with this id (GPU events use the device index as pid): the
// entry listed under that id, else - when every listed device is one model (same name, compute
// capability, SM/CU count and memory) - the first entry: ROCm traces list devices from 0 while a
// rank's kernels run on device 2 or 9. nullptr when neither. A linear scan: per-device callers use
// DeviceIndex, since a trace may list as many devices as events.
const DeviceProperties* find_device(const TraceInfo& info, int device_id);

// find_device's answers (the first entry for an id) from a table built once.
class DeviceIndex {
 public:
  explicit DeviceIndex(const TraceInfo& info);
  const DeviceProperties* find(int device_id) const;

 private:
  std::unordered_map<int, const DeviceProperties*> by_id_;
  const DeviceProperties* one_model_ = nullptr;  // every listed device is this model
};

// How a device was identified, for the report: which properties and which clue of them matched
// the table ("name \"NVIDIA H100 80GB HBM3\" (properties of device 0)", "CC 9.4, 304 CUs and
// 192 GB (an empty name; properties of device 0, the one model listed, for device 9)"), or why
// none did.
std::string identified_by(const TraceInfo& info, int device_id);

}  // namespace ferret
