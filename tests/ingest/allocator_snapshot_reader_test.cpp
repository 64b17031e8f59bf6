// The snapshot converter on hand-made pickles: what a sound segment reads as, and what it does
// with fields of the wrong type or past plausibility (each counted in the notes, none trusted).
#include "ingest/memory/allocator_snapshot_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/input_error.h"
#include "pickle_writer.h"
#include "test_util.h"

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
  ASSERT_EQ(s.frames.size(), 1u);
  EXPECT_EQ(seg.blocks[0].frames[0], 0u);
  EXPECT_EQ(s.frames[0].filename, "train.py");
  EXPECT_EQ(s.frames[0].line, 42);
  EXPECT_EQ(s.frames[0].name, "forward");
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

TEST(AllocatorSnapshotReader, ACutSnapshotKeepsItsWholeSegments) {
  std::vector<std::string> segments;
  for (int i = 0; i < 3; ++i) segments.push_back(p_segment(p_int(0), p_int(40 << 20), two_blocks()));
  const std::string whole = p_snapshot(segments);
  // Cut inside the third segment's second block: two whole segments, the third left out.
  const std::string third_block_state = p_str("inactive");
  const std::size_t cut = whole.rfind(third_block_state) + 3;
  const AllocatorSnapshot s = read_allocator_snapshot_bytes(whole.substr(0, cut), "t.pickle");
  ASSERT_EQ(s.segments.size(), 2u);
  for (const SnapshotSegment& seg : s.segments) EXPECT_EQ(seg.blocks.size(), 2u);
  ASSERT_GE(s.notes.size(), 2u);
  EXPECT_NE(s.notes[0].find("the file ends at byte " + std::to_string(cut)), std::string::npos) << s.notes[0];
  // Left out: the "state" key without its value, the second block, the third segment.
  EXPECT_NE(s.notes[0].find("3 half-written values left out"), std::string::npos) << s.notes[0];
  EXPECT_EQ(s.notes[1], "the segment list was cut after 2 segments: the totals cover only those");
  // Cut before the segment list holds anything whole: no segment, but a snapshot that says so.
  const AllocatorSnapshot early = read_allocator_snapshot_bytes(whole.substr(0, 40), "t.pickle");
  EXPECT_TRUE(early.segments.empty());
  // Cut before the root dict exists: nothing to read.
  EXPECT_THROW(read_allocator_snapshot_bytes(whole.substr(0, 2), "t.pickle"), InputError);
}

// Every cut of every snapshot Python wrote: refused, or a prefix of the whole file's segments with
// each segment exactly as in the whole file, and the device trace whole or left out.
TEST(AllocatorSnapshotReader, EveryCutReadsAPrefixOfWholeRecords) {
  const std::string dir = test::python_generated_dir("tests/tools/make_pickles.py");
  if (dir.empty()) GTEST_SKIP() << "SKIPPED: /usr/bin/python3 could not write the test pickles";
  std::size_t files = 0, salvaged = 0;
  for (const char* name : {"snapshot-fragmented-p2.pickle", "snapshot-fragmented-p4.pickle",
                           "snapshot-fragmented-p5.pickle", "snapshot-oom-fragmentation.pickle",
                           "snapshot-oom-capacity.pickle", "snapshot-1.13.pickle", "snapshot-churn.pickle"}) {
    const std::string bytes = test::read_file(dir + "/" + name);
    ASSERT_FALSE(bytes.empty()) << name;
    ++files;
    const AllocatorSnapshot whole = read_allocator_snapshot_bytes(bytes, name);
    for (std::size_t cut = 1; cut < bytes.size(); ++cut) {
      AllocatorSnapshot part;
      try {
        part = read_allocator_snapshot_bytes(bytes.substr(0, cut), name);
      } catch (const InputError&) {
        continue;
      }
      ++salvaged;
      ASSERT_FALSE(part.notes.empty()) << name << " cut at " << cut;
      ASSERT_LE(part.segments.size(), whole.segments.size()) << name << " cut at " << cut;
      for (std::size_t i = 0; i < part.segments.size(); ++i) {
        const SnapshotSegment &a = part.segments[i], &b = whole.segments[i];
        ASSERT_EQ(a.total_size, b.total_size) << name << " cut at " << cut << ", segment " << i;
        ASSERT_EQ(a.blocks.size(), b.blocks.size()) << name << " cut at " << cut << ", segment " << i;
        for (std::size_t k = 0; k < a.blocks.size(); ++k) {
          ASSERT_EQ(a.blocks[k].size, b.blocks[k].size);
          ASSERT_EQ(a.blocks[k].state, b.blocks[k].state);
          ASSERT_EQ(a.blocks[k].requested_size, b.blocks[k].requested_size);
        }
      }
      if (!part.device_traces.empty()) {
        ASSERT_EQ(part.device_traces.size(), whole.device_traces.size()) << name << " cut at " << cut;
        for (std::size_t d = 0; d < part.device_traces.size(); ++d)
          ASSERT_EQ(part.device_traces[d].size(), whole.device_traces[d].size()) << name << " cut at " << cut;
      }
    }
  }
  EXPECT_EQ(files, 7u);
  EXPECT_GT(salvaged, 0u);
}

// The memo lets a stream name one value in many places for 5 bytes each. A 1 MiB string stored once
// (memo 0) and named by 3,000 segments, 300 settings, or a 100,000-int pool id named by 3,000
// segments: each copy the converter makes is cut to what such a field can hold and counted, so
// 3 GB of copies (before: 3.08 GB peak for a 1 MB pickle) are a few hundred KB.
std::string memoized_big_string() { return p_str(std::string(std::size_t{1} << 20, 'x')) + p_memo_put(0); }

TEST(AllocatorSnapshotReader, AOneMiBSegmentTypeSharedByTheMemoIsCutAndCounted) {
  std::vector<std::string> segments{p_segment(p_int(0), p_int(2 << 20), "]", "large")};
  // The first segment dict holds the big string (stored in memo 0); the rest name it again.
  segments[0] = p_dict({{"device", p_int(0)},
                        {"total_size", p_int(2 << 20)},
                        {"segment_type", memoized_big_string()},
                        {"blocks", "]"}}) +
                p_memo_put(1);
  for (int i = 1; i < 3000; ++i) segments.push_back(p_memo_get(1));
  const std::string bytes = p_snapshot(segments);
  EXPECT_LT(bytes.size(), 1'100'000u);
  const AllocatorSnapshot s = read_allocator_snapshot_bytes(bytes, "t.pickle", 64 << 20);
  ASSERT_EQ(s.segments.size(), 3000u);
  for (const SnapshotSegment& seg : s.segments) ASSERT_EQ(seg.segment_type, std::string(32, 'x') + "...");
  EXPECT_TRUE(has_note(s, "3000 x segment \"segment_type\" over 32 bytes, cut")) << s.notes.front();
}

TEST(AllocatorSnapshotReader, SharedSettingValuesAndPoolIdsAreCutAndCounted) {
  std::string settings = "}(";
  settings += p_str("k0") + memoized_big_string();
  for (int i = 1; i < 300; ++i) settings += p_str(fmt::format("k{}", i)) + p_memo_get(0);
  settings += "u";
  std::vector<std::string> pool_parts;
  for (int i = 0; i < 100'000; ++i) pool_parts.push_back(std::string{'K', static_cast<char>(i % 200)});
  std::vector<std::string> segments{p_dict({{"device", p_int(0)},
                                            {"total_size", p_int(2 << 20)},
                                            {"segment_pool_id", p_list(pool_parts) + p_memo_put(1)},
                                            {"blocks", "]"}})};
  for (int i = 1; i < 3000; ++i)
    segments.push_back(p_dict(
        {{"device", p_int(0)}, {"total_size", p_int(2 << 20)}, {"segment_pool_id", p_memo_get(1)}, {"blocks", "]"}}));
  const AllocatorSnapshot s =
      read_allocator_snapshot_bytes(p_snapshot(segments, p_str("allocator_settings") + settings), "t.pickle", 64 << 20);
  ASSERT_EQ(s.settings.size(), 300u);
  for (const auto& [k, v] : s.settings) ASSERT_EQ(v, std::string(256, 'x') + "...");
  ASSERT_EQ(s.segments.size(), 3000u);
  for (const SnapshotSegment& seg : s.segments) ASSERT_EQ(seg.pool, "0,1,2,3,...");
  EXPECT_TRUE(has_note(s, "300 x allocator setting value over 256 bytes, cut"));
  EXPECT_TRUE(has_note(s, "3000 x segment \"segment_pool_id\" of over 4 parts, cut"));
}

// 20,000 distinct frames (their line numbers differ) whose file name is one shared 1 MiB string:
// each distinct frame is kept once, its name cut to 1 KiB, and the ~21 MB the converter makes of
// them count against the memory bound with the input and the pickle's values.
std::string many_frames_snapshot(int frames) {
  std::vector<std::string> blocks;
  for (int i = 0; i < frames; ++i) {
    const std::string file = i == 0 ? memoized_big_string() : p_memo_get(0);
    blocks.push_back(p_block(512, "active_allocated",
                             p_list({p_dict({{"filename", file}, {"line", p_int(i)}, {"name", p_str("f")}})})));
  }
  return p_snapshot({p_segment(p_int(0), p_int(1 << 30), p_list(blocks))});
}

TEST(AllocatorSnapshotReader, WhatTheConverterMakesCountsAgainstTheMemoryBound) {
  const std::string bytes = many_frames_snapshot(20'000);
  const AllocatorSnapshot s = read_allocator_snapshot_bytes(bytes, "t.pickle", 256 << 20);
  ASSERT_EQ(s.frames.size(), 20'000u);
  EXPECT_EQ(s.frames[7].line, 7);
  EXPECT_EQ(s.frames[7].filename.size(), 1024u + 3);
  EXPECT_TRUE(has_note(s, "20000 x frame file name over 1024 bytes, cut"));
  // The input and the pickle's values fit in 40 MiB (~29 MB); with the frames' ~22 MB of copies
  // they do not (a bound of 56 MiB holds all of it).
  try {
    read_allocator_snapshot_bytes(bytes, "t.pickle", 40 << 20);
    FAIL() << "read within 40 MiB";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("converting it needs more than the 40 MiB memory bound"), std::string::npos)
        << e.what();
  }
}

// 300,000 uses of one block whose state is a 1 MiB string: the state is compared where it lies,
// never copied (before: 7-11 s copying 300 GB).
TEST(AllocatorSnapshotReader, ALongStateSharedByTheMemoIsNeverCopied) {
  std::vector<std::string> blocks{
      p_dict({{"size", p_int(512)}, {"state", memoized_big_string()}, {"address", p_int(0)}}) + p_memo_put(1)};
  for (int i = 1; i < 300'000; ++i) blocks.push_back(p_memo_get(1));
  const AllocatorSnapshot s =
      read_allocator_snapshot_bytes(p_snapshot({p_segment(p_int(0), p_int(1 << 30), p_list(blocks))}), "t.pickle");
  ASSERT_EQ(s.segments.at(0).blocks.size(), 300'000u);
  EXPECT_EQ(s.segments[0].blocks[0].state, BlockState::kUnknown);
  EXPECT_TRUE(has_note(s, "300000 x block of unknown state \"" + std::string(40, 'x') + "\""));
}

}  // namespace allocator_snapshot_reader_test
}  // namespace
}  // namespace ferret
