// The caching-allocator model's arithmetic on small hand-computed cases (MiB = 1,048,576 bytes):
// 512-byte rounding, 20 MiB segments for small requests and 2 MiB-rounded ones for large, splits
// only when more than 1 MiB would remain, best fit, merging on free, and the release-and-retry
// when a new segment would not fit the device.
#include "gen/caching_allocator_model.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace ferret {
namespace {
namespace caching_allocator_model_test {

constexpr std::int64_t kMiB = 1 << 20;

TEST(CachingAllocatorModel, RoundsSplitsAndReusesMergedBlocks) {
  CachingAllocatorModel allocator(100 * kMiB);

  // 1000 bytes round up to 1024; the empty cache adds a 20 MiB segment and splits it.
  const auto a = allocator.allocate(1000);
  EXPECT_EQ(a.size, 1024);
  EXPECT_EQ(a.new_segment_bytes, 20 * kMiB);
  EXPECT_EQ(a.released_bytes, 0);
  EXPECT_EQ(allocator.reserved(), 20 * kMiB);
  EXPECT_EQ(allocator.allocated(), 1024);
  const std::uint64_t base = a.addr;

  // 3 MiB comes from the remainder right after it, no new segment.
  const auto b = allocator.allocate(3 * kMiB);
  EXPECT_EQ(b.addr, base + 1024);
  EXPECT_EQ(b.size, 3 * kMiB);
  EXPECT_EQ(b.new_segment_bytes, 0);

  // 12 MiB + 1 byte rounds to 12 MiB + 512; 5 MiB - 1536 remain free after it.
  const auto c = allocator.allocate(12 * kMiB + 1);
  EXPECT_EQ(c.addr, base + 1024 + 3 * kMiB);
  EXPECT_EQ(c.size, 12 * kMiB + 512);

  // 4.5 MiB would leave 0.5 MiB - 1536 (under 1 MiB): the whole 5 MiB - 1536 block is taken.
  const auto d = allocator.allocate(4 * kMiB + kMiB / 2);
  EXPECT_EQ(d.addr, base + 1024 + 15 * kMiB + 512);
  EXPECT_EQ(d.size, 5 * kMiB - 1536);
  EXPECT_EQ(allocator.allocated(), 20 * kMiB);  // the segment is full
  EXPECT_EQ(allocator.reserved(), 20 * kMiB);

  // Freeing a, then b, merges b into the free block before it: one 3 MiB + 1024 block at the
  // base, which a request of that size then reuses without a cudaMalloc.
  EXPECT_EQ(allocator.release(a.addr), 1024);
  EXPECT_EQ(allocator.release(b.addr), 3 * kMiB);
  EXPECT_EQ(allocator.allocated(), 17 * kMiB - 1024);
  const auto e = allocator.allocate(3 * kMiB + 1000);
  EXPECT_EQ(e.addr, base);
  EXPECT_EQ(e.size, 3 * kMiB + 1024);
  EXPECT_EQ(e.new_segment_bytes, 0);

  // Freeing d, then c, merges c with the free block after it: 12 MiB + 512 + 5 MiB - 1536.
  EXPECT_EQ(allocator.release(d.addr), 5 * kMiB - 1536);
  EXPECT_EQ(allocator.release(c.addr), 12 * kMiB + 512);
  const auto merged = allocator.allocate(17 * kMiB - 1024);
  EXPECT_EQ(merged.addr, c.addr);
  EXPECT_EQ(merged.new_segment_bytes, 0);
  EXPECT_EQ(allocator.allocated(), 20 * kMiB);

  // 30 MiB + 1 byte (10 MiB or more): a segment of the request rounded up to 2 MiB, 32 MiB, mapped
  // after a 2 MiB gap; 2 MiB - 512 remain, more than 1 MiB, so the block is split.
  const auto f = allocator.allocate(30 * kMiB + 1);
  EXPECT_EQ(f.new_segment_bytes, 32 * kMiB);
  EXPECT_EQ(f.addr, base + 22 * kMiB);
  EXPECT_EQ(f.size, 30 * kMiB + 512);
  EXPECT_EQ(allocator.reserved(), 52 * kMiB);
  EXPECT_EQ(allocator.retries(), 0);
}

TEST(CachingAllocatorModel, SplitsOnlyWhenMoreThanOneMiBRemains) {
  CachingAllocatorModel allocator(100 * kMiB);
  const auto exact = allocator.allocate(19 * kMiB);  // a 20 MiB segment; 1 MiB would remain
  EXPECT_EQ(exact.new_segment_bytes, 20 * kMiB);
  EXPECT_EQ(exact.size, 20 * kMiB);
  const auto next = allocator.allocate(19 * kMiB - 512);  // 1 MiB + 512 would remain: split
  EXPECT_EQ(next.new_segment_bytes, 20 * kMiB);
  EXPECT_EQ(next.size, 19 * kMiB - 512);
  EXPECT_EQ(allocator.allocated(), 39 * kMiB - 512);
  EXPECT_EQ(allocator.reserved(), 40 * kMiB);
}

TEST(CachingAllocatorModel, ReleasesFreeSegmentsBeforeGrowingPastTheDevice) {
  CachingAllocatorModel allocator(60 * kMiB);
  allocator.allocate(kMiB);                      // segment A: 20 MiB, 1 MiB in use
  const auto b = allocator.allocate(32 * kMiB);  // segment B: exactly 32 MiB, no split
  EXPECT_EQ(b.new_segment_bytes, 32 * kMiB);
  EXPECT_EQ(allocator.release(b.addr), 32 * kMiB);  // B is wholly free, still reserved
  EXPECT_EQ(allocator.reserved(), 52 * kMiB);

  // 40 MiB fits no free block; 52 + 40 > 60, so B is released (cudaFree) and the 40 MiB segment
  // fits: 20 + 40 = 60.
  const auto c = allocator.allocate(40 * kMiB);
  EXPECT_EQ(c.released_bytes, 32 * kMiB);
  EXPECT_EQ(c.new_segment_bytes, 40 * kMiB);
  EXPECT_EQ(allocator.reserved(), 60 * kMiB);
  EXPECT_EQ(allocator.allocated(), 41 * kMiB);
  EXPECT_EQ(allocator.retries(), 1);

  // Nothing is wholly free now: 50 MiB more cannot fit even after the retry.
  EXPECT_THROW(allocator.allocate(50 * kMiB), std::logic_error);
  EXPECT_EQ(allocator.retries(), 2);
  EXPECT_EQ(allocator.reserved(), 60 * kMiB);
}

TEST(CachingAllocatorModel, RejectsFreesOfUnknownOrFreeBlocks) {
  CachingAllocatorModel allocator(100 * kMiB);
  const auto a = allocator.allocate(kMiB);
  EXPECT_THROW(allocator.release(a.addr + 512), std::logic_error);
  EXPECT_EQ(allocator.release(a.addr), kMiB);
  EXPECT_THROW(allocator.release(a.addr), std::logic_error);
  EXPECT_EQ(allocator.allocated(), 0);
}

}  // namespace caching_allocator_model_test
}  // namespace
}  // namespace ferret
