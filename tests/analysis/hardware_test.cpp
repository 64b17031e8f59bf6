#include "analysis/device/hardware.h"

#include <gtest/gtest.h>

#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace hardware_test {

HardwareResult analyze(const TraceModel& m, AnalysisOptions options = {}) {
  return analyze_hardware(m, make_analysis_context(m, options));
}

const CopyStats* copy_of(const HardwareResult& r, CopyDirection d, HostMemory h) {
  for (const CopyStats& c : r.copies)
    if (c.direction == d && c.host_memory == h) return &c;
  return nullptr;
}

TEST(Hardware, CopyNamesSayDirectionAndPinning) {
  auto is = [](const char* name, CopyDirection d, HostMemory h) {
    const CopyKind k = parse_copy_name(name);
    EXPECT_EQ(k.direction, d) << name;
    EXPECT_EQ(k.host_memory, h) << name;
  };
  is("Memcpy HtoD (Pageable -> Device)", CopyDirection::kHtoD, HostMemory::kPageable);
  is("Memcpy HtoD (Pinned -> Device)", CopyDirection::kHtoD, HostMemory::kPinned);
  is("Memcpy DtoH (Device -> Pageable)", CopyDirection::kDtoH, HostMemory::kPageable);
  is("Memcpy DtoH (Device -> Pinned)", CopyDirection::kDtoH, HostMemory::kPinned);
  is("Memcpy HtoD (Managed -> Device)", CopyDirection::kHtoD, HostMemory::kManaged);
  is("Memcpy DtoD (Device -> Device)", CopyDirection::kDtoD, HostMemory::kNotHost);
  is("Memcpy PtoP (Device -> Device)", CopyDirection::kPtoP, HostMemory::kNotHost);
  is("Memcpy HtoD (Host -> Device)", CopyDirection::kHtoD, HostMemory::kUnknown);  // ROCm
  is("Memcpy HtoD", CopyDirection::kHtoD, HostMemory::kUnknown);                   // torch 1.8
  is("Memcpy DtoH", CopyDirection::kDtoH, HostMemory::kUnknown);
  is("Memcpy HtoH (Pageable -> Pinned)", CopyDirection::kHtoH, HostMemory::kPageable);
  is("Memset (Device)", CopyDirection::kUnknown, HostMemory::kUnknown);
}

// Device 0 is an "NVIDIA A100-SXM4-80GB" (the vendor datasheets: PCIe4 x16 ~32 GB/s, NVLink3 300 GB/s, HBM
// 2.039 TB/s). No steps: the window is the trace's span, 0-2000 us (the cpu op) = 2,000,000 ns.
// Copies (bytes / duration; GB/s = bytes per ns):
//   HtoD pageable 8,000,000 B / 1,000,000 ns = 8 GB/s -> 8 / 32 = 25% of PCIe4
//   HtoD pinned   5,000,000 B /   200,000 ns = 25 GB/s -> 78.125%
//   DtoH pageable 4 B (small: no large-copy bandwidth)
//   DtoD 100,000,000 B / 100,000 ns = 1000 GB/s vs HBM 2039 GB/s
//   PtoP 20,000,000 B / 100,000 ns = 200 GB/s vs NVLink3 300 -> 2/3
//   HtoD (old name, pinning unknown) 1000 B
//   Memset 4096 B
// Pageable: 2 copies, 8,000,004 B, 1,010,000 ns. Host copy bytes 8,000,000 + 5,000,000 + 4 + 1000.
// NCCL AllReduce, args on the kernel: 10,000,000 Float = 40,000,000 B in 1,000,000 ns = 40 GB/s;
// group 2 -> busbw 40 GB/s = 13.33% of NVLink3.
const char* kTrace = R"J({
  "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85899345920, "computeMajor": 8, "computeMinor": 0, "numSms": 108}],
  "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::copy_", "pid": 1, "tid": 1, "ts": 0, "dur": 2000},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 0, "dur": 1000, "args": {"bytes": 8000000}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7, "ts": 1000, "dur": 200, "args": {"bytes": 5000000}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "pid": 0, "tid": 7, "ts": 1200, "dur": 10, "args": {"bytes": 4}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 0, "tid": 7, "ts": 1300, "dur": 100, "args": {"bytes": 100000000}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy PtoP (Device -> Device)", "pid": 0, "tid": 8, "ts": 1400, "dur": 100, "args": {"bytes": 20000000}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 1500, "dur": 100, "args": {"bytes": 1000}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 0, "tid": 7, "ts": 1550, "dur": 5},
  {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 1600, "dur": 10, "args": {"bytes": 4096}},
  {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(x)", "pid": 0, "tid": 20, "ts": 1000, "dur": 1000,
   "args": {"Collective name": "allreduce", "In msg nelems": 10000000, "Out msg nelems": 10000000, "Group size": 2, "dtype": "Float"}}
]})J";

TEST(Hardware, CopyBandwidthAgainstTheLinks) {
  const TraceModel m = load_trace_text(kTrace);
  const HardwareResult r = analyze(m);
  EXPECT_EQ(r.window_ns, 2000000);
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].gpu_model, "A100 SXM 80GB");
  EXPECT_EQ(r.devices[0].host_link, "PCIe4 x16");
  EXPECT_DOUBLE_EQ(r.devices[0].host_link_gbps, 32);
  EXPECT_DOUBLE_EQ(r.devices[0].scale_up_gbps, 300);
  EXPECT_DOUBLE_EQ(r.devices[0].hbm_gbps, 2039);

  const CopyStats* pageable = copy_of(r, CopyDirection::kHtoD, HostMemory::kPageable);
  ASSERT_NE(pageable, nullptr);
  EXPECT_EQ(pageable->count, 1u);
  EXPECT_EQ(pageable->bytes, 8000000);
  EXPECT_DOUBLE_EQ(pageable->achieved_gbps, 8.0);
  EXPECT_EQ(pageable->large_count, 1u);
  EXPECT_DOUBLE_EQ(pageable->large_gbps, 8.0);
  EXPECT_EQ(pageable->link, "PCIe4 x16");
  EXPECT_DOUBLE_EQ(pageable->large_efficiency, 0.25);

  const CopyStats* pinned = copy_of(r, CopyDirection::kHtoD, HostMemory::kPinned);
  ASSERT_NE(pinned, nullptr);
  EXPECT_DOUBLE_EQ(pinned->large_gbps, 25.0);
  EXPECT_DOUBLE_EQ(pinned->large_efficiency, 25.0 / 32.0);

  const CopyStats* dtoh = copy_of(r, CopyDirection::kDtoH, HostMemory::kPageable);
  ASSERT_NE(dtoh, nullptr);
  EXPECT_EQ(dtoh->large_count, 0u);
  EXPECT_LT(dtoh->large_efficiency, 0);  // 4 bytes say nothing about the link

  const CopyStats* dtod = copy_of(r, CopyDirection::kDtoD, HostMemory::kNotHost);
  ASSERT_NE(dtod, nullptr);
  EXPECT_EQ(dtod->count, 2u);
  EXPECT_EQ(dtod->count_without_bytes, 1u);
  EXPECT_DOUBLE_EQ(dtod->large_gbps, 1000.0);
  EXPECT_EQ(dtod->link, "HBM");
  EXPECT_DOUBLE_EQ(dtod->large_efficiency, 1000.0 / 2039.0);

  const CopyStats* p2p = copy_of(r, CopyDirection::kPtoP, HostMemory::kNotHost);
  ASSERT_NE(p2p, nullptr);
  EXPECT_EQ(p2p->link, "NVLink3");
  EXPECT_DOUBLE_EQ(p2p->large_efficiency, 200.0 / 300.0);

  const CopyStats* old_name = copy_of(r, CopyDirection::kHtoD, HostMemory::kUnknown);
  ASSERT_NE(old_name, nullptr);
  EXPECT_EQ(old_name->bytes, 1000);

  EXPECT_EQ(r.pageable_count, 2u);
  EXPECT_EQ(r.pageable_bytes, 8000004);
  EXPECT_EQ(r.pageable_time_ns, 1010000);
  EXPECT_EQ(r.pinned_bytes, 5000000);
  EXPECT_EQ(r.host_copy_bytes, 13001004);
  ASSERT_EQ(r.memsets.size(), 1u);
  EXPECT_EQ(r.memsets[0].count, 1u);
  EXPECT_EQ(r.memsets[0].bytes, 4096);
}

TEST(Hardware, NcclBusBandwidthAgainstNvlink) {
  const TraceModel m = load_trace_text(kTrace);
  const HardwareResult r = analyze(m);
  ASSERT_EQ(r.nccl.size(), 1u);
  const NcclLinkUse& u = r.nccl[0];
  EXPECT_EQ(u.kind, Collective::kAllReduce);
  EXPECT_EQ(u.group_size, 2);
  EXPECT_EQ(u.calls, 1u);
  EXPECT_DOUBLE_EQ(u.busbw_gbps, 40.0);
  EXPECT_DOUBLE_EQ(u.best_large_busbw_gbps, 40.0);
  EXPECT_EQ(u.best_large_bytes, 40000000);
  EXPECT_EQ(u.best_large_protocol, "LL");
  EXPECT_EQ(u.link, "NVLink3");
  EXPECT_DOUBLE_EQ(u.best_large_efficiency, 40.0 / 300.0);
}

TEST(Hardware, UnknownGpuLeavesPeaksUnknown) {
  const TraceModel m = load_trace_text(R"J({
    "deviceProperties": [{"id": 0, "name": "AMD Radeon Graphics", "totalGlobalMem": 17163091968, "computeMajor": 11, "computeMinor": 0, "numSms": 48}],
    "traceEvents": [
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7, "ts": 0, "dur": 100, "args": {"bytes": 4000000}}
  ]})J");
  const HardwareResult r = analyze(m);
  ASSERT_EQ(r.copies.size(), 1u);
  EXPECT_DOUBLE_EQ(r.copies[0].large_gbps, 40.0);
  EXPECT_LT(r.copies[0].peak_gbps, 0);
  EXPECT_LT(r.copies[0].large_efficiency, 0);
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_TRUE(r.devices[0].gpu_model.empty());
  EXPECT_FALSE(r.devices[0].match_note.empty());
}

// Independent figures (Python over the raw JSON: c = [e for e in traceEvents if e.get('cat') == 'Memcpy']):
//   12 "Memcpy HtoD (Pageable -> Device)" copies, all inside ProfilerStep#5-10: 6 of 19,267,584 bytes
//   (the image batch) and 6 of 256 (the labels); 115,607,040 bytes in 11,492 us. The 6 large ones:
//   115,605,504 B in 11,486 us = 10.0649 GB/s (sum(bytes >= 1 MiB) / sum(their dur) / 1e3).
//   Tesla V100-DGXS -> the V100 SXM2 row: PCIe3 x16, 16 GB/s.
TEST(CorpusResNet50V100, PageableInputCopies) {
  FERRET_REQUIRE_CORPUS(path, "resnet50-v100-torch19-dataloader.pt.trace.json.gz");
  const TraceModel m = load_trace(path);
  const HardwareResult r = analyze(m);
  const CopyStats* c = copy_of(r, CopyDirection::kHtoD, HostMemory::kPageable);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->count, 12u);
  EXPECT_EQ(c->bytes, 115607040);
  EXPECT_EQ(c->time_ns, 11492000);
  EXPECT_EQ(c->large_count, 6u);
  EXPECT_NEAR(c->large_gbps, 10.064905450, 1e-6);
  EXPECT_EQ(c->link, "PCIe3 x16");
  EXPECT_DOUBLE_EQ(c->peak_gbps, 16);
  EXPECT_EQ(r.pageable_bytes, 115607040);
}

}  // namespace hardware_test
}  // namespace
}  // namespace ferret
