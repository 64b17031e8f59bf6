#include "analysis/device/device_peaks.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/input_error.h"
#include "model/gpu_specs.h"

namespace ferret {

namespace {

constexpr std::optional<double> kBlank = std::nullopt;

// Dense peak TFLOP/s (TOPS for int8) per dtype, in Dtype order: fp64, fp32, tf32, bf16, fp16, fp8,
// int8, fp6, fp4 (the last two blank on parts without matrix units for them: Blackwell and CDNA 4
// have them; NVIDIA runs fp6 at its fp8 rate, AMD at its fp4 rate). Datasheets print Tensor Core figures "with
// sparsity" twice the dense ones: these are dense. FP32 on NVIDIA is the CUDA-core (vector) figure; TF32 exists only on
// the matrix units. A figure the datasheet does not print is blank (unknown). HBM bandwidth is model/gpu_specs' column
// (same datasheets). The row's name is model/gpu_specs' GpuSpec::model.
struct PeakRow {
  std::string_view model;
  DtypeFigures matrix;
  DtypeFigures vector;
  std::string_view source;
};

constexpr std::string_view kV100 =
    "NVIDIA Tesla V100 datasheet, "
    "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf";
constexpr std::string_view kA100 =
    "NVIDIA A100 datasheet, "
    "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
    "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf";
constexpr std::string_view kH100 =
    "NVIDIA H100 Tensor Core GPU datasheet, "
    "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet";
constexpr std::string_view kH200 = "NVIDIA H200 product page, https://www.nvidia.com/en-us/data-center/h200/";
constexpr std::string_view kB200 =
    "NVIDIA DGX B200 datasheet (per GPU), https://www.nvidia.com/en-us/data-center/dgx-b200/";
constexpr std::string_view kGB200 =
    "NVIDIA GB200 NVL72 (per GPU), https://www.nvidia.com/en-us/data-center/gb200-nvl72/";
constexpr std::string_view kL4 = "NVIDIA L4 datasheet, https://www.nvidia.com/en-us/data-center/l4/";
constexpr std::string_view kL40S = "NVIDIA L40S datasheet, https://www.nvidia.com/en-us/data-center/l40s/";
constexpr std::string_view kA10 = "NVIDIA A10 datasheet, https://www.nvidia.com/en-us/data-center/products/a10-gpu/";
constexpr std::string_view kMI250X =
    "AMD Instinct MI250X product page (one GCD: half the OAM module), "
    "https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html";
constexpr std::string_view kMI210 =
    "AMD Instinct MI210 and MI250 product pages (an MI250 GCD is half the OAM module), "
    "https://www.amd.com/en/products/accelerators/instinct/mi200/mi210.html";
constexpr std::string_view kMI300X =
    "AMD Instinct MI300X datasheet, https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html";
constexpr std::string_view kGH200 =
    "NVIDIA GH200 Grace Hopper Superchip product page and datasheet (its GPU is the H100's), "
    "https://www.nvidia.com/en-us/data-center/grace-hopper-superchip/";
constexpr std::string_view kMI300A =
    "AMD Instinct MI300A product page, https://www.amd.com/en/products/accelerators/instinct/mi300/mi300a.html";
constexpr std::string_view kMI325X =
    "AMD Instinct MI325X datasheet, https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html";

constexpr std::string_view kB300 =
    "NVIDIA HGX B300 specifications (per GPU: the 8-GPU figures / 8), https://www.nvidia.com/en-us/data-center/hgx/";
constexpr std::string_view kMI355X =
    "AMD Instinct MI355X product page, https://www.amd.com/en/products/accelerators/instinct/mi350/mi355x.html";
constexpr std::string_view kMI350X =
    "AMD Instinct MI350X product page, https://www.amd.com/en/products/accelerators/instinct/mi350/mi350x.html";

// clang-format off
//                      matrix: fp64    fp32    tf32    bf16    fp16    fp8     int8    fp6     fp4      vector: fp64 fp32 (others blank)
const PeakRow kPeaks[] = {
    {"V100 SXM2",        {kBlank, kBlank, kBlank, kBlank, 125.0,  kBlank, kBlank}, {7.8,  15.7}, kV100},
    {"A100 PCIe 40GB",   {19.5,   kBlank, 156.0,  312.0,  312.0,  kBlank, 624.0},  {9.7,  19.5}, kA100},
    {"A100 PCIe 80GB",   {19.5,   kBlank, 156.0,  312.0,  312.0,  kBlank, 624.0},  {9.7,  19.5}, kA100},
    {"A100 SXM 40GB",    {19.5,   kBlank, 156.0,  312.0,  312.0,  kBlank, 624.0},  {9.7,  19.5}, kA100},
    {"A100 SXM 80GB",    {19.5,   kBlank, 156.0,  312.0,  312.0,  kBlank, 624.0},  {9.7,  19.5}, kA100},
    {"H100 PCIe",        {51.0,   kBlank, 378.0,  756.5,  756.5,  1513.0, 1513.0}, {26.0, 51.0}, kH100},
    {"H100 NVL",         {kBlank, kBlank, kBlank, 835.0,  835.0,  kBlank, kBlank}, {},           kH100},
    {"H100 SXM5",        {67.0,   kBlank, 494.5,  989.5,  989.5,  1979.0, 1979.0}, {34.0, 67.0}, kH100},
    {"H200 SXM",         {67.0,   kBlank, 494.5,  989.5,  989.5,  1979.0, 1979.0}, {kBlank, 67.0}, kH200},
    {"GB200",            {40.0,   kBlank, 1250.0, 2500.0, 2500.0, 5000.0, 5000.0, 5000.0, 10000.0}, {40.0, 80.0}, kGB200},
    {"B200",             {40.0,   kBlank, 1100.0, 2250.0, 2250.0, 4500.0, 4500.0, 4500.0, 9000.0}, {40.0, 80.0}, kB200},
    {"B300",             {1.25,   kBlank, 1125.0, 2250.0, 2250.0, 4500.0, kBlank, 4500.0, 13500.0}, {1.25, 75.0}, kB300},
    {"L40S",             {kBlank, kBlank, 183.0,  362.0,  362.0,  733.0,  733.0},  {kBlank, 91.6}, kL40S},
    {"L4",               {kBlank, kBlank, 60.0,   121.0,  121.0,  242.5,  242.5},  {kBlank, 30.3}, kL4},
    {"A10",              {kBlank, kBlank, 62.5,   125.0,  125.0,  kBlank, kBlank}, {kBlank, 31.2}, kA10},
    {"MI250X (per GCD)", {47.9,   kBlank, kBlank, 191.5,  191.5,  kBlank, 191.5},  {23.9, 23.9}, kMI250X},
    {"MI210 / MI250 (per GCD)", {45.3, 45.3, kBlank, 181.0,  181.0,  kBlank, 181.0},  {22.6, 22.6}, kMI210},
    {"MI300X",           {163.4,  kBlank, 653.7,  1307.4, 1307.4, 2614.9, 2614.9}, {81.7, 163.4}, kMI300X},
    {"MI325X",           {163.4,  kBlank, 653.7,  1307.4, 1307.4, 2614.9, 2614.9}, {81.7, 163.4}, kMI325X},
    {"MI355X",           {78.6,   kBlank, kBlank, 2516.6, 2516.6, 5033.2, 5033.2, 10066.3, 10066.3}, {78.6, 157.3}, kMI355X},
    {"MI350X",           {72.1,   kBlank, kBlank, 2306.9, 2306.9, 4613.7, 4613.7, 9227.5, 9227.5}, {72.1, 144.2}, kMI350X},
    {"GH200 96GB",       {67.0,   kBlank, 494.5,  989.5,  989.5,  1979.0, 1979.0}, {34.0, 67.0}, kGH200},
    {"GH200 144GB",      {67.0,   kBlank, 494.5,  989.5,  989.5,  1979.0, 1979.0}, {34.0, 67.0}, kGH200},
    {"MI300A",           {122.6,  kBlank, 490.3,  980.6,  980.6,  1961.2, 1961.2}, {61.3, 122.6}, kMI300A},
};
// clang-format on

const PeakRow* peak_row(std::string_view model) {
  for (const PeakRow& r : kPeaks)
    if (r.model == model) return &r;
  return nullptr;
}

constexpr std::array<const char*, kDtypeCount> kDtypeNames = {"fp64", "fp32", "tf32", "bf16", "fp16",
                                                              "fp8",  "int8", "fp6",  "fp4"};

DtypeFigures parse_dtype_figures(const nlohmann::json& j, const std::string& file, const char* key) {
  if (!j.is_object())
    throw InputError(fmt::format("--peaks {}: key \"{}\" must be an object of dtype -> TFLOP/s", file, key));
  DtypeFigures out{};
  for (const auto& [dtype, value] : j.items()) {
    const std::optional<Dtype> d = dtype_from_name(dtype);
    if (!d)
      throw InputError(
          fmt::format("--peaks {}: key \"{}.{}\": unknown dtype (fp64, fp32, tf32, bf16, fp16, fp8, int8, fp6, fp4)",
                      file, key, dtype));
    if (!value.is_number() || !(value.get<double>() > 0) || !std::isfinite(value.get<double>()))
      throw InputError(fmt::format("--peaks {}: key \"{}.{}\" must be a positive number", file, key, dtype));
    out[static_cast<std::size_t>(*d)] = value.get<double>();
  }
  return out;
}

}  // namespace

const char* dtype_name(Dtype d) {
  const auto i = static_cast<std::size_t>(d);
  return i < kDtypeCount ? kDtypeNames[i] : "unknown";
}

std::optional<Dtype> dtype_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kDtypeCount; ++i)
    if (name == kDtypeNames[i]) return static_cast<Dtype>(i);
  return std::nullopt;
}

bool is_matrix_format(Dtype d) {
  return d == Dtype::kBf16 || d == Dtype::kFp16 || d == Dtype::kFp8 || d == Dtype::kInt8 || d == Dtype::kFp6 ||
         d == Dtype::kFp4;
}

std::optional<double> DevicePeaks::matrix(Dtype d) const {
  const auto i = static_cast<std::size_t>(d);
  return i < kDtypeCount ? matrix_tflops[i] : std::nullopt;
}

std::optional<double> DevicePeaks::vector(Dtype d) const {
  const auto i = static_cast<std::size_t>(d);
  return i < kDtypeCount ? vector_tflops[i] : std::nullopt;
}

PeakOverrides parse_peaks_json(const std::string& text, const std::string& file) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw InputError(fmt::format("--peaks {}: not valid JSON", file));
  if (!j.is_object()) throw InputError(fmt::format("--peaks {}: expected a JSON object", file));
  PeakOverrides out;
  out.file = file;
  for (const auto& [key, value] : j.items()) {
    if (key == "device") {
      if (!value.is_string()) throw InputError(fmt::format("--peaks {}: key \"device\" must be a string", file));
      out.device = value.get<std::string>();
    } else if (key == "hbm_tb_per_s") {
      if (!value.is_number() || !(value.get<double>() > 0) || !std::isfinite(value.get<double>()))
        throw InputError(fmt::format("--peaks {}: key \"hbm_tb_per_s\" must be a positive number", file));
      out.hbm_tb_per_s = value.get<double>();
    } else if (key == "matrix_tflop_per_s") {
      out.matrix_tflops = parse_dtype_figures(value, file, "matrix_tflop_per_s");
    } else if (key == "vector_tflop_per_s") {
      out.vector_tflops = parse_dtype_figures(value, file, "vector_tflop_per_s");
    } else {
      throw InputError(fmt::format(
          "--peaks {}: unknown key \"{}\" (device, hbm_tb_per_s, matrix_tflop_per_s, vector_tflop_per_s)", file, key));
    }
  }
  return out;
}

PeakOverrides read_peaks_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("--peaks {}: cannot open the file", path));
  std::ostringstream text;
  text << in.rdbuf();
  return parse_peaks_json(text.str(), path);
}

DevicePeaks device_peaks(const DeviceProperties& device, const PeakOverrides* file) {
  DevicePeaks p;
  p.device = device.name;
  GpuMatch match = match_gpu(device);
  if (match.spec == nullptr && device.num_sms > 0 && !device.name.empty()) {
    // Name and compute capability fit a row but the SM count does not: a partition (MIG, CPX) or a
    // cut-down variant. Compute scales with SMs at the same clock; bandwidth does not, so it stays unknown.
    DeviceProperties without_sms = device;
    without_sms.num_sms = -1;
    const GpuMatch loose = match_gpu(without_sms);
    if (loose.spec != nullptr && loose.spec->sms > 0) {
      match = loose;
      p.sm_scale = static_cast<double>(device.num_sms) / loose.spec->sms;
      match.note = fmt::format("{} SMs where the {} has {}: compute ceilings scaled by {:.3f}, bandwidth unknown",
                               device.num_sms, loose.spec->model, loose.spec->sms, p.sm_scale);
    }
  }
  p.note = match.note;
  if (match.spec != nullptr) {
    if (const PeakRow* row = peak_row(match.spec->model)) {
      p.model = std::string(match.spec->model);
      p.source = std::string(row->source);
      if (p.sm_scale == 1) p.hbm_tb_per_s = match.spec->hbm_tbps;
      for (std::size_t i = 0; i < kDtypeCount; ++i) {
        if (row->matrix[i]) p.matrix_tflops[i] = *row->matrix[i] * p.sm_scale;
        if (row->vector[i]) p.vector_tflops[i] = *row->vector[i] * p.sm_scale;
      }
    }
  }
  if (file != nullptr) {
    p.peaks_file = file->file;
    if (file->hbm_tb_per_s) {
      p.hbm_tb_per_s = file->hbm_tb_per_s;
      p.hbm_from_file = true;
    }
    for (std::size_t i = 0; i < kDtypeCount; ++i) {
      if (file->matrix_tflops[i]) {
        p.matrix_tflops[i] = file->matrix_tflops[i];
        p.matrix_from_file[i] = true;
      }
      if (file->vector_tflops[i]) {
        p.vector_tflops[i] = file->vector_tflops[i];
        p.vector_from_file[i] = true;
      }
    }
    if (!file->device.empty() && file->device != device.name)
      p.note += fmt::format("{}--peaks figures were measured on \"{}\"", p.note.empty() ? "" : "; ", file->device);
  }
  return p;
}

}  // namespace ferret
