// Rules of the memory, distributed and hardware groups: on hand-built results (each threshold
// from both sides) and on corpus traces.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/trace_analysis.h"
#include "diagnosis/communication_fixes.h"
#include "diagnosis/rules.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace rules_memory_distributed_test {

constexpr std::int64_t kGiB = 1ll << 30;

const Finding* find(const std::vector<Finding>& f, const std::string& id) {
  for (const Finding& x : f)
    if (x.id == id) return &x;
  return nullptr;
}

bool any_fix_contains(const Finding& f, const std::string& text) {
  return std::ranges::any_of(fix_texts(f), [&](const std::string& s) { return s.find(text) != std::string::npos; });
}

std::vector<Finding> run_all(const TraceAnalysis& a) {
  std::vector<Finding> out;
  rules_memory(a, out);
  rules_distributed(a, out);
  rules_hardware(a, out);
  return out;
}

// ---- memory ---------------------------------------------------------------------------------

TraceAnalysis with_gpu_memory(std::int64_t capacity, std::int64_t peak_reserved, std::int64_t allocated_at_peak) {
  TraceAnalysis a;
  a.memory.present = true;
  MemoryDevice d;
  d.device_type = 1;
  d.device_id = 0;
  d.capacity_bytes = capacity;
  d.has_totals = true;
  d.peak_reserved = peak_reserved;
  d.peak_allocated = allocated_at_peak;
  d.allocated_at_peak_reserved = allocated_at_peak;
  d.peak_reserved_share = static_cast<double>(peak_reserved) / static_cast<double>(capacity);
  d.peak_allocated_share = static_cast<double>(allocated_at_peak) / static_cast<double>(capacity);
  d.fragmentation_at_peak = static_cast<double>(peak_reserved - allocated_at_peak) / static_cast<double>(peak_reserved);
  d.fragmentation_mean = d.fragmentation_at_peak;
  d.fragmentation_max = d.fragmentation_at_peak;
  a.memory.devices.push_back(d);
  return a;
}

TEST(RulesMemory, NearCapacityAbove90Percent) {
  // 75 / 80 = 93.75% > 90% (plugin) -> medium; 78 / 80 = 97.5% >= 97% -> high; 70 / 80 = 87.5% -> nothing.
  std::vector<Finding> out;
  rules_memory(with_gpu_memory(80 * kGiB, 75 * kGiB, 70 * kGiB), out);
  const Finding* f = find(out, "memory-near-capacity");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kMedium);
  EXPECT_EQ(f->dimension, Dimension::kMemory);
  EXPECT_NE(f->title.find("94%"), std::string::npos) << f->title;
  EXPECT_DOUBLE_EQ(f->time_share, 0);
  EXPECT_DOUBLE_EQ(f->max_speedup, 1.0);
  EXPECT_TRUE(any_fix_contains(*f, "torch.utils.checkpoint"));
  EXPECT_TRUE(any_fix_contains(*f, "FullyShardedDataParallel"));
  EXPECT_TRUE(any_fix_contains(*f, "bfloat16"));

  out.clear();
  rules_memory(with_gpu_memory(80 * kGiB, 78 * kGiB, 76 * kGiB), out);
  ASSERT_NE(find(out, "memory-near-capacity"), nullptr);
  EXPECT_EQ(find(out, "memory-near-capacity")->severity, Severity::kHigh);

  out.clear();
  rules_memory(with_gpu_memory(80 * kGiB, 70 * kGiB, 69 * kGiB), out);
  EXPECT_EQ(find(out, "memory-near-capacity"), nullptr);
}

TEST(RulesMemory, FragmentationNeedsShareAndBytes) {
  // 40 GiB reserved, 24 GiB allocated at the peak: 40% idle > 30%, 16 GiB >= 1 GiB; 40/80 = 50% of
  // the device -> medium.
  std::vector<Finding> out;
  rules_memory(with_gpu_memory(80 * kGiB, 40 * kGiB, 24 * kGiB), out);
  const Finding* f = find(out, "memory-fragmentation");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kMedium);
  EXPECT_EQ(f->layer, Layer::kFramework);
  EXPECT_NE(f->title.find("40%"), std::string::npos) << f->title;
  EXPECT_TRUE(any_fix_contains(*f, "expandable_segments:True"));

  // Close to capacity, fragmentation is what ends in an OOM: 73 of 80 GiB (91%), 50 allocated -> high.
  out.clear();
  rules_memory(with_gpu_memory(80 * kGiB, 73 * kGiB, 50 * kGiB), out);
  ASSERT_NE(find(out, "memory-fragmentation"), nullptr);
  EXPECT_EQ(find(out, "memory-fragmentation")->severity, Severity::kHigh);

  // 50% idle but only 0.5 GiB: nothing to win.
  out.clear();
  rules_memory(with_gpu_memory(80 * kGiB, kGiB, kGiB / 2), out);
  EXPECT_EQ(find(out, "memory-fragmentation"), nullptr);
  // 25% idle: within the allocator's normal rounding slack.
  out.clear();
  rules_memory(with_gpu_memory(80 * kGiB, 40 * kGiB, 30 * kGiB), out);
  EXPECT_EQ(find(out, "memory-fragmentation"), nullptr);
}

TraceAnalysis with_churn(std::size_t steps, std::uint64_t grows_per_step, std::uint64_t shrinks_per_step) {
  TraceAnalysis a;
  a.memory.present = true;
  a.memory.window_ns = 100'000'000;  // 100 ms
  for (std::size_t s = 0; s < steps; ++s) {
    MemoryStepChurn c;
    c.step = static_cast<std::int64_t>(s);
    c.allocations = 500;
    c.allocated_bytes = 2 * kGiB;
    c.reserved_grows = grows_per_step;
    c.reserved_shrinks = shrinks_per_step;
    a.memory.steps.push_back(c);
  }
  a.memory.steady_steps = steps >= 2 ? steps - 1 : steps;
  a.memory.reserved_changes_per_step = static_cast<double>(grows_per_step + shrinks_per_step);
  a.memory.allocations_per_step = 500;
  a.memory.allocated_bytes_per_step = 2.0 * static_cast<double>(kGiB);
  a.memory.allocator_calls = 6;
  a.memory.allocator_free_calls = 3;
  a.memory.allocator_call_ns = 2'000'000;  // 2 ms of 100 ms = 2%
  return a;
}

TEST(RulesMemory, AllocationChurnInSteadyState) {
  // 3 steps, 1 grow + 1 shrink per step -> 2 changes per steady step >= 1; shrinks -> medium;
  // allocator calls 2 ms / 100 ms = 0.02 time share.
  std::vector<Finding> out;
  rules_memory(with_churn(3, 1, 1), out);
  const Finding* f = find(out, "allocation-churn");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kMedium);
  EXPECT_DOUBLE_EQ(f->time_share, 0.02);
  EXPECT_DOUBLE_EQ(f->max_speedup, amdahl_speedup(0.02));
  EXPECT_TRUE(any_fix_contains(*f, "empty_cache"));
  EXPECT_TRUE(any_fix_contains(*f, "expandable_segments:True"));

  out.clear();
  rules_memory(with_churn(1, 1, 1), out);  // one step: no steady state to judge
  EXPECT_EQ(find(out, "allocation-churn"), nullptr);
  out.clear();
  rules_memory(with_churn(3, 0, 0), out);  // a warm cache
  EXPECT_EQ(find(out, "allocation-churn"), nullptr);
}

TEST(RulesMemory, NothingWithoutMemoryEvents) {
  TraceAnalysis a = with_gpu_memory(80 * kGiB, 79 * kGiB, 10 * kGiB);
  a.memory.present = false;
  std::vector<Finding> out;
  rules_memory(a, out);
  EXPECT_TRUE(out.empty());
}

// ---- distributed ----------------------------------------------------------------------------

TraceAnalysis with_comm(double comm_share, double exposed_share) {
  TraceAnalysis a;
  a.communication.present = true;
  a.communication.window_ns = 100'000'000;
  a.communication.comm_share = comm_share;
  a.communication.exposed_share = exposed_share;
  a.communication.comm_ns = static_cast<std::int64_t>(comm_share * 1e8);
  a.communication.exposed_ns = static_cast<std::int64_t>(exposed_share * 1e8);
  a.communication.comm_device_ns = a.communication.comm_ns;
  a.communication.overlapped_ns = a.communication.comm_ns - a.communication.exposed_ns;
  a.communication.overlap_share = comm_share > 0 ? 1.0 - exposed_share / comm_share : 0;
  CollectiveStats s;
  s.kind = Collective::kAllReduce;
  s.calls = 10;
  s.time_ns = a.communication.comm_ns;
  a.communication.by_collective.push_back(s);
  return a;
}

TEST(RulesDistributed, CommunicationHeavyAbove10Percent) {
  // 30% communication > 10% (plugin); 10% exposed -> medium; the Amdahl share is the exposed 10%.
  std::vector<Finding> out;
  rules_distributed(with_comm(0.30, 0.10), out);
  const Finding* f = find(out, "communication-heavy");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kMedium);
  EXPECT_EQ(f->dimension, Dimension::kDistributed);
  EXPECT_DOUBLE_EQ(f->time_share, 0.10);
  EXPECT_DOUBLE_EQ(f->max_speedup, 1.0 / 0.9);
  EXPECT_NE(f->title.find("30%"), std::string::npos) << f->title;
  EXPECT_TRUE(any_fix_contains(*f, "no_sync()"));

  out.clear();
  rules_distributed(with_comm(0.08, 0.01), out);
  EXPECT_EQ(find(out, "communication-heavy"), nullptr);
  // Mostly hidden: still heavy, but low severity.
  out.clear();
  rules_distributed(with_comm(0.30, 0.02), out);
  ASSERT_NE(find(out, "communication-heavy"), nullptr);
  EXPECT_EQ(find(out, "communication-heavy")->severity, Severity::kLow);
}

TEST(RulesDistributed, ExposedCommunication) {
  // 25% exposed >= 20% -> high; the fixes name DDP's knobs.
  std::vector<Finding> out;
  rules_distributed(with_comm(0.30, 0.25), out);
  const Finding* f = find(out, "exposed-communication");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kHigh);
  EXPECT_DOUBLE_EQ(f->time_share, 0.25);
  EXPECT_DOUBLE_EQ(f->max_speedup, 1.0 / 0.75);
  EXPECT_TRUE(any_fix_contains(*f, "bucket_cap_mb=100"));
  EXPECT_TRUE(any_fix_contains(*f, "gradient_as_bucket_view=True"));
  EXPECT_TRUE(any_fix_contains(*f, "static_graph=True"));
  EXPECT_TRUE(any_fix_contains(*f, "no_sync()"));
  out.clear();
  rules_distributed(with_comm(0.30, 0.06), out);
  ASSERT_NE(find(out, "exposed-communication"), nullptr);
  EXPECT_EQ(find(out, "exposed-communication")->severity, Severity::kMedium);
  out.clear();
  rules_distributed(with_comm(0.30, 0.04), out);
  EXPECT_EQ(find(out, "exposed-communication"), nullptr);
}

// One rank's trace, four steps of 10 ms (us): each runs a 1 ms GEMM then an AllReduce of the same
// 40 MB bf16 buffer in group 8 (record_param_comms args) - 1,000 us in step 1, 9,000 in the others
// when `late_peer`, else 1,000 in every step. The fastest call bounds the transfer: 24,000 of the
// 28,000 us (85.7%) is waiting for a late peer.
std::string allreduce_steps(bool late_peer, std::string_view collective = "AllReduce") {
  std::vector<std::string> ev;
  int c = 1;
  for (int k = 0; k < 4; ++k) {
    const double s = k * 10'000.0, ar = late_peer && k > 0 ? 9'000.0 : 1'000.0;
    ev.push_back(test::span("user_annotation", fmt::format("ProfilerStep#{}", k + 1), 1, 1, s, 10'000));
    ev.push_back(test::span("cuda_runtime", "cudaLaunchKernel", 1, 1, s + 10, 5, test::corr(c)));
    ev.push_back(test::span("kernel", "gemm", 0, 7, s + 20, 900, test::corr(c++)));
    ev.push_back(test::span("cpu_op", "record_param_comms", 1, 1, s + 30, 20,
                            fmt::format(R"("Collective name": "{}", "dtype": "BFloat16", "In msg nelems": 20000000, )"
                                        R"("Out msg nelems": 20000000, "Group size": 8)",
                                        collective)));
    ev.push_back(test::span("cuda_runtime", "cudaLaunchKernel", 1, 1, s + 35, 5, test::corr(c)));
    ev.push_back(test::span("kernel", fmt::format("ncclDevKernel_{}_Sum_bf16_RING_LL(x)", collective), 0, 20, s + 950,
                            ar, test::corr(c++)));
  }
  return test::trace(ev);
}

TEST(RulesDistributed, ExposedCommunicationMostlyWaitingForALatePeer) {
  const TraceModel m = load_trace_text(allreduce_steps(true));
  const TraceAnalysis a = analyze_trace(m, {});
  EXPECT_EQ(a.communication.peer_wait_ns, 24'000'000);
  EXPECT_EQ(a.communication.peer_wait_basis_ns, 28'000'000);
  EXPECT_EQ(a.communication.peer_wait_floor_ns, 4'000'000);
  // The GEMMs end before the AllReduces start: every call is exposed whole, so is its wait.
  EXPECT_EQ(a.communication.peer_wait_exposed_ns, 24'000'000);
  EXPECT_EQ(a.communication.peer_wait_exposed_basis_ns, 28'000'000);
  std::vector<Finding> out;
  rules_distributed(a, out);
  const Finding* f = find(out, "exposed-communication");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("mostly for a late peer (86% of its exposed collective time is waiting)"), std::string::npos)
      << f->title;
  ASSERT_FALSE(f->fixes.empty());
  EXPECT_NE(f->fixes.front().text.find("Find the late rank"), std::string::npos);
  EXPECT_FALSE(any_fix_contains(*f, "bucket_cap_mb"));  // the volume is not the lever

  // The same buffer at one speed: no waiting, the overlap and volume fixes.
  const TraceModel even = load_trace_text(allreduce_steps(false));
  const TraceAnalysis b = analyze_trace(even, {});
  EXPECT_EQ(b.communication.peer_wait_ns, 0);
  out.clear();
  rules_distributed(b, out);
  const Finding* g = find(out, "exposed-communication");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->title.find("late peer"), std::string::npos) << g->title;
  EXPECT_TRUE(any_fix_contains(*g, "bucket_cap_mb"));
}

// The fixes follow how the job parallelises, as its collectives' time says: all-reduce (DDP) gets
// DDP's buckets and no FSDP; all-gather (FSDP, ZeRO) gets prefetching and no DDP buckets; all-to-all
// (sharded embeddings) gets torchrec's pipeline. Each such fix says which collectives carry the time.
TEST(RulesDistributed, FixesFollowTheParallelStyle) {
  struct Case {
    const char* kernel;
    ParallelStyle style;
    const char* wanted;
    const char* unwanted;
  };
  for (const Case& k : {Case{"AllReduce", ParallelStyle::kReplicated, "bucket_cap_mb", "backward_prefetch"},
                        Case{"AllGather", ParallelStyle::kSharded, "backward_prefetch", "bucket_cap_mb"},
                        Case{"SendRecv", ParallelStyle::kUnknown, "bucket_cap_mb", "TrainPipelineSparseDist"}}) {
    SCOPED_TRACE(k.kernel);
    const TraceModel m = load_trace_text(allreduce_steps(false, k.kernel));
    const TraceAnalysis a = analyze_trace(m, {});
    EXPECT_EQ(a.communication.style.style, k.style);
    std::vector<Finding> out;
    rules_distributed(a, out);
    const Finding* f = find(out, "exposed-communication");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(any_fix_contains(*f, k.wanted));
    EXPECT_FALSE(any_fix_contains(*f, k.unwanted));
    // Only the unknown style keeps both families (and its fixes say nothing of a style).
    EXPECT_EQ(any_fix_contains(*f, "FullyShardedDataParallel") && any_fix_contains(*f, "DistributedDataParallel"),
              k.style == ParallelStyle::kUnknown);
    for (const Fix& fix : f->fixes) {
      const std::string why = applies_because(*f, fix);
      EXPECT_EQ(why.rfind(f->title, 0), 0u) << why;
      EXPECT_EQ(why.find("carries 100% of the collective time") != std::string::npos,
                k.style != ParallelStyle::kUnknown)
          << why;
    }
  }
  // The style by shares: the largest family needs half the collective time.
  EXPECT_EQ(parallel_style(60, 30, 10, 100).style, ParallelStyle::kReplicated);
  EXPECT_DOUBLE_EQ(parallel_style(60, 30, 10, 100).share, 0.6);
  EXPECT_EQ(parallel_style(10, 50, 0, 100).style, ParallelStyle::kSharded);
  EXPECT_EQ(parallel_style(0, 10, 70, 100).style, ParallelStyle::kAllToAll);
  EXPECT_EQ(parallel_style(40, 30, 0, 100).style, ParallelStyle::kUnknown);  // broadcasts, sends: no style
  EXPECT_EQ(parallel_style(0, 0, 0, 0).style, ParallelStyle::kUnknown);
  // All-to-all and the volume fixes, each list for its style.
  const ParallelStyleShare emb{ParallelStyle::kAllToAll, 0.8};
  EXPECT_NE(overlap_fixes(emb, false).front().text.find("TrainPipelineSparseDist"), std::string::npos);
  EXPECT_EQ(
      overlap_fixes(emb, false).front().because,
      std::vector<std::string>{"all-to-all (sharded embedding tables or experts) carries 80% of the collective time"});
  for (const Fix& fix : volume_fixes({ParallelStyle::kSharded, 0.9}, false))
    EXPECT_EQ(fix.text.find("comm_hook"), std::string::npos) << fix.text;  // a DDP hook: not for FSDP
  // gloo on the host: no CUDA words, fp16 compression, the transport fix last.
  const std::vector<Fix> host = overlap_fixes({ParallelStyle::kReplicated, 1.0}, true);
  for (const Fix& fix : host) EXPECT_EQ(fix.text.find("cuda"), std::string::npos) << fix.text;
  EXPECT_NE(host.back().text.find("GLOO_SOCKET_IFNAME"), std::string::npos);
}

TraceAnalysis with_busbw(int group, double best_busbw, double link) {
  TraceAnalysis a = with_comm(0.30, 0.20);
  NcclLinkUse u;
  u.device = 0;
  u.kind = Collective::kAllReduce;
  u.group_size = group;
  u.calls = 5;
  u.busbw_gbps = best_busbw * 0.8;
  u.best_large_busbw_gbps = best_busbw;
  u.best_large_bytes = 64ll << 20;
  u.best_large_protocol = "LL";
  u.link = "NVLink4";
  u.link_gbps = link;
  u.best_large_efficiency = best_busbw / link;
  a.hardware.nccl.push_back(u);
  return a;
}

TEST(RulesDistributed, LowBusBandwidthWithinANode) {
  // 45 of 450 GB/s = 10% < 25%, group of 8: fires. Time share: exposed 20% x (1 - 0.1) = 18%.
  std::vector<Finding> out;
  rules_distributed(with_busbw(8, 45, 450), out);
  const Finding* f = find(out, "low-busbw");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->layer, Layer::kHardware);
  EXPECT_NEAR(f->time_share, 0.18, 1e-12);
  EXPECT_EQ(f->severity, Severity::kMedium);
  EXPECT_TRUE(any_fix_contains(*f, "NCCL_DEBUG=INFO"));
  EXPECT_TRUE(any_fix_contains(*f, "NCCL_IB_HCA"));
  EXPECT_NE(f->detail.find("LL protocol"), std::string::npos);

  out.clear();
  rules_distributed(with_busbw(16, 45, 450), out);  // crosses nodes: the network bounds it
  EXPECT_EQ(find(out, "low-busbw"), nullptr);
  out.clear();
  rules_distributed(with_busbw(8, 150, 450), out);  // 33%: not low enough
  EXPECT_EQ(find(out, "low-busbw"), nullptr);
}

// ---- hardware -------------------------------------------------------------------------------

TraceAnalysis with_copies(double efficiency, std::int64_t large_time_ns, HostMemory memory) {
  TraceAnalysis a;
  a.hardware.window_ns = 100'000'000;
  CopyStats c;
  c.device = 0;
  c.direction = CopyDirection::kHtoD;
  c.host_memory = memory;
  c.count = c.large_count = 10;
  c.peak_gbps = 32;
  c.link = "PCIe4 x16";
  c.large_gbps = efficiency * 32;
  c.large_time_ns = c.time_ns = c.sized_time_ns = large_time_ns;
  c.large_bytes = c.bytes = static_cast<std::int64_t>(c.large_gbps * static_cast<double>(large_time_ns));
  c.achieved_gbps = c.large_gbps;
  c.large_efficiency = efficiency;
  a.hardware.copies.push_back(c);
  a.hardware.host_copy_bytes = c.bytes;
  a.hardware.host_copy_time_ns = c.time_ns;
  if (memory == HostMemory::kPageable) {
    a.hardware.pageable_count = c.count;
    a.hardware.pageable_bytes = c.bytes;
    a.hardware.pageable_time_ns = c.time_ns;
  }
  return a;
}

TEST(RulesHardware, SlowHostCopies) {
  // 25% of PCIe4 over 10 ms of a 100 ms window: at peak they would take 2.5 ms -> 7.5 ms lost = 7.5%.
  std::vector<Finding> out;
  rules_hardware(with_copies(0.25, 10'000'000, HostMemory::kPinned), out);
  const Finding* f = find(out, "slow-host-copies");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->time_share, 0.075, 1e-9);
  EXPECT_EQ(f->severity, Severity::kMedium);
  EXPECT_TRUE(any_fix_contains(*f, "numactl"));
  EXPECT_EQ(find(out, "pageable-copies"), nullptr);  // pinned

  out.clear();
  rules_hardware(with_copies(0.60, 10'000'000, HostMemory::kPinned), out);  // 60% of peak: fine
  EXPECT_EQ(find(out, "slow-host-copies"), nullptr);
  out.clear();
  rules_hardware(with_copies(0.25, 500'000, HostMemory::kPinned), out);  // 0.5% of the window
  EXPECT_EQ(find(out, "slow-host-copies"), nullptr);
}

TEST(RulesHardware, PageableCopies) {
  // 6 ms of pageable copies in 100 ms = 6% -> medium; fixes pin memory.
  std::vector<Finding> out;
  rules_hardware(with_copies(0.70, 6'000'000, HostMemory::kPageable), out);
  const Finding* f = find(out, "pageable-copies");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kMedium);
  EXPECT_DOUBLE_EQ(f->time_share, 0.06);
  EXPECT_TRUE(any_fix_contains(*f, "pin_memory=True"));
  EXPECT_TRUE(any_fix_contains(*f, "non_blocking=True"));

  out.clear();
  rules_hardware(with_copies(0.70, 500'000, HostMemory::kPageable), out);  // 0.5%
  EXPECT_EQ(find(out, "pageable-copies"), nullptr);
}

// ---- corpus ---------------------------------------------------------------------------------

TraceAnalysis analyze_mine(const TraceModel& m) {
  TraceAnalysis a;
  a.model = &m;
  a.context = make_analysis_context(m, {});
  a.memory = analyze_memory(m, a.context);
  a.communication = analyze_communication(m, a.context);
  a.hardware = analyze_hardware(m, a.context);
  return a;
}

// cnn-ddp (analysis tests): communication 7.0% of the 3 steps (< 10%: not heavy), 5.9% exposed
// (>= 5%: medium); the fastest >= 16 MiB AllReduce reaches 12.99 GB/s busbw (group 2, factor 1)
// on an A100 SXM (NVLink3 300 GB/s): 4.3% < 25%, with the LL protocol in its kernel name.
TEST(CorpusRules, CnnDdpExposedCommunicationAndLowBusbw) {
  FERRET_REQUIRE_CORPUS(path, "cnn-ddp-a100-rank0of2-nccl.json.gz");
  const TraceModel m = load_trace(path);
  const std::vector<Finding> out = run_all(analyze_mine(m));
  EXPECT_EQ(find(out, "communication-heavy"), nullptr);
  const Finding* exposed = find(out, "exposed-communication");
  ASSERT_NE(exposed, nullptr);
  EXPECT_EQ(exposed->severity, Severity::kMedium);
  const Finding* low = find(out, "low-busbw");
  ASSERT_NE(low, nullptr);
  EXPECT_NE(low->title.find("13.0 GB/s"), std::string::npos) << low->title;
  EXPECT_NE(low->detail.find("LL protocol"), std::string::npos);
  EXPECT_EQ(find(out, "pageable-copies"), nullptr);
}

// a100-rank3of8: communication 35% of step time (19% exposed); 18 pinned HtoD copies >= 1 MiB at
// 8.588 GB/s (Python: sum(bytes) / sum(dur) over them) = 27% of PCIe4 x16. Group sizes are not
// recorded (2022 trace), so no bus bandwidth verdict.
TEST(CorpusRules, A100Rank3CommunicationHeavyAndSlowCopies) {
  FERRET_REQUIRE_CORPUS(path, "a100-rank3of8-2022.json.gz");
  const TraceModel m = load_trace(path);
  const std::vector<Finding> out = run_all(analyze_mine(m));
  ASSERT_NE(find(out, "communication-heavy"), nullptr);
  ASSERT_NE(find(out, "exposed-communication"), nullptr);
  const Finding* slow = find(out, "slow-host-copies");
  ASSERT_NE(slow, nullptr);
  EXPECT_NE(slow->title.find("8.6 GB/s"), std::string::npos) << slow->title;
  EXPECT_EQ(find(out, "low-busbw"), nullptr);
}

// vLLM on MI300X: [memory] events of Device Type 6 (HIP); Python: max Total Reserved 193621655552
// of totalGlobalMem 206141652992 = 93.9% > 90%.
TEST(CorpusRules, VllmMi300NearCapacity) {
  FERRET_REQUIRE_CORPUS(path, "mi300-vllm-decode-graph-capture.pt.trace.json.gz");
  const TraceModel m = load_trace(path);
  const std::vector<Finding> out = run_all(analyze_mine(m));
  const Finding* f = find(out, "memory-near-capacity");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kMedium);
  EXPECT_NE(f->title.find("94%"), std::string::npos) << f->title;
}

// Qwen on H100: 2.6 GB reserved of 85 GB, 21% idle at the peak, no reserved changes; no NCCL, one
// 1-byte pinned copy: nothing to report in these groups.
TEST(CorpusRules, QwenInferenceHasNoMemoryDistributedOrHardwareFindings) {
  FERRET_REQUIRE_CORPUS(path, "h100-qwen0.5b-inference-torch2.json.gz");
  const TraceModel m = load_trace(path);
  EXPECT_TRUE(run_all(analyze_mine(m)).empty());
}

// ResNet50 on V100 (hardware test): 11.49 ms of pageable HtoD copies over 1065.6 ms of steps = 1.08%
// >= 1% -> low; the large copies reach 10.06 GB/s, 63% of PCIe3 x16 (not slow).
TEST(CorpusRules, ResNet50PageableInputCopies) {
  FERRET_REQUIRE_CORPUS(path, "resnet50-v100-torch19-dataloader.pt.trace.json.gz");
  const TraceModel m = load_trace(path);
  const std::vector<Finding> out = run_all(analyze_mine(m));
  const Finding* f = find(out, "pageable-copies");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kLow);
  EXPECT_EQ(find(out, "slow-host-copies"), nullptr);
}

}  // namespace rules_memory_distributed_test
}  // namespace
}  // namespace ferret
