// base/units: sizes and durations in words, and sizes from words.
#include "base/units.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace ferret {
namespace {
namespace units_test {

TEST(ParseSize, BinaryAndDecimalSuffixes) {
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("512K"), 512u << 10);
  EXPECT_EQ(parse_size("512k"), 512u << 10);
  EXPECT_EQ(parse_size("64KiB"), 64u << 10);
  EXPECT_EQ(parse_size("100M"), 100ull << 20);
  EXPECT_EQ(parse_size("100MiB"), 100ull << 20);
  EXPECT_EQ(parse_size("1G"), 1ull << 30);
  EXPECT_EQ(parse_size("1GiB"), 1ull << 30);
  EXPECT_EQ(parse_size("2gib"), 2ull << 30);
  EXPECT_EQ(parse_size("1GB"), 1000000000ull);
  EXPECT_EQ(parse_size("3MB"), 3000000ull);
  EXPECT_EQ(parse_size("1T"), 1ull << 40);
  EXPECT_THROW(parse_size(""), std::invalid_argument);
  EXPECT_THROW(parse_size("GiB"), std::invalid_argument);
  EXPECT_THROW(parse_size("1X"), std::invalid_argument);
  EXPECT_THROW(parse_size("1.5G"), std::invalid_argument);
  EXPECT_THROW(parse_size("99999999999999999999"), std::invalid_argument);
  EXPECT_THROW(parse_size("20000000000T"), std::invalid_argument);
}

TEST(HumanBytes, PicksTheLargestBinaryUnit) {
  EXPECT_EQ(human_bytes(0), "0 B");
  EXPECT_EQ(human_bytes(1023), "1023 B");
  EXPECT_EQ(human_bytes(1536), "1.5 KiB");
  EXPECT_EQ(human_bytes(5u << 20), "5.0 MiB");
  EXPECT_EQ(human_bytes(3ull << 29), "1.50 GiB");
}

TEST(HumanDuration, PicksTheLargestUnitAndKeepsTheSign) {
  EXPECT_EQ(human_duration(999), "999 ns");
  EXPECT_EQ(human_duration(12345), "12.345 us");
  EXPECT_EQ(human_duration(12345678), "12.346 ms");
  EXPECT_EQ(human_duration(-2500000000), "-2.500 s");
}

}  // namespace units_test
}  // namespace
}  // namespace ferret

namespace ferret {
namespace {
namespace units_test {

TEST(UnitConversions, HandComputed) {
  static_assert(ns_to_ms(1'500'000) == 1.5);
  static_assert(ns_to_us(2'500) == 2.5);
  static_assert(share_to_pct(0.25) == 25.0);
  EXPECT_DOUBLE_EQ(ns_to_ms(static_cast<double>(std::int64_t{86'400'000'000'000})), 86'400'000.0);  // one day
  EXPECT_DOUBLE_EQ(ns_to_us(-1'000), -1.0);
  EXPECT_DOUBLE_EQ(share_to_pct(1.0 / 3.0), 100.0 / 3.0);
}

}  // namespace units_test
}  // namespace
}  // namespace ferret
