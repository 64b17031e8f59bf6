// ModelBuilder: the one documented writer of TraceModel's event columns and side tables.
//
// An importer appends events (one at a time, or a batch with its own string ids remapped) and
// hands the model over with finish(). Whatever it appends, the model keeps its invariants
// (TraceModel::check_invariants): every event column the same length, side-table rows in event
// order and naming existing events, every string id interned. A record that would break one is
// refused with std::invalid_argument before anything is written, so a refused append leaves the
// model as it was.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/trace_model.h"

namespace ferret {

// One event as an importer describes it; strings are text, interned by the builder.
struct EventRecord {
  EventKind kind = EventKind::kOther;
  char phase = 'X';
  std::string_view category;
  std::string_view name;
  std::int64_t ts_ns = 0;
  std::int64_t dur_ns = 0;  // 0 for instants
  std::int32_t pid = 0;     // ids that are not numbers: label_id()
  std::int32_t tid = 0;
  std::int64_t correlation = kNoId;  // flow id for flow events
  std::int64_t external_id = kNoId;
};

// A batch of events with batch-local ids, as parsers on worker threads produce them: the core
// columns (one entry per event), side tables whose `event` is the index within the batch and
// whose string fields are local string ids, pid/tid where a negative value -1 - k names local
// label k. The views must stay valid during append_batch.
struct EventBatchView {
  std::span<const EventKind> kind;
  std::span<const char> phase;
  std::span<const std::uint16_t> category;  // local category ids
  std::span<const StrId> name;              // local string ids
  std::span<const std::int64_t> ts_ns, dur_ns;
  std::span<const std::int32_t> pid, tid;
  std::span<const std::int64_t> correlation, external_id;
  std::span<const KernelArgs> kernel_args;
  std::span<const CopyArgs> copy_args;
  std::span<const OpArgs> op_args;
  std::span<const CollectiveArgs> collective_args;
  std::span<const MemoryArgs> memory_args;
  std::span<const CounterSample> counters;
  std::span<const GraphNodeArgs> graph_nodes;
  std::span<const InductorKernelArgs> inductor_kernels;
  std::span<const PythonFrameArgs> python_frames;
};

// How a batch's local ids become the model's: local string k -> strings[k], local category k ->
// categories[k], local label k -> labels[k]. Built with intern(), intern_category(), label_id().
struct BatchIdMaps {
  std::span<const StrId> strings;
  std::span<const std::uint16_t> categories;
  std::span<const std::int32_t> labels;
};

class ModelBuilder {
 public:
  ModelBuilder() = default;
  ModelBuilder(const ModelBuilder&) = delete;
  ModelBuilder& operator=(const ModelBuilder&) = delete;

  // Appends one event; returns its index, or kNoEvent when the model is full (4 billion events:
  // counted as a skip in report()).
  EventIndex append(const EventRecord& event);

  // Side-table rows for events already appended, in event order (per table); string fields are
  // ids from intern(). Throws std::invalid_argument for a row naming no event, a row out of
  // event order, or an unknown string id.
  void add(const KernelArgs& row);
  void add(const CopyArgs& row);
  void add(const OpArgs& row);
  void add(const CollectiveArgs& row);
  void add(const MemoryArgs& row);
  void add(const CounterSample& row);
  void add(const GraphNodeArgs& row);
  void add(const InductorKernelArgs& row);
  void add(const PythonFrameArgs& row);

  // Appends a batch, remapping its local ids. Returns false (the batch left out, counted as a
  // skip) when the model cannot hold it; throws std::invalid_argument, having written nothing,
  // when the batch is inconsistent (columns of different lengths, ids beyond the maps, side
  // rows naming no event of the batch or out of order); on std::bad_alloc the model is brought
  // back to where it was before the batch and the exception goes on.
  bool append_batch(const EventBatchView& batch, const BatchIdMaps& maps);

  StrId intern(std::string_view text) { return model_.strings.intern(text); }
  // Categories are stored in 16 bits: past 65535 distinct ones, extras become "" (a repair).
  std::uint16_t intern_category(std::string_view text);
  // The synthetic negative id standing for a pid/tid that is not a 32-bit number ("", "GPU 0").
  std::int32_t label_id(const std::string& text);

  void set_process_name(std::int32_t pid, std::string name) { model_.process_names[pid] = std::move(name); }
  void set_thread_name(std::int32_t pid, std::int32_t tid, std::string name) {
    model_.thread_names[{pid, tid}] = std::move(name);
  }

  // Trace-level facts and the ingest report are free to fill: no invariant ties them to rows.
  TraceInfo& info() { return model_.info; }
  IngestReport& report() { return model_.report; }
  // Reading the model while it is built (sizes, strings, memory); writing goes through the builder.
  const TraceModel& model() const { return model_; }
  std::size_t size() const { return model_.size(); }
  // Drops every event from index n on (with their side-table rows); a repair after running out
  // of memory or a cut the importer decides.
  void truncate_events(std::size_t n) { model_.truncate_events(n); }

  // Hands the model over; the builder is empty afterwards.
  TraceModel finish();

 private:
  template <class Row>
  void check_row(const Row& row, const Column<Row, 12>& table, const char* table_name) const;
  void check_string(StrId id, const char* field) const;

  TraceModel model_;
  std::unordered_map<std::string, std::int32_t> labels_;
};

}  // namespace ferret
