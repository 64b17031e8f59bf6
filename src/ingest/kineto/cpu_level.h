// The JSON parser is compiled for a fixed x86-64 level (CMake's FERRET_SIMD: baseline, v2 or
// v3). A CPU below that level would die on an illegal instruction somewhere in the parser; this
// check turns that into a message that says what to do.
#pragma once

#include <string>

namespace ferret {

// The level the parser was built for: "baseline", "v2 (SSE4.2, PCLMUL)" or "v3 (AVX2)".
const char* parser_cpu_level();

// Empty when this CPU can run the parser; otherwise what it lacks and how to rebuild.
std::string missing_cpu_features();

// Throws std::runtime_error with missing_cpu_features() when it is not empty. Checked once.
void require_parser_cpu();

}  // namespace ferret
