// PLACEHOLDER: the hardware analysis (to be written).
#include "analysis/hardware.h"

namespace ferret {

HardwareResult analyze_hardware(const TraceModel&, const AnalysisContext&) { return {}; }

}  // namespace ferret
