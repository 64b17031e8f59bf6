// The machine and build a script ran on, which a profiler trace does not record: the BLAS library
// torch multiplies matrices with, its intra-op threads, the CPUs and their vector instructions.
// `ferret run` records them beside the traces (docs/RULES.md, "The CPU is a device too"); the CPU
// rules read them to name the library and bound a gain by the CPU's ceiling.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ferret {

struct HostFacts {
  std::string blas_info;  // torch's build setting BLAS_INFO: "mkl", "open", "generic" (system libblas)
  std::vector<std::string> blas_libraries;  // BLAS shared libraries mapped in the process (resolved paths)
  std::string cpu_capability;               // ATen's "CPU capability usage": "AVX2", "AVX512", "DEFAULT"
  std::string cpu_model;
  std::vector<std::string> cpu_flags;  // of fma, avx2, avx512f, avx512_bf16, amx_tile, amx_bf16
  int threads = -1;                    // torch.get_num_threads()
  int cpus = -1;                       // CPUs the process may run on
  double cpu_mhz = -1;                 // the fastest core's clock, as /proc/cpuinfo printed it
  // The BLAS measured live by `ferret run` after the trace was written: fp32 `matmul_size` squared
  // products at torch's threads, GFLOP/s (-1: not measured).
  double matmul_gflops = -1;
  int matmul_size = -1;

  bool recorded() const { return !blas_info.empty() || threads > 0 || cpus > 0; }
  bool has_flag(std::string_view flag) const;
  // Which BLAS does torch's matmul work: "MKL", "OpenBLAS", "BLIS", "ATLAS", "the reference BLAS
  // (netlib)", "the system BLAS (libblas.so.3)", or "" when not recorded.
  std::string blas_name() const;
  bool reference_blas() const;  // the unoptimised netlib BLAS: a few GFLOP/s on any CPU
  bool measured() const { return matmul_gflops > 0 && matmul_size > 0; }
  // The fp32 matmul ceiling of the threads torch uses, GFLOP/s: min(threads, CPUs) x FLOP per cycle x
  // GHz, at AVX2 + FMA's 32 FLOP per cycle (two 8-wide FMA units) where the CPU has them, 8 (SSE)
  // otherwise. AVX-512 is counted at the AVX2 rate: Zen 4 runs 512-bit FMAs at half rate and many
  // Xeons have one 512-bit FMA unit, so the ceiling errs low. A live measurement above it is the
  // ceiling instead (an AVX-512 core doing two 512-bit FMAs a cycle, a turbo clock): what ran is
  // reachable. -1 when threads or the clock are unknown and nothing was measured.
  double fp32_peak_gflops() const;
  // One line for the report: "AMD EPYC, 2 CPUs, torch uses 1 thread; AVX-512 BF16; BLAS: the
  // reference BLAS (netlib) (/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0)".
  std::string describe() const;
};

// The "host" object `ferret run` writes in its .ferret-run.jsonl: fields of the wrong type are
// left out, never guessed.
HostFacts parse_host_facts(const std::string& json_text);

}  // namespace ferret
