// rules_memory_text on hand-made summaries and out-of-memory messages: each rule fires just past
// its threshold and stays silent just short of it (the thresholds in docs/RULES.md).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "diagnosis/memory/rules_allocator.h"

namespace ferret {
namespace {
namespace rules_memory_text_test {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

std::vector<std::string> ids_of(const MemoryText& t) {
  std::vector<Finding> found;
  rules_memory_text(t, found);
  std::vector<std::string> ids;
  for (const Finding& f : found) ids.push_back(f.id);
  return ids;
}

const Finding* find(const std::vector<Finding>& found, const std::string& id) {
  for (const Finding& f : found)
    if (f.id == id) return &f;
  return nullptr;
}

// A summary taken between steps: 8 GiB held, 12 GiB at the peak, 20 GiB reserved then and now, a
// cache refilled once (segments: 40 held, 40 allocated in all).
MemorySummary quiet_summary() {
  MemorySummary s;
  s.line = 1;
  s.device = 0;
  s.ooms = 0;
  s.alloc_retries = 0;
  s.complete = true;
  SummaryRows& a = s.row(SummaryMetric::kAllocated);
  a.present = true;
  a.all = {8 * kGiB, 12 * kGiB, 900 * kGiB, 892 * kGiB};
  SummaryRows& r = s.row(SummaryMetric::kReserved);
  r.present = true;
  r.all = {20 * kGiB, 20 * kGiB, 20 * kGiB, 0};
  SummaryRows& seg = s.row(SummaryMetric::kSegments);
  seg.present = true;
  seg.all = {40, 40, 40, 0};
  return s;
}

MemoryText with(const MemorySummary& s) {
  MemoryText t;
  t.summaries.push_back(s);
  return t;
}

TEST(RulesMemoryText, AQuietSummaryFiresNothing) {
  // transient 4 of 12 GiB = 33% < 50%; no retry; reserved 20 < 2 x 12 GiB; no segment freed.
  EXPECT_TRUE(ids_of(with(quiet_summary())).empty());
}

TEST(RulesMemoryText, FragmentationNeedsARetryAndAGapAtThePeak) {
  MemorySummary s = quiet_summary();
  s.alloc_retries = 1;
  s.row(SummaryMetric::kAllocated).all.current = 10 * kGiB;  // transient at most 6 of 16 GiB: no activation finding
  // Gap at the peak: 20 - 12 = 8 GiB, 40% of 20 GiB: fires.
  EXPECT_EQ(ids_of(with(s)), std::vector<std::string>{"summary-fragmentation"});
  // Peak allocated 16.1 GiB: gap 3.9 GiB = 19.5% < 20%: silent.
  s.row(SummaryMetric::kAllocated).all.peak = 16 * kGiB + 100 * kMiB;
  EXPECT_TRUE(ids_of(with(s)).empty());
  // 20% exactly (16 of 20 GiB) fires; with an OOM it is high.
  s.row(SummaryMetric::kAllocated).all.peak = 16 * kGiB;
  s.ooms = 2;
  std::vector<Finding> found;
  rules_memory_text(with(s), found);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].severity, Severity::kHigh);
  EXPECT_NE(found[0].title.find("(summary at line 1)"), std::string::npos) << found[0].title;
  // Without a retry the same gap is silent.
  s.alloc_retries = 0;
  EXPECT_TRUE(ids_of(with(s)).empty());
}

TEST(RulesMemoryText, ActivationsDominatingThePeak) {
  MemorySummary s = quiet_summary();
  s.row(SummaryMetric::kAllocated).all.current = 6 * kGiB;  // 6 of 12 GiB transient: 50%, fires
  std::vector<Finding> found;
  rules_memory_text(with(s), found);
  const Finding* f = find(found, "summary-activation-peak");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence[2].value, static_cast<double>(6 * kGiB));  // transient_bytes
  EXPECT_DOUBLE_EQ(f->evidence[3].value, 50.0);
  s.row(SummaryMetric::kAllocated).all.current = 6 * kGiB + kMiB;  // 49.99%: silent
  EXPECT_TRUE(ids_of(with(s)).empty());
  // Small models: 0.9 of 1 GiB transient is under the 1 GiB floor.
  s.row(SummaryMetric::kAllocated).all = {kGiB / 10, kGiB, kGiB, 0};
  s.row(SummaryMetric::kReserved).all = {kGiB, kGiB, kGiB, 0};
  EXPECT_TRUE(ids_of(with(s)).empty());
}

TEST(RulesMemoryText, SegmentChurn) {
  MemorySummary s = quiet_summary();
  // 200 cudaMalloc'd for at most 40 held: 5 refills, 160 freed: fires (low: < 20x).
  s.row(SummaryMetric::kSegments).all = {40, 40, 200, 160};
  std::vector<Finding> found;
  rules_memory_text(with(s), found);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].id, "summary-segment-churn");
  EXPECT_EQ(found[0].severity, Severity::kLow);
  s.row(SummaryMetric::kSegments).all = {40, 40, 199, 159};  // 4.975x: silent
  EXPECT_TRUE(ids_of(with(s)).empty());
  s.row(SummaryMetric::kSegments).all = {2, 8, 60, 49};  // 7.5x but 49 freed < 50: silent
  EXPECT_TRUE(ids_of(with(s)).empty());
  s.row(SummaryMetric::kSegments).all = {0, 8, 400, 400};  // right after empty_cache(): 50x, medium
  found.clear();
  rules_memory_text(with(s), found);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].severity, Severity::kMedium);
}

TEST(RulesMemoryText, CacheHeldAbovePeak) {
  MemorySummary s = quiet_summary();
  s.row(SummaryMetric::kReserved).all.current = 24 * kGiB;  // 2 x 12 GiB, 12 GiB idle: fires
  std::vector<Finding> found;
  rules_memory_text(with(s), found);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].id, "summary-cached-memory");
  EXPECT_EQ(found[0].severity, Severity::kMedium);  // >= 4 GiB idle
  EXPECT_NE(found[0].detail.find("empty_cache() helps"), std::string::npos);
  EXPECT_NE(found[0].detail.find("It hurts in the training loop"), std::string::npos);
  s.row(SummaryMetric::kReserved).all.current = 24 * kGiB - kMiB;  // just under 2x: silent
  EXPECT_TRUE(ids_of(with(s)).empty());
}

TEST(RulesMemoryText, OnlyTheLastSummaryOfEachDeviceIsJudged) {
  MemorySummary first = quiet_summary();
  first.row(SummaryMetric::kAllocated).all.current = kGiB;  // 11 of 12 GiB transient
  MemorySummary last = quiet_summary();
  last.line = 80;
  MemoryText t = with(first);
  t.summaries.push_back(last);
  EXPECT_TRUE(ids_of(t).empty());
  last.device = 1;  // another device: both are judged
  t.summaries[1] = last;
  EXPECT_EQ(ids_of(t), std::vector<std::string>{"summary-activation-peak"});
}

OomMessage oom(std::int64_t requested, std::int64_t allocated, std::int64_t unallocated) {
  OomMessage o;
  o.line = 7;
  o.backend = "CUDA";
  o.device = 0;
  o.requested = requested;
  o.total_capacity = 80 * kGiB;
  o.device_free = 100 * kMiB;
  o.allocated = allocated;
  o.reserved_unallocated = unallocated;
  o.reserved = allocated + unallocated;
  return o;
}

TEST(RulesMemoryText, OomClassifiedAsForSnapshots) {
  MemoryText t;
  t.ooms.push_back(oom(2 * kGiB, 70 * kGiB, 2 * kGiB));  // unallocated = requested: fragmentation
  EXPECT_EQ(ids_of(t), std::vector<std::string>{"oom-fragmentation"});
  t.ooms[0].reserved_unallocated = 2 * kGiB - 1;
  EXPECT_EQ(ids_of(t), std::vector<std::string>{"oom-capacity"});
  // A request larger than the device: capacity, and the detail says no setting helps.
  t.ooms[0] = oom(100 * kGiB, 1 * kGiB, 0);
  std::vector<Finding> found;
  rules_memory_text(t, found);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].detail.find("larger than the device's 80.0 GiB"), std::string::npos) << found[0].detail;
  // Two devices: one finding each, from each device's last message.
  t.ooms[0] = oom(2 * kGiB, 70 * kGiB, 3 * kGiB);
  t.ooms.push_back(oom(2 * kGiB, 70 * kGiB, 0));
  t.ooms[1].device = 1;
  t.ooms.push_back(oom(2 * kGiB, 70 * kGiB, 0));  // device 0 again, last: capacity
  t.ooms[2].repeats = 3;
  found.clear();
  rules_memory_text(t, found);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].id, "oom-capacity");
  EXPECT_EQ(found[0].evidence.back().value, 4.0);  // 1 + 3 messages on device 0
  EXPECT_EQ(found[1].id, "oom-capacity");
  // Without what PyTorch held, a message is not classified.
  t.ooms = {oom(kGiB, -1, -1)};
  EXPECT_TRUE(ids_of(t).empty());
}

TEST(RulesMemoryText, OtherProcessesFromTenPercentOfTheDevice) {
  MemoryText t;
  t.ooms.push_back(oom(2 * kGiB, 60 * kGiB, 0));
  t.ooms[0].processes = {{1234, 8 * kGiB}};  // exactly 10% of 80 GiB; free + 8 GiB >= 2 GiB
  std::vector<Finding> found;
  rules_memory_text(t, found);
  // They explain the OOM: their finding comes first and high; capacity drops to medium and names them.
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].id, "oom-other-processes");
  EXPECT_EQ(found[0].severity, Severity::kHigh);
  EXPECT_DOUBLE_EQ(found[0].evidence[2].value, 10.0);
  EXPECT_EQ(found[1].id, "oom-capacity");
  EXPECT_EQ(found[1].severity, Severity::kMedium);
  EXPECT_NE(found[1].detail.find("Other processes held 8.0 GiB of the device: without them the request would have fit"),
            std::string::npos)
      << found[1].detail;
  t.ooms[0].processes = {{1234, 8 * kGiB - kMiB}};
  EXPECT_EQ(ids_of(t), std::vector<std::string>{"oom-capacity"});
  found.clear();
  rules_memory_text(t, found);
  EXPECT_EQ(found[0].severity, Severity::kHigh);  // under 10%: this job's own capacity problem
  // Medium when even without them the request would not fit: 9 GiB requested, 0.1 + 8.5 free; then
  // capacity stays high and says nothing of them.
  t.ooms[0] = oom(9 * kGiB, 60 * kGiB, 0);
  t.ooms[0].processes = {{1, 8 * kGiB + kGiB / 2}};
  found.clear();
  rules_memory_text(t, found);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].id, "oom-other-processes");
  EXPECT_EQ(found[0].severity, Severity::kMedium);
  EXPECT_EQ(found[1].severity, Severity::kHigh);
  EXPECT_EQ(found[1].detail.find("Other processes"), std::string::npos) << found[1].detail;
  // The listed process taken as this one does not count.
  t.ooms[0].self_index = 0;
  EXPECT_EQ(ids_of(t), std::vector<std::string>{"oom-capacity"});
}

}  // namespace rules_memory_text_test
}  // namespace
}  // namespace ferret
