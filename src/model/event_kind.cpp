#include "model/event_kind.h"

namespace ferret {

const char* event_kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::kCpuOp: return "cpu_op";
    case EventKind::kUserAnnotation: return "user_annotation";
    case EventKind::kGpuUserAnnotation: return "gpu_user_annotation";
    case EventKind::kPythonFunction: return "python_function";
    case EventKind::kCudaRuntime: return "cuda_runtime";
    case EventKind::kCudaDriver: return "cuda_driver";
    case EventKind::kKernel: return "kernel";
    case EventKind::kMemcpy: return "memcpy";
    case EventKind::kMemset: return "memset";
    case EventKind::kSync: return "sync";
    case EventKind::kCudaEvent: return "cuda_event";
    case EventKind::kMemoryInstant: return "memory_instant";
    case EventKind::kInstant: return "instant";
    case EventKind::kFlowStart: return "flow_start";
    case EventKind::kFlowEnd: return "flow_end";
    case EventKind::kCounter: return "counter";
    case EventKind::kMetadata: return "metadata";
    case EventKind::kOverhead: return "overhead";
    case EventKind::kOther: return "other";
  }
  return "other";
}

namespace {}  // namespace

EventKind classify_span_category(std::string_view cat) {
  // Categories of every Kineto generation: 2.x / 1.10+ lower-case names, 1.8-1.9 capitalised ones.
  if (cat == "cpu_op" || cat == "Operator" || cat == "operator") return EventKind::kCpuOp;
  if (cat == "user_annotation") return EventKind::kUserAnnotation;
  if (cat == "gpu_user_annotation") return EventKind::kGpuUserAnnotation;
  if (cat == "python_function") return EventKind::kPythonFunction;
  if (cat == "kernel" || cat == "Kernel" || cat == "mtia_ccp_events") return EventKind::kKernel;
  if (cat == "cuda_runtime" || cat == "Runtime" || cat == "runtime") return EventKind::kCudaRuntime;
  if (cat == "cuda_driver" || cat == "driver") return EventKind::kCudaDriver;
  if (cat == "gpu_memcpy" || cat == "Memcpy") return EventKind::kMemcpy;
  if (cat == "gpu_memset" || cat == "Memset") return EventKind::kMemset;
  if (cat == "cuda_sync") return EventKind::kSync;
  if (cat == "cuda_event") return EventKind::kCudaEvent;
  if (cat == "overhead") return EventKind::kOverhead;
  // Other back ends name their APIs "<backend>_runtime" / "<backend>_driver" (mtia, privateuse1).
  if (cat.ends_with("_runtime")) return EventKind::kCudaRuntime;
  if (cat.ends_with("_driver")) return EventKind::kCudaDriver;
  return EventKind::kOther;
}

EventKind classify_mtia_activity(std::string_view name) {
  // MTIA's command processor records its waits, copies and event records beside its kernels, all
  // in one category: a stream waiting on an event is a device-side wait (as CUDA's cuda_sync), a
  // DMA request is a copy (HTA counts both as non-compute), an event record marks a point.
  if (name == "event_wait") return EventKind::kSync;
  if (name == "dma_request" || name.starts_with("dma_")) return EventKind::kMemcpy;
  if (name == "event_record") return EventKind::kCudaEvent;
  return EventKind::kKernel;
}

EventKind classify_event(char phase, std::string_view cat, bool has_cat, std::string_view name) {
  switch (phase) {
    case 'M': return EventKind::kMetadata;
    case 's': return EventKind::kFlowStart;
    case 'f':
    case 't': return EventKind::kFlowEnd;
    case 'C': return EventKind::kCounter;
    case 'i':
    case 'I':
    case 'n': return name == "[memory]" ? EventKind::kMemoryInstant : EventKind::kInstant;
    case 'X':
      // The legacy autograd export has no categories: every span is a CPU function.
      if (!has_cat) return EventKind::kCpuOp;
      if (cat == "mtia_ccp_events") return classify_mtia_activity(name);
      return classify_span_category(cat);
    default: return EventKind::kOther;
  }
}

}  // namespace ferret
