// The snapshot converter on hand-made pickles: what a sound segment reads as, and what it does
// with fields of the wrong type or past plausibility (each counted in the notes, none trusted).
#include "ingest/allocator_snapshot_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pickle_writer.h"

namespace ferret {
namespace {
namespace allocator_snapshot_reader_test {

using namespace test::pickle_writer;

bool has_note(const AllocatorSnapshot& s, const std::string& part) {
  for (const std::string& n : s.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

std::string two_blocks() {
  return p_list(
      {p_block(30 << 20, "active_allocated", p_list({p_frame("train.py", "forward")})), p_block(10 << 20, "inactive")});
}

TEST(AllocatorSnapshotReader, ASoundSegmentReadsFieldByField) {
  const AllocatorSnapshot s =
      read_allocator_snapshot_bytes(p_snapshot({p_segment(p_int(3), p_int(40 << 20), two_blocks())}), "t.pickle");
  ASSERT_EQ(s.segments.size(), 1u);
  const SnapshotSegment& seg = s.segments[0];
  EXPECT_EQ(seg.device, 3);
  EXPECT_EQ(seg.total_size, 40 << 20);
  EXPECT_EQ(seg.address, 1 << 30);
  EXPECT_EQ(seg.segment_type, "large");
  EXPECT_EQ(seg.pool, "0,0");
  ASSERT_EQ(seg.blocks.size(), 2u);
  EXPECT_EQ(seg.blocks[0].size, 30 << 20);
  EXPECT_EQ(seg.blocks[0].requested_size, (30 << 20) - 100);
  EXPECT_EQ(seg.blocks[0].state, BlockState::kActiveAllocated);
  ASSERT_EQ(seg.blocks[0].frames.size(), 1u);
  EXPECT_EQ(seg.blocks[0].frames[0].filename, "train.py");
  EXPECT_EQ(seg.blocks[0].frames[0].line, 42);
  EXPECT_EQ(seg.blocks[1].state, BlockState::kInactive);
  EXPECT_TRUE(s.notes.empty());
}

TEST(AllocatorSnapshotReader, DeviceIndexesOutsideAnyMachineAreSkippedAndCounted) {
  for (const std::string& device :
       {p_int(-1), p_int(65536), p_int(std::int64_t{1} << 40), p_str("cuda:0"), p_two_to_64()}) {
    const AllocatorSnapshot s = read_allocator_snapshot_bytes(
        p_snapshot({p_segment(p_int(0), p_int(1 << 20), "]"), p_segment(device, p_int(1 << 20), "]")}), "t.pickle");
    ASSERT_EQ(s.segments.size(), 1u);  // the sound one
    EXPECT_EQ(s.segments[0].device, 0);
    EXPECT_TRUE(has_note(s, "1 x segment whose \"device\" is not an index from 0 to 65535, skipped"));
  }
  // No "device" key at all is device 0 (torch 1.13 single-device snapshots), not damage.
  const AllocatorSnapshot s = read_allocator_snapshot_bytes(
      p_pickle(p_dict({{"segments", p_list({p_dict({{"total_size", p_int(1 << 20)}})})}})), "t.pickle");
  ASSERT_EQ(s.segments.size(), 1u);
  EXPECT_EQ(s.segments[0].device, 0);
  EXPECT_TRUE(s.notes.empty());
}

TEST(AllocatorSnapshotReader, ImplausibleSizesAreUnreadableNotSummed) {
  const std::string two_to_64 = p_two_to_64();
  for (const std::string& total : {two_to_64, p_int((std::int64_t{1} << 50) + 1), p_float(1e300), p_int(-5)}) {
    const AllocatorSnapshot s = read_allocator_snapshot_bytes(
        p_snapshot({p_segment(p_int(0), total, p_list({p_block(1 << 20, "inactive")}))}), "t.pickle");
    ASSERT_EQ(s.segments.size(), 1u);
    EXPECT_EQ(s.segments[0].total_size, 0);
    EXPECT_TRUE(has_note(s, "segment without a readable \"total_size\" (taken as 0)"));
  }
  // Exactly 2^50 is still a size (the bound is inclusive).
  const AllocatorSnapshot edge =
      read_allocator_snapshot_bytes(p_snapshot({p_segment(p_int(0), p_int(std::int64_t{1} << 50), "]")}), "t.pickle");
  EXPECT_EQ(edge.segments[0].total_size, std::int64_t{1} << 50);
  EXPECT_TRUE(edge.notes.empty());
}

TEST(AllocatorSnapshotReader, ContainersOfTheWrongTypeAreCounted) {
  const std::string wrong_blocks = p_segment(p_int(0), p_int(1 << 20), p_str("x"));
  const std::string wrong_frames =
      p_segment(p_int(0), p_int(1 << 20), p_list({p_block(1 << 20, "inactive", p_int(5))}));
  const std::string frame_not_dict =
      p_segment(p_int(0), p_int(1 << 20), p_list({p_block(1 << 20, "inactive", p_list({p_int(1)}))}));
  const AllocatorSnapshot s = read_allocator_snapshot_bytes(
      p_snapshot({wrong_blocks, wrong_frames, frame_not_dict},
                 p_str("device_traces") + p_list({p_str("x")}) + p_str("allocator_settings") + p_list({})),
      "t.pickle");
  EXPECT_EQ(s.segments.size(), 3u);
  EXPECT_TRUE(has_note(s, "1 x \"blocks\" of type str, not a list, ignored"));
  EXPECT_TRUE(has_note(s, "1 x frames of type int, not a list, ignored"));
  EXPECT_TRUE(has_note(s, "1 x frame that is not a dict, skipped"));
  EXPECT_TRUE(has_note(s, "1 x device trace of type str, not a list, ignored"));
  EXPECT_TRUE(has_note(s, "1 x \"allocator_settings\" that is not a dict, ignored"));
}

TEST(AllocatorSnapshotReader, EndlessKindsOfDamageMakeABoundedList) {
  std::vector<std::string> blocks;
  for (int i = 0; i < 100; ++i) blocks.push_back(p_block(4096, "state " + std::to_string(i)));
  const AllocatorSnapshot s =
      read_allocator_snapshot_bytes(p_snapshot({p_segment(p_int(0), p_int(1 << 20), p_list(blocks))}), "t.pickle");
  ASSERT_EQ(s.notes.size(), 33u);  // 32 kinds by name, then the rest in one line
  EXPECT_EQ(s.notes.back(), "68 x damage of 68 other kinds");
}

}  // namespace allocator_snapshot_reader_test
}  // namespace
}  // namespace ferret
