// The "args" of an event, read through the parser's table of known keys: values land in their
// fields, an unknown key is ignored (or is a counter series), null is ignored silently, and a
// value of the wrong type or out of range is counted under "args.<key>" with the event's place.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ingest/trace_loader.h"
#include "model/trace_model.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace event_args_test {

const char* kWrongType = "field of the wrong JSON type or out of range, ignored (";

std::string kernel(const std::string& name, const std::string& args) {
  return R"({"ph": "X", "cat": "kernel", "name": ")" + name +
         R"(", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {)" + args + "}}";
}

EventIndex find(const TraceModel& m, std::string_view name) {
  for (std::size_t e = 0; e < m.size(); ++e)
    if (m.name_of(static_cast<EventIndex>(e)) == name) return static_cast<EventIndex>(e);
  ADD_FAILURE() << "no event named " << name;
  return kNoEvent;
}

// The wrong-type reasons counted, as "args.<key>" -> count.
std::map<std::string, std::uint64_t> wrong_types(const TraceModel& m) {
  std::map<std::string, std::uint64_t> out;
  for (const auto& [reason, issue] : m.report.repairs)
    if (reason.rfind(kWrongType, 0) == 0)
      out[reason.substr(std::string(kWrongType).size(), reason.size() - std::string(kWrongType).size() - 1)] +=
          issue.count;
  return out;
}

TEST(EventArgs, KnownKeysLandInTheirFields) {
  const TraceModel m = load_trace_text(test::trace(
      {kernel("k", R"("grid": [4, 2, 1], "block": [256, 1, 1], "registers per thread": "32", "shared memory": 1024,
             "priority": -1, "warps per SM": 12.5, "colour": "red")")}));
  const KernelArgs* ka = m.kernel_args_of(find(m, "k"));
  ASSERT_NE(ka, nullptr);
  EXPECT_EQ(ka->grid[0], 4);
  EXPECT_EQ(ka->grid[1], 2);
  EXPECT_EQ(ka->block[0], 256);
  EXPECT_EQ(ka->registers_per_thread, 32);  // a numeric string is read as its number
  EXPECT_EQ(ka->shared_memory, 1024);
  EXPECT_EQ(ka->priority, -1);
  EXPECT_FLOAT_EQ(ka->warps_per_sm, 12.5f);
  EXPECT_TRUE(wrong_types(m).empty());  // the unknown "colour" is ignored, not counted
}

TEST(EventArgs, NullIsIgnoredAndWrongTypesAreCountedPerKey) {
  const TraceModel m = load_trace_text(test::trace({
      kernel("null-count", R"("registers per thread": null, "shared memory": 64)"),
      kernel("null-grid", R"("grid": null)"),                              // a triplet: null is a wrong type
      kernel("bad-unit", R"("registers per thread": "32 regs")"),          // text that is not a number
      kernel("beyond-int64", R"("shared memory": 18446744073709551615)"),  // a count must fit int64
      kernel("huge-priority", R"("priority": 3000000000)"),                // beyond int32
      kernel("object-warps", R"("warps per SM": {"x": 1})"),
  }));
  const KernelArgs* kept = m.kernel_args_of(find(m, "null-count"));
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->shared_memory, 64);
  const std::map<std::string, std::uint64_t> expected = {{"args.grid", 1},
                                                         {"args.registers per thread", 1},
                                                         {"args.shared memory", 1},
                                                         {"args.priority", 1},
                                                         {"args.warps per SM", 1}};
  EXPECT_EQ(wrong_types(m), expected);
}

TEST(EventArgs, UnknownNumericArgsOfACounterAreItsSeries) {
  const TraceModel m = load_trace_text(
      test::trace({R"({"ph": "C", "name": "mem", "pid": 1, "tid": 1, "ts": 5, "args": {"allocated": 1024, "label": "x",
           "correlation": 3}})"}));
  // "label" is not a number and "correlation" is a known key: one series.
  ASSERT_EQ(m.counters.size(), 1u);
  EXPECT_EQ(m.strings.view(m.counters[0].series), "allocated");
  EXPECT_DOUBLE_EQ(m.counters[0].value, 1024.0);
}

}  // namespace event_args_test
}  // namespace
}  // namespace ferret
