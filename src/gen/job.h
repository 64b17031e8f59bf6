// Synthetic multi-rank jobs: `ferret gen job` and `ferret gen scaling`.
//
// A data-parallel training job (DDP, NCCL all-reduce) on H100 hosts, written as one Kineto trace
// per rank into a directory, with known plants: a straggler rank and its cause, a slow network
// link on one host, clock skew between hosts. What was built in is computed from the generated
// events and written under "ferret_ground_truth" in every rank's file and in DIR/job_truth.json
// (DIR/scaling_truth.json for a scaling study). docs/GEN.md describes the physics and every field.
// Output is a pure function of the options: the same options give the same bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/trace_writer.h"

namespace ferret {

struct JobOptions {
  std::string output_dir;  // created when missing; rank files are rank-<r>.json[.gz]
  int ranks = 8;           // world size, 2 .. 4096
  int ranks_per_host = 8;  // 1 .. 64
  int steps = 10;          // 1 .. 100000; ignored when target_bytes > 0
  std::uint64_t seed = 1;
  int straggler = -1;                       // rank, or -1
  std::string straggler_cause = "compute";  // compute | input | sync
  std::string sharding = "ddp";             // ddp (all-reduce) | zero2 (reduce-scatter, then all-gather)
  double straggler_delay_ms = 5.0;
  int slow_link_host = -1;         // host, or -1
  double clock_skew_ms = 0.0;      // per-host offsets uniform in +-skew (host 0 exactly 0)
  bool seq = true;                 // "Seq" in the collective args
  bool distributed_info = true;    // distributedInfo and the "Rank" arg
  std::uint64_t target_bytes = 0;  // > 0: steps chosen so each rank's JSON is about this size
  OutputCompression compression = OutputCompression::kNone;
  unsigned threads = 0;  // rank files written in parallel; 0 = up to the core count
  // Called from the writing threads (serialized) with (rank files done, rank files in all).
  std::function<void(int, int)> progress;
};

struct JobResult {
  std::string ground_truth_json;  // DIR/job_truth.json
  int steps = 0;
  std::vector<std::string> files;  // rank-0 first
  std::uint64_t events = 0;        // over all ranks
  std::uint64_t json_bytes = 0;    // uncompressed, over all ranks
  std::uint64_t file_bytes = 0;
};

// Throws std::invalid_argument for bad options, std::runtime_error when output cannot be written.
JobResult write_job(const JobOptions& options);

struct ScalingResult {
  std::string ground_truth_json;  // DIR/scaling_truth.json
  std::vector<JobResult> jobs;    // one per world size, smallest first
};

// One job per world size into DIR/ws-<n>/ (options.ranks is ignored; a straggler or slow host
// applies to the world sizes that have it). World sizes: 2 .. 4096, distinct.
ScalingResult write_scaling(const JobOptions& options, const std::vector<int>& world_sizes);

}  // namespace ferret
