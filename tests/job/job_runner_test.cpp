// The job runner (job/job_runner.h, job/wire.h): typed outcomes, a worker that throws, the MPI
// share arithmetic and the wire codec.
#include <filesystem>
#include <stdexcept>

#include <gtest/gtest.h>

#include "job/job_analysis.h"
#include "job/job_runner.h"
#include "job/wire.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace job_runner_test {

// One step of 1000 us with four 100 us kernels: a trace every stage can analyse.
std::string small_trace() {
  std::vector<std::string> events = {test::span("user_annotation", "ProfilerStep#1", 1, 1, 0, 1000)};
  for (int k = 0; k < 4; ++k) events.push_back(test::span("kernel", "gemm", 0, 7, 200.0 * k, 100));
  return test::trace(events);
}

// DIR/rank0.json .. rank{n-1}.json, each small_trace().
std::vector<std::string> write_ranks(const std::string& name, int n) {
  const std::string dir = test::temp_path(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::vector<std::string> files;
  for (int r = 0; r < n; ++r) {
    files.push_back(dir + "/rank" + std::to_string(r) + ".json");
    test::write_file(files.back(), small_trace());
  }
  return files;
}

std::vector<std::size_t> all_of(const std::vector<std::string>& files) {
  std::vector<std::size_t> indices(files.size());
  for (std::size_t i = 0; i < indices.size(); ++i) indices[i] = i;
  return indices;
}

TEST(JobRunner, AWorkerThatThrowsNamesItsRankAndTheOthersFinish) {
  const std::vector<std::string> files = write_ranks("runner-throwing", 3);
  for (unsigned jobs : {1u, 3u}) {  // one at a time, and on the pool's threads
    TraceRunOptions options;
    options.jobs = jobs;
    options.render = [&](const TraceAnalysis&, const Diagnosis&, TraceOutcome& o) {
      if (o.path == files[1]) throw std::logic_error("boom");
      if (o.path == files[2]) throw 42;  // not even a std::exception
      o.report = "rendered";
    };
    std::vector<TraceOutcome> outcomes = analyze_trace_files(files, all_of(files), options);
    ASSERT_EQ(outcomes.size(), 3u);
    EXPECT_EQ(outcomes[0].outcome, RankOutcome::kOk);
    EXPECT_EQ(outcomes[0].report, "rendered");
    EXPECT_EQ(outcomes[1].outcome, RankOutcome::kInternalError);
    EXPECT_EQ(outcomes[1].error, files[1] + ": internal error while writing its report: boom");
    EXPECT_EQ(outcomes[2].outcome, RankOutcome::kInternalError);
    EXPECT_EQ(outcomes[2].error,
              files[2] + ": internal error while writing its report: an exception that is not a std::exception");

    // The job report is made from rank 0 and names the two that failed.
    const JobAnalysis job = analyze_job(rank_results(std::move(outcomes)));
    ASSERT_EQ(job.ranks.size(), 3u);
    EXPECT_TRUE(job.ranks[0].error.empty());
    EXPECT_EQ(job.ranks[0].source, files[0]);
    EXPECT_EQ(job.ranks[1].error, files[1] + ": internal error while writing its report: boom");
    const std::string warning = "rank 1 (" + files[1] + ") could not be analysed: " + files[1] +
                                ": internal error while writing its report: boom";
    EXPECT_NE(std::find(job.warnings.begin(), job.warnings.end(), warning), job.warnings.end());
  }
}

TEST(JobRunner, OutcomesAreTypedAndTriageLeavesOutOtherJsonFoundInADirectory) {
  std::vector<std::string> files = write_ranks("runner-typed", 1);
  const std::string dir = std::filesystem::path(files[0]).parent_path();
  files.push_back(dir + "/config.json");
  test::write_file(files.back(), "{\"lr\": 0.1}");  // JSON, but not a trace
  files.push_back(dir + "/rank9.json");
  test::write_file(files.back(), "not json at all");
  std::vector<TraceOutcome> outcomes = analyze_trace_files(files, all_of(files), {});
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_EQ(outcomes[0].outcome, RankOutcome::kOk);
  EXPECT_EQ(outcomes[1].outcome, RankOutcome::kNotATrace);
  EXPECT_EQ(outcomes[2].outcome, RankOutcome::kUnreadable);
  EXPECT_NE(outcomes[2].error.find(files[2]), std::string::npos) << outcomes[2].error;

  // Found in a directory: the config is left out with a note, the broken rank is named, nothing fails.
  std::vector<TraceOutcome> from_directory = outcomes;
  const TraceTriage found = triage_trace_outcomes(from_directory, {false, false, false});
  EXPECT_EQ(found.failures, 0);
  ASSERT_EQ(found.messages.size(), 2u);
  EXPECT_EQ(found.messages[0], "left out " + files[1] + ": not a trace (no \"traceEvents\" array in the document)");
  EXPECT_EQ(found.messages[1], "rank file left out of the report: " + outcomes[2].error);
  ASSERT_EQ(from_directory.size(), 2u);
  EXPECT_EQ(from_directory[1].path, files[2]);

  // Named by the caller, both are failures.
  std::vector<TraceOutcome> named = outcomes;
  EXPECT_EQ(triage_trace_outcomes(named, {true, true, true}).failures, 2);
}

TEST(JobRunner, ShareOfProcessIsLargestFirstToTheLeastLoaded) {
  // Sizes 10, 7, 5, 3, 1 on two processes, by hand: 10 -> p0 (10), 7 -> p1 (7), 5 -> p1 (12),
  // 3 -> p0 (13), 1 -> p1 (13 against 12).
  const std::vector<std::uint64_t> sizes = {10, 7, 5, 3, 1};
  EXPECT_EQ(share_of_process(sizes, 2, 0), (std::vector<std::size_t>{0, 3}));
  EXPECT_EQ(share_of_process(sizes, 2, 1), (std::vector<std::size_t>{1, 2, 4}));
  EXPECT_EQ(share_of_process(sizes, 1, 0), (std::vector<std::size_t>{0, 1, 2, 3, 4}));
  // More processes than files: the last gets nothing.
  EXPECT_TRUE(share_of_process({4, 4}, 3, 2).empty());
}

TEST(JobRunner, WireCarriesOutcomeErrorAndRankResult) {
  const std::vector<std::string> files = {"a.json", "b.json", "c.json"};
  TraceOutcome ok;
  ok.rank.rank = 2;
  ok.rank.world_size = 3;
  ok.rank.source = "c.json";
  ok.rank.mean_step_ns = 1234;
  TraceOutcome oom;
  oom.outcome = RankOutcome::kOutOfMemory;
  oom.error = "a.json: ran out of memory while analysing it";
  const std::vector<std::uint8_t> bytes = encode_share({2, 0}, {ok, oom});

  std::vector<TraceOutcome> all(3);
  decode_share(bytes, files, all);
  EXPECT_EQ(all[2].path, "c.json");
  EXPECT_EQ(all[2].outcome, RankOutcome::kOk);
  EXPECT_EQ(all[2].rank, ok.rank);
  EXPECT_EQ(all[0].path, "a.json");
  EXPECT_EQ(all[0].outcome, RankOutcome::kOutOfMemory);
  EXPECT_EQ(all[0].error, oom.error);
  EXPECT_TRUE(all[1].path.empty());  // not in the share

  std::vector<TraceOutcome> too_few(2);
  EXPECT_THROW(decode_share(bytes, files, too_few), std::runtime_error);
}

}  // namespace job_runner_test
}  // namespace
}  // namespace ferret
