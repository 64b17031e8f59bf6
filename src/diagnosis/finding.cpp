#include "diagnosis/finding.h"

#include <algorithm>

namespace ferret {

const char* dimension_name(Dimension d) {
  switch (d) {
    case Dimension::kBenchmark: return "benchmark";
    case Dimension::kCompute: return "compute";
    case Dimension::kDataPipeline: return "data_pipeline";
    case Dimension::kMemory: return "memory";
    case Dimension::kDistributed: return "distributed";
  }
  return "compute";
}

const char* layer_name(Layer l) {
  switch (l) {
    case Layer::kMacro: return "macro";
    case Layer::kFramework: return "framework";
    case Layer::kOperator: return "operator";
    case Layer::kHardware: return "hardware";
  }
  return "macro";
}

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kLow: return "low";
    case Severity::kMedium: return "medium";
    case Severity::kHigh: return "high";
  }
  return "info";
}

double share_of(std::int64_t part, std::int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

double amdahl_speedup(double share) {
  share = std::clamp(share, 0.0, 0.99);
  return 1.0 / (1.0 - share);
}

}  // namespace ferret
