// Timestamps go from decimal text to int64 nanoseconds without passing through a double.
#include <string>

#include <gtest/gtest.h>

#include "ingest/trace_loader.h"

namespace ferret {
namespace {
namespace timestamps_test {

TEST(Timestamps, EpochMicrosWithNanosecondDecimalsAreExact) {
  // 1712195495505582.988 us = 1712195495505582988 ns. A double holds ~15.9 significant digits;
  // this has 19, so (ts * 1000.0) would give ...582988037 or similar.
  const TraceModel m = load_trace_text(R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1712195495505582.988, "dur": 4.928},
    {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 1712195495505582.989, "dur": 0.001},
    {"ph": "i", "name": "c", "pid": 1, "tid": 1, "ts": "1712195495505583.001", "s": "t"}]})");
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m.ts_ns[0], 1712195495505582988LL);
  EXPECT_EQ(m.dur_ns[0], 4928);
  EXPECT_EQ(m.end_ns(0), 1712195495505587916LL);  // + 4.928 us
  EXPECT_EQ(m.ts_ns[1], 1712195495505582989LL);   // 1 ns later: the two stay distinct and ordered
  EXPECT_EQ(m.dur_ns[1], 1);
  EXPECT_EQ(m.ts_ns[2], 1712195495505583001LL);  // ts given as a string
  EXPECT_NE(static_cast<long long>(1712195495505582.988 * 1000.0), 1712195495505582988LL);
}

TEST(Timestamps, BaseTimeNanosecondsIsKeptExactly) {
  // 1751410836000000123 > 2^53 (9007199254740992): only exact integer parsing keeps the last digits.
  const TraceModel m = load_trace_text(R"({"baseTimeNanoseconds": 1751410836000000123, "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 0.001, "dur": 1}]})");
  ASSERT_TRUE(m.info.base_time_ns.has_value());
  EXPECT_EQ(*m.info.base_time_ns, 1751410836000000123LL);
  // ts stays relative to the base, as written.
  EXPECT_EQ(m.ts_ns[0], 1);
  EXPECT_EQ(m.info.generation, FormatGeneration::kKineto2);
}

TEST(Timestamps, IntegerMicrosAndExponents) {
  const TraceModel m = load_trace_text(R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1623142623460121, "dur": 3},
    {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 1.5e3, "dur": 2.5E+1}]})");
  EXPECT_EQ(m.ts_ns[0], 1623142623460121000LL);
  EXPECT_EQ(m.dur_ns[0], 3000);
  EXPECT_EQ(m.ts_ns[1], 1500000);  // 1.5e3 us
  EXPECT_EQ(m.dur_ns[1], 25000);   // 25 us
}

TEST(Timestamps, DigitsBeyondNanosecondsRound) {
  // 10.0005 us = 10000.5 ns -> 10001 (half away from zero); 10.0004 -> 10000.
  const TraceModel m = load_trace_text(R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 10.0005, "dur": 10.0004}]})");
  EXPECT_EQ(m.ts_ns[0], 10001);
  EXPECT_EQ(m.dur_ns[0], 10000);
}

}  // namespace timestamps_test
}  // namespace
}  // namespace ferret
