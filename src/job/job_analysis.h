// A distributed job as a whole, from the RankResults of its ranks: collectives matched across
// ranks, clocks aligned, the cost of each collective split into waiting and transfer, the ranks
// that arrive last and why, and a per-rank table.
//
// Method (docs/DISTRIBUTED.md):
// - Matching. A collective's calls on different ranks are the same call when torch recorded the
//   same (process group, sequence number) on them. Without sequence numbers, calls are matched
//   within (process group, collective kind) by their ends: each rank's sequence is slid against
//   the reference rank's by up to kMaxOrderShift calls, each shift proposes a clock offset (the
//   median end difference), the offset under which the most calls end together wins, and calls
//   are paired by aligned end. A call missing from one trace, or traces that sampled different
//   calls, do not shift every later match.
// - Clocks. A collective ends at nearly the same moment on every participant (no rank can
//   finish before the last one's data arrived), so the median difference of end times between
//   two ranks over their shared calls is their clock offset. Offsets are relative to the lowest
//   rank and propagate through calls that other ranks share. Participants whose aligned end is
//   further than the tolerance from the call's median end are dropped as mismatches.
// - Transfer and wait. The shortest duration of a call across its ranks approximates the
//   transfer (the last rank to arrive waits for nobody); the rest of every other rank's
//   duration is waiting (HolisticTraceAnalysis's convention, docs/DISTRIBUTED.md).
// - Stragglers. The rank whose aligned start is last is the one every other rank waits for; its
//   lateness is the gap to the next-latest start. Per step, the call with the largest lateness
//   names that step's last rank (later calls of a step queue behind the first on NCCL's stream,
//   so a late rank is often last only once per step); a straggler is that rank in most steps.
//   Its cause is the per-step activity that exceeds the other ranks' median the most: GPU
//   compute, input wait (DataLoader), host syncs, or host-side work. Host work that follows
//   extra host syncs is put down to the syncs: a sync drains the GPU's queue, so the host work
//   after it no longer overlaps GPU work.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "job/rank_result.h"

namespace ferret {

inline constexpr int kMaxOrderShift = 4;
// A participant whose aligned end is further than this from the call's median end is not the
// same call. Ends agree to a few microseconds on one host (same clock); 200 us leaves room for
// clock drift over a trace and NCCL's teardown of a kernel, far below a step.
inline constexpr std::int64_t kEndToleranceNs = 200'000;
// Ranks whose offsets differ by less than this share a clock (most likely one host): ends of one
// call on one host agree to tens of microseconds (seen: 55 us on a real 128-rank job).
inline constexpr std::int64_t kSameClockNs = 100'000;

// One participant of a matched call, on the reference clock.
struct Participant {
  std::int32_t rank_index = -1;  // into JobAnalysis::ranks
  std::int64_t start_ns = 0;
  std::int64_t dur_ns = 0;
  std::int64_t exposed_ns = 0;  // of dur_ns, what no compute kernel on the rank's GPU overlaps
  std::int64_t end_ns() const { return start_ns + dur_ns; }
};

struct MatchedCall {
  Collective kind = Collective::kUnknown;
  std::int32_t process_group = -1;  // into JobAnalysis::process_groups
  std::int64_t seq = -1;
  std::int64_t step = -1;  // on the reference rank
  std::int64_t bytes = -1;
  std::int32_t group_size = -1;
  std::vector<Participant> participants;  // by rank index
  std::int64_t transfer_ns = 0;           // shortest duration
  std::int32_t last_rank_index = -1;      // latest aligned start
  std::int64_t lateness_ns = 0;           // latest start - next-latest start
};

enum class MatchMethod : std::uint8_t { kNone, kSequenceNumbers, kOrder };
const char* match_method_name(MatchMethod m);  // "none", "sequence numbers", "order"

struct RankClock {
  bool aligned = false;            // an offset was found (the reference rank is aligned with 0)
  std::int64_t offset_ns = 0;      // add to this rank's times to get the reference clock
  std::uint64_t shared_calls = 0;  // calls the offset was measured on
  std::int64_t spread_ns = 0;      // median absolute deviation of those measurements
  std::int32_t clock_group = -1;   // ranks with the same group id share a clock
};

struct CollectiveMatching {
  MatchMethod method = MatchMethod::kNone;
  std::vector<std::string> process_groups;  // names across ranks
  std::vector<MatchedCall> calls;           // matched on >= 2 ranks, by reference start
  std::vector<RankClock> clocks;            // per rank index
  std::uint64_t collectives = 0;            // communication kernels over all ranks
  std::uint64_t matched_collectives = 0;    // of those, in a matched call
  std::uint64_t mismatches_dropped = 0;     // ends too far from the call's median end
  std::int32_t clock_groups = 0;
};

// Matching and clock alignment (collective_matching.cpp).
CollectiveMatching match_collectives(const std::vector<RankResult>& ranks);

// ---- Per collective kind and size --------------------------------------------------------------

// Size buckets by powers of 16 from 64 KiB: latency-bound, mid, bandwidth-bound.
inline constexpr int kSizeBuckets = 5;
const char* size_bucket_label(int bucket);  // "< 64 KiB", "64 KiB - 1 MiB", ..., ">= 256 MiB", "unknown"
int size_bucket(std::int64_t bytes);        // 0..kSizeBuckets-1; kSizeBuckets when unknown

struct CollectiveCost {
  Collective kind = Collective::kUnknown;
  int bucket = 0;
  std::int32_t group_size = -1;  // when all calls agree, else -1
  std::uint64_t calls = 0;
  std::int64_t bytes = 0;             // total over sized calls
  std::int64_t transfer_ns = 0;       // sum of per-call transfer
  std::int64_t mean_duration_ns = 0;  // per call, mean over participants
  std::int64_t mean_wait_ns = 0;      // per call and participant: duration - transfer
  double wait_share = 0;              // of participants' total duration
  double algbw_gbps = -1;             // sized calls: bytes / transfer
  double busbw_gbps = -1;
  double link_gbps = -1;  // scale-up link peak of the ranks' GPU, -1 unknown
  std::string link;
  std::vector<std::int64_t> rank_mean_duration_ns;  // per rank index, -1 when it took no part
};

std::vector<CollectiveCost> collective_costs(const std::vector<RankResult>& ranks, const CollectiveMatching& m);

// ---- Stragglers ---------------------------------------------------------------------------------

enum class StragglerCause : std::uint8_t { kUnexplained, kCompute, kInput, kHostSync, kHostWork };
const char* straggler_cause_name(StragglerCause c);  // "unexplained", "compute", "input", "host-sync", "host-work"

struct RankLateness {
  std::int32_t rank_index = -1;
  std::uint64_t calls = 0;  // matched calls it took part in
  std::uint64_t times_last = 0;
  std::uint64_t steps_last = 0;            // steps whose most delayed call waited for it
  std::int64_t lateness_ns = 0;            // summed over the calls where it was last
  std::int64_t mean_arrival_delay_ns = 0;  // mean (start - median start) over its calls
  std::int64_t wait_ns = 0;                // its time waiting inside collectives (duration - transfer)
};

// Per-step activity of one rank against the median of the others.
struct ActivityExcess {
  StragglerCause cause = StragglerCause::kUnexplained;
  std::int64_t rank_ns = 0;  // per step
  std::int64_t others_median_ns = 0;
  std::int64_t excess_ns() const { return rank_ns - others_median_ns; }
};

struct Straggler {
  std::int32_t rank_index = -1;
  std::uint64_t times_last = 0;  // calls at which it started last
  std::uint64_t calls = 0;
  std::uint64_t steps_last = 0;           // steps whose most delayed call waited for it
  std::uint64_t steps = 0;                // steps with matched calls (calls, for traces without steps)
  double last_share = 0;                  // steps_last / steps
  std::int64_t mean_lateness_ns = 0;      // when last
  std::int64_t lateness_per_step_ns = 0;  // summed lateness per step
  // What the lateness costs per step: the other ranks' median exposed communication (collectives
  // with no compute beside them, where waiting shows) minus the straggler's own, at most the
  // lateness. Lateness that compute hides costs nothing; and with NCCL streams serialised, a late
  // first call delays the later calls of the step too, so summed lateness would count it again.
  std::int64_t cost_per_step_ns = 0;
  double step_share = 0;  // cost_per_step / median step
  StragglerCause cause = StragglerCause::kUnexplained;
  std::vector<ActivityExcess> activities;  // compute, input, host sync, host work
  double host_syncs_per_step = 0;          // the straggler's
  double others_host_syncs_per_step = 0;   // the other ranks' median
};

// A straggler is the last rank in more than this share of the steps (a random rank of N is last
// in 1/N of them; HTA: "consistently over steps")...
inline constexpr double kStragglerLastShare = 0.5;
// ... and needs at least this many steps (or matched calls, without steps) to say so.
inline constexpr std::uint64_t kStragglerMinSteps = 2;
inline constexpr std::uint64_t kStragglerMinCalls = 3;
// A cause explains the straggler when its per-step excess covers at least this share of its cost.
inline constexpr double kCauseExplainsShare = 0.5;

struct StragglerResult {
  std::vector<RankLateness> ranks;    // per rank index
  std::vector<Straggler> stragglers;  // consistent ones, most costly first
  std::uint64_t steps = 0;            // steps with matched calls (calls, without steps)
};

StragglerResult find_stragglers(const std::vector<RankResult>& ranks, const CollectiveMatching& m);

// ---- The job -----------------------------------------------------------------------------------

struct JobAnalysis {
  std::vector<RankResult> ranks;   // by rank number; failed ranks keep only source and error
  int world_size = -1;             // from distributedInfo when the ranks agree, else -1
  std::vector<int> missing_ranks;  // of 0..world_size-1, not among the inputs (first 64)
  std::uint64_t missing_rank_count = 0;
  std::vector<std::string> warnings;  // duplicated ranks, mixed world sizes, failed ranks, ...
  std::int64_t median_step_ns = 0;    // over ranks' mean steps
  std::int64_t slowest_step_ns = 0;
  std::int32_t slowest_rank_index = -1;
  CollectiveMatching matching;
  std::vector<CollectiveCost> costs;
  StragglerResult stragglers;
};

// Orders the ranks, numbers the ones that do not say (file name, then order), and runs every
// cross-rank analysis.
JobAnalysis analyze_job(std::vector<RankResult> ranks);

}  // namespace ferret
