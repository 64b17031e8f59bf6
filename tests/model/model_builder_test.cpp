// ModelBuilder and TraceModel::check_invariants: each kind of inconsistency is caught, and the
// builder refuses (writing nothing) what would cause one. Every model here is built by hand; the
// expected ids and indexes are counted in the comments.
#include "model/model_builder.h"

#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace ferret {
namespace {
namespace model_builder_test {

// A consistent model of two events written column by column, as the tests below then break.
TraceModel two_events() {
  TraceModel m;
  const StrId name = m.strings.intern("aten::mm");  // id 1 (0 is "")
  const auto cat = static_cast<std::uint16_t>(m.categories.intern("cpu_op"));
  for (int e = 0; e < 2; ++e) {
    m.kind.push_back(EventKind::kCpuOp);
    m.phase.push_back('X');
    m.category.push_back(cat);
    m.name.push_back(name);
    m.ts_ns.push_back(1000 * e);
    m.dur_ns.push_back(500);
    m.pid.push_back(1);
    m.tid.push_back(1);
    m.correlation.push_back(kNoId);
    m.external_id.push_back(kNoId);
  }
  return m;
}

TEST(CheckInvariants, AConsistentModelHasNone) { EXPECT_EQ(two_events().check_invariants(), ""); }

TEST(CheckInvariants, ColumnsOfDifferentLengths) {
  TraceModel m = two_events();
  m.tid.push_back(3);  // tid: 3 values, kind: 2
  EXPECT_EQ(m.check_invariants(), "column tid holds 3 values, kind holds 2");
}

TEST(CheckInvariants, KindOutOfRange) {
  TraceModel m = two_events();
  m.kind[1] = static_cast<EventKind>(kEventKindCount);
  EXPECT_EQ(m.check_invariants(), fmt::format("event 1 has kind {}, not an EventKind", kEventKindCount));
}

TEST(CheckInvariants, NameNeverInterned) {
  TraceModel m = two_events();
  m.name[0] = 2;  // the table holds "" and "aten::mm": ids 0 and 1
  EXPECT_EQ(m.check_invariants(), "event 0 has name id 2 of 2");
}

TEST(CheckInvariants, CategoryNeverInterned) {
  TraceModel m = two_events();
  m.category[1] = 7;
  EXPECT_EQ(m.check_invariants(), "event 1 has category id 7 of 2");
}

TEST(CheckInvariants, SyntheticIdWithoutLabel) {
  TraceModel m = two_events();
  m.pid[1] = -1;
  EXPECT_EQ(m.check_invariants(), "event 1 has synthetic id -1 with no label");
  m.id_labels[-1] = "GPU 0";
  EXPECT_EQ(m.check_invariants(), "");
}

TEST(CheckInvariants, SideRowNamingNoEvent) {
  TraceModel m = two_events();
  CopyArgs copy;
  copy.event = 2;  // events are 0 and 1
  m.copy_args.push_back(copy);
  EXPECT_EQ(m.check_invariants(), "copy_args row 0 names event 2, but the model holds 2");
}

TEST(CheckInvariants, SideRowsOutOfOrderOrTwicePerEvent) {
  TraceModel m = two_events();
  OpArgs op;
  op.event = 1;
  m.op_args.push_back(op);
  op.event = 0;
  m.op_args.push_back(op);
  EXPECT_EQ(m.check_invariants(), "op_args row 1 (event 0) is out of event order after event 1");

  TraceModel twice = two_events();
  op.event = 1;
  twice.op_args.push_back(op);
  twice.op_args.push_back(op);
  EXPECT_EQ(twice.check_invariants(), "op_args row 1 (event 1) is out of event order after event 1");
}

TEST(CheckInvariants, CountersMayHoldSeveralSeriesPerEvent) {
  TraceModel m = two_events();
  m.counters.push_back({1, kEmptyStr, 1.0});
  m.counters.push_back({1, kEmptyStr, 2.0});
  EXPECT_EQ(m.check_invariants(), "");
}

TEST(CheckInvariants, SideRowStringNeverInterned) {
  TraceModel m = two_events();
  CollectiveArgs c;
  c.event = 0;
  c.dtype = 5;  // strings: "" and "aten::mm"
  m.collective_args.push_back(c);
  EXPECT_EQ(m.check_invariants(), "collective_args row 0 holds string id 5 of 2");
}

TEST(CheckInvariants, RelationsSizedToOtherEvents) {
  TraceModel m = two_events();
  m.relations.built = true;
  m.relations.parent.assign(1, kNoEvent);
  EXPECT_EQ(m.check_invariants(), "relations.parent holds 1 entries for 2 events");
}

TEST(ModelBuilder, AppendsEventsAndSideRowsConsistently) {
  ModelBuilder b;
  const std::int32_t gpu = b.label_id("GPU 0");  // the first label: -1
  EXPECT_EQ(gpu, -1);
  EXPECT_EQ(b.label_id("GPU 0"), -1);
  const EventIndex op = b.append({EventKind::kCpuOp, 'X', "cpu_op", "aten::mm", 1000, 500, 10, 11, kNoId, 7});
  const EventIndex k =
      b.append({EventKind::kKernel, 'X', "kernel", "gemm", 1200, 100, gpu, 7, /*correlation=*/42, kNoId});
  EXPECT_EQ(op, 0u);
  EXPECT_EQ(k, 1u);
  KernelArgs args;
  args.event = k;
  args.grid[0] = 4;
  args.limiting_factor = b.intern("REGS");
  b.add(args);
  b.set_thread_name(10, 11, "main");
  TraceModel m = b.finish();
  EXPECT_EQ(m.check_invariants(), "");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.name_of(1), "gemm");
  EXPECT_EQ(m.category_of(0), "cpu_op");
  EXPECT_EQ(m.end_ns(0), 1500);
  EXPECT_EQ(m.pid[1], -1);
  EXPECT_EQ(m.id_labels.at(-1), "GPU 0");
  EXPECT_EQ(m.correlation[1], 42);
  EXPECT_EQ(m.external_id[0], 7);
  ASSERT_NE(m.kernel_args_of(1), nullptr);
  EXPECT_EQ(m.kernel_args_of(1)->grid[0], 4);
  EXPECT_EQ(m.strings.view(m.kernel_args_of(1)->limiting_factor), "REGS");
  EXPECT_EQ(m.thread_names.at({10, 11}), "main");
  // The builder starts over after handing the model on.
  EXPECT_EQ(b.size(), 0u);
}

TEST(ModelBuilder, RefusesRowsThatWouldBreakAnInvariant) {
  ModelBuilder b;
  b.append({EventKind::kMemcpy, 'X', "gpu_memcpy", "Memcpy HtoD", 0, 10, 0, 7, kNoId, kNoId});
  CopyArgs beyond;
  beyond.event = 1;  // only event 0 exists
  EXPECT_THROW(b.add(beyond), std::invalid_argument);
  OpArgs bad_string;
  bad_string.event = 0;
  bad_string.input_dims = 99;
  EXPECT_THROW(b.add(bad_string), std::invalid_argument);
  CopyArgs first;
  first.event = 0;
  b.add(first);
  EXPECT_THROW(b.add(first), std::invalid_argument);  // a second copy row for event 0
  EXPECT_THROW(b.append({EventKind::kCpuOp, 'X', "cpu_op", "x", 0, 1, -3, 1, kNoId, kNoId}), std::invalid_argument);
  EXPECT_THROW(b.append({static_cast<EventKind>(200), 'X', "", "x", 0, 1, 1, 1, kNoId, kNoId}), std::invalid_argument);
  TraceModel m = b.finish();
  EXPECT_EQ(m.check_invariants(), "");
  EXPECT_EQ(m.size(), 1u);
  EXPECT_EQ(m.copy_args.size(), 1u);
  EXPECT_EQ(m.op_args.size(), 0u);
}

// A batch as a parser produces it: two events with local string ids (local 0 is "", 1 "relu",
// 2 "f32") and local category 1 ("cpu_op"); one event on a local label.
struct Batch {
  std::vector<EventKind> kind{EventKind::kCpuOp, EventKind::kCpuOp};
  std::vector<char> phase{'X', 'X'};
  std::vector<std::uint16_t> category{1, 1};
  std::vector<StrId> name{1, 1};
  std::vector<std::int64_t> ts{100, 300}, dur{50, 50};
  std::vector<std::int32_t> pid{5, -1}, tid{6, 6};
  std::vector<std::int64_t> correlation{kNoId, kNoId}, external{kNoId, kNoId};
  std::vector<OpArgs> ops;

  Batch() {
    OpArgs op;
    op.event = 1;
    op.input_types = 2;
    ops.push_back(op);
  }
  EventBatchView view() const {
    EventBatchView v;
    v.kind = kind;
    v.phase = phase;
    v.category = category;
    v.name = name;
    v.ts_ns = ts;
    v.dur_ns = dur;
    v.pid = pid;
    v.tid = tid;
    v.correlation = correlation;
    v.external_id = external;
    v.op_args = ops;
    return v;
  }
};

TEST(ModelBuilder, AppendsABatchWithItsIdsRemapped) {
  ModelBuilder b;
  b.append({EventKind::kCpuOp, 'X', "cpu_op", "first", 0, 10, 1, 1, kNoId, kNoId});  // event 0; strings "", "first"
  OpArgs first_op;
  first_op.event = 0;
  b.add(first_op);
  // Global ids: "relu" 2 and "f32" 3 after "first" (1); category "cpu_op" 1; label -1.
  const std::vector<StrId> strings{kEmptyStr, b.intern("relu"), b.intern("f32")};
  const std::vector<std::uint16_t> cats{0, b.intern_category("cpu_op")};
  const std::vector<std::int32_t> labels{b.label_id("host A")};
  const Batch batch;
  ASSERT_TRUE(b.append_batch(batch.view(), {strings, cats, labels}));
  TraceModel m = b.finish();
  EXPECT_EQ(m.check_invariants(), "");
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m.name_of(1), "relu");
  EXPECT_EQ(m.name_of(2), "relu");
  EXPECT_EQ(m.category_of(2), "cpu_op");
  EXPECT_EQ(m.ts_ns[2], 300);
  EXPECT_EQ(m.pid[1], 5);
  EXPECT_EQ(m.pid[2], -1);
  EXPECT_EQ(m.id_labels.at(-1), "host A");
  // The batch's op row named its event 1: the model's event 1 + 1 = 2.
  ASSERT_EQ(m.op_args.size(), 2u);
  EXPECT_EQ(m.op_args[1].event, 2u);
  EXPECT_EQ(m.strings.view(m.op_args[1].input_types), "f32");
}

TEST(ModelBuilder, RefusesAnInconsistentBatchWritingNothing) {
  ModelBuilder b;
  const std::vector<StrId> strings{kEmptyStr, b.intern("relu"), b.intern("f32")};
  const std::vector<std::uint16_t> cats{0, b.intern_category("cpu_op")};
  const std::vector<std::int32_t> labels{b.label_id("host A")};

  Batch short_column;
  short_column.dur.pop_back();  // 2 kinds, 1 duration
  EXPECT_THROW(b.append_batch(short_column.view(), {strings, cats, labels}), std::invalid_argument);

  Batch beyond_map;
  beyond_map.name[1] = 3;  // the string map holds 3 entries: 0..2
  EXPECT_THROW(b.append_batch(beyond_map.view(), {strings, cats, labels}), std::invalid_argument);

  Batch unlabelled;
  unlabelled.tid[0] = -2;  // local label 1; the label map holds one
  EXPECT_THROW(b.append_batch(unlabelled.view(), {strings, cats, labels}), std::invalid_argument);

  Batch row_beyond;
  row_beyond.ops[0].event = 2;  // the batch holds events 0 and 1
  EXPECT_THROW(b.append_batch(row_beyond.view(), {strings, cats, labels}), std::invalid_argument);

  const std::vector<StrId> bad_strings{kEmptyStr, 1, 40};  // 40 was never interned
  EXPECT_THROW(b.append_batch(Batch().view(), {bad_strings, cats, labels}), std::invalid_argument);

  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.model().op_args.size(), 0u);
  EXPECT_EQ(b.model().check_invariants(), "");
}

}  // namespace model_builder_test
}  // namespace
}  // namespace ferret
