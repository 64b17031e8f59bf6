// The memory text reader on fixtures written from each layout torch prints (tests/data/memory/:
// memory_summary() of torch 1.x and 2.x, out-of-memory messages of 1.x, 2.x, 2.1's "capacty", HIP,
// wrapped inside a traceback, two summaries in one log) and on broken text: every number below is
// computed by hand from the fixture's text.
#include "ingest/memory/memory_text_reader.h"

#include <gtest/gtest.h>

#include <string>

#include "base/input_error.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace memory_text_reader_test {

constexpr std::int64_t kKiB = 1024;
constexpr std::int64_t kMiB = kKiB * 1024;
constexpr std::int64_t kGiB = kMiB * 1024;

std::string fixture(const std::string& name) { return std::string(FERRET_SOURCE_DIR) + "/tests/data/memory/" + name; }

MemoryText read_text(const std::string& name) {
  const MemoryInput in = read_memory_input(fixture(name));
  EXPECT_FALSE(in.is_snapshot);
  return in.text;
}

TEST(MemoryTextReader, Torch1SummaryWithBinaryKbUnits) {
  const MemoryText t = read_text("summary-torch1.txt");
  ASSERT_EQ(t.summaries.size(), 1u);
  EXPECT_TRUE(t.ooms.empty());
  const MemorySummary& s = t.summaries[0];
  EXPECT_EQ(s.line, 1u);
  EXPECT_EQ(s.device, 0);
  EXPECT_EQ(s.ooms, 0);
  EXPECT_EQ(s.alloc_retries, 3);
  EXPECT_TRUE(s.complete);
  EXPECT_TRUE(s.binary_kb);  // "MB", "GB": torch 1.x's names for powers of 1024
  EXPECT_EQ(s.bad_cells, 0u);
  const SummaryRows& a = s.row(SummaryMetric::kAllocated);
  EXPECT_EQ(a.all.current, 4096 * kMiB);
  EXPECT_EQ(a.all.peak, 12288 * kMiB);
  EXPECT_EQ(a.all.allocated, 3072 * kGiB);
  EXPECT_EQ(a.all.freed, 3068 * kGiB);
  EXPECT_EQ(a.large_pool.current, 4000 * kMiB);
  EXPECT_EQ(a.small_pool.peak, 88 * kMiB);
  EXPECT_FALSE(s.row(SummaryMetric::kRequested).present);  // no such row before torch 2.x
  EXPECT_FALSE(s.row(SummaryMetric::kOversizeAllocations).present);
  EXPECT_EQ(s.row(SummaryMetric::kReserved).all.peak, 15872 * kMiB);
  EXPECT_EQ(s.row(SummaryMetric::kReserved).small_pool.freed, 0);  // "0 B"
  // Counts: "9000 K" is 9,000 x 1,000 (torch floor-divides counts past 750,000).
  EXPECT_EQ(s.row(SummaryMetric::kAllocations).all.allocated, 9'000'000);
  EXPECT_EQ(s.row(SummaryMetric::kAllocations).all.current, 1200);
  EXPECT_EQ(s.row(SummaryMetric::kSegments).all.allocated, 84);
  EXPECT_EQ(s.row(SummaryMetric::kSegments).all.freed, 24);
  EXPECT_TRUE(t.notes.empty()) << t.notes.front();
}

TEST(MemoryTextReader, Torch2SummaryWithRequestedAndOversizeRows) {
  const MemoryText t = read_text("summary-torch2.txt");
  ASSERT_EQ(t.summaries.size(), 1u);
  const MemorySummary& s = t.summaries[0];
  EXPECT_EQ(s.device, 1);
  EXPECT_EQ(s.alloc_retries, 0);
  EXPECT_FALSE(s.binary_kb);
  EXPECT_TRUE(s.complete);
  EXPECT_EQ(s.row(SummaryMetric::kRequested).all.current, 2000 * kMiB);
  EXPECT_EQ(s.row(SummaryMetric::kRequested).small_pool.allocated, 98 * kGiB);
  EXPECT_EQ(s.row(SummaryMetric::kReserved).all.allocated, 40960 * kMiB);
  EXPECT_EQ(s.row(SummaryMetric::kSegments).all.allocated, 400);
  EXPECT_EQ(s.row(SummaryMetric::kSegments).all.peak, 8);
  ASSERT_TRUE(s.row(SummaryMetric::kOversizeSegments).present);
  EXPECT_EQ(s.row(SummaryMetric::kOversizeSegments).all.current, 0);
  EXPECT_EQ(s.row(SummaryMetric::kOversizeSegments).large_pool.current, -1);  // no pool rows for oversize
}

TEST(MemoryTextReader, TwoAbbreviatedSummariesInALogKeepTheirLines) {
  const MemoryText t = read_text("two-summaries.log");
  ASSERT_EQ(t.summaries.size(), 2u);
  // Line 3 and line 34 hold the top borders (29 lines per abbreviated box: 6 of header, 2 per
  // metric for 11 metrics, the closing border; then two log lines).
  EXPECT_EQ(t.summaries[0].line, 3u);
  EXPECT_EQ(t.summaries[1].line, 34u);
  EXPECT_EQ(t.summaries[0].row(SummaryMetric::kAllocated).all.current, 1024 * kMiB);
  EXPECT_EQ(t.summaries[1].row(SummaryMetric::kAllocated).all.current, 3584 * kMiB);
  EXPECT_EQ(t.summaries[1].row(SummaryMetric::kAllocated).large_pool.current, -1);  // abbreviated
  EXPECT_TRUE(t.summaries[1].complete);
  EXPECT_EQ(t.lines, 63u);
}

TEST(MemoryTextReader, Torch1OomMessageInATraceback) {
  const MemoryText t = read_text("oom-torch1.log");
  ASSERT_EQ(t.ooms.size(), 1u);
  const OomMessage& o = t.ooms[0];
  EXPECT_EQ(o.line, 9u);
  EXPECT_EQ(o.backend, "CUDA");
  EXPECT_EQ(o.exception, "RuntimeError");
  EXPECT_FALSE(o.torch2_wording);
  EXPECT_EQ(o.device, 0);
  EXPECT_EQ(o.requested, 20 * kMiB);
  // Two decimals of a binary unit: 15.78 x 2^30 = 16943645982.72 -> 16943645983 bytes.
  EXPECT_EQ(o.total_capacity, 16943645983);
  EXPECT_EQ(o.allocated, 15633680957);          // 14.56 x 2^30 = 15633680957.44
  EXPECT_EQ(o.device_free, 3607101);            // 3.44 x 2^20 = 3607101.44
  EXPECT_EQ(o.reserved, 15698105467);           // 14.62 x 2^30 = 15698105466.88
  EXPECT_EQ(o.reserved_unallocated, 64424510);  // reserved - allocated
  EXPECT_EQ(o.process_in_use, -1);              // torch 1.x does not say
}

TEST(MemoryTextReader, Torch2OomMessageWithAnotherProcess) {
  const MemoryText t = read_text("oom-torch2.log");
  ASSERT_EQ(t.ooms.size(), 1u);
  const OomMessage& o = t.ooms[0];
  EXPECT_TRUE(o.torch2_wording);
  EXPECT_EQ(o.exception, "torch.OutOfMemoryError");
  EXPECT_EQ(o.requested, 2 * kGiB);
  EXPECT_EQ(o.total_capacity, 84986665370);  // 79.15 x 2^30 = 84986665369.6
  EXPECT_EQ(o.device_free, 256 * kMiB);
  EXPECT_EQ(o.process_in_use, 71833328026);  // 66.90 x 2^30 = 71833328025.6
  EXPECT_EQ(o.allocated, 67774583931);       // 63.12 x 2^30 = 67774583930.88
  EXPECT_EQ(o.reserved_unallocated, 3 * kGiB / 2);
  EXPECT_EQ(o.reserved, 67774583931 + 3 * kGiB / 2);
  ASSERT_EQ(o.processes.size(), 1u);
  EXPECT_EQ(o.processes[0].pid, 1234);
  EXPECT_EQ(o.self_index, -1);  // "this process" is named
  EXPECT_EQ(o.other_processes(), 1u);
  EXPECT_EQ(o.other_processes_bytes(), 12 * kGiB);
}

TEST(MemoryTextReader, HipMessageWithTorch21TypoAndThisProcessListedByPid) {
  const MemoryText t = read_text("oom-hip.log");
  ASSERT_EQ(t.ooms.size(), 1u);
  const OomMessage& o = t.ooms[0];
  EXPECT_EQ(o.backend, "HIP");
  EXPECT_EQ(o.exception, "torch.cuda.OutOfMemoryError");
  EXPECT_EQ(o.device, 3);
  EXPECT_EQ(o.requested, 1024 * kMiB);
  EXPECT_EQ(o.total_capacity, 68698001900);          // "capacty": 63.98 x 2^30 = 68698001899.52
  EXPECT_EQ(o.device_free, 0);                       // "0 bytes"
  EXPECT_EQ(o.reserved, 52 * kGiB + 23 * kGiB / 2);  // 52.00 + 11.50 GiB
  // No "this process" line (a container's pid namespace): Process 5678 holds 63.97 GiB >= the
  // 63.50 GiB PyTorch reserved, so it is this process and no other process remains.
  EXPECT_EQ(o.self_index, 0);
  EXPECT_EQ(o.process_in_use, 68687264481);  // 63.97 x 2^30 = 68687264481.28
  EXPECT_EQ(o.other_processes(), 0u);
  EXPECT_EQ(o.other_processes_bytes(), 0);
}

TEST(MemoryTextReader, WrappedMessageWithPrivatePoolsAndItsRepeat) {
  const MemoryText t = read_text("oom-in-traceback.log");
  ASSERT_EQ(t.ooms.size(), 1u);  // the logger's copy on line 13 is the same event
  const OomMessage& o = t.ooms[0];
  EXPECT_EQ(o.line, 10u);
  EXPECT_EQ(o.lines, 3u);
  EXPECT_EQ(o.repeats, 2u);
  EXPECT_EQ(o.requested, 8 * kGiB);
  EXPECT_EQ(o.total_capacity, 42294690447);  // 39.39 x 2^30 = 42294690447.36
  EXPECT_EQ(o.device_free, 5 * kGiB / 4);
  EXPECT_EQ(o.process_in_use, 40941775749);  // 38.13 x 2^30 = 40941775749.12
  EXPECT_EQ(o.allocated, 34 * kGiB);         // private pools included, as torch prints it
  EXPECT_EQ(o.private_pools, 4 * kGiB);
  EXPECT_EQ(o.reserved_unallocated, 512 * kMiB);
  EXPECT_EQ(o.reserved, 34 * kGiB + 512 * kMiB);
}

// ---- broken text ----------------------------------------------------------------------------------

std::string fixture_text(const std::string& name) { return test::read_file(fixture(name)); }

TEST(MemoryTextReader, TruncatedSummaryKeepsItsRowsAndSaysSo) {
  const std::string whole = fixture_text("summary-torch2.txt");
  // Cut after the "GPU reserved memory" row's pool rows: the first 22 lines (7 of header and
  // border, then 4 per metric: Allocated, Active, Requested, GPU reserved).
  std::size_t at = 0;
  for (int i = 0; i < 22; ++i) at = whole.find('\n', at) + 1;
  const MemoryText t = parse_memory_text(whole.substr(0, at) + "step 12 done\n", "cut.txt");
  ASSERT_EQ(t.summaries.size(), 1u);
  EXPECT_FALSE(t.summaries[0].complete);
  EXPECT_EQ(t.summaries[0].row(SummaryMetric::kReserved).all.current, 10240 * kMiB);
  EXPECT_FALSE(t.summaries[0].row(SummaryMetric::kSegments).present);
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_NE(t.notes[0].find("1 x memory summary cut short"), std::string::npos) << t.notes[0];
  EXPECT_NE(t.notes[0].find("line 23"), std::string::npos) << t.notes[0];  // the log line that ends it
}

TEST(MemoryTextReader, MalformedCellsAreMissingAndCountedWithTheirLine) {
  std::string text = fixture_text("summary-torch2.txt");
  const std::string good = "|   2048 MiB |   3072 MiB |";
  ASSERT_NE(text.find(good), std::string::npos);
  text.replace(text.find(good), good.size(), "|   20x8 MiB |   3072 QiB |");
  const MemoryText t = parse_memory_text(text, "bad.txt");
  ASSERT_EQ(t.summaries.size(), 1u);
  const MemorySummary& s = t.summaries[0];
  EXPECT_EQ(s.bad_cells, 2u);
  EXPECT_EQ(s.row(SummaryMetric::kAllocated).all.current, -1);
  EXPECT_EQ(s.row(SummaryMetric::kAllocated).all.peak, -1);
  EXPECT_EQ(s.row(SummaryMetric::kAllocated).all.allocated, 1500 * kGiB);  // the rest of the row stands
  ASSERT_EQ(t.notes.size(), 1u);
  EXPECT_NE(t.notes[0].find("2 x memory summary cell not a size"), std::string::npos) << t.notes[0];
  EXPECT_NE(t.notes[0].find("line 8: \"20x8 MiB\""), std::string::npos) << t.notes[0];
}

// Sizes past 2^50 bytes (1 PiB) are no device's memory: unreadable (-1) and counted, never
// saturated to 8 EiB (which raised findings) nor wrapped.
TEST(MemoryTextReader, HugeLinesAreCutAndCountedAndHugeNumbersAreUnreadable) {
  const std::string huge(1 << 20, 'x');
  const MemoryText t = parse_memory_text(
      huge +
          "\nCUDA out of memory. Tried to allocate 99999999999999999999 GiB (GPU 0; 1e9 GiB total capacity; "
          "99999999999.00 PiB already allocated; 0 bytes free; 1.00 GiB reserved in total by PyTorch)\n",
      "huge.log");
  EXPECT_EQ(t.long_lines, 1u);
  ASSERT_EQ(t.ooms.size(), 1u);
  EXPECT_EQ(t.ooms[0].requested, -1);       // past int64
  EXPECT_EQ(t.ooms[0].allocated, -1);       // under int64, over 2^50
  EXPECT_EQ(t.ooms[0].total_capacity, -1);  // "1e9" is not a size torch prints
  EXPECT_EQ(t.ooms[0].reserved, kGiB);
  EXPECT_EQ(t.ooms[0].reserved_unallocated, -1);  // reserved less an unknown
  std::string notes;
  for (const std::string& n : t.notes) notes += n + "\n";
  EXPECT_NE(notes.find("1 lines over 64 KiB"), std::string::npos) << notes;
  EXPECT_NE(notes.find("1 x size over 2^50 bytes (1 PiB), no device's memory, taken as unreadable"), std::string::npos)
      << notes;
}

TEST(MemoryTextReader, AFileWithNeitherIsAnErrorNamingItAndWhatWasLookedFor) {
  try {
    (void)read_memory_input_bytes("epoch 1 loss 0.3\nepoch 2 loss 0.2\n", "train.log");
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("train.log: neither an allocator snapshot"), std::string::npos) << what;
    EXPECT_NE(what.find("PyTorch CUDA memory summary, device ID"), std::string::npos) << what;
    EXPECT_NE(what.find("out of memory. Tried to allocate"), std::string::npos) << what;
    EXPECT_NE(what.find("2 lines read"), std::string::npos) << what;
  }
  EXPECT_THROW((void)read_memory_input_bytes("", "empty.txt"), InputError);
  // A pickle's first byte sends it to the snapshot reader, whose errors stay its own.
  EXPECT_THROW((void)read_memory_input_bytes(std::string("\x80\x04", 2), "cut.pickle"), InputError);
}

TEST(MemoryTextReader, EveryTruncationOfAFixtureReadsWithoutThrowingOnContent) {
  for (const char* name : {"oom-in-traceback.log", "two-summaries.log"}) {
    const std::string whole = fixture_text(name);
    for (std::size_t n = 0; n <= whole.size(); n += 7) {
      const MemoryText t = parse_memory_text(whole.substr(0, n), name);
      EXPECT_LE(t.summaries.size(), 2u);
      EXPECT_LE(t.ooms.size(), 2u);  // a repeat cut short says other numbers: a message of its own
    }
  }
}

}  // namespace memory_text_reader_test
}  // namespace
}  // namespace ferret
