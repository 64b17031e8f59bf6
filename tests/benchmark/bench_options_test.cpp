// The torch-free half of `ferret bench`: input specs and their errors, devices, warm-up and
// stopping rules, the statistics of a finished run, and the renderers. No libtorch needed.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "benchmark/model_runner.h"
#include "report/bench/bench_report.h"
#include "test_util.h"

namespace ferret::bench {
namespace {
namespace bench_options_test {

// The message of the BenchError that `body` throws ("" when it throws none).
template <class Body>
std::string error_of(Body&& body) {
  try {
    body();
  } catch (const BenchError& e) {
    return e.what();
  }
  return "";
}

// ---- Input specs --------------------------------------------------------------------------------

TEST(InputSpec, ParsesShapeAndDtype) {
  const InputSpec s = parse_input_spec("8x3x224x224:float32");
  EXPECT_EQ(s.shape, (std::vector<std::int64_t>{8, 3, 224, 224}));
  EXPECT_EQ(s.dtype, DType::kFloat32);
  EXPECT_EQ(s.elements(), 8u * 3 * 224 * 224);
  EXPECT_EQ(s.bytes(), 8u * 3 * 224 * 224 * 4);
  EXPECT_EQ(s.text(), "8x3x224x224:float32");
}

TEST(InputSpec, DtypeDefaultsToFloat32) {
  const InputSpec s = parse_input_spec("16x128");
  EXPECT_EQ(s.dtype, DType::kFloat32);
  EXPECT_EQ(s.text(), "16x128:float32");
}

TEST(InputSpec, OneDimension) {
  const InputSpec s = parse_input_spec("7:int64");
  EXPECT_EQ(s.shape, (std::vector<std::int64_t>{7}));
  EXPECT_EQ(s.dtype, DType::kInt64);
}

TEST(InputSpec, EveryDtypeAndItsSize) {
  struct Case {
    const char* name;
    DType dtype;
    std::size_t bytes;  // the element sizes torch documents for these dtypes
  };
  const Case cases[] = {{"float32", DType::kFloat32, 4},   {"float16", DType::kFloat16, 2},
                        {"bfloat16", DType::kBFloat16, 2}, {"float64", DType::kFloat64, 8},
                        {"int64", DType::kInt64, 8},       {"int32", DType::kInt32, 4},
                        {"uint8", DType::kUInt8, 1},       {"bool", DType::kBool, 1}};
  for (const Case& c : cases) {
    const InputSpec s = parse_input_spec(std::string("2x3:") + c.name);
    EXPECT_EQ(s.dtype, c.dtype) << c.name;
    EXPECT_EQ(dtype_bytes(s.dtype), c.bytes) << c.name;
    EXPECT_EQ(dtype_name(s.dtype), c.name);
    EXPECT_EQ(s.text(), std::string("2x3:") + c.name);  // canonical names round-trip
  }
}

TEST(InputSpec, AliasesBecomeCanonicalNames) {
  EXPECT_EQ(parse_input_spec("4:half").text(), "4:float16");
  EXPECT_EQ(parse_input_spec("4:bf16").text(), "4:bfloat16");
  EXPECT_EQ(parse_input_spec("4:double").text(), "4:float64");
  EXPECT_EQ(parse_input_spec("4:long").text(), "4:int64");
  EXPECT_EQ(parse_input_spec("4:int").text(), "4:int32");
  EXPECT_EQ(parse_input_spec("4:float").text(), "4:float32");
}

TEST(InputSpec, SurroundingSpacesAreIgnored) {
  EXPECT_EQ(parse_input_spec("  8x64 : float16 ").text(), "8x64:float16");
}

TEST(InputSpec, EmptySpecIsAnError) {
  EXPECT_NE(error_of([] { parse_input_spec(""); }).find("expected SHAPE[:DTYPE]"), std::string::npos);
  EXPECT_NE(error_of([] { parse_input_spec("   "); }).find("expected SHAPE[:DTYPE]"), std::string::npos);
}

TEST(InputSpec, MissingShapeIsAnError) {
  EXPECT_NE(error_of([] { parse_input_spec(":float32"); }).find("no shape"), std::string::npos);
}

TEST(InputSpec, BadDimensionsNameTheirPosition) {
  const std::string letter = error_of([] { parse_input_spec("8xAx3"); });
  EXPECT_NE(letter.find("--input \"8xAx3\""), std::string::npos) << letter;
  EXPECT_NE(letter.find("dimension 2 (\"A\")"), std::string::npos) << letter;
  EXPECT_NE(error_of([] { parse_input_spec("8x0x3"); }).find("dimension 2 (\"0\") is not a positive integer"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_input_spec("-8x3"); }).find("dimension 1"), std::string::npos);
  EXPECT_NE(error_of([] { parse_input_spec("8x3x"); }).find("dimension 3 (\"\")"), std::string::npos);
  EXPECT_NE(error_of([] { parse_input_spec("8xx3"); }).find("dimension 2"), std::string::npos);
  EXPECT_NE(error_of([] { parse_input_spec("8,3"); }).find("dimension 1 (\"8,3\")"), std::string::npos);
  EXPECT_NE(error_of([] { parse_input_spec("2.5x3"); }).find("dimension 1"), std::string::npos);
}

TEST(InputSpec, UnknownDtypeListsTheKnownOnes) {
  const std::string e = error_of([] { parse_input_spec("8x3:float8"); });
  EXPECT_NE(e.find("unknown dtype \"float8\""), std::string::npos) << e;
  EXPECT_NE(e.find("bfloat16"), std::string::npos) << e;
  EXPECT_NE(error_of([] { parse_input_spec("8x3:"); }).find("unknown dtype \"\""), std::string::npos);
  EXPECT_NE(error_of([] { parse_input_spec("8x3:Float32"); }).find("unknown dtype"), std::string::npos);
}

TEST(InputSpec, TooManyDimensions) {
  std::string spec = "1";
  for (std::size_t i = 1; i < kMaxInputDims; ++i) spec += "x1";
  EXPECT_EQ(parse_input_spec(spec).shape.size(), kMaxInputDims);
  const std::string more = spec + "x1";
  EXPECT_NE(error_of([&] { parse_input_spec(more); }).find("more than 16 dimensions"), std::string::npos);
}

TEST(InputSpec, OverflowingSizesAreRejected) {
  // 2^20 x 2^20 x 2^10 float32 = 2^52 bytes > 1 TiB; the 20-digit dimension overflows uint64.
  EXPECT_NE(error_of([] { parse_input_spec("1048576x1048576x1024"); }).find("larger than 1 TiB"), std::string::npos);
  EXPECT_NE(error_of([] { parse_input_spec("99999999999999999999x2"); }).find("dimension 1"), std::string::npos);
  // 2^38 float32 elements = exactly 1 TiB: accepted.
  EXPECT_EQ(parse_input_spec("262144x1048576").bytes(), 1ull << 40);
}

TEST(InputSpec, SpacesInsideTheShapeAreRefusedNamingTheValidForm) {
  const std::string spaced = error_of([] { parse_input_spec("2 x 4"); });
  EXPECT_NE(spaced.find("--input \"2 x 4\": spaces inside the shape"), std::string::npos) << spaced;
  EXPECT_NE(spaced.find(": 2x4"), std::string::npos) << spaced;
  EXPECT_NE(error_of([] { parse_input_spec("8 x3:float16"); }).find(": 8x3"), std::string::npos);
}

TEST(InputSpec, TooLargeSaysHowManyBytesItWouldNeed) {
  // 10^5 x 10^5 x 10^5 float32 = 4 10^15 bytes; 10^10 x 10^10 int64 = 8 10^20 bytes, beyond uint64.
  const std::string huge = error_of([] { parse_input_spec("100000x100000x100000"); });
  EXPECT_NE(huge.find("would need 4e+15 bytes, larger than 1 TiB"), std::string::npos) << huge;
  const std::string overflow = error_of([] { parse_input_spec("10000000000x10000000000:int64"); });
  EXPECT_NE(overflow.find("would need 8e+20 bytes"), std::string::npos) << overflow;
}

TEST(InputSpec, InputsBeyondTheAvailableMemoryAreRefusedBeforeAllocating) {
  // 1024x1024x256 float16 = 2^28 elements: kept on the CPU as 2^29 bytes of float16, made as 2^30
  // bytes of float32 first, so 2^29 + 2^30 = 1610612736 bytes; on a GPU only the 2^30 staging.
  const std::vector<InputSpec> inputs = {parse_input_spec("1024x1024x256:float16")};
  EXPECT_EQ(input_host_bytes(inputs, true), 1610612736u);
  EXPECT_EQ(input_host_bytes(inputs, false), 1073741824u);
  // Already float32 on the CPU: made in place, 2^28 x 4 = 2^30 bytes; plus 8 x 2^20 int32 inputs
  // made as int64 (2^26 bytes staging) and kept as int32 (2^25).
  const std::vector<InputSpec> mixed = {parse_input_spec("1024x1024x256:float32"), parse_input_spec("8x1048576:int32")};
  EXPECT_EQ(input_host_bytes(mixed, true), (1u << 30) + (1u << 25) + (1u << 26));
  const std::string refused = error_of([&] { check_inputs_fit(inputs, true, 1ull << 30); });
  EXPECT_NE(refused.find("needs 1610612736 bytes (1.5 GiB)"), std::string::npos) << refused;
  EXPECT_NE(refused.find("only 1073741824 bytes (1.0 GiB) are available"), std::string::npos) << refused;
  EXPECT_NO_THROW(check_inputs_fit(inputs, false, 1ull << 30));
  EXPECT_NO_THROW(check_inputs_fit(inputs, true, 0));  // unknown: no check
  // finalize_options applies the check with this machine's memory: 1 TiB of inputs does not fit
  // on a test machine (it would if it had more than 1.5 TiB free, which the check then allows).
  BenchOptions options;
  options.model_path = "model.pt";
  options.inputs = {parse_input_spec("262144x1048576:float32")};
  const std::uint64_t available = available_memory_bytes();
  if (available > 0 && available < (3ull << 40) / 2) {
    EXPECT_NE(error_of([&] { finalize_options(options); }).find("are available"), std::string::npos);
  }
}

TEST(ModelFile, Utf16And32TextIsNamedAsSuch) {
  using namespace std::string_view_literals;
  // "im" (0x69 0x6D) in each encoding, with and without a byte-order mark.
  EXPECT_EQ(unicode_text_encoding("\xFF\xFEi\0m\0"sv), "UTF-16LE");
  EXPECT_EQ(unicode_text_encoding("\xFE\xFF\0i\0m"sv), "UTF-16BE");
  EXPECT_EQ(unicode_text_encoding("\xFF\xFE\0\0i\0\0\0"sv), "UTF-32LE");
  EXPECT_EQ(unicode_text_encoding("\0\0\xFE\xFF\0\0\0i"sv), "UTF-32BE");
  EXPECT_EQ(unicode_text_encoding("i\0m\0"sv), "UTF-16LE");
  EXPECT_EQ(unicode_text_encoding("\0i\0m"sv), "UTF-16BE");
  EXPECT_EQ(unicode_text_encoding("i\0\0\0m\0\0\0"sv), "UTF-32LE");
  EXPECT_EQ(unicode_text_encoding("\0\0\0i\0\0\0m"sv), "UTF-32BE");
  // A TorchScript archive is a zip: "PK\3\4" then a header with NULs in no fixed pattern.
  EXPECT_EQ(unicode_text_encoding("PK\x03\x04\x14\0\0\0\x08\0"sv), "");
  EXPECT_EQ(unicode_text_encoding("import torch\n"sv), "");
  EXPECT_EQ(unicode_text_encoding(""sv), "");

  const std::string path = test::temp_path("utf16-model.pt");
  {
    std::ofstream out(path, std::ios::binary);
    out << "\xFF\xFE"sv
        << "i\0m\0p\0o\0r\0t\0"sv;
  }
  const std::string message = error_of([&] { check_not_unicode_text(path); });
  EXPECT_NE(message.find(path + " is UTF-16LE text, not a TorchScript model"), std::string::npos) << message;
  std::remove(path.c_str());
}

TEST(InputSpec, JoinedText) {
  EXPECT_EQ(input_specs_text({}), "");
  EXPECT_EQ(input_specs_text({parse_input_spec("8x3"), parse_input_spec("8:int64")}), "8x3:float32 8:int64");
}

// ---- Device, warm-up and options --------------------------------------------------------------

TEST(BenchOptions, Devices) {
  EXPECT_FALSE(parse_device("cpu").cuda);
  EXPECT_EQ(parse_device("cuda").text(), "cuda:0");
  EXPECT_EQ(parse_device("cuda:3").index, 3);
  EXPECT_NE(error_of([] { parse_device("gpu"); }).find("expected cpu, cuda or cuda:N"), std::string::npos);
  EXPECT_NE(error_of([] { parse_device("cuda:x"); }).find("--device \"cuda:x\""), std::string::npos);
}

TEST(BenchOptions, Warmup) {
  BenchOptions o;
  parse_warmup("25", o);
  EXPECT_FALSE(o.warmup_auto);
  EXPECT_EQ(o.warmup_calls, 25u);
  parse_warmup("auto", o);
  EXPECT_TRUE(o.warmup_auto);
  EXPECT_NE(error_of([&] { parse_warmup("some", o); }).find("expected auto or a number"), std::string::npos);
  EXPECT_NE(error_of([&] { parse_warmup("-1", o); }).find("--warmup \"-1\""), std::string::npos);
}

TEST(BenchOptions, BatchSizeDefaultsToTheFirstDimensionOfTheFirstInput) {
  BenchOptions o;
  o.model_path = "m.pt";
  o.inputs = {parse_input_spec("32x3x8x8"), parse_input_spec("5x2")};
  finalize_options(o);
  EXPECT_EQ(o.batch_size, 32);
  EXPECT_EQ(o.time_seconds, kDefaultTimeSeconds);  // neither --runs nor --time

  BenchOptions none;
  none.model_path = "m.pt";
  finalize_options(none);
  EXPECT_EQ(none.batch_size, 1);

  BenchOptions given;
  given.model_path = "m.pt";
  given.inputs = {parse_input_spec("32x3")};
  given.batch_size = 4;
  given.runs = 10;
  finalize_options(given);
  EXPECT_EQ(given.batch_size, 4);
  EXPECT_EQ(given.time_seconds, 0);
}

TEST(BenchOptions, Conflicts) {
  BenchOptions o;
  o.model_path = "m.pt";
  o.runs = 10;
  o.time_seconds = 2;
  EXPECT_NE(error_of([&] { finalize_options(o); }).find("one of --runs and --time"), std::string::npos);
  BenchOptions no_model;
  EXPECT_NE(error_of([&] { finalize_options(no_model); }).find("no model"), std::string::npos);
  BenchOptions zero_profile;
  zero_profile.model_path = "m.pt";
  zero_profile.profile_calls = 0;
  EXPECT_NE(error_of([&] { finalize_options(zero_profile); }).find("--profile-calls"), std::string::npos);
}

TEST(BenchOptions, SettingsNameTheSetup) {
  BenchOptions o;
  o.model_path = "m.pt";
  o.inputs = {parse_input_spec("8x64")};
  o.threads = 2;
  o.runs = 40;
  finalize_options(o);
  const Fields f = bench_settings(o);
  auto get = [&](const std::string& key) {
    for (const auto& [k, v] : f)
      if (k == key) return v;
    return std::string("<absent>");
  };
  EXPECT_EQ(get("device"), "cpu");
  EXPECT_EQ(get("threads"), "2");
  EXPECT_EQ(get("inputs"), "8x64:float32");
  EXPECT_EQ(get("warmup"), "auto");
  EXPECT_EQ(get("runs"), "40");
  EXPECT_EQ(get("batch_size"), "8");
}

// ---- Warm-up and stopping rules -----------------------------------------------------------------

TEST(WarmupTracker, FixedCount) {
  BenchOptions o;
  parse_warmup("3", o);
  WarmupTracker w(o);
  EXPECT_FALSE(w.done());
  EXPECT_FALSE(w.add(1.0));
  EXPECT_FALSE(w.add(1.0));
  EXPECT_TRUE(w.add(1.0));
  EXPECT_EQ(w.calls(), 3u);
  EXPECT_TRUE(w.steady());
  EXPECT_TRUE(w.add(1.0));  // ignored once done
  EXPECT_EQ(w.calls(), 3u);
}

TEST(WarmupTracker, FixedZeroIsDoneAtOnce) {
  BenchOptions o;
  parse_warmup("0", o);
  EXPECT_TRUE(WarmupTracker(o).done());
}

// A planted transient: 5 calls at 10 ms, then 1 ms with a small deterministic jitter. The
// window must fill (30 calls) and then slide past the slow calls, which MSER cuts as long as
// they sit in the window's first batch: it stops once they have left it, at call 35.
TEST(WarmupTracker, AutoStopsAfterAPlantedTransient) {
  BenchOptions o;
  WarmupTracker w(o);
  std::size_t i = 0;
  while (!w.done() && i < 500) {
    const double latency = i < 5 ? 10e-3 : 1e-3 + 1e-6 * static_cast<double>((i * 7) % 5);
    w.add(latency);
    ++i;
  }
  EXPECT_TRUE(w.steady());
  EXPECT_GE(w.calls(), kAutoWarmupWindow);
  EXPECT_GE(w.calls(), 5 + 1u);  // never inside the transient
  EXPECT_LE(w.calls(), 40u);
}

TEST(WarmupTracker, AutoOnAFlatSeriesStopsWhenTheWindowFills) {
  BenchOptions o;
  WarmupTracker w(o);
  while (!w.done()) w.add(2e-3);
  EXPECT_EQ(w.calls(), kAutoWarmupWindow);  // MSER(d) is 0 for every d; the earliest (0) wins
  EXPECT_TRUE(w.steady());
}

// A latency that keeps falling never looks steady to MSER (truncating more always lowers the
// score), so the cap stops it, and the tracker says so.
TEST(WarmupTracker, AutoStopsAtTheCallCap) {
  BenchOptions o;
  WarmupTracker w(o);
  std::size_t i = 0;
  while (!w.done()) w.add(1e-3 - 1e-7 * static_cast<double>(i++));
  EXPECT_EQ(w.calls(), kAutoWarmupMaxCalls);
  EXPECT_FALSE(w.steady());
}

TEST(WarmupTracker, AutoStopsAtTheTimeCap) {
  BenchOptions o;
  WarmupTracker w(o);
  while (!w.done()) w.add(3.0);  // 3 s a call: the 20 s cap ends it at the 7th call
  EXPECT_EQ(w.calls(), 7u);
  EXPECT_FALSE(w.steady());
}

TEST(TimedRuns, CountRule) {
  BenchOptions o;
  o.runs = 5;
  EXPECT_FALSE(timed_runs_done(o, 4, 100.0));
  EXPECT_TRUE(timed_runs_done(o, 5, 0.0));
}

TEST(TimedRuns, TimeRuleHasAFloorAndACeiling) {
  BenchOptions o;
  o.time_seconds = 1.0;
  EXPECT_FALSE(timed_runs_done(o, kMinTimedRuns - 1, 50.0));  // slow model: still 10 calls
  EXPECT_TRUE(timed_runs_done(o, kMinTimedRuns, 1.0));
  EXPECT_FALSE(timed_runs_done(o, 500, 0.5));
  EXPECT_TRUE(timed_runs_done(o, kMaxTimedRuns, 0.01));  // fast model: capped
}

TEST(Bootstrap, ResamplesShrinkForHugeRuns) {
  EXPECT_EQ(bootstrap_resamples_for(50), stats::kDefaultBootstrapResamples);
  EXPECT_EQ(bootstrap_resamples_for(10000), stats::kDefaultBootstrapResamples);
  EXPECT_EQ(bootstrap_resamples_for(50000), 2000);    // 10^8 / 5 10^4
  EXPECT_EQ(bootstrap_resamples_for(1000000), 1000);  // floor
}

// ---- Result -------------------------------------------------------------------------------------

TEST(BenchResult, SummaryAndThroughput) {
  BenchResult r;
  r.record.samples = {0.004, 0.002, 0.003, 0.002, 0.009};
  r.record.batch_size = 8;
  summarize_samples(r);
  EXPECT_EQ(r.summary.n, 5u);
  EXPECT_DOUBLE_EQ(r.summary.median, 0.003);        // sorted 2, 2, 3, 4, 9 ms
  EXPECT_DOUBLE_EQ(r.items_per_second, 8 / 0.003);  // batch / median
  EXPECT_DOUBLE_EQ(r.summary.iqr, 0.004 - 0.002);   // type-7 q1 = 2 ms, q3 = 4 ms
  EXPECT_TRUE(r.noisy);                             // IQR/median = 67% > 10%
  EXPECT_EQ(r.outliers.high_mild, 1u);              // 9 ms > q3 + 1.5 IQR = 7 ms, < q3 + 3 IQR = 10 ms
  EXPECT_LE(r.median_ci.low, r.summary.median);
  EXPECT_GE(r.median_ci.high, r.summary.median);
}

TEST(BenchResult, VmHwmParsing) {
  const std::string status = "Name:\tferret\nVmPeak:\t  300000 kB\nVmHWM:\t   163100 kB\nVmRSS:\t 100 kB\n";
  EXPECT_EQ(parse_vm_hwm(status), 163100ull * 1024);
  EXPECT_EQ(parse_vm_hwm("Name:\tx\n"), 0u);
  EXPECT_GT(peak_rss_bytes(), 0u);  // this process has resident memory
}

TEST(BenchResult, Iso8601) {
  const std::string t = iso8601_utc_now();
  ASSERT_EQ(t.size(), 20u);  // 2026-12-02T15:40:00Z
  EXPECT_EQ(t[4], '-');
  EXPECT_EQ(t[10], 'T');
  EXPECT_EQ(t.back(), 'Z');
}

// ---- Renderers ----------------------------------------------------------------------------------

BenchResult sample_result() {
  BenchResult r;
  r.record.subject = "models/a|b*_net.pt";
  r.record.batch_size = 8;
  for (int i = 0; i < 40; ++i) r.record.samples.push_back(1e-3 + 1e-6 * (i % 7));
  r.record.environment.fields = {{"cpu_model", "Some CPU"}, {"torch_version", "1.13.0"}};
  r.inputs = {parse_input_spec("8x64")};
  r.run_rule = "40 calls";
  r.device = "cpu";
  r.timing = "host steady_clock";
  r.threads = 1;
  r.torch_version = "1.13.0";
  r.warmup = {true, 33, 0.05, true};
  r.peak_rss_bytes = 100 << 20;
  r.profile_path = "/tmp/p.json";
  r.profile_calls = 10;
  summarize_samples(r);
  return r;
}

TEST(BenchReport, TextFitsEightyColumns) {
  const BenchResult r = sample_result();
  const std::string text = bench_text(r, BenchRecorded{7, "base", ".ferret/history.db"}, Style{});
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    EXPECT_LE(end - start, 80u) << text.substr(start, end - start);
    start = end + 1;
  }
  EXPECT_NE(text.find("Throughput"), std::string::npos);
  EXPECT_NE(text.find("not in the statistics"), std::string::npos);
  EXPECT_NE(text.find("#7"), std::string::npos);
  EXPECT_EQ(text.find("warning"), std::string::npos);  // IQR 3 us of 1 ms: not noisy
}

TEST(BenchReport, MarkdownEscapesThePath) {
  const std::string md = bench_markdown(sample_result(), std::nullopt);
  EXPECT_NE(md.find("models/a\\|b\\*\\_net.pt"), std::string::npos) << md;
  EXPECT_EQ(md.find("a|b*_net"), std::string::npos);
}

TEST(BenchReport, JsonSchema) {
  const BenchResult r = sample_result();
  const nlohmann::ordered_json j = bench_json(r, std::nullopt);
  EXPECT_EQ(j["schema"], "ferret.bench/1");
  EXPECT_EQ(j["latency_s"]["n"], 40);
  EXPECT_EQ(j["samples_s"].size(), 40u);
  EXPECT_TRUE(j["recorded"].is_null());
  EXPECT_TRUE(j["memory"]["allocator_peak"].is_null());
  EXPECT_EQ(j["profile"]["in_statistics"], false);
  EXPECT_EQ(j["inputs"][0]["shape"], nlohmann::ordered_json::array({8, 64}));
  // JSON has no NaN: a one-sample run has no standard deviation and says null.
  BenchResult one = sample_result();
  one.record.samples = {1e-3};
  summarize_samples(one);
  EXPECT_TRUE(bench_json(one, std::nullopt)["latency_s"]["stddev"].is_null());
}

TEST(BenchReport, NoiseWarning) {
  BenchResult r = sample_result();
  r.record.samples = {1e-3, 2e-3, 1e-3, 2e-3, 1.5e-3};
  summarize_samples(r);
  ASSERT_TRUE(r.noisy);
  EXPECT_NE(bench_text(r, std::nullopt, Style{}).find("noisy run"), std::string::npos);
  EXPECT_NE(bench_markdown(r, std::nullopt).find("**Warning:**"), std::string::npos);
}

}  // namespace bench_options_test
}  // namespace
}  // namespace ferret::bench
