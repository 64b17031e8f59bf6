#include "analysis/memory/memory.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace memory_test {

MemoryResult analyze(const TraceModel& m, AnalysisOptions options = {}) {
  return analyze_memory(m, make_analysis_context(m, options));
}

// Two steps on thread (1, 1); device 0 has 10,000 bytes. CUDA [memory] events (ts us: Bytes,
// Total Allocated, Total Reserved):
//   13: +4000, 4000, 6000   inside aten::empty (12-14) inside aten::mm (10-40)
//   20: +1000, 5000, 6000   inside aten::mm
//   50: -4000, 1000, 6000   no op
//  115: +3000, 4000, 8000   inside aten::add (110-130); reserved grows
//  150: -3000, 1000, 2000   no op; reserved shrinks
// and one CPU allocation at ts 30 (+16).
// Hand computation:
//   peak allocated 5000 (ts 20); peak reserved 8000 (ts 115), the most allocated at 8000 is 4000
//   -> fragmentation at peak (8000 - 4000) / 8000 = 0.5.
//   idle share per event: 2000/6000 = 1/3, 1000/6000 = 1/6, 5000/6000 = 5/6, 4000/8000 = 1/2, 1000/2000 = 1/2;
//   held until the next event for 7, 30, 65, 35 us -> mean (7/3 + 5 + 325/6 + 35/2) / 137 = 79/137; max 5/6.
//   capacity shares: 8000 / 10000 = 0.8 reserved, 5000 / 10000 = 0.5 allocated.
//   step 1 [0, 100): 2 allocations, 5000 bytes, 1 free (4000), 1 CPU allocation (16);
//   step 2 [100, 200): 1 allocation (3000), 1 free, 1 grow, 1 shrink -> steady state (step 2 only):
//   1 allocation, 3000 bytes, 2 reserved changes per step.
//   ops: aten::mm 2 allocations 5000 bytes (aten::empty is a primitive: its allocation is mm's),
//   aten::add 1 allocation 3000 bytes.
//   allocator calls in the window: cudaMalloc 1 us + cudaFree 5 us = 6000 ns, one of them a free.
const char* kTrace = R"J({
  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 10000, "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
  "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 100, "dur": 100},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 30},
  {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 12, "dur": 2},
  {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 110, "dur": 20},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMalloc", "pid": 1, "tid": 1, "ts": 114, "dur": 1},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaFree", "pid": 1, "tid": 1, "ts": 150, "dur": 5},
  {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 13, "s": "t", "args": {"Device Type": 1, "Device Id": 0, "Addr": 1, "Bytes": 4000, "Total Allocated": 4000, "Total Reserved": 6000}},
  {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 20, "s": "t", "args": {"Device Type": 1, "Device Id": 0, "Addr": 2, "Bytes": 1000, "Total Allocated": 5000, "Total Reserved": 6000}},
  {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 30, "s": "t", "args": {"Device Type": 0, "Device Id": -1, "Addr": 3, "Bytes": 16, "Total Allocated": 16, "Total Reserved": 0}},
  {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 50, "s": "t", "args": {"Device Type": 1, "Device Id": 0, "Addr": 1, "Bytes": -4000, "Total Allocated": 1000, "Total Reserved": 6000}},
  {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 115, "s": "t", "args": {"Device Type": 1, "Device Id": 0, "Addr": 4, "Bytes": 3000, "Total Allocated": 4000, "Total Reserved": 8000}},
  {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 150, "s": "t", "args": {"Device Type": 1, "Device Id": 0, "Addr": 4, "Bytes": -3000, "Total Allocated": 1000, "Total Reserved": 2000}}
]})J";

TEST(Memory, PeaksAndFragmentationMatchHandComputation) {
  const TraceModel m = load_trace_text(kTrace);
  const MemoryResult r = analyze(m);
  ASSERT_TRUE(r.present);
  ASSERT_EQ(r.devices.size(), 2u);  // CUDA first, then CPU
  const MemoryDevice& d = r.devices[0];
  EXPECT_EQ(d.device_type, 1);
  EXPECT_EQ(d.device_id, 0);
  EXPECT_EQ(d.device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d.capacity_bytes, 10000);
  EXPECT_EQ(d.events, 5u);
  EXPECT_EQ(d.allocations, 3u);
  EXPECT_EQ(d.frees, 2u);
  EXPECT_EQ(d.allocated_bytes, 8000);
  EXPECT_EQ(d.freed_bytes, 7000);
  EXPECT_EQ(d.peak_net_bytes, 5000);
  EXPECT_TRUE(d.has_totals);
  EXPECT_EQ(d.peak_allocated, 5000);
  EXPECT_EQ(d.peak_allocated_ns, 20000);
  EXPECT_EQ(d.peak_reserved, 8000);
  EXPECT_EQ(d.peak_reserved_ns, 115000);
  EXPECT_EQ(d.allocated_at_peak_reserved, 4000);
  EXPECT_DOUBLE_EQ(d.fragmentation_at_peak, 0.5);
  EXPECT_NEAR(d.fragmentation_mean, 79.0 / 137.0, 1e-12);
  EXPECT_NEAR(d.fragmentation_max, 5.0 / 6.0, 1e-12);
  EXPECT_DOUBLE_EQ(d.peak_reserved_share, 0.8);
  EXPECT_DOUBLE_EQ(d.peak_allocated_share, 0.5);
  EXPECT_EQ(d.reserved_grows, 1u);
  EXPECT_EQ(d.reserved_shrinks, 1u);

  const MemoryDevice& cpu = r.devices[1];
  EXPECT_EQ(cpu.device_type, 0);
  EXPECT_EQ(cpu.allocations, 1u);
  EXPECT_EQ(cpu.peak_allocated, 16);
  EXPECT_EQ(cpu.capacity_bytes, -1);
  EXPECT_EQ(cpu.fragmentation_at_peak, -1);  // nothing reserved: no fragmentation to speak of
}

// The curve of device 0 in kTrace: its five events with totals span 13..150 us = 137,000 ns, so
// 300 buckets of (137,000 + 300) / 300 = 457 ns; the events fall in buckets 0, 15, 80, 223 and 299.
// Each bucket holds the most seen in it, the state entering it included (so the 5000 peak at
// ts 20 stays visible in bucket 80, where allocated fell to 1000); empty buckets carry the state.
TEST(Memory, CurveKeepsThePeaksAndCarriesTheState) {
  const TraceModel m = load_trace_text(kTrace);
  const MemoryResult r = analyze(m);
  const MemoryDevice* d = nullptr;
  for (const MemoryDevice& x : r.devices)
    if (x.device_type == 1 && x.device_id == 0) d = &x;
  ASSERT_NE(d, nullptr);
  const MemoryCurve& c = d->curve;
  EXPECT_EQ(c.start_ns, 13'000);
  EXPECT_EQ(c.bucket_ns, 457);
  ASSERT_EQ(c.allocated.size(), 300u);
  ASSERT_EQ(c.reserved.size(), 300u);
  const std::vector<std::pair<int, std::pair<std::int64_t, std::int64_t>>> expected = {
      {0, {4000, 6000}},  {14, {4000, 6000}},  {15, {5000, 6000}},  {79, {5000, 6000}},  {80, {5000, 6000}},
      {81, {1000, 6000}}, {222, {1000, 6000}}, {223, {4000, 8000}}, {298, {4000, 8000}}, {299, {4000, 8000}}};
  for (const auto& [k, values] : expected) {
    EXPECT_EQ(c.allocated[static_cast<std::size_t>(k)], values.first) << k;
    EXPECT_EQ(c.reserved[static_cast<std::size_t>(k)], values.second) << k;
  }
  EXPECT_EQ(*std::max_element(c.allocated.begin(), c.allocated.end()), d->peak_allocated);
  EXPECT_EQ(*std::max_element(c.reserved.begin(), c.reserved.end()), d->peak_reserved);
}

TEST(Memory, ChurnPerStepAndAllocatorCalls) {
  const TraceModel m = load_trace_text(kTrace);
  const MemoryResult r = analyze(m);
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[0].step, 1);
  EXPECT_EQ(r.steps[0].allocations, 2u);
  EXPECT_EQ(r.steps[0].allocated_bytes, 5000);
  EXPECT_EQ(r.steps[0].frees, 1u);
  EXPECT_EQ(r.steps[0].freed_bytes, 4000);
  EXPECT_EQ(r.steps[0].cpu_allocations, 1u);
  EXPECT_EQ(r.steps[0].cpu_allocated_bytes, 16);
  EXPECT_EQ(r.steps[0].reserved_grows + r.steps[0].reserved_shrinks, 0u);
  EXPECT_EQ(r.steps[1].allocations, 1u);
  EXPECT_EQ(r.steps[1].allocated_bytes, 3000);
  EXPECT_EQ(r.steps[1].reserved_grows, 1u);
  EXPECT_EQ(r.steps[1].reserved_shrinks, 1u);
  EXPECT_EQ(r.steady_steps, 1u);
  EXPECT_DOUBLE_EQ(r.allocations_per_step, 1.0);
  EXPECT_DOUBLE_EQ(r.allocated_bytes_per_step, 3000.0);
  EXPECT_DOUBLE_EQ(r.reserved_changes_per_step, 2.0);
  EXPECT_EQ(r.allocator_calls, 2u);
  EXPECT_EQ(r.allocator_free_calls, 1u);
  EXPECT_EQ(r.allocator_call_ns, 6000);
  EXPECT_EQ(r.window_ns, 200000);
}

TEST(Memory, AllocationsBelongToTheEnclosingOperator) {
  const TraceModel m = load_trace_text(kTrace);
  const MemoryResult r = analyze(m);
  ASSERT_EQ(r.top_ops.size(), 2u);
  EXPECT_EQ(r.top_ops[0].name, "aten::mm");
  EXPECT_EQ(r.top_ops[0].allocations, 2u);
  EXPECT_EQ(r.top_ops[0].bytes, 5000);
  EXPECT_EQ(r.top_ops[0].largest, 4000);
  EXPECT_EQ(r.top_ops[1].name, "aten::add");
  EXPECT_EQ(r.top_ops[1].bytes, 3000);
  EXPECT_EQ(r.allocations_without_op, 0u);
}

TEST(Memory, AllocationOnAnotherThreadHasNoOp) {
  // The op runs on thread 1; the allocation happens on thread 2 at a time inside it.
  const TraceModel m = load_trace_text(R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 30},
    {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 2, "ts": 20, "s": "t", "args": {"Device Type": 1, "Device Id": 0, "Bytes": 64, "Total Allocated": 64, "Total Reserved": 2097152}}
  ]})J");
  const MemoryResult r = analyze(m);
  EXPECT_TRUE(r.top_ops.empty());
  EXPECT_EQ(r.allocations_without_op, 1u);
}

TEST(Memory, StepSelectionNarrowsPeaksToTheWindow) {
  const TraceModel m = load_trace_text(kTrace);
  AnalysisOptions options;
  options.first_step = 2;
  const MemoryResult r = analyze(m, options);
  EXPECT_FALSE(r.whole_trace);
  ASSERT_FALSE(r.devices.empty());
  // Only ts 115 and 150 fall in step 2: peak allocated 4000, peak reserved 8000.
  EXPECT_EQ(r.devices[0].peak_allocated, 4000);
  EXPECT_EQ(r.devices[0].peak_reserved, 8000);
  EXPECT_EQ(r.devices[0].events, 2u);
}

TEST(Memory, OldEventsWithoutTotalsStillCountChurn) {
  // torch 1.8-era [memory]: no cat, no totals. Running sum: +100, +50, -100 -> peak net 150.
  const TraceModel m = load_trace_text(R"J({"traceEvents": [
    {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 1, "s": "t", "args": {"Device Type": 1, "Device Id": 0, "Bytes": 100}},
    {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 2, "s": "t", "args": {"Device Type": 1, "Device Id": 0, "Bytes": 50}},
    {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 3, "s": "t", "args": {"Device Type": 1, "Device Id": 0, "Bytes": -100}}
  ]})J");
  const MemoryResult r = analyze(m);
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_FALSE(r.devices[0].has_totals);
  EXPECT_EQ(r.devices[0].peak_allocated, -1);
  EXPECT_EQ(r.devices[0].peak_net_bytes, 150);
  EXPECT_EQ(r.devices[0].allocations, 2u);
}

TEST(Memory, NoMemoryEventsIsNotPresent) {
  const TraceModel m = load_trace_text(R"J({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 30}]})J");
  const MemoryResult r = analyze(m);
  EXPECT_FALSE(r.present);
  EXPECT_TRUE(r.devices.empty());
}

// Independent figures from Python over the raw JSON (CUDA [memory] events sorted by ts):
//   m = sorted([e for e in json.load(gzip.open(f))['traceEvents'] if e.get('name') == '[memory]'
//              and e['args'].get('Device Type') == 1], key=lambda e: e['ts']); a = [e['args'] for e in m]
//   R = max(x['Total Reserved'] for x in a); A = max(x['Total Allocated'] for x in a if x['Total Reserved'] == R)
//   max(x['Total Allocated'] for x in a), R, (R - A) / R, len(a), sum(x['Bytes'] > 0 for x in a),
//   sum(x['Bytes'] for x in a if x['Bytes'] > 0), reserved changes between consecutive events
// Qwen: 2088508416, 2629828608, 0.20583858216, 2250, 1125, 21375221248, 0 changes;
//   time-weighted idle share 0.42049536010, max 0.62554882968 (same loop, weights = next ts - ts).
TEST(CorpusQwenH100, MemoryPeaksMatchPython) {
  FERRET_REQUIRE_CORPUS(path, "h100-qwen0.5b-inference-torch2.json.gz");
  const TraceModel m = load_trace(path);
  const MemoryResult r = analyze(m);
  ASSERT_TRUE(r.present);
  ASSERT_FALSE(r.devices.empty());
  const MemoryDevice& d = r.devices[0];
  EXPECT_EQ(d.device_type, 1);
  EXPECT_EQ(d.capacity_bytes, 85018279936);  // deviceProperties totalGlobalMem
  EXPECT_EQ(d.events, 2250u);
  EXPECT_EQ(d.allocations, 1125u);
  EXPECT_EQ(d.allocated_bytes, 21375221248);
  EXPECT_EQ(d.peak_allocated, 2088508416);
  EXPECT_EQ(d.peak_reserved, 2629828608);
  EXPECT_NEAR(d.fragmentation_at_peak, 0.20583858216, 1e-9);
  EXPECT_NEAR(d.fragmentation_mean, 0.42049536010, 1e-6);
  EXPECT_NEAR(d.fragmentation_max, 0.62554882968, 1e-9);
  EXPECT_EQ(d.reserved_grows + d.reserved_shrinks, 0u);
  EXPECT_NEAR(d.peak_reserved_share, 2629828608.0 / 85018279936.0, 1e-12);
  // Every device allocation is attributed to an op or counted as without one.
  std::uint64_t attributed = r.allocations_without_op;
  for (const MemoryOp& op : r.top_ops) attributed += op.allocations;
  EXPECT_LE(attributed, d.allocations);
  ASSERT_FALSE(r.top_ops.empty());
  for (const MemoryOp& op : r.top_ops) EXPECT_NE(op.name, "aten::empty");
}

// Image classifier, same Python: 231332864, 245366784, (R - A) / R = 0.05719567975, 572 events, 286 allocations.
TEST(CorpusImageClassifierH100, MemoryPeaksMatchPython) {
  FERRET_REQUIRE_CORPUS(path, "h100-image-classifier-inference.json.gz");
  const TraceModel m = load_trace(path);
  const MemoryResult r = analyze(m);
  ASSERT_FALSE(r.devices.empty());
  const MemoryDevice& d = r.devices[0];
  EXPECT_EQ(d.events, 572u);
  EXPECT_EQ(d.allocations, 286u);
  EXPECT_EQ(d.peak_allocated, 231332864);
  EXPECT_EQ(d.peak_reserved, 245366784);
  EXPECT_NEAR(d.fragmentation_at_peak, 0.05719567975, 1e-9);
}

}  // namespace memory_test
}  // namespace
}  // namespace ferret
