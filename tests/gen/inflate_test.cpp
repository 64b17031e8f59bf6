#include "gen/inflate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "ingest/byte_source.h"
#include "ingest/trace_loader.h"
#include "model/relations.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace inflate_test {

// Two profiler steps, each with an op launching a kernel (runtime call, kernel, ac2g flow pair),
// a [memory] record, and two metadata events. 11 non-metadata events. The largest id is the
// correlation 4140, so the id stride is 10000. Times span 1000.000 .. 2100.000 us.
constexpr const char* kTinyTrace = R"json({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132}],
  "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 10, "tid": 10, "ts": 1000.000, "dur": 500.000, "args": {"External id": 1, "Ev Idx": 0}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 10, "ts": 1010.500, "dur": 100.250, "args": {"External id": 2, "Sequence number": 57, "Fwd thread id": 0, "Input Dims": [[8, 16], [16, 4]], "Call stack": "train.py(12): step;net.py(3): forward", "Ev Idx": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1020.000, "dur": 10.000, "args": {"External id": 2, "cbid": 211, "correlation": 4137}},
  {"ph": "s", "id": 4137, "pid": 10, "tid": 10, "ts": 1020.000, "cat": "ac2g", "name": "ac2g"},
  {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 1035.125, "dur": 50.000, "args": {"External id": 2, "stream": 7, "correlation": 4137, "grid": [4, 1, 1], "block": [128, 1, 1]}},
  {"ph": "f", "id": 4137, "pid": 0, "tid": 7, "ts": 1035.125, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 10, "tid": 10, "ts": 1030.000, "args": {"Total Reserved": 2097152, "Total Allocated": 512, "Bytes": 512, "Addr": 139637976727552, "Device Id": 0, "Device Type": 1, "Ev Idx": 2}},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 10, "tid": 10, "ts": 1500.000, "dur": 600.000, "args": {"External id": 3, "Ev Idx": 3}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 10, "tid": 10, "ts": 1510.000, "dur": 50.000, "args": {"External id": 4, "Sequence number": 58, "Ev Idx": 4}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1520.000, "dur": 8.000, "args": {"External id": 4, "cbid": 211, "correlation": 4140}},
  {"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4>(int)", "pid": 0, "tid": 7, "ts": 1600.000, "dur": 480.500, "args": {"External id": 4, "stream": 7, "correlation": 4140}},
  {"name": "process_name", "ph": "M", "ts": 1000.000, "pid": 10, "tid": 0, "args": {"name": "python"}},
  {"name": "thread_name", "ph": "M", "ts": 1000.000, "pid": 10, "tid": 10, "args": {"name": "thread 10 (python)"}}
  ],
  "traceName": "tiny.json",
  "baseTimeNanoseconds": 1700000000000000000
})json";

// The same shape in the torch 1.8 dialect: integer microseconds, lowercase "external id",
// old category names, string tids; the kernel's ts and correlation are written as strings.
constexpr const char* kIntegerMicrosTrace = R"json({"traceEvents": [
  {"ph": "X", "cat": "Operator", "name": "ProfilerStep#1", "pid": 5, "tid": "5", "ts": 1623142623460245, "dur": 300, "args": {"external id": 1}},
  {"ph": "X", "cat": "Operator", "name": "aten::add", "pid": 5, "tid": "5", "ts": 1623142623460250, "dur": 20, "args": {"external id": 2}},
  {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": "5", "ts": 1623142623460255, "dur": 5, "args": {"external id": 2, "correlation": 77}},
  {"ph": "X", "cat": "Kernel", "name": "add_kernel", "pid": 0, "tid": "stream 7", "ts": "1623142623460262", "dur": 3, "args": {"external id": 2, "correlation": "77"}}
]})json";

struct Inflated {
  InflateResult result;
  std::string path;
};

Inflated inflate_text(const std::string& json, const std::string& name, std::uint64_t copies,
                      OutputCompression compression = OutputCompression::kNone, std::uint64_t target = 0) {
  const std::string input = test::temp_path(name + ".in.json");
  test::write_file(input, json);
  InflateOptions options;
  options.input = input;
  options.output = test::temp_path(name + (compression == OutputCompression::kGzip ? ".out.json.gz" : ".out.json"));
  options.compression = compression;
  options.copies = copies;
  options.target_bytes = target;
  Inflated out{inflate_trace(options), options.output};
  std::remove(input.c_str());
  return out;
}

std::vector<EventIndex> non_metadata(const TraceModel& m) {
  std::vector<EventIndex> v;
  for (EventIndex e = 0; e < m.size(); ++e)
    if (m.kind[e] != EventKind::kMetadata) v.push_back(e);
  return v;
}

// The period the inflater must use, computed from the original: the span of the non-metadata
// events plus the gap, rounded up to whole microseconds.
std::int64_t expected_period(const TraceModel& m, std::int64_t gap_ns) {
  std::int64_t first = INT64_MAX, last = INT64_MIN;
  for (EventIndex e : non_metadata(m)) {
    first = std::min(first, m.ts_ns[e]);
    last = std::max(last, m.end_ns(e));
  }
  return (last - first + gap_ns + 999) / 1000 * 1000;
}

// Every non-metadata event of copy k is the original event shifted by k periods, with every id
// moved by k strides; durations, kinds and (except step markers) names are unchanged.
void expect_shifted_copies(const TraceModel& original, const TraceModel& inflated, std::uint64_t copies,
                           std::int64_t period, std::int64_t stride) {
  const std::vector<EventIndex> orig = non_metadata(original);
  const std::vector<EventIndex> all = non_metadata(inflated);
  ASSERT_EQ(all.size(), copies * orig.size());
  std::size_t mismatches = 0;
  for (std::uint64_t k = 0; k < copies; ++k) {
    const auto shift = static_cast<std::int64_t>(k);
    for (std::size_t j = 0; j < orig.size(); ++j) {
      const EventIndex a = orig[j], b = all[k * orig.size() + j];
      bool ok = inflated.ts_ns[b] == original.ts_ns[a] + shift * period && inflated.dur_ns[b] == original.dur_ns[a] &&
                inflated.kind[b] == original.kind[a];
      if (original.correlation[a] >= 0) ok = ok && inflated.correlation[b] == original.correlation[a] + shift * stride;
      if (original.external_id[a] >= 0) ok = ok && inflated.external_id[b] == original.external_id[a] + shift * stride;
      if (profiler_step_number(original.name_of(a)) < 0) ok = ok && inflated.name_of(b) == original.name_of(a);
      if (!ok && ++mismatches <= 5)
        ADD_FAILURE() << "copy " << k << " event " << j << " (" << original.name_of(a) << "): ts " << inflated.ts_ns[b]
                      << " vs " << original.ts_ns[a] << " + " << shift << " * " << period;
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

std::size_t launch_correlations_duplicated(const TraceModel& m) {
  std::set<std::int64_t> seen;
  std::size_t launches = 0;
  for (EventIndex e = 0; e < m.size(); ++e) {
    if (!is_launch_api(m.kind[e]) || m.correlation[e] == kNoId) continue;
    ++launches;
    seen.insert(m.correlation[e]);
  }
  return launches - seen.size();
}

std::size_t count_of(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

TEST(Inflate, TinyTraceRepeatsEveryEventWithShiftedTimesAndFreshIds) {
  const TraceModel original = load_trace_text(kTinyTrace);
  ASSERT_EQ(original.size(), 13u);
  const Inflated out = inflate_text(kTinyTrace, "tiny", 4);
  EXPECT_EQ(out.result.copies, 4u);
  EXPECT_EQ(out.result.events_per_copy, 11u);
  EXPECT_EQ(out.result.metadata_events, 2u);
  EXPECT_EQ(out.result.events_written, 4u * 11 + 2);
  EXPECT_EQ(out.result.id_stride, 10000);  // smallest power of ten above the largest id, 4140
  EXPECT_EQ(out.result.step_stride, 2);    // steps #3..#4
  // Span 1000.000 .. 2100.000 us plus the default 10 us gap.
  EXPECT_EQ(out.result.period_ns, 1110000);
  EXPECT_EQ(out.result.period_ns, expected_period(original, 10000));
  EXPECT_TRUE(out.result.warnings.empty());

  const std::string text = test::read_file(out.path);
  EXPECT_TRUE(nlohmann::json::accept(text));
  // Args nobody rewrites survive byte for byte in every copy.
  EXPECT_EQ(count_of(text, "\"Call stack\": \"train.py(12): step;net.py(3): forward\""), 4u);
  EXPECT_EQ(count_of(text, "\"Input Dims\": [[8, 16], [16, 4]]"), 4u);
  // 1035.125 us + 1110 us: written from integer nanoseconds, three decimals.
  EXPECT_NE(text.find("\"ts\": 2145.125"), std::string::npos);
  EXPECT_NE(text.find("\"Sequence number\": 30057"), std::string::npos);

  const TraceModel m = load_trace(out.path);
  EXPECT_EQ(m.size(), 4u * 11 + 2);
  EXPECT_EQ(m.report.repair_count(), 0u);
  EXPECT_EQ(m.report.skip_count(), 0u);
  ASSERT_EQ(m.relations.steps.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(m.relations.steps[i].number, static_cast<std::int64_t>(3 + i));
  EXPECT_EQ(launch_correlations_duplicated(m), 0u);
  EXPECT_EQ(m.relations.launches.size(), 8u);
  EXPECT_EQ(m.relations.unmatched_gpu, 0u);
  EXPECT_EQ(m.memory_args.size(), 4u);
  EXPECT_EQ(m.info.devices.size(), 1u);
  EXPECT_EQ(m.info.trace_name, "tiny.json");
  EXPECT_EQ(m.info.base_time_ns, std::optional<std::int64_t>(1700000000000000000LL));
  expect_shifted_copies(original, m, 4, out.result.period_ns, out.result.id_stride);
  std::remove(out.path.c_str());
}

TEST(Inflate, GzipOutputLoadsToTheSameEvents) {
  const Inflated plain = inflate_text(kTinyTrace, "tiny-plain", 3);
  const Inflated gz = inflate_text(kTinyTrace, "tiny-gz", 3, OutputCompression::kGzip);
  const std::string bytes = test::read_file(gz.path);
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);
  EXPECT_EQ(gz.result.json_bytes, plain.result.json_bytes);
  EXPECT_EQ(gz.result.file_bytes, bytes.size());
  const TraceModel a = load_trace(plain.path), b = load_trace(gz.path);
  ASSERT_EQ(a.size(), b.size());
  for (EventIndex e = 0; e < a.size(); ++e) EXPECT_EQ(a.ts_ns[e], b.ts_ns[e]);
  std::remove(plain.path.c_str());
  std::remove(gz.path.c_str());
}

TEST(Inflate, StopsAfterTheCopyThatReachesTheTargetSize) {
  const std::uint64_t target = 4 * std::string(kTinyTrace).size();
  const Inflated out = inflate_text(kTinyTrace, "tiny-size", 0, OutputCompression::kNone, target);
  EXPECT_GE(out.result.json_bytes, target);
  EXPECT_EQ(test::read_file(out.path).size(), out.result.json_bytes);
  // One copy fewer would not have reached it.
  const Inflated fewer = inflate_text(kTinyTrace, "tiny-fewer", out.result.copies - 1);
  EXPECT_LT(fewer.result.json_bytes, target);
  std::remove(out.path.c_str());
  std::remove(fewer.path.c_str());
}

TEST(Inflate, IntegerMicrosecondTracesStayIntegers) {
  const TraceModel original = load_trace_text(kIntegerMicrosTrace);
  const Inflated out = inflate_text(kIntegerMicrosTrace, "int-us", 3);
  const auto doc = nlohmann::json::parse(test::read_file(out.path));
  ASSERT_EQ(doc["traceEvents"].size(), 12u);
  for (const auto& e : doc["traceEvents"]) {
    if (e["name"] != "add_kernel") {
      EXPECT_TRUE(e["ts"].is_number_integer()) << e.dump();
    }
  }
  EXPECT_EQ(doc["traceEvents"][5]["args"]["external id"], 102);  // 2 + one stride of 100
  // Strings stay strings. Period: the step spans 300 us (..460245 to ..460545), plus the 10 us gap.
  EXPECT_EQ(out.result.period_ns, 310000);
  EXPECT_EQ(doc["traceEvents"][7]["ts"], "1623142623460572");
  EXPECT_EQ(doc["traceEvents"][7]["args"]["correlation"], "177");
  const TraceModel m = load_trace(out.path);
  EXPECT_EQ(m.info.generation, original.info.generation);
  EXPECT_EQ(m.relations.steps.size(), 3u);
  EXPECT_EQ(m.relations.unmatched_gpu, 0u);
  expect_shifted_copies(original, m, 3, out.result.period_ns, out.result.id_stride);
  std::remove(out.path.c_str());
}

TEST(Inflate, BareArrayRootStaysAnArray) {
  const std::string legacy =
      R"json([{"ph": "X", "name": "aten::add", "pid": "CPU functions", "tid": 1, "ts": 10, "dur": 5},
    {"ph": "X", "name": "aten::mul", "pid": "CPU functions", "tid": 1, "ts": 20, "dur": 5}])json";
  const Inflated out = inflate_text(legacy, "bare", 5);
  const auto doc = nlohmann::json::parse(test::read_file(out.path));
  ASSERT_TRUE(doc.is_array());
  EXPECT_EQ(doc.size(), 10u);
  EXPECT_EQ(doc[9]["ts"], 20 + 4 * out.result.period_ns / 1000);
  std::remove(out.path.c_str());
}

TEST(Inflate, MalformedInputEventsAreLeftOutAndReported) {
  std::string json = kTinyTrace;
  const std::string bad = R"json({"ph": "X", "cat": "cpu_op", "name": "broken" "ts": 1050.0, "dur": 1.0},)json";
  json.insert(json.find("{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#4\""), bad + "\n  ");
  const Inflated out = inflate_text(json, "malformed", 2);
  EXPECT_EQ(out.result.skipped_events, 1u);
  EXPECT_EQ(out.result.events_written, 2u * 11 + 2);
  ASSERT_FALSE(out.result.warnings.empty());
  const TraceModel m = load_trace(out.path);
  EXPECT_EQ(m.report.skip_count(), 0u);
  EXPECT_EQ(m.size(), 2u * 11 + 2);
  std::remove(out.path.c_str());
}

TEST(Inflate, RejectsStdinAndMissingTarget) {
  InflateOptions options;
  options.input = "-";
  options.output = test::temp_path("never.json");
  options.copies = 2;
  EXPECT_THROW(inflate_trace(options), InputError);
  options.input = test::temp_path("does-not-exist.json");
  EXPECT_THROW(inflate_trace(options), InputError);
  options.copies = 0;
  EXPECT_THROW(inflate_trace(options), std::invalid_argument);
  std::remove(options.output.c_str());
}

TEST(Inflate, RefusesToOverwriteItsInput) {
  const std::string path = test::temp_path("self.json");
  test::write_file(path, kTinyTrace);
  InflateOptions options;
  options.input = options.output = path;
  options.copies = 2;
  EXPECT_THROW(inflate_trace(options), std::runtime_error);  // base/safe_file.h: "is the input"
  EXPECT_EQ(test::read_file(path), kTinyTrace);
  std::remove(path.c_str());
}

TEST(InflateCorpus, ResNetDdpToFourTimesItsSize) {
  FERRET_REQUIRE_CORPUS(path, "resnet-ddp-v100-2024-ns.pt.trace.json.gz");
  const TraceModel original = load_trace(path);
  InflateOptions options;
  options.input = path;
  options.output = test::temp_path("resnet-x4.json");
  options.target_bytes = 4 * original.info.json_bytes;
  const InflateResult r = inflate_trace(options);
  EXPECT_GE(r.copies, 4u);
  EXPECT_LE(r.copies, 5u);
  EXPECT_GE(r.json_bytes, options.target_bytes);
  EXPECT_TRUE(r.warnings.empty());

  const TraceModel m = load_trace(options.output);
  std::uint64_t metadata = 0;
  for (EventIndex e = 0; e < original.size(); ++e) metadata += original.kind[e] == EventKind::kMetadata;
  EXPECT_EQ(m.size(), r.copies * (original.size() - metadata) + metadata);
  EXPECT_EQ(m.report.skip_count(), r.copies * original.report.skip_count());
  // A trailing incomplete step of the input is complete in every copy but the last.
  const std::size_t steps_in_input = original.relations.steps.size() + (original.relations.dropped_step ? 1 : 0);
  EXPECT_EQ(m.relations.steps.size() + (m.relations.dropped_step ? 1 : 0), r.copies * steps_in_input);
  EXPECT_EQ(m.relations.steps.front().number, original.relations.steps.front().number);
  EXPECT_EQ(launch_correlations_duplicated(m), 0u);
  EXPECT_EQ(m.relations.unmatched_gpu, r.copies * original.relations.unmatched_gpu);
  EXPECT_EQ(m.relations.launches.size(), r.copies * original.relations.launches.size());
  EXPECT_EQ(m.info.devices.size(), original.info.devices.size());
  EXPECT_EQ(m.info.trace_name, original.info.trace_name);
  EXPECT_EQ(m.info.generation, original.info.generation);
  EXPECT_EQ(r.period_ns, expected_period(original, options.gap_ns));
  expect_shifted_copies(original, m, r.copies, r.period_ns, r.id_stride);

  // The same inflation, gzipped, loads to the same events.
  options.output = test::temp_path("resnet-x4.json.gz");
  options.compression = OutputCompression::kGzip;
  const InflateResult gz = inflate_trace(options);
  EXPECT_EQ(gz.json_bytes, r.json_bytes);
  EXPECT_LT(gz.file_bytes, gz.json_bytes / 4);
  const TraceModel mg = load_trace(options.output);
  EXPECT_EQ(mg.size(), m.size());
  EXPECT_EQ(mg.info.compression, "gzip");
  std::remove(options.output.c_str());
  std::remove(test::temp_path("resnet-x4.json").c_str());
}

}  // namespace inflate_test
}  // namespace
}  // namespace ferret
