#include "analysis/device/host_facts.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/text.h"

namespace ferret {

namespace {

// A system libblas.so.3 is whichever build Debian's alternatives (or the distribution) put behind
// it; the folder names it: .../blas/ is netlib's reference BLAS (package libblas3),
// .../openblas-*/ OpenBLAS, .../blis-*/ BLIS, .../atlas/ ATLAS.
std::string name_of_library(const std::string& path) {
  const std::string p = ascii_lower(path);
  if (p.find("mkl") != std::string::npos) return "MKL";
  if (p.find("openblas") != std::string::npos) return "OpenBLAS";
  if (p.find("blis") != std::string::npos) return "BLIS";
  if (p.find("atlas") != std::string::npos) return "ATLAS";
  if (p.find("/blas/libblas.so") != std::string::npos) return "the reference BLAS (netlib)";
  if (p.find("libblas.so") != std::string::npos) return "the system BLAS (libblas.so.3)";
  return "";
}

// The library torch's build links for BLAS_INFO=generic: the system libblas.so.3 (numpy's vendored
// OpenBLAS may be mapped too, but torch does not call it).
const std::string* system_library(const std::vector<std::string>& libraries) {
  for (const std::string& l : libraries)
    if (ascii_lower(l).find("libblas.so") != std::string::npos && l.find("site-packages") == std::string::npos)
      return &l;
  return nullptr;
}

}  // namespace

bool HostFacts::has_flag(std::string_view flag) const {
  return std::find(cpu_flags.begin(), cpu_flags.end(), flag) != cpu_flags.end();
}

std::string HostFacts::blas_name() const {
  const std::string info = ascii_lower(blas_info);
  if (info == "mkl") return "MKL";
  if (info == "open" || info == "openblas") return "OpenBLAS";
  if (info == "blis") return "BLIS";
  if (info == "accelerate") return "Accelerate";
  if (const std::string* lib = system_library(blas_libraries)) return name_of_library(*lib);
  if (info == "generic") return "the system BLAS (libblas.so.3)";
  return blas_info;
}

bool HostFacts::reference_blas() const { return blas_name() == "the reference BLAS (netlib)"; }

double HostFacts::fp32_peak_gflops() const {
  const double measured_rate = measured() ? matmul_gflops : -1;
  if (threads <= 0 || !(cpu_mhz > 0)) return measured_rate;
  const int used = cpus > 0 ? std::min(threads, cpus) : threads;
  const double per_cycle = has_flag("avx2") && has_flag("fma") ? 32 : 8;
  return std::max(used * per_cycle * cpu_mhz / 1e3, measured_rate);
}

std::string HostFacts::describe() const {
  std::string out = cpu_model.empty() ? "CPU" : cpu_model;
  if (cpus > 0) out += fmt::format(", {} CPU{}", cpus, cpus == 1 ? "" : "s");
  if (threads > 0) out += fmt::format(", torch uses {} thread{}", threads, threads == 1 ? "" : "s");
  std::string isa = has_flag("amx_bf16")      ? "AMX BF16"
                    : has_flag("avx512_bf16") ? "AVX-512 BF16"
                    : has_flag("avx512f")     ? "AVX-512"
                    : has_flag("avx2")        ? "AVX2"
                                              : "";
  if (!isa.empty()) out += "; " + isa;
  const std::string blas = blas_name();
  if (!blas.empty()) {
    out += "; BLAS: " + blas;
    if (const std::string* lib = system_library(blas_libraries);
        lib != nullptr && !blas_info.empty() && ascii_lower(blas_info) == "generic")
      out += " (" + *lib + ")";
  }
  if (measured())
    out += fmt::format("; measured {:.1f} GFLOP/s on {}x{} fp32 matmuls", matmul_gflops, matmul_size, matmul_size);
  return out;
}

HostFacts parse_host_facts(const std::string& json_text) {
  HostFacts h;
  const nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return h;
  auto text = [&](const char* key, std::string& out) {
    const auto it = j.find(key);
    if (it != j.end() && it->is_string()) out = it->get<std::string>().substr(0, 512);
  };
  auto texts = [&](const char* key, std::vector<std::string>& out) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_array()) return;
    for (const auto& v : *it)
      if (v.is_string() && out.size() < 64) out.push_back(v.get<std::string>().substr(0, 4096));
  };
  auto count = [&](const char* key, int& out) {
    const auto it = j.find(key);
    if (it != j.end() && it->is_number_integer() && it->get<std::int64_t>() > 0 && it->get<std::int64_t>() < (1 << 20))
      out = static_cast<int>(it->get<std::int64_t>());
  };
  text("blas_info", h.blas_info);
  texts("blas_libraries", h.blas_libraries);
  text("cpu_capability", h.cpu_capability);
  text("cpu_model", h.cpu_model);
  texts("cpu_flags", h.cpu_flags);
  count("threads", h.threads);
  count("cpus", h.cpus);
  if (const auto it = j.find("cpu_mhz"); it != j.end() && it->is_number()) {
    const double mhz = it->get<double>();
    if (std::isfinite(mhz) && mhz > 0 && mhz < 1e5) h.cpu_mhz = mhz;
  }
  count("matmul_size", h.matmul_size);
  if (const auto it = j.find("matmul_gflops"); it != j.end() && it->is_number() && h.matmul_size > 0) {
    const double gflops = it->get<double>();
    if (std::isfinite(gflops) && gflops > 0 && gflops < 1e7) h.matmul_gflops = gflops;
  }
  return h;
}

}  // namespace ferret
