// PLACEHOLDER: the communication analysis (to be written).
#include "analysis/communication.h"

namespace ferret {

CommunicationResult analyze_communication(const TraceModel&, const AnalysisContext&) { return {}; }

}  // namespace ferret
