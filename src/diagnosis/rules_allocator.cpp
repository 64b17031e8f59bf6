#include "diagnosis/rules_allocator.h"

#include <fmt/format.h>

#include "base/units.h"

namespace ferret {

namespace {

double gib(std::int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }
double mib(std::int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

const char* kExpandable = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True";

// Fragmented cache: free memory the allocator holds is >= 20% of what it reserved and >= 1 GiB
// (the same floor as the trace rule memory-fragmentation), and no single free block holds even
// half of it (external fragmentation > 50%): a large request would cudaMalloc anew or fail while
// that much sits idle. ferret's thresholds; PyTorch's allocator notes name expandable segments and
// max_split_size_mb as the remedies (docs: torch.cuda memory management, "Optimizing memory usage").
constexpr double kFragmentedFreeShare = 0.20;
constexpr std::int64_t kFragmentedMinFreeBytes = std::int64_t{1} << 30;
constexpr double kFragmentedScatter = 0.50;

void rule_fragmented_cache(const DeviceAllocatorState& d, std::vector<Finding>& out) {
  const PoolState& p = d.total;
  if (p.reserved <= 0 || p.inactive < kFragmentedMinFreeBytes) return;
  const double free_share = static_cast<double>(p.inactive) / static_cast<double>(p.reserved);
  if (free_share < kFragmentedFreeShare || p.external_fragmentation() <= kFragmentedScatter) return;
  Finding f;
  f.id = "allocator-fragmentation";
  f.title = fmt::format(
      "Fragmented allocator cache on device {}: {:.1f} GiB of {:.1f} GiB reserved is free in {} blocks, the largest "
      "{:.0f} MiB",
      d.device, gib(p.inactive), gib(p.reserved), p.free_blocks, mib(p.largest_free));
  f.dimension = Dimension::kMemory;
  f.layer = Layer::kFramework;
  f.severity = free_share >= 0.4 ? Severity::kHigh : Severity::kMedium;
  f.detail = fmt::format(
      "The caching allocator keeps freed blocks for reuse. Here {:.0f}% of its reserved memory is free but scattered "
      "({:.0f}% external fragmentation: 1 - largest free block / total free), so a request larger than {:.0f} MiB "
      "cannot use it and makes the allocator cudaMalloc a new segment (or fail with out of memory) while {:.1f} GiB "
      "sit idle.",
      100 * free_share, 100 * p.external_fragmentation(), mib(p.largest_free), gib(p.inactive));
  if (!d.pinning.empty())
    f.detail += fmt::format(" The segment pinning the most free memory holds {:.0f} MiB free around {:.0f} MiB in use",
                            mib(d.pinning.front().free_bytes), mib(d.pinning.front().active_bytes)) +
                (d.pinning.front().splitters.empty() || d.pinning.front().splitters.front().frame.empty()
                     ? "."
                     : ", split by an allocation at " + d.pinning.front().splitters.front().frame + ".");
  f.evidence = {{"reserved_bytes", static_cast<double>(p.reserved), "bytes"},
                {"free_bytes", static_cast<double>(p.inactive), "bytes"},
                {"largest_free_block_bytes", static_cast<double>(p.largest_free), "bytes"},
                {"free_blocks", static_cast<double>(p.free_blocks), "count"},
                {"external_fragmentation_pct", 100 * p.external_fragmentation(), "%"}};
  if (d.expandable_segments)
    f.fixes.push_back(
        "Expandable segments are already on: look at allocations that outlive the step (cached "
        "activations, growing lists of tensors) pinning segments");
  else
    f.fixes.push_back(std::string(kExpandable) + " (torch >= 2.1): segments grow in place instead of being split");
  f.fixes.push_back(
      "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512 keeps blocks over 512 MiB unsplit, so large "
      "requests find whole blocks (set it just above your largest common tensor)");
  f.fixes.push_back(
      "PYTORCH_CUDA_ALLOC_CONF=garbage_collection_threshold:0.8 frees unused cached blocks before "
      "the cache reaches 80% of device memory");
  f.threshold = "free >= 20% of reserved and >= 1 GiB, largest free block < 50% of the free bytes (ferret)";
  out.push_back(std::move(f));
}

// An out-of-memory in the trace: fragmentation explains it when the cache held at least the
// requested bytes free (the allocator frees its cache and retries cudaMalloc before giving up, so
// failing with that much free means no free block or segment could be merged to fit).
void rule_oom(const DeviceAllocatorState& d, std::vector<Finding>& out) {
  if (d.ooms.empty()) return;
  const OomState& o = d.ooms.back();
  const bool fragmentation = o.cached_free() >= o.requested;
  Finding f;
  if (fragmentation)
    f.id = "oom-fragmentation";
  else
    f.id = "oom-capacity";
  f.dimension = Dimension::kMemory;
  f.layer = Layer::kFramework;
  f.severity = Severity::kHigh;
  const std::string where = o.frame.empty() ? "" : " at " + o.frame;
  if (fragmentation) {
    f.title = fmt::format(
        "Out of memory from fragmentation on device {}: {:.0f} MiB requested{} while the cache held {:.0f} MiB free",
        d.device, mib(o.requested), where, mib(o.cached_free()));
    f.detail =
        "The allocator had more free memory cached than the request needed, but in pieces: no free block "
        "was large enough and the scattered free blocks could not be merged. Less fragmentation, not less "
        "memory, fixes this OOM.";
    f.fixes = {std::string(kExpandable) + " (torch >= 2.1)",
               "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:<just above the failed request in MiB>",
               "Allocate the largest buffers first (preallocate, or run one step of the largest shape at start-up)"};
  } else {
    f.title = fmt::format(
        "Out of memory on device {}: {:.0f} MiB requested{} with {:.1f} GiB in use and {:.0f} MiB cached free",
        d.device, mib(o.requested), where, gib(o.allocated), mib(o.cached_free()));
    f.detail =
        "The memory in use plus the request exceeds what the device offers: the job needs less memory "
        "(fragmentation is not the cause: the cache held less than the request free).";
    f.fixes = {
        "Activation checkpointing: torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False) around "
        "the largest layers",
        "A smaller micro-batch with gradient accumulation keeps the effective batch size",
        "Mixed precision (torch.autocast(\"cuda\", dtype=torch.bfloat16)) halves activation memory",
        "Shard parameters, gradients and optimizer state: FullyShardedDataParallel or ZeRO"};
  }
  f.evidence = {{"requested_bytes", static_cast<double>(o.requested), "bytes"},
                {"allocated_bytes", static_cast<double>(o.allocated), "bytes"},
                {"reserved_bytes", static_cast<double>(o.reserved), "bytes"},
                {"cached_free_bytes", static_cast<double>(o.cached_free()), "bytes"}};
  if (o.device_free >= 0) f.evidence.push_back({"device_free_bytes", static_cast<double>(o.device_free), "bytes"});
  f.evidence.push_back({"ooms", static_cast<double>(d.ooms.size()), "count"});
  f.threshold = "an oom action in the device trace; fragmentation when cached free >= requested (ferret)";
  out.push_back(std::move(f));
}

// Segment churn: cudaMalloc/cudaFree of segments are synchronizing driver calls; in a steady state
// the cache serves every request. >= 50 of them and >= 5% of the allocations in the trace: ferret's.
constexpr std::uint64_t kChurnMinSegmentOps = 50;
constexpr double kChurnShareOfAllocs = 0.05;

void rule_segment_churn(const DeviceAllocatorState& d, std::vector<Finding>& out) {
  const std::uint64_t ops = d.segment_allocs + d.segment_frees;
  if (ops < kChurnMinSegmentOps || d.allocs == 0) return;
  const double share = static_cast<double>(ops) / static_cast<double>(d.allocs);
  if (share < kChurnShareOfAllocs) return;
  Finding f;
  f.id = "segment-churn";
  f.title = fmt::format("Allocator churn on device {}: {} segment cudaMalloc/cudaFree calls for {} allocations",
                        d.device, ops, d.allocs);
  f.dimension = Dimension::kMemory;
  f.layer = Layer::kFramework;
  f.severity = share >= 0.2 ? Severity::kMedium : Severity::kLow;
  f.detail = fmt::format(
      "{:.1f}% of the allocations in the device trace came with a segment allocated or freed: the cache is emptied "
      "and refilled (torch.cuda.empty_cache() in the loop, or shapes that change every step), and each cudaMalloc / "
      "cudaFree synchronizes the device.",
      100 * share);
  f.evidence = {{"segment_allocs", static_cast<double>(d.segment_allocs), "count"},
                {"segment_frees", static_cast<double>(d.segment_frees), "count"},
                {"allocs", static_cast<double>(d.allocs), "count"}};
  f.fixes = {"Remove torch.cuda.empty_cache() from the training loop (call it, if at all, between phases)",
             "Pad variable shapes to a few buckets so blocks are reused",
             std::string(kExpandable) + " grows segments instead of allocating new ones"};
  f.threshold = ">= 50 segment allocs/frees and >= 5% of the allocations in the device trace (ferret)";
  out.push_back(std::move(f));
}

}  // namespace

void rules_allocator(const AllocatorStateResult& state, std::vector<Finding>& out) {
  for (const DeviceAllocatorState& d : state.devices) {
    rule_oom(d, out);
    rule_fragmented_cache(d, out);
    rule_segment_churn(d, out);
  }
}

}  // namespace ferret
