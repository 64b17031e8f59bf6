// One rank of a distributed job, reduced to what the cross-rank analysis needs: its steps with
// their breakdown, its communication kernels on its own clock, and its own diagnosis in brief.
//
// A rank's trace can be gigabytes; its RankResult is kilobytes to a few megabytes (one row per
// collective). It is all the job analysis reads, which is what lets MPI processes analyse their
// share of the ranks and send only these rows to the one that writes the report: the report is
// the same byte for byte however the ranks were spread. The serialised form is MessagePack with
// every integer and double kept exactly.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/timeline/communication.h"
#include "analysis/timeline/step_breakdown.h"
#include "analysis/trace_analysis.h"
#include "diagnosis/diagnose.h"

namespace ferret {

// Where a rank's number came from.
enum class RankSource : std::uint8_t {
  kDistributedInfo,  // the trace's distributedInfo.rank
  kFileName,         // "rank-3", "rank_3", "worker3", ... in the file name
  kOrder,            // neither: position among the inputs sorted by name
};
const char* rank_source_name(RankSource s);  // "distributedInfo", "file name", "input order"

// One communication kernel, on the rank's own clock.
struct RankCollective {
  Collective kind = Collective::kUnknown;
  std::int32_t process_group = -1;  // index into RankResult::process_groups; -1 when unnamed
  std::int64_t seq = -1;            // the process group's sequence number; -1 when not recorded
  std::int64_t step = -1;           // ProfilerStep it starts in; -1 without steps
  std::int64_t start_ns = 0;
  std::int64_t dur_ns = 0;
  std::int64_t bytes = -1;       // nccl-tests size; -1 unknown
  std::int32_t group_size = -1;  // -1 unknown
  std::int32_t device = -1;
  std::int64_t exposed_ns = 0;  // of dur_ns, what no compute kernel on its GPU overlaps
  bool operator==(const RankCollective&) const = default;
};

// One step of the rank, with what its time went to. Everything here is on the rank's own clock
// and inside the step's window.
struct RankStep {
  std::int64_t number = -1;   // ProfilerStep#N; -1 for the pseudo-step of a trace without steps
  std::int64_t start_ns = 0;  // absolute: baseTimeNanoseconds + ts when the trace has a base
  std::int64_t duration_ns = 0;
  std::array<std::int64_t, kStepCategoryCount> category_ns{};  // the plugin's breakdown
  std::int64_t compute_kernel_ns = 0;  // sum of non-communication kernel durations (all devices)
  std::int64_t dataloader_ns = 0;      // union of DataLoader spans
  std::int64_t host_sync_ns = 0;       // host time blocked in syncs (aten::item, *Synchronize)
  std::int64_t host_syncs = 0;         // how many
  std::int64_t comm_ns = 0;            // union of communication kernels
  std::int64_t exposed_comm_ns = 0;    // of that, what no compute kernel overlaps
  bool operator==(const RankStep&) const = default;
};

struct RankFinding {
  std::string id;
  std::string title;
  Severity severity = Severity::kInfo;
  Dimension dimension = Dimension::kCompute;
  double time_share = 0;
  double max_speedup = 1;
  bool operator==(const RankFinding&) const = default;
};

struct RankResult {
  std::string source;  // the file
  int rank = -1;
  RankSource rank_source = RankSource::kOrder;
  int world_size = -1;  // distributedInfo; -1 when absent
  std::string backend;  // "nccl", "gloo", ... ; "" when absent
  std::string nccl_version;
  std::string device_name;    // the first GPU's name, "" when none
  std::string scale_up_link;  // "NVLink4" from the GPU table; "" unknown
  double scale_up_gbps = -1;  // its per-direction peak, GB/s; -1 unknown
  std::string error;          // non-empty: the trace could not be analysed (nothing else is set)

  bool has_steps = false;
  std::vector<RankStep> steps;
  std::int64_t mean_step_ns = 0;
  std::array<double, kStepCategoryCount> breakdown_pct{};  // of the mean step
  double gpu_utilization_pct = -1;                         // -1: no GPU work
  std::int64_t comm_ns = 0;                                // over the window
  std::int64_t exposed_comm_ns = 0;
  std::int64_t window_ns = 0;
  double overlap_pct = -1;  // HTA's comm/comp overlap; -1 without communication

  std::vector<std::string> process_groups;
  std::vector<RankCollective> collectives;  // by start time

  std::string verdict;                // the rank's own headline
  std::vector<RankFinding> findings;  // ranked, at most kRankFindings
  std::uint64_t repairs = 0;
  std::uint64_t skips = 0;
  std::vector<std::string> notes;
  // Every field: the codec test compares decode(encode(r)) with r, so a field the codec forgets fails.
  bool operator==(const RankResult&) const = default;
};

inline constexpr std::size_t kRankFindings = 5;

// The rank's summary from its analysis and diagnosis (`analysis.model` must still be alive).
RankResult summarize_rank(const TraceAnalysis& analysis, const Diagnosis& diagnosis);

// Exact round trip: decode(encode(r)) == r field for field. decode throws std::runtime_error on
// bytes that are not a RankResult.
std::vector<std::uint8_t> encode_rank_result(const RankResult& r);
RankResult decode_rank_result(const std::vector<std::uint8_t>& bytes);

}  // namespace ferret
