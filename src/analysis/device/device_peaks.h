// The device's ceilings for a roofline: dense peak TFLOP/s per dtype on the matrix units (Tensor
// Cores / Matrix Cores) and on the vector units, and HBM bandwidth. Figures come from the vendors'
// datasheets (device_peaks.cpp keeps each beside its source); a blank cell is unknown, never
// borrowed from another part. `--peaks FILE` replaces cells with measured ceilings.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>

#include "model/trace_model.h"

namespace ferret {

// fp6 and fp4 (OCP MX formats, NVIDIA's NVFP4) come last: few devices have matrix units for them.
enum class Dtype { kFp64, kFp32, kTf32, kBf16, kFp16, kFp8, kInt8, kFp6, kFp4, kUnknown };
inline constexpr std::size_t kDtypeCount = 9;  // the known ones, in enum order
const char* dtype_name(Dtype d);               // "fp64", ..., "fp4", "unknown"
std::optional<Dtype> dtype_from_name(std::string_view name);
// The formats made for the matrix units (Tensor Cores, Matrix Cores): bf16, fp16, fp8, int8, fp6,
// fp4. Off them, PyTorch computes these in fp32 ("opmath").
bool is_matrix_format(Dtype d);

using DtypeFigures = std::array<std::optional<double>, kDtypeCount>;

// Measured ceilings from `--peaks FILE` (JSON):
//   {"device": "NVIDIA H100 80GB HBM3", "hbm_tb_per_s": 2.9,
//    "matrix_tflop_per_s": {"bf16": 720, "fp8": 1300}, "vector_tflop_per_s": {"fp32": 51}}
// Every key is optional; a cell given replaces the table's.
struct PeakOverrides {
  std::string file;    // the path, for peak_source
  std::string device;  // the device the figures were measured on ("" when not said)
  std::optional<double> hbm_tb_per_s;
  DtypeFigures matrix_tflops{};
  DtypeFigures vector_tflops{};
};

// Reads a --peaks file. Throws InputError naming the file (and the key) when it cannot be read,
// is not JSON, or holds an unknown key, dtype or a value that is not a positive number.
PeakOverrides read_peaks_file(const std::string& path);
PeakOverrides parse_peaks_json(const std::string& text, const std::string& file);

struct DevicePeaks {
  std::string device;  // the trace's name for it
  std::string model;   // the table row ("H100 SXM5"), "" when unknown
  std::string source;  // the datasheet of the row
  std::optional<double> hbm_tb_per_s;
  DtypeFigures matrix_tflops{};
  DtypeFigures vector_tflops{};
  // Where each figure came from: true when from the --peaks file.
  bool hbm_from_file = false;
  std::array<bool, kDtypeCount> matrix_from_file{};
  std::array<bool, kDtypeCount> vector_from_file{};
  double sm_scale = 1;  // compute figures scaled by the device's SM count / the row's (a partition)
  std::string note;     // how the row was found, or why it was not
  std::string peaks_file;

  std::optional<double> matrix(Dtype d) const;
  std::optional<double> vector(Dtype d) const;
};

// The ceilings of a trace device: its table row (model/gpu_specs' matching: name, then compute
// capability and SM count), scaled by SM count when the name and compute capability fit a row but
// the SM count does not (a partitioned device: bandwidth then unknown), then overridden by `file`.
DevicePeaks device_peaks(const DeviceProperties& device, const PeakOverrides* file);

}  // namespace ferret
