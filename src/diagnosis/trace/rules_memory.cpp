// Memory rules: device memory near capacity, a fragmented caching allocator, and allocator
// churn (segments allocated and released every step). They read MemoryResult only.
#include <algorithm>

#include <fmt/format.h>

#include "base/units.h"
#include "diagnosis/rule_registry.h"
#include "diagnosis/rules.h"

namespace ferret {

namespace {

std::string device_label(const MemoryDevice& d) {
  return d.device_name.empty() ? fmt::format("GPU {}", d.device_id)
                               : fmt::format("GPU {} ({})", d.device_id, d.device_name);
}

// memory-near-capacity. Threshold: peak memory > 90% of the device (TensorBoard profiler plugin's
// memory recommendation); >= 97% is ferret's "high": within ~2.4 GB of an 80 GB part, one larger
// batch or a longer sequence away from an OOM. Reserved, not allocated, is compared: reserved is
// what the process holds from the driver, and the CUDA context and NCCL buffers come on top.
constexpr double kNearCapacityShare = 0.90;
constexpr double kNearCapacityHighShare = 0.97;

void rule_near_capacity(const MemoryResult& m, std::vector<Finding>& out) {
  for (const MemoryDevice& d : m.devices) {
    if (d.device_type <= 0 || d.capacity_bytes <= 0 || d.peak_reserved_share <= kNearCapacityShare) continue;
    Finding f = finding_for("memory-near-capacity");
    f.title = fmt::format("Memory near capacity: {} peaks at {:.0f}% of its {:.1f} GiB (reserved {:.1f} GiB)",
                          device_label(d), share_to_pct(d.peak_reserved_share), bytes_to_gib(d.capacity_bytes),
                          bytes_to_gib(d.peak_reserved));
    f.layer = Layer::kHardware;
    f.severity = d.peak_reserved_share >= kNearCapacityHighShare ? Severity::kHigh : Severity::kMedium;
    f.detail = fmt::format(
        "The caching allocator reserved up to {:.2f} GiB of {:.2f} GiB on device {} (tensors allocated at most {:.2f} "
        "GiB). "
        "Above 90% a larger batch, a longer sequence or a fragmented cache ends in an out-of-memory error, and the "
        "allocator starts freeing and retrying (cudaFree synchronizes the device). Memory, not time: this bounds how "
        "far batch size can grow, not the step time. Inference servers that preallocate a KV cache (vLLM's "
        "gpu_memory_utilization, 0.9 by default) sit here by design.",
        bytes_to_gib(d.peak_reserved), bytes_to_gib(d.capacity_bytes), d.device_id, bytes_to_gib(d.peak_allocated));
    f.evidence = {{"peak_reserved_bytes", static_cast<double>(d.peak_reserved), "bytes"},
                  {"peak_allocated_bytes", static_cast<double>(d.peak_allocated), "bytes"},
                  {"device_memory_bytes", static_cast<double>(d.capacity_bytes), "bytes"},
                  {"peak_reserved_pct", share_to_pct(d.peak_reserved_share), "%"},
                  {"peak_allocated_pct", share_to_pct(d.peak_allocated_share), "%"}};
    f.fixes = {
        "Activation checkpointing: recompute activations in backward instead of storing them - "
        "`from torch.utils.checkpoint import checkpoint; y = checkpoint(block, x, use_reentrant=False)`",
        "Halve the micro-batch and keep the effective batch with gradient accumulation "
        "(`loss = loss / accum_steps; loss.backward(); if (i + 1) % accum_steps == 0: opt.step(); opt.zero_grad()`)",
        "bf16 activations and weights: `with torch.autocast(\"cuda\", dtype=torch.bfloat16):` (half the bytes of fp32)",
        "Shard parameters, gradients and optimizer state across ranks: FSDP "
        "(`torch.distributed.fsdp.FullyShardedDataParallel(model)`) or DeepSpeed ZeRO stage 2/3",
        "Serving engine with a preallocated KV cache: leave headroom with a lower fraction, e.g. vLLM "
        "`--gpu-memory-utilization 0.85`",
    };
    f.time_share = 0;
    f.max_speedup = amdahl_speedup(0);
    f.threshold = "peak reserved > 90% of device memory (TensorBoard plugin); >= 97% high (ferret)";
    f.where = {{{d.peak_reserved_ns, d.peak_reserved_ns}}, 1};
    out.push_back(std::move(f));
  }
}

// memory-fragmentation: (reserved - allocated) / reserved at the moment reserved peaks.
// Threshold 30%: ferret's own (no peer publishes one). The allocator rounds requests (512-byte
// granules; 2 MiB segments for small blocks, 20 MiB for mid-size ones), which leaves 10-20% idle
// in a healthy run; above 30% a third of the cache sat idle while the allocator still had to grow
// - cached blocks of the wrong size, i.e. fragmentation. It must also hold >= 1 GiB idle: below
// that, no fix buys a batch size. Severity follows how close the peak is to capacity, since
// fragmentation turns into an OOM only there.
constexpr double kFragmentationShare = 0.30;
constexpr std::int64_t kFragmentationMinIdleBytes = 1ll << 30;
constexpr double kFragmentationHighCapacityShare = 0.90;
constexpr double kFragmentationMediumCapacityShare = 0.50;

void rule_fragmentation(const MemoryResult& m, const AttentionPatternsResult& attention, std::vector<Finding>& out) {
  for (const MemoryDevice& d : m.devices) {
    if (d.device_type <= 0 || d.fragmentation_at_peak < 0 || d.fragmentation_at_peak <= kFragmentationShare) continue;
    const std::int64_t idle = d.peak_reserved - d.allocated_at_peak_reserved;
    if (idle < kFragmentationMinIdleBytes) continue;
    Finding f = finding_for("memory-fragmentation");
    f.title =
        fmt::format("Fragmented allocator cache: {:.0f}% of the {:.1f} GiB reserved on {} was idle when it peaked",
                    share_to_pct(d.fragmentation_at_peak), bytes_to_gib(d.peak_reserved), device_label(d));
    f.layer = Layer::kFramework;
    if (d.peak_reserved_share >= kFragmentationHighCapacityShare)
      f.severity = Severity::kHigh;
    else if (d.peak_reserved_share >= kFragmentationMediumCapacityShare || d.peak_reserved_share < 0)
      f.severity = Severity::kMedium;
    else
      f.severity = Severity::kLow;
    f.detail = fmt::format(
        "When the caching allocator grew to its peak of {:.2f} GiB, tensors held only {:.2f} GiB: {:.2f} GiB of cached "
        "blocks could not serve the request, so it asked the driver for more. Over the trace the idle share averaged "
        "{:.0f}% (time-weighted) and reached {:.0f}%. Varying tensor sizes (dynamic shapes, variable sequence lengths) "
        "split cached segments into pieces no later request fits.",
        bytes_to_gib(d.peak_reserved), bytes_to_gib(d.allocated_at_peak_reserved), bytes_to_gib(idle),
        share_to_pct(std::max(0.0, d.fragmentation_mean)), share_to_pct(std::max(0.0, d.fragmentation_max)));
    f.evidence = {{"fragmentation_at_peak_pct", share_to_pct(d.fragmentation_at_peak), "%"},
                  {"idle_reserved_at_peak_bytes", static_cast<double>(idle), "bytes"},
                  {"peak_reserved_bytes", static_cast<double>(d.peak_reserved), "bytes"},
                  {"fragmentation_mean_pct", share_to_pct(d.fragmentation_mean), "%"},
                  {"fragmentation_max_pct", share_to_pct(d.fragmentation_max), "%"}};
    if (d.peak_reserved_share >= 0)
      f.evidence.push_back({"peak_reserved_pct", share_to_pct(d.peak_reserved_share), "%"});
    f.fixes = {
        "`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python train.py` - segments grow in place, so freed "
        "space is reusable by requests of any size",
        "Pad variable-length batches to a few fixed bucket sizes so tensor sizes repeat step to step",
        "If it persists: `PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512` stops the allocator splitting large "
        "cached blocks for small requests",
    };
    // Eager attention allocates an L x L score matrix per head and call: with varying sequence
    // lengths these are the largest blocks of ever-changing size.
    if (!attention.groups.empty())
      f.fixes.insert(f.fixes.begin() + 1,
                     "Attention runs op by op here (unfused-attention): each call allocates an L x L score matrix "
                     "per head, the largest blocks whose size changes with the sequence length; "
                     "`torch.nn.functional.scaled_dot_product_attention` never materialises them");
    f.time_share = 0;
    f.max_speedup = amdahl_speedup(0);
    f.threshold = "(reserved - allocated) / reserved at peak reserved > 30% and >= 1 GiB idle (ferret)";
    f.where = {{{d.peak_reserved_ns, d.peak_reserved_ns}}, 1};
    out.push_back(std::move(f));
  }
}

// allocation-churn: the allocator's reserved total moves in steady-state steps. After warm-up the
// caching allocator should serve every request from its cache; each move of Total Reserved is a
// cudaMalloc (grow) or cudaFree (shrink; it synchronizes the device). Threshold: >= 1 move per
// steady step on average (ferret's: steady state should have none; one per step is already a
// driver call on every iteration). Needs >= 2 steps so the first, still-warming step is excluded.
// Severity: medium when the cache shrinks (synchronizing frees) or allocator calls take >= 1% of
// the window; high at >= 5%.
constexpr double kChurnReservedChangesPerStep = 1.0;
constexpr std::size_t kChurnMinSteps = 2;
constexpr double kChurnAllocatorTimeMedium = 0.01;
constexpr double kChurnAllocatorTimeHigh = 0.05;

void rule_allocation_churn(const MemoryResult& m, std::vector<Finding>& out) {
  if (m.steps.size() < kChurnMinSteps || m.reserved_changes_per_step < kChurnReservedChangesPerStep) return;
  std::uint64_t shrinks = 0, grows = 0;
  for (std::size_t s = 1; s < m.steps.size(); ++s) {
    shrinks += m.steps[s].reserved_shrinks;
    grows += m.steps[s].reserved_grows;
  }
  const double allocator_share =
      m.window_ns > 0 ? static_cast<double>(m.allocator_call_ns) / static_cast<double>(m.window_ns) : 0.0;
  Finding f = finding_for("allocation-churn");
  f.title = fmt::format("Allocator churn: the CUDA cache grows or shrinks {:.1f} times per step after warm-up",
                        m.reserved_changes_per_step);
  f.layer = Layer::kFramework;
  if (allocator_share >= kChurnAllocatorTimeHigh)
    f.severity = Severity::kHigh;
  else if (shrinks > 0 || allocator_share >= kChurnAllocatorTimeMedium)
    f.severity = Severity::kMedium;
  else
    f.severity = Severity::kLow;
  f.detail = fmt::format(
      "Over {} steady-state step{} the caching allocator took {} new segment{} from the driver and released {} "
      "(each a cudaMalloc / cudaFree; cudaFree waits for the whole device). Each step allocated {:.0f} tensors, "
      "{:.2f} GiB in all. In steady state every request should be served from the cache. {} allocator call{} "
      "took {:.2f} ms of host time in the window.",
      m.steady_steps, m.steady_steps == 1 ? "" : "s", grows, grows == 1 ? "" : "s", shrinks, m.allocations_per_step,
      bytes_to_gib(m.allocated_bytes_per_step), m.allocator_calls, m.allocator_calls == 1 ? "" : "s",
      static_cast<double>(m.allocator_call_ns) / 1e6);
  f.evidence = {{"reserved_changes_per_step", m.reserved_changes_per_step, "count"},
                {"segment_allocations", static_cast<double>(grows), "count"},
                {"segment_releases", static_cast<double>(shrinks), "count"},
                {"allocations_per_step", m.allocations_per_step, "count"},
                {"allocated_bytes_per_step", m.allocated_bytes_per_step, "bytes"},
                {"allocator_calls", static_cast<double>(m.allocator_calls), "count"},
                {"allocator_call_time_pct", share_to_pct(allocator_share), "%"}};
  f.fixes = {
      "Remove `torch.cuda.empty_cache()` from the training loop: it hands cached segments back and the next step "
      "must cudaMalloc them again",
      "`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` - one segment grows in place instead of a new cudaMalloc "
      "per size class",
      "Keep shapes static across steps (pad to fixed buckets; `drop_last=True` in the DataLoader) so cached blocks fit",
      "Reuse buffers: allocate once outside the loop and write with `out=` / `copy_()`; or capture the step in a "
      "CUDA graph (`torch.compile(model, mode=\"reduce-overhead\")`), which allocates from a private pool once",
  };
  // Only the allocator calls themselves are measurable time; the device stalls after cudaFree
  // show up as idle GPU time elsewhere.
  f.time_share = allocator_share;
  f.max_speedup = amdahl_speedup(allocator_share);
  f.threshold =
      ">= 1 reserved-memory change per steady-state step (ferret); medium with cudaFree or >= 1% in "
      "allocator calls, high >= 5%";
  out.push_back(std::move(f));
}

}  // namespace

void rules_memory(const TraceAnalysis& a, std::vector<Finding>& out) {
  if (!a.memory.present) return;
  // Inference servers (vLLM, SGLang) reserve most of the device for their KV cache by design
  // (gpu_memory_utilization, mem_fraction_static): near capacity is their normal state.
  if (a.window_activity.inference_server.empty()) rule_near_capacity(a.memory, out);
  rule_fragmentation(a.memory, a.attention, out);
  rule_allocation_churn(a.memory, out);
}

namespace {
constexpr RuleInfo kMemoryRules[] = {
    RuleInfo{"memory-near-capacity", RuleSource::kTrace, Dimension::kMemory, RuleRole::kCause},
    RuleInfo{"memory-fragmentation", RuleSource::kTrace, Dimension::kMemory, RuleRole::kCause},
    RuleInfo{"allocation-churn", RuleSource::kTrace, Dimension::kMemory, RuleRole::kCause},
};
}  // namespace

FERRET_RULE_FAMILY(memory){"rules_memory", 60, kMemoryRules, rule_run<rules_memory>()};

}  // namespace ferret
