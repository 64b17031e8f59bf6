#include "model/smi_log.h"

namespace ferret {

const char* smi_format_name(SmiFormat f) {
  switch (f) {
    case SmiFormat::kQueryCsv: return "nvidia-smi --query-gpu csv";
    case SmiFormat::kDmon: return "nvidia-smi dmon";
    case SmiFormat::kPmon: return "nvidia-smi pmon";
    case SmiFormat::kDcgmiDmon: return "dcgmi dmon";
    case SmiFormat::kPrometheus: return "dcgm-exporter metrics";
    case SmiFormat::kRocmSmiCsv: return "rocm-smi csv";
    case SmiFormat::kAmdSmiCsv: return "amd-smi metric csv";
    case SmiFormat::kSmiTable: return "nvidia-smi table";
    case SmiFormat::kUnknown: break;
  }
  return "unknown";
}

}  // namespace ferret
