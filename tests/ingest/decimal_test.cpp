#include "ingest/kineto/decimal.h"

#include <gtest/gtest.h>

namespace ferret {
namespace {
namespace decimal_test {

std::int64_t nanos(std::string_view text) {
  std::int64_t v = 0;
  const DecimalStatus st = parse_micros_to_nanos(text, v);
  EXPECT_TRUE(st == DecimalStatus::kOk || st == DecimalStatus::kRounded) << text;
  return v;
}

TEST(Decimal, EpochMicrosWithThreeDecimalsIsExact) {
  // 16 integer digits + 3 decimals = 19 significant digits: beyond a double's 15.9.
  EXPECT_EQ(nanos("1712195495505582.988"), 1712195495505582988LL);
  EXPECT_EQ(nanos("1623142623460121"), 1623142623460121000LL);
  // A double would round this to ...582.9880371 -> 582988037 ns; exact text must not.
  EXPECT_NE(static_cast<std::int64_t>(1712195495505582.988 * 1000.0), 1712195495505582988LL);
}

TEST(Decimal, FractionsShorterThanNanoseconds) {
  EXPECT_EQ(nanos("4.928"), 4928);
  EXPECT_EQ(nanos("4.9"), 4900);
  EXPECT_EQ(nanos("0.5"), 500);
  EXPECT_EQ(nanos("7"), 7000);
  EXPECT_EQ(nanos("0"), 0);
}

TEST(Decimal, ExtraDigitsRoundHalfAwayFromZero) {
  std::int64_t v = 0;
  EXPECT_EQ(parse_micros_to_nanos("1.2345", v), DecimalStatus::kRounded);
  EXPECT_EQ(v, 1235);
  EXPECT_EQ(parse_micros_to_nanos("1.2344", v), DecimalStatus::kRounded);
  EXPECT_EQ(v, 1234);
  EXPECT_EQ(parse_micros_to_nanos("-1.2345", v), DecimalStatus::kRounded);
  EXPECT_EQ(v, -1235);
}

TEST(Decimal, NegativeAndExponent) {
  EXPECT_EQ(nanos("-3.5"), -3500);
  EXPECT_EQ(nanos("1.5e3"), 1500000);
  EXPECT_EQ(nanos("1e-3"), 1);
  EXPECT_EQ(nanos("2.5E+1"), 25000);
}

TEST(Decimal, RejectsNonNumbersAndOverflow) {
  std::int64_t v = 0;
  EXPECT_EQ(parse_micros_to_nanos("abc", v), DecimalStatus::kInvalid);
  EXPECT_EQ(parse_micros_to_nanos("", v), DecimalStatus::kInvalid);
  EXPECT_EQ(parse_micros_to_nanos("1.2.3", v), DecimalStatus::kInvalid);
  EXPECT_EQ(parse_micros_to_nanos("1e999", v), DecimalStatus::kOverflow);
  EXPECT_EQ(parse_micros_to_nanos("99999999999999999999", v), DecimalStatus::kOverflow);
  // INT64_MAX ns = 9223372036854775.807 us: the last value that fits.
  EXPECT_EQ(parse_micros_to_nanos("9223372036854775.807", v), DecimalStatus::kOk);
  EXPECT_EQ(v, INT64_MAX);
  EXPECT_EQ(parse_micros_to_nanos("9223372036854775.808", v), DecimalStatus::kOverflow);
}

TEST(Decimal, IntegersKeepUint64BitPattern) {
  std::int64_t v = 0;
  EXPECT_EQ(parse_int64("123", v), DecimalStatus::kOk);
  EXPECT_EQ(v, 123);
  EXPECT_EQ(parse_int64("\"456\"", v), DecimalStatus::kOk);
  EXPECT_EQ(v, 456);
  EXPECT_EQ(parse_int64("18446744073709551615", v), DecimalStatus::kOk);
  EXPECT_EQ(v, -1);
  EXPECT_EQ(parse_int64("18446744073709551616", v), DecimalStatus::kOverflow);
  EXPECT_EQ(parse_int64("-9223372036854775808", v), DecimalStatus::kOk);
  EXPECT_EQ(v, INT64_MIN);
}

}  // namespace decimal_test
}  // namespace
}  // namespace ferret
