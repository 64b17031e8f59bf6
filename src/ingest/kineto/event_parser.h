// Event parser: one RawBatch of whole event objects -> columnar rows with batch-local string ids.
//
// Batches are parsed on worker threads. Strings are interned into a small table local to the
// batch, so workers share nothing; the loader remaps the few distinct strings of each batch to
// the model's global ids when it merges batches in order.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ingest/kineto/json_scanner.h"
#include "model/trace_model.h"

namespace ferret {

// A string table for one batch: plain vector + hash map, discarded after the merge.
class LocalStrings {
 public:
  LocalStrings() { texts_.emplace_back(); }
  std::uint32_t intern(std::string_view s);
  const std::deque<std::string>& texts() const { return texts_; }
  void clear();

 private:
  // Kernel names run to hundreds of bytes; hashing a sample of them (length, head, tail) is
  // enough to spread them, and equal-hash candidates are still compared in full.
  struct SampledHash {
    std::size_t operator()(std::string_view s) const noexcept;
  };
  std::deque<std::string> texts_;
  std::unordered_map<std::string_view, std::uint32_t, SampledHash> index_;
};

// Leniencies the parser accepts, each counted under its own reason (docs/JSON.md lists them).
inline constexpr const char* kLenientNumberReason =
    "non-standard JSON number (leading zero, '+' or a dot without digits) read as its value";
inline constexpr const char* kNanIdReason = "NaN or Infinity as a correlation or External id: id dropped";
inline constexpr const char* kNanValueReason = "NaN or Infinity (not JSON) read as no value";
inline constexpr const char* kMissingFieldCommaReason = "missing comma between fields of an event (accepted)";

struct LocalIssue {
  std::uint64_t count = 0;
  std::string first_location;
};

struct ParsedBatch {
  std::uint64_t sequence = 0;
  std::uint64_t events_seen = 0;  // events in the raw batch (stored + skipped)
  std::uint64_t input_bytes = 0;  // JSON bytes those events span

  std::vector<EventKind> kind;
  std::vector<char> phase;
  std::vector<std::uint16_t> category;  // local ids into cats
  std::vector<StrId> name;              // local ids into strings
  std::vector<std::int64_t> ts_ns, dur_ns;
  std::vector<std::int32_t> pid, tid;  // negative values index labels as -1 - k
  std::vector<std::int64_t> correlation, external_id;

  std::vector<KernelArgs> kernel_args;  // event fields are batch-local indices
  std::vector<CopyArgs> copy_args;
  std::vector<OpArgs> op_args;  // StrIds local
  std::vector<CollectiveArgs> collective_args;
  std::vector<MemoryArgs> memory_args;
  std::vector<CounterSample> counters;
  std::vector<GraphNodeArgs> graph_nodes;
  std::vector<InductorKernelArgs> inductor_kernels;  // StrIds local
  std::vector<PythonFrameArgs> python_frames;

  // Metadata events: (pid, tid or INT32_MIN for process-level, local string id of the name).
  struct MetaName {
    std::int32_t pid, tid;
    bool is_thread;
    std::uint32_t text;
  };
  std::vector<MetaName> meta_names;

  LocalStrings strings;
  LocalStrings cats;
  std::vector<std::string> labels;  // texts of synthetic pid/tid ids
  std::unordered_map<std::string, std::int32_t> label_index;

  std::unordered_map<std::string, LocalIssue> repairs, skips;
  bool has_decimal_ts = false;  // any ts with a fractional part (ns-resolution generation)

  void clear();
  std::size_t size() const { return kind.size(); }
};

class EventParser {
 public:
  EventParser();
  ~EventParser();
  EventParser(const EventParser&) = delete;
  EventParser& operator=(const EventParser&) = delete;

  // Parses every event of `raw` into `out` (cleared first). `source_name` labels error locations.
  // Malformed events are repaired where possible (control characters, invalid UTF-8) or skipped;
  // each case is counted in out.repairs / out.skips with the first byte offset it happened at.
  void parse(RawBatch& raw, ParsedBatch& out);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace ferret
