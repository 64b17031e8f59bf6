#include "diagnosis/rule_registry.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

namespace ferret {

namespace {

using D = Dimension;
using R = RuleRole;
using S = RuleSource;

// Low GPU utilization and CPU-bound say that the GPU idles (CPU-bound: while the host runs), not
// why. Utilization counts NCCL kernels as busy, so what explains them is what keeps the GPU from
// starting work: waiting for input, launch overhead, host syncs, blocking or slow host copies,
// allocator calls, and - on a rank of a job - waiting for the other ranks, which the host does in
// c10d waits and blocking launches around the collectives. Low utilization with no cause but a
// CPU-bound host is that one symptom, told more precisely: it folds into cpu-bound.
constexpr std::array<std::string_view, 13> kCpuBoundCauses = {
    "input-bound",         "launch-bound",          "host-sync",        "sync-copy",
    "pageable-copy",       "pageable-copies",       "slow-host-copies", "allocator-in-steady-state",
    "communication-heavy", "exposed-communication", "low-busbw",        "host-preprocessing",
    "compile-in-window"};
// A device idle with its work queued (device-stall) explains low utilization, not a slow host.
constexpr auto kLowUtilizationCauses = [] {
  std::array<std::string_view, kCpuBoundCauses.size() + 2> causes{};
  std::copy(kCpuBoundCauses.begin(), kCpuBoundCauses.end(), causes.begin());
  causes[kCpuBoundCauses.size()] = "device-stall";
  causes.back() = "cpu-bound";
  return causes;
}();
// Exposed communication on a job: a slow transport makes every collective take longer to hide.
constexpr std::array<std::string_view, 1> kExposedCommunicationCauses = {"slow-collective-transport"};

// What a symptom with no cause asks the user to record next, so that a rule can name the cause.
constexpr std::string_view kRecordIdleGpu =
    "No rule named why the GPU idles; record what the host does: `torch.profiler.profile(activities=["
    "ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True, record_shapes=True, "
    "schedule=torch.profiler.schedule(wait=1, warmup=2, active=5))` (several steady steps, Python frames, shapes), "
    "once with `torch.cuda.set_sync_debug_mode(\"warn\")` to print every hidden CUDA sync; then analyze the new trace";
constexpr std::string_view kRecordJobCommunication =
    "No rule named why communication stays exposed; on NCCL, record the transport: `NCCL_DEBUG=INFO "
    "NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH` logs from every rank (`ferret nccl LOG...` reads them); and traces of every "
    "rank with `record_shapes=True` so message sizes show";

constexpr std::array kRules = {
    // One trace (diagnose()).
    waiting_on_host(removes(RuleInfo{"input-bound", S::kTrace, D::kDataPipeline, "rules_data_pipeline", R::kCause, {}},
                            &RetimeChanges::remove_dataloader)),
    // The GPU waiting on the host's per-operator work: the fix (a captured graph, a compiled step)
    // issues the step's work at no host cost.
    waiting_on_host(removes(RuleInfo{"low-gpu-utilization",
                                     S::kTrace,
                                     D::kCompute,
                                     "rules_step_time",
                                     R::kSymptom,
                                     kLowUtilizationCauses,
                                     {},
                                     kRecordIdleGpu},
                            &RetimeChanges::remove_host_overhead)),
    waiting_on_host(removes(
        RuleInfo{
            "cpu-bound", S::kTrace, D::kCompute, "rules_step_time", R::kSymptom, kCpuBoundCauses, {}, kRecordIdleGpu},
        &RetimeChanges::remove_host_overhead)),
    RuleInfo{"device-bound", S::kTrace, D::kCompute, "rules_step_time", R::kCause, {}},
    [] {
      RuleInfo r = removes(RuleInfo{"device-stall", S::kTrace, D::kCompute, "rule_device_stall", R::kCause, {}},
                           &RetimeChanges::remove_device_stalls);
      r.device_stalled = true;
      return r;
    }(),
    RuleInfo{"no-tensor-cores", S::kTrace, D::kCompute, "rules_gpu_efficiency", R::kCause, {}},
    RuleInfo{"low-occupancy", S::kTrace, D::kCompute, "rules_gpu_efficiency", R::kCause, {}},
    // Matmuls off Tensor Cores: no-tensor-cores measures the same precision step on the exact kernels.
    RuleInfo{"matmul-dominated",
             S::kTrace,
             D::kCompute,
             "rules_gpu_efficiency, rules_cpu",
             R::kCause,
             {},
             "no-tensor-cores"},
    waiting_on_host(removes(RuleInfo{"launch-bound", S::kTrace, D::kCompute, "rules_host", R::kCause, {}},
                            &RetimeChanges::remove_launch_overhead)),
    removes(RuleInfo{"host-sync", S::kTrace, D::kCompute, "rules_host", R::kCause, {}},
            &RetimeChanges::remove_host_sync),
    RuleInfo{"allocator-in-steady-state", S::kTrace, D::kCompute, "rules_host", R::kCause, {}},
    // rules_host and rules_hardware judge the same pageable copies.
    removes(RuleInfo{"pageable-copy", S::kTrace, D::kCompute, "rules_host", R::kCause, {}},
            &RetimeChanges::pin_pageable_uploads),
    // A synchronous copy waits for the GPU's queue like a device sync: one cause with host-sync.
    judging("host-sync", removes(RuleInfo{"sync-copy", S::kTrace, D::kCompute, "rules_host", R::kCause, {}},
                                 &RetimeChanges::remove_sync_copies)),
    RuleInfo{"hot-operator", S::kTrace, D::kCompute, "rules_host", R::kCause, {}},
    // Informational, written only when no finding is the verdict: it never competes for it.
    RuleInfo{"top-cost", S::kTrace, D::kCompute, "rule_top_cost", R::kCause, {}},
    RuleInfo{"host-preprocessing", S::kTrace, D::kDataPipeline, "rules_host_preprocessing", R::kCause, {}},
    RuleInfo{"slow-cpu-matmul", S::kTrace, D::kCompute, "rules_cpu", R::kCause, {}},
    RuleInfo{"unfused-attention", S::kTrace, D::kCompute, "rules_attention", R::kCause, {}},
    RuleInfo{"gemm-shape", S::kTrace, D::kCompute, "rules_operator", R::kCause, {}},
    RuleInfo{"elementwise-chain", S::kTrace, D::kCompute, "rules_operator", R::kCause, {}},
    RuleInfo{"inference-in-training-mode", S::kTrace, D::kCompute, "rules_operator", R::kCause, {}},
    RuleInfo{"memory-near-capacity", S::kTrace, D::kMemory, "rules_memory", R::kCause, {}},
    RuleInfo{"memory-fragmentation", S::kTrace, D::kMemory, "rules_memory", R::kCause, {}},
    RuleInfo{"allocation-churn", S::kTrace, D::kMemory, "rules_memory", R::kCause, {}},
    // Communication costs what compute does not hide: exposed-communication measures exactly that.
    removes(RuleInfo{"communication-heavy",
                     S::kTrace,
                     D::kDistributed,
                     "rules_distributed",
                     R::kCause,
                     {},
                     "exposed-communication"},
            &RetimeChanges::remove_exposed_communication),
    removes(RuleInfo{"exposed-communication", S::kTrace, D::kDistributed, "rules_distributed", R::kCause, {}},
            &RetimeChanges::remove_exposed_communication),
    RuleInfo{"low-busbw", S::kTrace, D::kDistributed, "rules_distributed", R::kCause, {}},
    RuleInfo{"slow-host-copies", S::kTrace, D::kMemory, "rules_hardware", R::kCause, {}},
    judging("pageable-copy",
            removes(RuleInfo{"pageable-copies", S::kTrace, D::kMemory, "rules_hardware", R::kCause, {}},
                    &RetimeChanges::pin_pageable_uploads)),
    RuleInfo{"device-activity-missing", S::kTrace, D::kBenchmark, "rules_window", R::kWindow, {}},
    RuleInfo{"graph-capture-window", S::kTrace, D::kBenchmark, "rules_window", R::kWindow, {}},
    RuleInfo{"initialisation-window", S::kTrace, D::kBenchmark, "rules_window", R::kWindow, {}},
    RuleInfo{"microbenchmark-window", S::kTrace, D::kBenchmark, "rules_window", R::kWindow, {}},
    RuleInfo{"window-edge-wait", S::kTrace, D::kBenchmark, "rules_window", R::kCause, {}},
    RuleInfo{"compile-in-window", S::kTrace, D::kCompute, "rules_compile", R::kCause, {}},
    // All ranks of a job (diagnose_job()).
    RuleInfo{"rank-straggler", S::kJob, D::kDistributed, "rule_straggler", R::kCause, {}},
    RuleInfo{"job-exposed-communication",
             S::kJob,
             D::kDistributed,
             "rule_exposed_communication",
             R::kSymptom,
             kExposedCommunicationCauses,
             {},
             kRecordJobCommunication,
             true},
    RuleInfo{"collective-skew", S::kJob, D::kDistributed, "rule_waiting", R::kCause, {}},
    RuleInfo{"slow-collective-transport", S::kJob, D::kDistributed, "rule_slow_transport", R::kCause, {}},
    // NCCL logs (rules_nccl()).
    judging("nccl-network",
            RuleInfo{"nccl-socket-transport", S::kNccl, D::kDistributed, "rule_socket_transport", R::kCause, {}}),
    RuleInfo{"nccl-gdr-disabled", S::kNccl, D::kDistributed, "rule_gdr_disabled", R::kCause, {}},
    RuleInfo{"nccl-p2p-disabled", S::kNccl, D::kDistributed, "rule_p2p_disabled", R::kCause, {}},
    RuleInfo{"nccl-version-mismatch", S::kNccl, D::kDistributed, "rule_version_mismatch", R::kCause, {}},
    RuleInfo{"nccl-driver-mismatch", S::kNccl, D::kDistributed, "rule_driver_mismatch", R::kCause, {}},
    RuleInfo{"nccl-config-mismatch", S::kNccl, D::kDistributed, "rule_config_mismatch", R::kCause, {}},
    RuleInfo{"nccl-missing-ranks", S::kNccl, D::kDistributed, "rule_missing_ranks", R::kCause, {}},
    RuleInfo{"nccl-slow-init", S::kNccl, D::kDistributed, "rule_slow_init", R::kCause, {}},
    RuleInfo{"nccl-warnings", S::kNccl, D::kDistributed, "rule_warnings", R::kCause, {}},
    // The logs' bandwidth check and the trace's low-busbw judge the same collectives.
    judging("low-busbw", RuleInfo{"nccl-busbw-low", S::kNccl, D::kDistributed, "rule_bandwidth", R::kCause, {}}),
    RuleInfo{"nccl-busbw-impossible", S::kNccl, D::kDistributed, "rule_bandwidth", R::kCause, {}},
    // Allocator snapshots (rules_allocator()).
    RuleInfo{"allocator-fragmentation", S::kSnapshot, D::kMemory, "rule_fragmented_cache", R::kCause, {}},
    RuleInfo{"oom-fragmentation", S::kSnapshot, D::kMemory, "rule_oom", R::kCause, {}},
    RuleInfo{"oom-capacity", S::kSnapshot, D::kMemory, "rule_oom", R::kCause, {}},
    RuleInfo{"segment-churn", S::kSnapshot, D::kMemory, "rule_segment_churn", R::kCause, {}},
    RuleInfo{"cache-growth", S::kSnapshot, D::kMemory, "rule_cache_growth", R::kCause, {}},
    // rules_memory_text (src/diagnosis/memory/rules_allocator.cpp): memory text; oom-fragmentation and
    // oom-capacity above are emitted from out-of-memory messages too.
    RuleInfo{"oom-other-processes", S::kMemoryText, D::kMemory, "rule_oom_other_processes", R::kCause, {}},
    RuleInfo{"summary-fragmentation", S::kMemoryText, D::kMemory, "rule_summary_fragmentation", R::kCause, {}},
    RuleInfo{"summary-activation-peak", S::kMemoryText, D::kMemory, "rule_summary_activations", R::kCause, {}},
    RuleInfo{"summary-segment-churn", S::kMemoryText, D::kMemory, "rule_summary_churn", R::kCause, {}},
    RuleInfo{"summary-cached-memory", S::kMemoryText, D::kMemory, "rule_summary_cached", R::kCause, {}},
    // GPU utilisation logs (rules_smi()).
    RuleInfo{"gpu-starved", S::kSmi, D::kDataPipeline, "rule_gpu_starved", R::kCause, {}},
    RuleInfo{"gpu-underfilled", S::kSmi, D::kCompute, "rule_underfilled", R::kCause, {}},
    RuleInfo{"gpu-idle-periodic", S::kSmi, D::kCompute, "rule_periodic_idle", R::kCause, {}},
    RuleInfo{"gpu-imbalance", S::kSmi, D::kDistributed, "rule_imbalance", R::kCause, {}},
    RuleInfo{"gpu-throttling", S::kSmi, D::kCompute, "rule_throttling", R::kCause, {}},
    RuleInfo{"gpu-unused", S::kSmi, D::kCompute, "rule_unused", R::kCause, {}},
    // A watched command's CPU and GPU samples (rules_watch()).
    RuleInfo{"watch-cpu-bound-input", S::kWatch, D::kDataPipeline, "rule_watch_cpu_bound_input", R::kCause, {}},
    RuleInfo{"watch-gpu-starved", S::kWatch, D::kCompute, "rule_watch_gpu_starved", R::kCause, {}},
    RuleInfo{"watch-main-one-core", S::kWatch, D::kCompute, "rule_watch_main_one_core", R::kCause, {}},
    RuleInfo{"watch-workers-pegged", S::kWatch, D::kDataPipeline, "rule_watch_workers_pegged", R::kCause, {}},
    RuleInfo{"watch-waiting", S::kWatch, D::kCompute, "rule_watch_waiting", R::kCause, {}},
};

constexpr TraceRuleGroup kTraceGroups[] = {
    {"rules_step_time", rules_step_time},
    {"rule_device_stall", rule_device_stall},
    {"rules_data_pipeline", rules_data_pipeline},
    {"rules_gpu_efficiency", rules_gpu_efficiency},
    {"rules_host", rules_host},
    {"rules_memory", rules_memory},
    {"rules_distributed", rules_distributed},
    {"rules_hardware", rules_hardware},
    {"rules_cpu", rules_cpu},
    {"rules_attention", rules_attention},
    {"rules_operator", rules_operator},
    {"rules_window", rules_window},
    {"rules_compile", rules_compile},
};

}  // namespace

std::span<const RuleInfo> rule_registry() { return kRules; }

std::span<const TraceRuleGroup> trace_rule_groups() { return kTraceGroups; }

const RuleInfo* find_rule(std::string_view id) {
  for (const RuleInfo& r : kRules)
    if (r.id == id) return &r;
  return nullptr;
}

Finding finding_for(std::string_view id) {
  const RuleInfo* rule = find_rule(id);
  if (rule == nullptr) throw std::logic_error("finding_for: rule id not in the registry: " + std::string(id));
  Finding f;
  f.id = std::string(rule->id);
  f.dimension = rule->dimension;
  f.cause = std::string(rule->cause_key);
  return f;
}

const char* rule_role_name(RuleRole r) {
  switch (r) {
    case RuleRole::kCause: return "cause";
    case RuleRole::kSymptom: return "symptom";
    case RuleRole::kWindow: return "window";
  }
  return "cause";
}

}  // namespace ferret
