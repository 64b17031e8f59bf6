#include "diagnosis/memory/rules_allocator.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/units.h"
#include "diagnosis/rule_registry.h"

namespace ferret {

namespace {

// A device the text did not name reads "?", as in the tables (never -1).
std::string device_text(int device) { return device >= 0 ? std::to_string(device) : "?"; }

const char* kExpandable = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True";

// Fragmented cache: free memory the allocator holds is >= 20% of what it reserved and >= 1 GiB
// (the same floor as the trace rule memory-fragmentation), and no single free block holds even
// half of it (external fragmentation > 50%): a large request would cudaMalloc anew or fail while
// that much sits idle. ferret's thresholds; PyTorch's allocator notes name expandable segments and
// max_split_size_mb as the remedies (docs: torch.cuda memory management, "Optimizing memory usage").
constexpr double kFragmentedFreeShare = 0.20;
constexpr std::int64_t kFragmentedMinFreeBytes = std::int64_t{1} << 30;
constexpr double kFragmentedScatter = 0.50;

// Judged at the peak where the device trace shows one before the snapshot: the blocks a step frees
// after its peak stay cached for the next step (normal caching), so free memory at a snapshot taken
// then says nothing about fragmentation unless the cache held as much free at the peak.
void rule_fragmented_cache(const DeviceAllocatorState& d, std::vector<Finding>& out) {
  const PoolState& p = d.total;
  if (p.reserved <= 0 || p.inactive < kFragmentedMinFreeBytes) return;
  const double free_share = static_cast<double>(p.inactive) / static_cast<double>(p.reserved);
  if (free_share < kFragmentedFreeShare || p.external_fragmentation() <= kFragmentedScatter) return;
  const bool peak_before = d.trace_entries > 0 && d.reserved_at_peak > 0 && d.peak_active > p.active;
  const double free_at_peak = peak_before ? static_cast<double>(saturating_sub(d.reserved_at_peak, d.peak_active)) /
                                                static_cast<double>(d.reserved_at_peak)
                                          : free_share;
  if (free_at_peak < kFragmentedFreeShare) return;
  Finding f = finding_for("allocator-fragmentation");
  f.title = fmt::format(
      "Fragmented allocator cache on device {}: {:.1f} GiB of {:.1f} GiB reserved is free in {} blocks, the largest "
      "{:.0f} MiB",
      d.device, bytes_to_gib(p.inactive), bytes_to_gib(p.reserved), p.free_blocks, bytes_to_mib(p.largest_free));
  f.layer = Layer::kFramework;
  f.severity = free_share >= 0.4 ? Severity::kHigh : Severity::kMedium;
  f.detail = fmt::format(
      "The caching allocator keeps freed blocks for reuse. Here {:.0f}% of its reserved memory is free but scattered "
      "({:.0f}% external fragmentation: 1 - largest free block / total free), so a request larger than {:.0f} MiB "
      "cannot use it and makes the allocator cudaMalloc a new segment (or fail with out of memory) while {:.1f} GiB "
      "sit idle.",
      100 * free_share, 100 * p.external_fragmentation(), bytes_to_mib(p.largest_free), bytes_to_gib(p.inactive));
  f.detail += peak_before ? fmt::format(
                                " At the peak of the device trace the cache held {:.0f}% of its {:.1f} GiB "
                                "free as well: the free memory is not just the step's blocks kept for reuse.",
                                100 * free_at_peak, bytes_to_gib(d.reserved_at_peak))
                          : " This is the state at the snapshot; without a device trace "
                            "(`torch.cuda.memory._record_memory_history()`) the peak is unknown, and a snapshot taken "
                            "after a step holds the step's freed blocks as cache.";
  if (!d.pinning.empty())
    f.detail += fmt::format(" The segment pinning the most free memory holds {:.0f} MiB free around {:.0f} MiB in use",
                            bytes_to_mib(d.pinning.front().free_bytes), bytes_to_mib(d.pinning.front().active_bytes)) +
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

// An out-of-memory, from a snapshot's device trace or a message in text: fragmentation explains
// it when the cache held at least the requested bytes free (the allocator frees its cache and
// retries cudaMalloc before giving up, so failing with that much free means no free block or
// segment could be merged to fit). The facts both sources give:
struct OomCase {
  int device = 0;
  std::int64_t requested = 0;
  std::int64_t allocated = 0;  // in use by tensors
  std::int64_t reserved = 0;
  std::int64_t cached_free = 0;  // reserved but unallocated
  std::int64_t device_free = -1;
  std::int64_t total_capacity = -1;  // text only
  std::int64_t allowed = -1;         // text only: the per-process memory fraction's limit
  std::int64_t other_processes = 0;  // text only: bytes other processes held on the device
  std::string where;                 // " at train.py:77 in forward", " (line 40)"
  std::uint64_t count = 1;
  const char* threshold = "";
};

// Other processes holding >= 10% of the device at an out-of-memory (the reasoning is at
// rule_oom_other_processes).
constexpr double kOtherProcessesShare = 0.10;

Finding oom_finding(const OomCase& o) {
  const bool fragmentation = o.cached_free >= o.requested;
  Finding f = finding_for(fragmentation ? "oom-fragmentation" : "oom-capacity");
  f.layer = Layer::kFramework;
  f.severity = Severity::kHigh;
  if (fragmentation) {
    f.title = fmt::format(
        "Out of memory from fragmentation on device {}: {:.0f} MiB requested{} while the cache held {:.0f} MiB free",
        device_text(o.device), bytes_to_mib(o.requested), o.where, bytes_to_mib(o.cached_free));
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
        device_text(o.device), bytes_to_mib(o.requested), o.where, bytes_to_gib(o.allocated),
        bytes_to_mib(o.cached_free));
    // When other processes hold enough that the request would have fit without them, they are the
    // cause (oom-other-processes says so, high); making this job smaller is the second remedy.
    const bool others_explain =
        o.other_processes > 0 && o.device_free >= 0 && o.total_capacity > 0 &&
        static_cast<double>(o.other_processes) >= kOtherProcessesShare * static_cast<double>(o.total_capacity) &&
        saturating_add(o.device_free, o.other_processes) >= o.requested;
    if (others_explain) {
      f.severity = Severity::kMedium;
      f.detail = fmt::format(
          "Other processes held {:.1f} GiB of the device: without them the request would have fit "
          "(oom-other-processes). Otherwise the memory in use plus the request exceeds what the device offers, "
          "and the job needs less memory (fragmentation is not the cause: the cache held less than the request "
          "free).",
          bytes_to_gib(o.other_processes));
    } else {
      f.detail =
          "The memory in use plus the request exceeds what the device offers: the job needs less memory "
          "(fragmentation is not the cause: the cache held less than the request free).";
    }
    if (o.total_capacity > 0 && o.requested > o.total_capacity)
      f.detail += fmt::format(
          " The request alone is larger than the device's {:.1f} GiB: no setting makes it fit; look for a shape "
          "that grew by mistake (an unintended broadcast, a sequence length or batch size far above the usual).",
          bytes_to_gib(o.total_capacity));
    if (o.allowed >= 0)
      f.detail += fmt::format(
          " torch.cuda.set_per_process_memory_fraction limits this process to {:.1f} GiB: raising the fraction is a "
          "fix too.",
          bytes_to_gib(o.allowed));
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
                {"cached_free_bytes", static_cast<double>(o.cached_free), "bytes"}};
  if (o.device_free >= 0) f.evidence.push_back({"device_free_bytes", static_cast<double>(o.device_free), "bytes"});
  if (o.total_capacity >= 0)
    f.evidence.push_back({"total_capacity_bytes", static_cast<double>(o.total_capacity), "bytes"});
  f.evidence.push_back({"ooms", static_cast<double>(o.count), "count"});
  f.threshold = o.threshold;
  return f;
}

void rule_oom(const DeviceAllocatorState& d, std::vector<Finding>& out) {
  if (d.ooms.empty()) return;
  const OomState& o = d.ooms.back();
  OomCase c;
  c.device = d.device;
  c.requested = o.requested;
  c.allocated = o.allocated;
  c.reserved = o.reserved;
  c.cached_free = o.cached_free();
  c.device_free = o.device_free;
  c.where = o.frame.empty() ? "" : " at " + o.frame;
  c.count = d.ooms.size();
  c.threshold = "an oom action in the device trace; fragmentation when cached free >= requested (ferret)";
  out.push_back(oom_finding(c));
}

// Segment churn: cudaMalloc/cudaFree of segments are synchronizing driver calls; in a steady state
// the cache serves every request. >= 50 of them and >= 5% of the allocations in the trace: ferret's.
constexpr std::uint64_t kChurnMinSegmentOps = 50;
constexpr double kChurnShareOfAllocs = 0.05;

void rule_segment_churn(const DeviceAllocatorState& d, std::vector<Finding>& out) {
  const std::uint64_t ops = d.segment_allocs + d.segment_frees;
  // Emptied and refilled needs segments freed: a cache that only grew is cache-growth.
  if (ops < kChurnMinSegmentOps || d.allocs == 0 || d.segment_frees == 0) return;
  const double share = static_cast<double>(ops) / static_cast<double>(d.allocs);
  if (share < kChurnShareOfAllocs) return;
  Finding f = finding_for("segment-churn");
  f.title = fmt::format("Allocator churn on device {}: {} segment cudaMalloc/cudaFree calls for {} allocations",
                        d.device, ops, d.allocs);
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

// Cache growth: the device trace shows segments cudaMalloc'd and none freed, for >= 20% of what
// the cache reserves at the snapshot (ferret's floor: the recording saw the cache fill, not a
// stray segment). A pass that filled the cache (a first step, a warm-up) is growth, not churn;
// the finding says what grew, by the first user frame that asked for the bytes. Informational.
constexpr double kGrowthShareOfReserved = 0.20;

void rule_cache_growth(const DeviceAllocatorState& d, std::vector<Finding>& out) {
  // An out-of-memory in the trace is what matters there (rule_oom says how the cache stood).
  if (d.segment_allocs == 0 || d.segment_frees > 0 || d.total.reserved <= 0 || !d.ooms.empty()) return;
  const double share = static_cast<double>(d.segment_alloc_bytes) / static_cast<double>(d.total.reserved);
  if (share < kGrowthShareOfReserved) return;
  Finding f = finding_for("cache-growth");
  f.title =
      fmt::format("The cache grew on device {}: {} segment{} ({:.0f} MiB) cudaMalloc'd while recorded, none freed",
                  d.device, d.segment_allocs, d.segment_allocs == 1 ? "" : "s", bytes_to_mib(d.segment_alloc_bytes));
  f.layer = Layer::kFramework;
  f.severity = Severity::kInfo;
  std::string sites;
  for (const Splitter& s : d.growth_sites)
    sites += fmt::format("{}{} {:.0f} MiB", sites.empty() ? "" : ", ",
                         s.frame.empty() ? std::string("(no frames recorded)") : s.frame, bytes_to_mib(s.size));
  f.detail = fmt::format(
      "While the device trace recorded, the allocator asked the driver for {:.0f}% of the {:.0f} MiB it reserves "
      "at the snapshot and returned none: a pass that filled the cache (a first step, a warm-up), which the steps "
      "after it reuse. This is growth, not churn (churn frees segments and allocates them again).{}",
      100 * std::min(1.0, share), bytes_to_mib(d.total.reserved),
      sites.empty() ? std::string() : " What grew: " + sites + ".");
  f.evidence = {{"segment_allocs", static_cast<double>(d.segment_allocs), "count"},
                {"segment_alloc_bytes", static_cast<double>(d.segment_alloc_bytes), "bytes"},
                {"reserved_bytes", static_cast<double>(d.total.reserved), "bytes"}};
  f.fixes = {
      "To see the steady state, start recording after warm-up: call "
      "`torch.cuda.memory._record_memory_history(max_entries=100000)` after the first iterations and dump the "
      "snapshot after a later step",
      "If every snapshot is larger than the last, something keeps tensors alive across steps: a list of losses kept "
      "with their graphs (`losses.append(loss)` instead of `loss.item()`), caches keyed by shape, hooks holding "
      "activations"};
  f.threshold = "segments cudaMalloc'd, none freed, >= 20% of the reserved bytes at the snapshot (ferret)";
  out.push_back(std::move(f));
}

// ---- text: out-of-memory messages and memory_summary() tables (model/memory_text.h) ----------

// The out-of-memory of each device in a text: its last message (the last word on that device),
// with the number of messages seen for it.
void rule_text_oom(const MemoryText& text, std::vector<Finding>& out) {
  std::vector<int> devices;
  for (const OomMessage& m : text.ooms)
    if (std::find(devices.begin(), devices.end(), m.device) == devices.end()) devices.push_back(m.device);
  for (int device : devices) {
    const OomMessage* last = nullptr;
    std::uint64_t count = 0;
    for (const OomMessage& m : text.ooms)
      if (m.device == device) {
        last = &m;
        count += m.repeats;
      }
    // Without the request or what PyTorch held, it cannot be classified.
    if (last == nullptr || last->requested < 0 || last->allocated < 0 || last->reserved_unallocated < 0) continue;
    OomCase c;
    c.device = device;
    c.requested = last->requested;
    c.allocated = last->allocated;
    c.reserved = last->reserved;
    c.cached_free = last->reserved_unallocated;
    c.device_free = last->device_free;
    c.total_capacity = last->total_capacity;
    c.allowed = last->allowed;
    c.other_processes = last->other_processes_bytes();
    c.where = fmt::format(" (line {})", last->line);
    c.count = count;
    c.threshold =
        "an out-of-memory message; fragmentation when reserved but unallocated >= requested (ferret, as for "
        "snapshots)";
    out.push_back(oom_finding(c));
  }
}

// Other processes on the device at the out-of-memory: torch lists them (from NVML) since 2.1. A
// share >= 10% of the device is far above an idle CUDA context (about 0.3-0.5 GiB, 1% of a 40-80
// GiB device) left by a stray process: another job, a notebook kernel, an inference server.
// ferret's threshold. High when, without them, the request would have fit in what the driver had
// free (free + theirs >= requested). A finding of its own, not evidence of oom-capacity: its fix
// (stop or move the other process, partition the device) differs from making this job smaller,
// and it applies whichever way the OOM is classified. When it explains the OOM, oom-capacity drops
// to medium and names it: the other processes are the cause, a smaller job the second remedy.

void rule_oom_other_processes(const MemoryText& text, std::vector<Finding>& out) {
  const OomMessage* worst = nullptr;
  for (const OomMessage& m : text.ooms)
    if (m.total_capacity > 0 && m.other_processes() > 0 &&
        static_cast<double>(m.other_processes_bytes()) >=
            kOtherProcessesShare * static_cast<double>(m.total_capacity) &&
        (worst == nullptr || m.other_processes_bytes() > worst->other_processes_bytes()))
      worst = &m;
  if (worst == nullptr) return;
  const OomMessage& m = *worst;
  const std::int64_t other = m.other_processes_bytes();
  const double share = static_cast<double>(other) / static_cast<double>(m.total_capacity);
  const bool would_fit = m.requested >= 0 && m.device_free >= 0 && saturating_add(m.device_free, other) >= m.requested;
  Finding f = finding_for("oom-other-processes");
  f.title = fmt::format("Other processes hold {:.1f} GiB ({:.0f}%) of device {} at the out-of-memory (line {})",
                        bytes_to_gib(other), 100 * share, device_text(m.device), m.line);
  f.layer = Layer::kHardware;
  f.severity = would_fit ? Severity::kHigh : Severity::kMedium;
  f.detail = fmt::format(
      "{} other process{} on the device held {:.1f} GiB of its {:.1f} GiB when this process failed to allocate "
      "{:.0f} MiB.{}",
      m.other_processes(), m.other_processes() == 1 ? "" : "es", bytes_to_gib(other), bytes_to_gib(m.total_capacity),
      bytes_to_mib(m.requested),
      would_fit ? " Without them the request would have fit in what the driver had free." : "");
  if (m.self_index >= 0)
    f.detail +=
        " No process was named as this one (a container's pid namespace hides it): the one holding the least among "
        "those holding at least what PyTorch reserved is taken as this process.";
  f.evidence = {{"other_processes_bytes", static_cast<double>(other), "bytes"},
                {"other_processes", static_cast<double>(m.other_processes()), "count"},
                {"other_processes_pct", 100 * share, "%"},
                {"total_capacity_bytes", static_cast<double>(m.total_capacity), "bytes"},
                {"requested_bytes", static_cast<double>(m.requested), "bytes"}};
  f.fixes = {"nvidia-smi --query-compute-apps=pid,used_memory --format=csv lists them: stop or move the other job",
             "CUDA_VISIBLE_DEVICES gives each job its own devices; MIG or MPS with "
             "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT partitions a shared one",
             "In the other PyTorch process, torch.cuda.empty_cache() once it is idle returns its cached memory"};
  f.threshold = "other processes >= 10% of the device's total capacity at an out-of-memory (ferret)";
  out.push_back(std::move(f));
}

// The last summary of each device: its counters are cumulative (peaks, totals, retries), so the
// last says the most.
std::vector<const MemorySummary*> last_summary_per_device(const MemoryText& text) {
  std::vector<const MemorySummary*> last;
  for (const MemorySummary& s : text.summaries) {
    auto it = std::find_if(last.begin(), last.end(), [&](const MemorySummary* x) { return x->device == s.device; });
    if (it == last.end())
      last.push_back(&s);
    else
      *it = &s;
  }
  return last;
}

std::string summary_where(const MemorySummary& s) { return fmt::format("(summary at line {})", s.line); }

// Fragmentation from a summary: the allocator retried (cudaMalloc failed, it freed its cached
// blocks and tried again: a synchronizing, slow path that torch counts as "cudaMalloc retries")
// while, at the peak, what it reserved exceeded what tensors held by >= 20% and >= 1 GiB (the
// thresholds of allocator-fragmentation). Peaks, not current values: between steps the gap is
// mostly freed activations kept for reuse, at the peak it is memory the allocator could not use.
void rule_summary_fragmentation(const MemorySummary& s, std::vector<Finding>& out) {
  const SummaryStat& reserved = s.row(SummaryMetric::kReserved).all;
  const SummaryStat& allocated = s.row(SummaryMetric::kAllocated).all;
  if (s.alloc_retries < 1 || reserved.peak <= 0 || allocated.peak < 0) return;
  const std::int64_t gap = saturating_sub(reserved.peak, allocated.peak);
  const double share = static_cast<double>(gap) / static_cast<double>(reserved.peak);
  if (gap < kFragmentedMinFreeBytes || share < kFragmentedFreeShare) return;
  Finding f = finding_for("summary-fragmentation");
  f.title = fmt::format(
      "Fragmentation on device {}: {} cudaMalloc retries, {:.1f} GiB reserved at the peak for {:.1f} GiB of tensors {}",
      device_text(s.device), s.alloc_retries, bytes_to_gib(reserved.peak), bytes_to_gib(allocated.peak),
      summary_where(s));
  f.layer = Layer::kFramework;
  f.severity = s.ooms > 0 ? Severity::kHigh : Severity::kMedium;
  f.detail = fmt::format(
      "A cudaMalloc retry is the allocator failing to get memory from the driver, freeing every cached block it "
      "can and trying again: each one synchronizes the device. It happened {} time{} while {:.1f} GiB ({:.0f}%) of "
      "the peak reserved memory held no tensor: free blocks too small or too scattered for the requests.",
      s.alloc_retries, s.alloc_retries == 1 ? "" : "s", bytes_to_gib(gap), 100 * share);
  const SummaryStat& split = s.row(SummaryMetric::kNonReleasable).all;
  if (split.peak > 0)
    f.detail += fmt::format(" Up to {:.1f} GiB sat in split blocks that cannot be released (Non-releasable memory).",
                            bytes_to_gib(split.peak));
  if (s.ooms > 0) f.detail += fmt::format(" {} allocation{} still failed (CUDA OOMs).", s.ooms, s.ooms == 1 ? "" : "s");
  f.evidence = {{"alloc_retries", static_cast<double>(s.alloc_retries), "count"},
                {"ooms", static_cast<double>(std::max<std::int64_t>(0, s.ooms)), "count"},
                {"peak_reserved_bytes", static_cast<double>(reserved.peak), "bytes"},
                {"peak_allocated_bytes", static_cast<double>(allocated.peak), "bytes"},
                {"peak_gap_pct", 100 * share, "%"}};
  if (split.peak >= 0) f.evidence.push_back({"peak_non_releasable_bytes", static_cast<double>(split.peak), "bytes"});
  f.fixes = {
      std::string(kExpandable) + " (torch >= 2.1): segments grow in place instead of being split",
      "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512 keeps large blocks whole for large requests",
      "PYTORCH_CUDA_ALLOC_CONF=garbage_collection_threshold:0.8 reclaims cached blocks before a retry is needed"};
  f.threshold =
      ">= 1 cudaMalloc retry, peak reserved - peak allocated >= 20% of peak reserved and >= 1 GiB (ferret; the "
      "floor of allocator-fragmentation)";
  out.push_back(std::move(f));
}

// Memory held by the cache: what is reserved now is >= 2x the peak of tensors (so at least half of
// it was never in use since the peak counters were last reset, for instance after an evaluation
// phase with larger shapes) and >= 1 GiB more. ferret's thresholds. Held cache costs this job
// nothing; it starves whatever else needs the device.
constexpr double kCacheOverPeak = 2.0;
constexpr std::int64_t kCacheMinIdleBytes = std::int64_t{1} << 30;

void rule_summary_cached(const MemorySummary& s, std::vector<Finding>& out) {
  const SummaryStat& reserved = s.row(SummaryMetric::kReserved).all;
  const SummaryStat& allocated = s.row(SummaryMetric::kAllocated).all;
  if (reserved.current <= 0 || allocated.peak < 0) return;
  const std::int64_t idle = saturating_sub(reserved.current, allocated.peak);
  if (idle < kCacheMinIdleBytes ||
      static_cast<double>(reserved.current) < kCacheOverPeak * static_cast<double>(allocated.peak))
    return;
  Finding f = finding_for("summary-cached-memory");
  f.title = fmt::format("Cache held on device {}: {:.1f} GiB reserved, tensors peaked at {:.1f} GiB {}",
                        device_text(s.device), bytes_to_gib(reserved.current), bytes_to_gib(allocated.peak),
                        summary_where(s));
  f.layer = Layer::kFramework;
  f.severity = idle >= 4 * kCacheMinIdleBytes ? Severity::kMedium : Severity::kLow;
  f.detail = fmt::format(
      "The caching allocator keeps freed memory reserved for reuse and returns it to the driver only on "
      "torch.cuda.empty_cache() (or a retry after a failed cudaMalloc). {:.1f} GiB of what it holds were not needed "
      "even at the peak of tensors since the counters were reset. That costs this job nothing but starves other "
      "users of the device. empty_cache() helps when something else needs the memory: another process, NCCL or "
      "cuDNN workspaces, a phase with other shapes; call it once, between phases. It hurts in the training loop: "
      "every step then pays cudaMalloc/cudaFree again, which synchronize the device.",
      bytes_to_gib(idle));
  f.evidence = {{"reserved_bytes", static_cast<double>(reserved.current), "bytes"},
                {"allocated_bytes", static_cast<double>(std::max<std::int64_t>(0, allocated.current)), "bytes"},
                {"peak_allocated_bytes", static_cast<double>(allocated.peak), "bytes"},
                {"idle_cache_bytes", static_cast<double>(idle), "bytes"}};
  f.fixes = {"torch.cuda.empty_cache() once between phases (after evaluation, before handing the device over)",
             "PYTORCH_CUDA_ALLOC_CONF=garbage_collection_threshold:0.8 returns unused blocks as usage nears the limit",
             "torch.cuda.set_per_process_memory_fraction(f) caps this process when it shares the device"};
  f.threshold = "reserved now >= 2x peak allocated and >= 1 GiB above it (ferret)";
  out.push_back(std::move(f));
}

// Segment churn from a summary: segments cudaMalloc'd in total ("GPU reserved segments", Tot
// Alloc) >= 5x the most ever held at once, with >= 50 freed (the floor of segment-churn): the
// cache was emptied and refilled about 4 times or more, by empty_cache() in a loop or by retries.
constexpr double kSummaryChurnRefills = 5.0;

void rule_summary_churn(const MemorySummary& s, std::vector<Finding>& out) {
  const SummaryStat& seg = s.row(SummaryMetric::kSegments).all;
  if (seg.allocated < 0 || seg.freed < static_cast<std::int64_t>(kChurnMinSegmentOps)) return;
  const std::int64_t held = std::max<std::int64_t>({seg.peak, seg.current, 1});
  const double refills = static_cast<double>(seg.allocated) / static_cast<double>(held);
  if (refills < kSummaryChurnRefills) return;
  Finding f = finding_for("summary-segment-churn");
  f.title = fmt::format("Allocator churn on device {}: {} segments cudaMalloc'd, {} freed, at most {} held {}",
                        device_text(s.device), seg.allocated, seg.freed, held, summary_where(s));
  f.layer = Layer::kFramework;
  f.severity = refills >= 20 ? Severity::kMedium : Severity::kLow;
  f.detail = fmt::format(
      "The allocator took {:.0f}x as many segments from the driver as it ever held at once: its cache is emptied "
      "and refilled, and each cudaMalloc / cudaFree synchronizes the device. torch.cuda.empty_cache() in the loop "
      "does this{}.",
      refills,
      s.alloc_retries > 0
          ? fmt::format("; so do the {} cudaMalloc retries (each frees the cached segments)", s.alloc_retries)
          : "");
  f.evidence = {{"segments_allocated", static_cast<double>(seg.allocated), "count"},
                {"segments_freed", static_cast<double>(seg.freed), "count"},
                {"segments_peak", static_cast<double>(held), "count"},
                {"refills", refills, "ratio"}};
  f.fixes = {"Remove torch.cuda.empty_cache() from the training loop (call it, if at all, between phases)",
             "Pad variable shapes to a few buckets so blocks are reused",
             std::string(kExpandable) + " grows segments instead of allocating new ones"};
  f.threshold = "GPU reserved segments: Tot Alloc >= 5x the peak held and Tot Freed >= 50 (ferret)";
  out.push_back(std::move(f));
}

// Activations dominating the peak: peak allocated - current allocated >= 50% of the peak and
// >= 1 GiB. Taken between steps, the current value is what persists (weights, gradients,
// optimizer state) and the difference is the step's transient (activations saved for backward,
// temporaries): when it is the larger half, shrinking it lowers the peak most. ferret's
// threshold. Taken inside a step the current value includes activations and the rule errs on
// the side of silence.
constexpr double kTransientShareOfPeak = 0.50;
constexpr std::int64_t kTransientMinBytes = std::int64_t{1} << 30;

void rule_summary_activations(const MemorySummary& s, std::vector<Finding>& out) {
  const SummaryStat& a = s.row(SummaryMetric::kAllocated).all;
  if (a.peak <= 0 || a.current < 0) return;
  const std::int64_t transient = saturating_sub(a.peak, a.current);
  const double share = static_cast<double>(transient) / static_cast<double>(a.peak);
  if (transient < kTransientMinBytes || share < kTransientShareOfPeak) return;
  Finding f = finding_for("summary-activation-peak");
  f.title = fmt::format(
      "Activations dominate the peak on device {}: {:.1f} GiB of the {:.1f} GiB peak is transient (now {:.1f} GiB) {}",
      device_text(s.device), bytes_to_gib(transient), bytes_to_gib(a.peak), bytes_to_gib(a.current), summary_where(s));
  f.layer = Layer::kFramework;
  f.severity = s.ooms > 0 ? Severity::kHigh : Severity::kMedium;
  f.detail = fmt::format(
      "Tensors peaked at {:.1f} GiB but {:.1f} GiB are held now. If the summary was taken between steps, what is "
      "held now persists (weights, gradients, optimizer state) and the {:.0f}% in between lives only inside a step: "
      "activations saved for backward and temporaries. Shrinking them lowers the peak most.",
      bytes_to_gib(a.peak), bytes_to_gib(a.current), 100 * share);
  f.evidence = {{"peak_allocated_bytes", static_cast<double>(a.peak), "bytes"},
                {"allocated_bytes", static_cast<double>(a.current), "bytes"},
                {"transient_bytes", static_cast<double>(transient), "bytes"},
                {"transient_pct", 100 * share, "%"}};
  f.fixes = {
      "Activation checkpointing: torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False) around the "
      "largest layers",
      "A smaller micro-batch with gradient accumulation keeps the effective batch size",
      "Mixed precision (torch.autocast(\"cuda\", dtype=torch.bfloat16)) halves activation memory",
      "torch.cuda.memory._record_memory_history() and a snapshot at the peak name the largest tensors "
      "(ferret memory SNAPSHOT.pickle)"};
  f.threshold = "peak allocated - current allocated >= 50% of the peak and >= 1 GiB (ferret)";
  out.push_back(std::move(f));
}

void allocator_rules(const AllocatorStateResult& state, std::vector<Finding>& out) {
  for (const DeviceAllocatorState& d : state.devices) {
    rule_oom(d, out);
    rule_fragmented_cache(d, out);
    rule_segment_churn(d, out);
    rule_cache_growth(d, out);
  }
}

void memory_text_rules(const MemoryText& text, std::vector<Finding>& out) {
  rule_oom_other_processes(text, out);  // first: when it explains an OOM, it is the cause
  rule_text_oom(text, out);
  for (const MemorySummary* s : last_summary_per_device(text)) {
    rule_summary_fragmentation(*s, out);
    rule_summary_activations(*s, out);
    rule_summary_churn(*s, out);
    rule_summary_cached(*s, out);
  }
}

// oom-fragmentation and oom-capacity are emitted from out-of-memory messages in text too.
constexpr RuleInfo kAllocatorRules[] = {
    RuleInfo{"allocator-fragmentation", RuleSource::kSnapshot, Dimension::kMemory, RuleRole::kCause},
    RuleInfo{"oom-fragmentation", RuleSource::kSnapshot, Dimension::kMemory, RuleRole::kCause},
    RuleInfo{"oom-capacity", RuleSource::kSnapshot, Dimension::kMemory, RuleRole::kCause},
    RuleInfo{"segment-churn", RuleSource::kSnapshot, Dimension::kMemory, RuleRole::kCause},
    RuleInfo{"cache-growth", RuleSource::kSnapshot, Dimension::kMemory, RuleRole::kCause},
};
constexpr RuleInfo kMemoryTextRules[] = {
    RuleInfo{"oom-other-processes", RuleSource::kMemoryText, Dimension::kMemory, RuleRole::kCause},
    RuleInfo{"summary-fragmentation", RuleSource::kMemoryText, Dimension::kMemory, RuleRole::kCause},
    RuleInfo{"summary-activation-peak", RuleSource::kMemoryText, Dimension::kMemory, RuleRole::kCause},
    RuleInfo{"summary-segment-churn", RuleSource::kMemoryText, Dimension::kMemory, RuleRole::kCause},
    RuleInfo{"summary-cached-memory", RuleSource::kMemoryText, Dimension::kMemory, RuleRole::kCause},
};

}  // namespace

FERRET_RULE_FAMILY(allocator){"rules_allocator", 10, kAllocatorRules, rule_run<allocator_rules>()};
FERRET_RULE_FAMILY(memory_text){"rules_memory_text", 10, kMemoryTextRules, rule_run<memory_text_rules>()};

void rules_allocator(const AllocatorStateResult& state, std::vector<Finding>& out) { run_rule_families(state, out); }

void rules_memory_text(const MemoryText& text, std::vector<Finding>& out) { run_rule_families(text, out); }

}  // namespace ferret
