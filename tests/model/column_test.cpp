#include "model/column.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace ferret {
namespace {
namespace column_test {

TEST(Column, SmallBlocksAcrossBoundaries) {
  Column<int, 2> c;  // blocks of 4
  EXPECT_TRUE(c.empty());
  for (int i = 0; i < 10; ++i) c.push_back(i * 3);
  ASSERT_EQ(c.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(c[i], i * 3) << i;
  // 10 values in blocks of 4: 3 blocks.
  EXPECT_EQ(c.memory_bytes(), 3 * 4 * sizeof(int));
  c[5] = -1;
  EXPECT_EQ(c[5], -1);
  EXPECT_EQ(c[4], 12);
  EXPECT_EQ(c[6], 18);
}

TEST(Column, AppendSpanCrossesBlocks) {
  Column<std::int64_t, 3> c;  // blocks of 8
  c.push_back(-7);
  std::vector<std::int64_t> run;
  for (std::int64_t i = 0; i < 20; ++i) run.push_back(i * 1000000000000LL);
  c.append(run);
  ASSERT_EQ(c.size(), 21u);
  EXPECT_EQ(c[0], -7);
  for (std::size_t i = 0; i < run.size(); ++i) EXPECT_EQ(c[i + 1], run[i]);
  EXPECT_EQ(c.memory_bytes(), 3 * 8 * sizeof(std::int64_t));  // 21 values -> 3 blocks of 8
}

TEST(Column, DefaultBlocksHoldManyValuesAndElementsNeverMove) {
  Column<std::uint32_t> c;  // blocks of 65536
  const std::size_t n = 2 * Column<std::uint32_t>::kBlockSize + 3;
  c.push_back(0);
  const std::uint32_t* first = &c[0];
  for (std::size_t i = 1; i < n; ++i) c.push_back(static_cast<std::uint32_t>(i * 2654435761u));
  ASSERT_EQ(c.size(), n);
  EXPECT_EQ(&c[0], first);  // blocks never move
  for (std::size_t i = 1; i < n; ++i) ASSERT_EQ(c[i], static_cast<std::uint32_t>(i * 2654435761u)) << i;
  EXPECT_EQ(c.memory_bytes(), 3 * Column<std::uint32_t>::kBlockSize * sizeof(std::uint32_t));
  const Column<std::uint32_t>& cc = c;
  EXPECT_EQ(cc[65536], static_cast<std::uint32_t>(65536u * 2654435761u));
}

// PackedInt64Column stores a block as 32-bit offsets from the block's first value while they fit,
// INT64_MIN (the model's "absent") as a reserved code, and switches the block to 64-bit values
// the first time one does not fit. Reads must always return exactly what was pushed.
TEST(PackedInt64Column, NarrowBlocksRoundTrip) {
  PackedInt64Column c;
  // Epoch-ns timestamps 1 us apart: offsets from the first stay small.
  for (std::int64_t i = 0; i < 1000; ++i) c.push_back(1712195495505582988LL + i * 1000);
  ASSERT_EQ(c.size(), 1000u);
  for (std::int64_t i = 0; i < 1000; ++i) ASSERT_EQ(c[i], 1712195495505582988LL + i * 1000);
  EXPECT_EQ(c.memory_bytes(), PackedInt64Column::kBlockSize * 4);  // one narrow block
}

TEST(PackedInt64Column, AbsentMarkerAndExtremes) {
  PackedInt64Column c;
  const std::vector<std::int64_t> values = {INT64_MIN, 5, INT64_MIN, -5, 0, 7};
  for (std::int64_t v : values) c.push_back(v);
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(c[i], values[i]) << i;
}

TEST(PackedInt64Column, OffsetsAtTheEdgesOf32Bits) {
  // Base 0 (the first value). INT32_MAX fits; INT32_MIN is the reserved code, so an offset of
  // exactly INT32_MIN must not be stored narrow; INT32_MIN + 1 fits.
  PackedInt64Column c;
  const std::vector<std::int64_t> values = {0, INT32_MAX, INT32_MIN + 1LL, INT32_MIN, 42};
  for (std::int64_t v : values) c.push_back(v);
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(c[i], values[i]) << i;
}

TEST(PackedInt64Column, WideningMidBlockKeepsEarlierValues) {
  PackedInt64Column c;
  std::vector<std::int64_t> values;
  for (std::int64_t i = 0; i < 100; ++i) values.push_back(i == 50 ? INT64_MIN : 1000 + i);
  values.push_back(INT64_MAX);  // offset overflows 32 bits: the block widens
  values.push_back(-1);         // negative after widening
  values.push_back(INT64_MIN);  // absent after widening
  values.push_back(1000);
  for (std::int64_t v : values) c.push_back(v);
  ASSERT_EQ(c.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(c[i], values[i]) << i;
  EXPECT_EQ(c.memory_bytes(), PackedInt64Column::kBlockSize * 8);  // one wide block
}

TEST(PackedInt64Column, WrapAroundDifferencesAreNotTakenForSmallOffsets) {
  // INT64_MAX - (-2) wraps to a small negative number in 64-bit arithmetic; it must not be stored
  // as that offset.
  PackedInt64Column c;
  const std::vector<std::int64_t> values = {-2, INT64_MAX, INT64_MIN + 1, 3};
  for (std::int64_t v : values) c.push_back(v);
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(c[i], values[i]) << i;
}

TEST(PackedInt64Column, ManyBlocksMixedNarrowAndWide) {
  // Block 0: small values (narrow). Block 1: a jump past 32 bits in the middle (wide). Block 2:
  // starts fresh, narrow again, with its own base.
  PackedInt64Column c;
  const std::size_t n = 2 * PackedInt64Column::kBlockSize + 10;
  auto value = [](std::size_t i) -> std::int64_t {
    if (i < PackedInt64Column::kBlockSize) return static_cast<std::int64_t>(i) * 3;
    if (i < 2 * PackedInt64Column::kBlockSize)
      return i % 1000 == 0 ? (std::int64_t{1} << 40) + static_cast<std::int64_t>(i) : static_cast<std::int64_t>(i);
    return -(std::int64_t{1} << 50) + static_cast<std::int64_t>(i);
  };
  for (std::size_t i = 0; i < n; ++i) c.push_back(value(i));
  ASSERT_EQ(c.size(), n);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(c[i], value(i)) << i;
  EXPECT_EQ(c.memory_bytes(), PackedInt64Column::kBlockSize * (4 + 8 + 4));
}

TEST(Column, ConstIterationAndBack) {
  Column<int, 2> c;
  for (int i = 0; i < 9; ++i) c.push_back(i);
  int expected = 0;
  for (int v : c) EXPECT_EQ(v, expected++);
  EXPECT_EQ(expected, 9);
  EXPECT_EQ(c.back(), 8);
}

TEST(Column, SetAndTruncateForInPlaceCompaction) {
  // A narrow block (base 100) given a value 2^40 away widens and keeps its other values; the
  // absent marker stays absent; truncating to a block boundary frees the block after it, and
  // appends go on from the new end.
  PackedInt64Column c;
  const std::size_t n = PackedInt64Column::kBlockSize + 3;
  for (std::size_t i = 0; i < n; ++i) c.push_back(100 + static_cast<std::int64_t>(i));
  EXPECT_EQ(c.memory_bytes(), 2 * PackedInt64Column::kBlockSize * 4);
  c.set(1, std::int64_t{1} << 40);
  c.set(2, INT64_MIN);
  EXPECT_EQ(c[0], 100);
  EXPECT_EQ(c[1], std::int64_t{1} << 40);
  EXPECT_EQ(c[2], INT64_MIN);
  EXPECT_EQ(c[3], 103);
  EXPECT_EQ(c.memory_bytes(), PackedInt64Column::kBlockSize * (8 + 4));
  c.truncate(PackedInt64Column::kBlockSize);
  EXPECT_EQ(c.memory_bytes(), PackedInt64Column::kBlockSize * 8);
  c.push_back(-5);
  ASSERT_EQ(c.size(), PackedInt64Column::kBlockSize + 1);
  EXPECT_EQ(c[PackedInt64Column::kBlockSize], -5);
  EXPECT_EQ(c[PackedInt64Column::kBlockSize - 1], 100 + static_cast<std::int64_t>(PackedInt64Column::kBlockSize) - 1);

  Column<int, 2> small;  // blocks of 4
  for (int i = 0; i < 9; ++i) small.push_back(i);
  small.truncate(5);
  EXPECT_EQ(small.memory_bytes(), 2 * 4 * sizeof(int));
  small.push_back(42);
  ASSERT_EQ(small.size(), 6u);
  EXPECT_EQ(small[4], 4);
  EXPECT_EQ(small[5], 42);
}

}  // namespace column_test
}  // namespace
}  // namespace ferret
