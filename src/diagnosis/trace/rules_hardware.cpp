// Hardware rules: host copies far below the host link's peak, and copies to or from pageable
// host memory. They read HardwareResult only.
#include <algorithm>

#include <fmt/format.h>

#include "base/units.h"
#include "diagnosis/rule_registry.h"
#include "diagnosis/rules.h"

namespace ferret {

namespace {

// slow-host-copies. Threshold: copies of >= 1 MiB (kLargeCopyBytes) achieve < 50% of the host
// link's peak per direction. Why 50%: pinned copies reach ~80-90% of PCIe peak in CUDA's
// bandwidthTest / nvbandwidth (~13 of 16 GB/s on gen3 x16, ~25 of 32 on gen4, ~50 of 64 on gen5);
// below half, something other than the link limits them (pageable staging, a link trained at a
// lower width or generation, host memory on the far NUMA node). It must also cost >= 1% of the
// window (ferret's floor: below it no fix is worth a user's time).
constexpr double kSlowCopyEfficiency = 0.50;
constexpr double kSlowCopyMinShare = 0.01;

void rule_slow_host_copies(const HardwareResult& h, std::vector<Finding>& out) {
  if (h.window_ns <= 0) return;
  std::int64_t large_bytes = 0, large_time = 0;
  double lost_ns = 0;
  const CopyStats* worst = nullptr;
  for (const CopyStats& c : h.copies) {
    if (c.direction != CopyDirection::kHtoD && c.direction != CopyDirection::kDtoH) continue;
    if (c.large_efficiency < 0 || c.large_efficiency >= kSlowCopyEfficiency) continue;
    large_bytes += c.large_bytes;
    large_time += c.large_time_ns;
    // Time beyond what the same bytes take at link peak.
    lost_ns += std::max(0.0, static_cast<double>(c.large_time_ns) - static_cast<double>(c.large_bytes) / c.peak_gbps);
    if (worst == nullptr || c.large_time_ns > worst->large_time_ns) worst = &c;
  }
  if (worst == nullptr) return;
  const double share = lost_ns / static_cast<double>(h.window_ns);
  if (static_cast<double>(large_time) / static_cast<double>(h.window_ns) < kSlowCopyMinShare) return;
  const CopyStats& w = *worst;
  Finding f = finding_for("slow-host-copies");
  f.title = fmt::format("Slow host copies: {} {} copies reach {:.1f} GB/s, {:.0f}% of {} ({:.0f} GB/s)",
                        copy_direction_name(w.direction), host_memory_name(w.host_memory), w.large_gbps,
                        share_to_pct(w.large_efficiency), w.link, w.peak_gbps);
  f.layer = Layer::kHardware;
  f.severity = share >= 0.05 ? Severity::kMedium : Severity::kLow;
  f.detail = fmt::format(
      "{} copies of >= 1 MiB on GPU {} moved {:.1f} MiB in {:.2f} ms ({:.1f} GB/s) against a {} peak of {:.0f} GB/s "
      "per direction. At peak, the slow large host copies in the window would take {:.2f} ms less. Pinned copies "
      "normally reach "
      "80-90% of the link.",
      w.large_count, w.device, bytes_to_mib(static_cast<double>(w.large_bytes)), ns_to_ms(w.large_time_ns),
      w.large_gbps, w.link, w.peak_gbps, lost_ns / 1e6);
  f.evidence = {{"achieved_gbps", w.large_gbps, "GB/s"},
                {"link_peak_gbps", w.peak_gbps, "GB/s"},
                {"link_efficiency_pct", share_to_pct(w.large_efficiency), "%"},
                {"large_copy_bytes", static_cast<double>(large_bytes), "bytes"},
                {"large_copy_ms", ns_to_ms(large_time), "ms"},
                {"time_lost_pct", share_to_pct(share), "%"}};
  f.fixes = {};
  if (w.host_memory == HostMemory::kPageable)
    f.fixes.push_back(
        "Copy from pinned memory: `DataLoader(..., pin_memory=True)` or `x = x.pin_memory()`, then "
        "`x.to(\"cuda\", non_blocking=True)`");
  f.fixes.push_back(
      "Check the link trained at full width and generation: `nvidia-smi -q | grep -A2 -E \"Link (Gen|Width)\"` "
      "(Current should equal Max under load)");
  f.fixes.push_back(
      "Keep host buffers on the GPU's NUMA node: find it with `nvidia-smi topo -m`, then "
      "`numactl --cpunodebind=<node> --membind=<node> python train.py`");
  f.fixes.push_back(
      "Measure the link alone: `nvbandwidth -t host_to_device_memcpy_ce` (or CUDA samples' `bandwidthTest "
      "--memory=pinned`)");
  f.time_share = share;
  f.max_speedup = amdahl_speedup(share);
  // The what-if: host copies (both directions) at link peak, re-timed with what waits on them.
  fix_speeds_up_device_work(
      f, "host-device copies at link peak", static_cast<double>(large_time), lost_ns, [](std::string_view n) {
        return n.find("HtoD") != std::string_view::npos || n.find("DtoH") != std::string_view::npos ||
               n.find("HostToDevice") != std::string_view::npos || n.find("DeviceToHost") != std::string_view::npos;
      });
  f.threshold =
      "copies >= 1 MiB below 50% of host link peak and >= 1% of the window (ferret, from bandwidthTest's "
      "80-90% of peak for pinned copies)";
  out.push_back(std::move(f));
}

// pageable-copies. Nsys flags every pageable asynchronous copy; ferret flags them when they take
// >= 1% of the window (below that they are noise such as a one-off scalar read), severity medium
// >= 5% and high >= 20% (XProf's input-pipeline levels). Pageable copies run through a staging
// buffer, at roughly half of pinned bandwidth, and block the host thread even when "async".
constexpr double kPageableMinShare = 0.01;
constexpr double kPageableMedium = 0.05;
constexpr double kPageableHigh = 0.20;
constexpr std::int64_t kPageableMinBytes = 1ll << 20;

void rule_pageable_copies(const HardwareResult& h, std::vector<Finding>& out) {
  if (h.window_ns <= 0 || h.pageable_count == 0 || h.pageable_bytes < kPageableMinBytes) return;
  const double share = static_cast<double>(h.pageable_time_ns) / static_cast<double>(h.window_ns);
  if (share < kPageableMinShare) return;
  std::int64_t htod = 0, dtoh = 0;
  for (const CopyStats& c : h.copies) {
    if (c.host_memory != HostMemory::kPageable) continue;
    if (c.direction == CopyDirection::kHtoD) htod += c.bytes;
    if (c.direction == CopyDirection::kDtoH) dtoh += c.bytes;
  }
  const double pageable_of_host =
      h.host_copy_bytes > 0 ? static_cast<double>(h.pageable_bytes) / static_cast<double>(h.host_copy_bytes) : 0.0;
  Finding f = finding_for("pageable-copies");
  f.title = fmt::format("Pageable copies: {} copies from/to pageable host memory take {:.1f}% of the window",
                        h.pageable_count, share_to_pct(share));
  f.layer = Layer::kHardware;
  f.severity =
      share >= kPageableHigh ? Severity::kHigh : (share >= kPageableMedium ? Severity::kMedium : Severity::kLow);
  f.detail = fmt::format(
      "{:.1f} MiB host-to-device and {:.1f} MiB device-to-host went through pageable memory ({:.0f}% of host copy "
      "bytes), {:.2f} ms of copy time. The driver stages pageable memory through a pinned bounce buffer, which roughly "
      "halves bandwidth and makes the copy synchronous for the host, so it cannot overlap the next step's work.",
      bytes_to_mib(static_cast<double>(htod)), bytes_to_mib(static_cast<double>(dtoh)), share_to_pct(pageable_of_host),
      ns_to_ms(h.pageable_time_ns));
  f.evidence = {{"pageable_copies", static_cast<double>(h.pageable_count), "count"},
                {"pageable_bytes", static_cast<double>(h.pageable_bytes), "bytes"},
                {"pageable_ms", ns_to_ms(h.pageable_time_ns), "ms"},
                {"pageable_time_pct", share_to_pct(share), "%"},
                {"pageable_share_of_host_bytes_pct", share_to_pct(pageable_of_host), "%"}};
  f.fixes = {
      "Input batches: `DataLoader(dataset, ..., pin_memory=True)`, then `batch.to(\"cuda\", non_blocking=True)`",
      "Other host tensors: `x = x.pin_memory()` once (not every step), then `x.to(\"cuda\", non_blocking=True)`",
  };
  if (dtoh > 0)
    f.fixes.push_back(
        "Device-to-host: copy into a preallocated pinned buffer - `buf = torch.empty(shape, dtype=t.dtype, "
        "pin_memory=True)` once, then `buf.copy_(t, non_blocking=True)` and synchronize only when you read it");
  // Upper bound: pinned, non_blocking copies can leave the critical path entirely.
  f.time_share = share;
  f.max_speedup = amdahl_speedup(share);
  f.threshold =
      "pageable HtoD/DtoH copies >= 1% of the window and >= 1 MiB (ferret; nsys flags any); >= 5% medium, "
      ">= 20% high";
  out.push_back(std::move(f));
}

}  // namespace

void rules_hardware(const TraceAnalysis& a, std::vector<Finding>& out) {
  rule_slow_host_copies(a.hardware, out);
  rule_pageable_copies(a.hardware, out);
}

namespace {
constexpr RuleInfo kHardwareRules[] = {
    explaining(kExplainsIdleHost,
               RuleInfo{"slow-host-copies", RuleSource::kTrace, Dimension::kMemory, RuleRole::kCause}),
    judging("pageable-upload", removes(explaining(kExplainsIdleHost, RuleInfo{"pageable-copies", RuleSource::kTrace,
                                                                              Dimension::kMemory, RuleRole::kCause}),
                                       &RetimeChanges::pin_pageable_uploads)),
};
}  // namespace

FERRET_RULE_FAMILY(hardware){"rules_hardware", 80, kHardwareRules, rule_run<rules_hardware>()};

}  // namespace ferret
