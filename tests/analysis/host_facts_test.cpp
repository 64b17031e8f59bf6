// HostFacts: what `ferret run` records of the machine and build, read back and named.
#include "analysis/device/host_facts.h"

#include <gtest/gtest.h>

namespace ferret {
namespace {
namespace host_facts_test {

// Debian 12's python3-torch on an AVX-512 EPYC, as the shim writes it: BLAS_INFO=generic, so the
// library is the system libblas.so.3, whose folder (.../blas/) is netlib's reference build.
constexpr const char* kDebian = R"({"blas_info": "generic", "cpu_capability": "AVX2", "threads": 1, "cpus": 2,
  "blas_libraries": ["/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0",
                     "/venv/lib/python3.11/site-packages/numpy.libs/libopenblas64_p-r0.so"],
  "cpu_model": "AMD EPYC", "cpu_flags": ["fma", "avx2", "avx512f", "avx512_bf16"], "cpu_mhz": 2600})";

TEST(HostFacts, ReadsWhatTheRunRecordedAndNamesTheLibrary) {
  const HostFacts h = parse_host_facts(kDebian);
  ASSERT_TRUE(h.recorded());
  EXPECT_EQ(h.threads, 1);
  EXPECT_EQ(h.cpus, 2);
  EXPECT_EQ(h.blas_libraries.size(), 2u);
  // numpy's vendored OpenBLAS is mapped too, but torch calls the system library.
  EXPECT_EQ(h.blas_name(), "the reference BLAS (netlib)");
  EXPECT_TRUE(h.reference_blas());
  // One thread x 32 FLOP per cycle (AVX2 FMA; AVX-512 counted at AVX2's rate) x 2.6 GHz.
  EXPECT_DOUBLE_EQ(h.fp32_peak_gflops(), 1 * 32 * 2.6);
  EXPECT_EQ(h.describe(),
            "AMD EPYC, 2 CPUs, torch uses 1 thread; AVX-512 BF16; BLAS: the reference BLAS (netlib) "
            "(/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0)");
}

TEST(HostFacts, EachBuildByItsName) {
  auto blas = [](const char* json) { return parse_host_facts(json).blas_name(); };
  EXPECT_EQ(blas(R"({"blas_info": "mkl"})"), "MKL");  // PyPI's x86 wheels: MKL linked in, no library to see
  EXPECT_EQ(blas(R"({"blas_info": "open"})"), "OpenBLAS");
  EXPECT_EQ(
      blas(
          R"({"blas_info": "generic", "blas_libraries": ["/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"]})"),
      "OpenBLAS");
  EXPECT_EQ(
      blas(R"({"blas_info": "generic", "blas_libraries": ["/usr/lib/x86_64-linux-gnu/blis-openmp/libblas.so.3"]})"),
      "BLIS");
  EXPECT_EQ(blas(R"({"blas_info": "generic"})"), "the system BLAS (libblas.so.3)");
  EXPECT_EQ(blas("{}"), "");
  EXPECT_FALSE(parse_host_facts("{}").recorded());
  // Eight threads on eight CPUs without FMA: SSE's 8 FLOP per cycle; threads beyond the CPUs do not count.
  EXPECT_DOUBLE_EQ(
      parse_host_facts(R"({"threads": 16, "cpus": 8, "cpu_mhz": 2000, "cpu_flags": []})").fp32_peak_gflops(),
      8 * 8 * 2.0);
  EXPECT_EQ(parse_host_facts(R"({"threads": 4})").fp32_peak_gflops(), -1);  // no clock: no ceiling
}

TEST(HostFacts, TheLiveMatmulMeasurement) {
  const HostFacts h = parse_host_facts(R"({"blas_info": "mkl", "matmul_gflops": 57.25, "matmul_size": 512})");
  EXPECT_TRUE(h.measured());
  EXPECT_DOUBLE_EQ(h.matmul_gflops, 57.25);
  EXPECT_EQ(h.describe(), "CPU; BLAS: MKL; measured 57.2 GFLOP/s on 512x512 fp32 matmuls");
  // Without threads and clock the measurement is the ceiling; above the flag-based one it replaces
  // it (1 thread x 32 x 2.6 GHz = 83.2 < a measured 100.5: an AVX-512 core).
  EXPECT_DOUBLE_EQ(h.fp32_peak_gflops(), 57.25);
  EXPECT_DOUBLE_EQ(parse_host_facts(R"({"threads": 1, "cpu_mhz": 2600, "cpu_flags": ["fma", "avx2"],
                                        "matmul_gflops": 100.5, "matmul_size": 512})")
                       .fp32_peak_gflops(),
                   100.5);
  EXPECT_DOUBLE_EQ(parse_host_facts(R"({"threads": 1, "cpu_mhz": 2600, "cpu_flags": ["fma", "avx2"],
                                        "matmul_gflops": 6.0, "matmul_size": 512})")
                       .fp32_peak_gflops(),
                   83.2);
  // A rate without its size, a negative or absurd rate: not a measurement.
  EXPECT_FALSE(parse_host_facts(R"({"matmul_gflops": 57.25})").measured());
  EXPECT_FALSE(parse_host_facts(R"({"matmul_gflops": -1, "matmul_size": 512})").measured());
  EXPECT_FALSE(parse_host_facts(R"({"matmul_gflops": 1e300, "matmul_size": 512})").measured());
}

TEST(HostFacts, FieldsOfTheWrongTypeAreLeftOut) {
  const HostFacts h = parse_host_facts(
      R"({"blas_info": 3, "threads": "8", "cpus": -2, "cpu_mhz": 1e300, "cpu_flags": ["avx2", 5], "blas_libraries": {}})");
  EXPECT_TRUE(h.blas_info.empty());
  EXPECT_EQ(h.threads, -1);
  EXPECT_EQ(h.cpus, -1);
  EXPECT_EQ(h.cpu_mhz, -1);
  EXPECT_EQ(h.cpu_flags, std::vector<std::string>{"avx2"});
  EXPECT_TRUE(h.blas_libraries.empty());
  EXPECT_FALSE(parse_host_facts("not json").recorded());
  EXPECT_FALSE(parse_host_facts("[1, 2]").recorded());
}

}  // namespace host_facts_test
}  // namespace
}  // namespace ferret
