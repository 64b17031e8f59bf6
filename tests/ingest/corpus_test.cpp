// Every trace of ../shared/corpus loads, and ferret's model agrees with independent reference
// numbers. The references come from tests/tools/corpus_counts.py (Python's json + gzip, nothing
// of ferret), committed as tests/data/corpus_counts.json so this test needs no Python.
// Each test skips loudly when ../shared is absent.
#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analysis/timeline/trace_summary.h"
#include "ingest/trace_loader.h"
#include "model/trace_model.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace corpus_test {

using nlohmann::json;

const json& reference() {
  static const json ref = [] {
    const std::string text = test::read_file(std::string(FERRET_SOURCE_DIR) + "/tests/data/corpus_counts.json");
    return json::parse(text);
  }();
  return ref;
}

std::vector<std::string> reference_files() {
  std::vector<std::string> names;
  for (const auto& [name, _] : reference().at("files").items()) names.push_back(name);
  return names;
}

std::string test_name(const std::string& file) {
  std::string out;
  for (char c : file) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

std::uint64_t ref_count(const json& obj, const std::string& key) {
  return obj.contains(key) ? obj.at(key).get<std::uint64_t>() : 0;
}

class CorpusFile : public ::testing::TestWithParam<std::string> {};

TEST(CorpusReference, CoversEveryTraceInTheCorpus) {
  FERRET_REQUIRE_CORPUS(dir, "");
  // The corpus files the reference must list: *.json and *.json.gz at the top and in the two
  // sub-folders (reference-* folders hold other tools' outputs, not traces).
  std::set<std::string> on_disk;
  for (const std::string sub : {"", "diff-pair/", "ranks-128job/"}) {
    DIR* d = ::opendir((dir + "/" + sub).c_str());
    ASSERT_NE(d, nullptr) << sub;
    while (dirent* ent = ::readdir(d)) {
      const std::string n = ent->d_name;
      const auto ends = [&](const std::string& s) {
        return n.size() > s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0;
      };
      if (ends(".json") || ends(".json.gz")) on_disk.insert(sub + n);
    }
    ::closedir(d);
  }
  const std::vector<std::string> listed = reference_files();
  EXPECT_EQ(on_disk, std::set<std::string>(listed.begin(), listed.end()))
      << "regenerate tests/data/corpus_counts.json with tests/tools/corpus_counts.py";
  EXPECT_GE(on_disk.size(), 25u);
}

TEST_P(CorpusFile, LoadsAndMatchesIndependentCounts) {
  const std::string file = GetParam();
  FERRET_REQUIRE_CORPUS(path, file);
  const json& ref = reference().at("files").at(file);

  TraceModel model;
  ASSERT_NO_THROW(model = load_trace(path)) << file;
  EXPECT_EQ(model.check_invariants(), "") << file;
  const TraceSummary summary = summarize_trace(model);

  // Every event of the file is stored (the reference counts events without "ts" separately).
  const std::uint64_t expected_events = ref.at("events").get<std::uint64_t>() - ref_count(ref, "skipped_no_ts");
  EXPECT_EQ(model.size(), expected_events);
  EXPECT_EQ(summary.events, expected_events);
  EXPECT_EQ(model.report.skip_count(), ref_count(ref, "skipped_no_ts"));
  EXPECT_FALSE(model.report.truncated);

  // Phases.
  for (const auto& [ph, count] : ref.at("by_ph").items()) {
    std::uint64_t n = 0;
    for (std::size_t e = 0; e < model.size(); ++e) n += model.phase[e] == ph[0];
    EXPECT_EQ(n, count.get<std::uint64_t>()) << "ph " << ph;
  }
  // Kinds (kernels, flows s/f, metadata, [memory] instants, ...): every kind ferret knows.
  for (int k = 0; k < kEventKindCount; ++k) {
    const std::string name = event_kind_name(static_cast<EventKind>(k));
    EXPECT_EQ(summary.by_kind[k], ref_count(ref.at("kinds"), name)) << "kind " << name;
  }
  EXPECT_EQ(summary.by_kind[static_cast<int>(EventKind::kKernel)], ref.at("kernels").get<std::uint64_t>());

  // ProfilerStep#N spans: the kept steps plus a dropped incomplete one. Iterations ferret inferred
  // (a trace without ProfilerStep spans) are no ProfilerStep spans.
  std::vector<std::int64_t> numbers;
  if (model.relations.step_marker_kind == StepMarker::kProfilerStep) {
    for (const Step& s : model.relations.steps) numbers.push_back(s.number);
    if (model.relations.dropped_step) numbers.push_back(model.relations.dropped_step->number);
  }
  std::sort(numbers.begin(), numbers.end());
  EXPECT_EQ(numbers, ref.at("step_numbers").get<std::vector<std::int64_t>>());
  EXPECT_EQ(numbers.size(), ref.at("profiler_steps").get<std::size_t>());

  // Devices.
  ASSERT_EQ(model.info.devices.size(), ref.at("devices").get<std::size_t>());
  for (std::size_t i = 0; i < model.info.devices.size(); ++i) {
    EXPECT_EQ(model.info.devices[i].name, ref.at("device_names")[i].get<std::string>()) << "device " << i;
    EXPECT_EQ(model.info.devices[i].num_sms, ref.at("device_num_sms")[i].get<int>()) << "device " << i;
  }
  // distributedInfo.
  if (ref.at("distributed").is_null()) {
    EXPECT_FALSE(model.info.distributed.present);
  } else {
    EXPECT_TRUE(model.info.distributed.present);
    EXPECT_EQ(model.info.distributed.rank, ref.at("distributed").at("rank").get<int>());
    EXPECT_EQ(model.info.distributed.world_size, ref.at("distributed").at("world_size").get<int>());
  }
  // baseTimeNanoseconds, kept exactly.
  if (ref.at("base_time_ns").is_null()) {
    EXPECT_FALSE(model.info.base_time_ns.has_value());
  } else {
    ASSERT_TRUE(model.info.base_time_ns.has_value());
    EXPECT_EQ(*model.info.base_time_ns, ref.at("base_time_ns").get<std::int64_t>());
  }
  // Time span of all timed events, exact to the nanosecond (Python used decimal arithmetic).
  if (!ref.at("span_first_ns").is_null()) {
    EXPECT_EQ(summary.first_ns, ref.at("span_first_ns").get<std::int64_t>());
    EXPECT_EQ(summary.last_ns, ref.at("span_last_ns").get<std::int64_t>());
  }
  EXPECT_EQ(summary.streams.size(), ref.at("gpu_streams").get<std::size_t>());
}

INSTANTIATE_TEST_SUITE_P(Corpus, CorpusFile, ::testing::ValuesIn(reference_files()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return test_name(info.param); });

struct Expected {
  const char* file;
  FormatGeneration generation;
  Platform platform;  // kUnknown: not checked
};

TEST(CorpusGenerations, EachGenerationIsRecognised) {
  const Expected cases[] = {
      {"resnet50-v100-torch19-dataloader.pt.trace.json.gz", FormatGeneration::kKineto18, Platform::kCuda},
      {"tbp-gpu-metrics-input.json", FormatGeneration::kKineto18, Platform::kCuda},
      {"inference-old-categories.json.gz", FormatGeneration::kKineto18, Platform::kUnknown},
      {"a100-rank3of8-2022.json.gz", FormatGeneration::kKineto110, Platform::kCuda},
      {"h100-qwen0.5b-inference-torch2.json.gz", FormatGeneration::kKineto2, Platform::kCuda},
      {"h100-image-classifier-inference.json.gz", FormatGeneration::kKineto2, Platform::kCuda},
      {"b200-eager-rank0of8.json.gz", FormatGeneration::kKineto2, Platform::kCuda},
      {"legacy-autograd-cpu-torch113.json", FormatGeneration::kLegacyAutograd, Platform::kCpuOnly},
      {"mi250-rocm62-toy.json.gz", FormatGeneration::kUnknown, Platform::kRocm},
      {"mi300-resnet-actckpt-rank0of8.json.gz", FormatGeneration::kUnknown, Platform::kRocm},
      {"mi300-vllm-decode-graph-capture.pt.trace.json.gz", FormatGeneration::kUnknown, Platform::kRocm},
      {"cpu-only.pt.trace.json.gz", FormatGeneration::kUnknown, Platform::kCpuOnly},
      {"triton-culaunchkernel.json.gz", FormatGeneration::kKineto2, Platform::kCuda},
  };
  for (const Expected& c : cases) {
    FERRET_REQUIRE_CORPUS(path, c.file);
    const TraceModel model = load_trace(path);
    if (c.generation != FormatGeneration::kUnknown) {
      EXPECT_EQ(format_generation_name(model.info.generation), std::string(format_generation_name(c.generation)))
          << c.file;
    }
    if (c.platform != Platform::kUnknown) {
      EXPECT_EQ(platform_name(model.info.platform), std::string(platform_name(c.platform))) << c.file;
    }
  }
}

// MANIFEST.md, "TensorBoard plugin" reference: average step 177,592 us; step 5 alone 187,948 us;
// GPU 0 is a Tesla V100-DGXS-32GB. ProfilerStep#5..#10 are the steps (MANIFEST table).
TEST(CorpusResNet50, StepsMatchTensorBoardPluginReference) {
  FERRET_REQUIRE_CORPUS(path, "resnet50-v100-torch19-dataloader.pt.trace.json.gz");
  const TraceModel model = load_trace(path);
  const auto& steps = model.relations.steps;
  ASSERT_EQ(steps.size(), 6u);
  for (std::size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i].number, static_cast<std::int64_t>(5 + i));
  EXPECT_FALSE(model.relations.dropped_step.has_value());
  EXPECT_NEAR(static_cast<double>(steps[0].end_ns - steps[0].start_ns) / 1000.0, 187948.0, 1.0);
  std::int64_t total = 0;
  for (const Step& s : steps) total += s.end_ns - s.start_ns;
  EXPECT_NEAR(static_cast<double>(total) / 6.0 / 1000.0, 177592.0, 1.0);
  ASSERT_GE(model.info.devices.size(), 1u);
  EXPECT_EQ(model.info.devices[0].id, 0);
  EXPECT_EQ(model.info.devices[0].name, "Tesla V100-DGXS-32GB");
  EXPECT_EQ(model.info.devices[0].num_sms, 80);
}

// The merge of parallel batches must not depend on thread count or batch size: the model from one
// thread with default batches equals the model from two threads with small (64 KiB) batches.
TEST(CorpusLoad, ThreadCountAndBatchSizeDoNotChangeTheModel) {
  FERRET_REQUIRE_CORPUS(path, "cnn-ddp-a100-rank0of2-nccl.json.gz");
  LoadOptions one;
  one.threads = 1;
  LoadOptions many;
  many.threads = 2;
  many.limits.batch_bytes = 64 << 10;
  const TraceModel a = load_trace(path, one);
  const TraceModel b = load_trace(path, many);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto e = static_cast<EventIndex>(i);
    ASSERT_EQ(a.name_of(e), b.name_of(e)) << i;
    ASSERT_EQ(a.ts_ns[e], b.ts_ns[e]) << i;
    ASSERT_EQ(a.dur_ns[e], b.dur_ns[e]) << i;
    ASSERT_EQ(a.kind[e], b.kind[e]) << i;
    ASSERT_EQ(a.pid[e], b.pid[e]) << i;
    ASSERT_EQ(a.tid[e], b.tid[e]) << i;
    ASSERT_EQ(a.correlation[e], b.correlation[e]) << i;
  }
  EXPECT_EQ(a.kernel_args.size(), b.kernel_args.size());
  EXPECT_EQ(a.collective_args.size(), b.collective_args.size());
  EXPECT_EQ(a.relations.steps.size(), b.relations.steps.size());
}

}  // namespace corpus_test
}  // namespace
}  // namespace ferret
