#include "ingest/kineto/cpu_level.h"

#include <stdexcept>
#include <vector>

#ifndef FERRET_SIMD_LEVEL
#define FERRET_SIMD_LEVEL 0
#endif

namespace ferret {

const char* parser_cpu_level() {
  switch (FERRET_SIMD_LEVEL) {
    case 3: return "v3 (AVX2)";
    case 2: return "v2 (SSE4.2, PCLMUL)";
    default: return "baseline";
  }
}

std::string missing_cpu_features() {
  std::vector<const char*> missing;
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (FERRET_SIMD_LEVEL >= 2) {
    if (!__builtin_cpu_supports("sse4.2")) missing.push_back("SSE4.2");
    if (!__builtin_cpu_supports("pclmul")) missing.push_back("PCLMUL");
    if (!__builtin_cpu_supports("popcnt")) missing.push_back("POPCNT");
  }
  if (FERRET_SIMD_LEVEL >= 3) {
    if (!__builtin_cpu_supports("avx2")) missing.push_back("AVX2");
    if (!__builtin_cpu_supports("bmi2")) missing.push_back("BMI2");
  }
#endif
  if (missing.empty()) return {};
  std::string text =
      std::string("this ferret was built for x86-64 level ") + parser_cpu_level() + " and this CPU lacks";
  for (const char* feature : missing) text += std::string(" ") + feature;
  text += ": rebuild with `cmake -DFERRET_SIMD=baseline` (or v2)";
  return text;
}

void require_parser_cpu() {
  static const std::string missing = missing_cpu_features();
  if (!missing.empty()) throw std::runtime_error(missing);
}

}  // namespace ferret
