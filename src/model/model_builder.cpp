#include "model/model_builder.h"

#include <new>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>

namespace ferret {

namespace {

// The events of a model of `base` events plus a batch of `n`: EventIndex must hold every index
// and keep kNoEvent free.
bool fits(std::size_t base, std::size_t n) { return base + n < kNoEvent; }

[[noreturn]] void refuse(const std::string& what) { throw std::invalid_argument("model builder: " + what); }

// Side rows of a batch: each names an event of the batch, in event order.
template <class Row>
void check_batch_rows(std::span<const Row> rows, std::size_t events, const char* table, bool one_per_event) {
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].event >= events)
      refuse(fmt::format("{} row {} names event {} of a batch of {}", table, r, rows[r].event, events));
    if (r > 0 && (rows[r].event < rows[r - 1].event || (one_per_event && rows[r].event == rows[r - 1].event)))
      refuse(fmt::format("{} row {} (event {}) is out of event order", table, r, rows[r].event));
  }
}

void check_local_string(StrId id, std::size_t map_size, const char* field) {
  if (id >= map_size) refuse(fmt::format("{} names local string {} of {}", field, id, map_size));
}

template <class Row, class Remap>
void append_rows(Column<Row, 12>& table, std::span<const Row> rows, EventIndex base, Remap remap) {
  for (Row row : rows) {
    row.event += base;
    remap(row);
    table.push_back(row);
  }
}

}  // namespace

EventIndex ModelBuilder::append(const EventRecord& event) {
  const std::size_t base = model_.size();
  if (!fits(base, 1)) {
    model_.report.skip("events beyond the model's 4-billion-event capacity", "end of trace");
    return kNoEvent;
  }
  if (static_cast<int>(event.kind) >= kEventKindCount)
    refuse(fmt::format("event kind {} is not an EventKind", static_cast<int>(event.kind)));
  for (const std::int32_t id : {event.pid, event.tid})
    if (id < 0 && !model_.id_labels.count(id)) refuse(fmt::format("synthetic id {} has no label (label_id)", id));
  const std::uint16_t category = intern_category(event.category);
  const StrId name = intern(event.name);
  try {
    model_.kind.push_back(event.kind);
    model_.phase.push_back(event.phase);
    model_.category.push_back(category);
    model_.name.push_back(name);
    model_.ts_ns.push_back(event.ts_ns);
    model_.dur_ns.push_back(event.dur_ns);
    model_.pid.push_back(event.pid);
    model_.tid.push_back(event.tid);
    model_.correlation.push_back(event.correlation);
    model_.external_id.push_back(event.external_id);
  } catch (const std::bad_alloc&) {
    model_.truncate_events(base);
    throw;
  }
  return static_cast<EventIndex>(base);
}

void ModelBuilder::check_string(StrId id, const char* field) const {
  if (id >= model_.strings.size()) refuse(fmt::format("{} is string id {}, never interned", field, id));
}

template <class Row>
void ModelBuilder::check_row(const Row& row, const Column<Row, 12>& table, const char* table_name) const {
  if (row.event >= model_.size())
    refuse(fmt::format("{} row names event {}, but the model holds {}", table_name, row.event, model_.size()));
  // Counters keep one row per series of an event; every other table one row per event.
  constexpr bool one_per_event = !std::is_same_v<Row, CounterSample>;
  if (!table.empty() && (row.event < table.back().event || (one_per_event && row.event == table.back().event)))
    refuse(
        fmt::format("{} row for event {} comes after the row for event {}", table_name, row.event, table.back().event));
}

void ModelBuilder::add(const KernelArgs& row) {
  check_row(row, model_.kernel_args, "kernel_args");
  check_string(row.limiting_factor, "kernel_args.limiting_factor");
  model_.kernel_args.push_back(row);
}
void ModelBuilder::add(const CopyArgs& row) {
  check_row(row, model_.copy_args, "copy_args");
  model_.copy_args.push_back(row);
}
void ModelBuilder::add(const OpArgs& row) {
  check_row(row, model_.op_args, "op_args");
  check_string(row.input_dims, "op_args.input_dims");
  check_string(row.input_types, "op_args.input_types");
  check_string(row.input_strides, "op_args.input_strides");
  check_string(row.concrete_inputs, "op_args.concrete_inputs");
  model_.op_args.push_back(row);
}
void ModelBuilder::add(const CollectiveArgs& row) {
  check_row(row, model_.collective_args, "collective_args");
  check_string(row.collective_name, "collective_args.collective_name");
  check_string(row.dtype, "collective_args.dtype");
  check_string(row.process_group_name, "collective_args.process_group_name");
  check_string(row.process_group_ranks, "collective_args.process_group_ranks");
  model_.collective_args.push_back(row);
}
void ModelBuilder::add(const MemoryArgs& row) {
  check_row(row, model_.memory_args, "memory_args");
  model_.memory_args.push_back(row);
}
void ModelBuilder::add(const CounterSample& row) {
  check_row(row, model_.counters, "counters");
  check_string(row.series, "counters.series");
  model_.counters.push_back(row);
}
void ModelBuilder::add(const GraphNodeArgs& row) {
  check_row(row, model_.graph_nodes, "graph_nodes");
  model_.graph_nodes.push_back(row);
}
void ModelBuilder::add(const InductorKernelArgs& row) {
  check_row(row, model_.inductor_kernels, "inductor_kernels");
  check_string(row.backend, "inductor_kernels.backend");
  check_string(row.hash, "inductor_kernels.hash");
  model_.inductor_kernels.push_back(row);
}
void ModelBuilder::add(const PythonFrameArgs& row) {
  check_row(row, model_.python_frames, "python_frames");
  model_.python_frames.push_back(row);
}

std::uint16_t ModelBuilder::intern_category(std::string_view text) {
  const StrId id = model_.categories.intern(text);
  if (id <= 0xFFFF) return static_cast<std::uint16_t>(id);
  model_.report.repair("more than 65535 distinct categories: extras shown as empty", "category table");
  return 0;
}

std::int32_t ModelBuilder::label_id(const std::string& text) {
  auto it = labels_.find(text);
  if (it != labels_.end()) return it->second;
  const std::int32_t id = -1 - static_cast<std::int32_t>(labels_.size());
  labels_.emplace(text, id);
  model_.id_labels[id] = text;
  return id;
}

bool ModelBuilder::append_batch(const EventBatchView& batch, const BatchIdMaps& maps) {
  // Check everything first, so that a refused batch writes nothing.
  const std::size_t n = batch.kind.size();
  for (const std::size_t length :
       {batch.phase.size(), batch.category.size(), batch.name.size(), batch.ts_ns.size(), batch.dur_ns.size(),
        batch.pid.size(), batch.tid.size(), batch.correlation.size(), batch.external_id.size()})
    if (length != n) refuse(fmt::format("batch columns differ in length ({} kinds, a column of {})", n, length));
  for (const StrId id : maps.strings) check_string(id, "string map entry");
  for (const std::uint16_t id : maps.categories)
    if (id >= model_.categories.size()) refuse(fmt::format("category map entry {} was never interned", id));
  for (const std::int32_t id : maps.labels)
    if (!model_.id_labels.count(id)) refuse(fmt::format("label map entry {} has no label", id));
  const std::size_t n_strings = maps.strings.size(), n_labels = maps.labels.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (static_cast<int>(batch.kind[i]) >= kEventKindCount)
      refuse(fmt::format("batch event {} has kind {}", i, static_cast<int>(batch.kind[i])));
    if (batch.category[i] >= maps.categories.size())
      refuse(fmt::format("batch event {} names local category {} of {}", i, batch.category[i], maps.categories.size()));
    check_local_string(batch.name[i], n_strings, "a batch event's name");
    for (const std::int32_t id : {batch.pid[i], batch.tid[i]})
      if (id < 0 && static_cast<std::size_t>(-1 - std::int64_t{id}) >= n_labels)
        refuse(fmt::format("batch event {} names local label {} of {}", i, -1 - std::int64_t{id}, n_labels));
  }
  check_batch_rows(batch.kernel_args, n, "kernel_args", true);
  check_batch_rows(batch.copy_args, n, "copy_args", true);
  check_batch_rows(batch.op_args, n, "op_args", true);
  check_batch_rows(batch.collective_args, n, "collective_args", true);
  check_batch_rows(batch.memory_args, n, "memory_args", true);
  check_batch_rows(batch.counters, n, "counters", false);
  check_batch_rows(batch.graph_nodes, n, "graph_nodes", true);
  check_batch_rows(batch.inductor_kernels, n, "inductor_kernels", true);
  check_batch_rows(batch.python_frames, n, "python_frames", true);
  for (const KernelArgs& k : batch.kernel_args) check_local_string(k.limiting_factor, n_strings, "limiting_factor");
  for (const OpArgs& o : batch.op_args) {
    check_local_string(o.input_dims, n_strings, "input_dims");
    check_local_string(o.input_types, n_strings, "input_types");
    check_local_string(o.input_strides, n_strings, "input_strides");
    check_local_string(o.concrete_inputs, n_strings, "concrete_inputs");
  }
  for (const CollectiveArgs& c : batch.collective_args)
    for (const StrId id : {c.collective_name, c.dtype, c.process_group_name, c.process_group_ranks})
      check_local_string(id, n_strings, "a collective's string");
  for (const CounterSample& c : batch.counters) check_local_string(c.series, n_strings, "series");
  for (const InductorKernelArgs& k : batch.inductor_kernels)
    for (const StrId id : {k.backend, k.hash}) check_local_string(id, n_strings, "an Inductor kernel's string");

  const std::size_t base_size = model_.size();
  if (!fits(base_size, n)) {
    model_.report.skip("events beyond the model's 4-billion-event capacity", "end of trace", n);
    return false;
  }
  const auto base = static_cast<EventIndex>(base_size);
  const auto str = [&](StrId local) { return maps.strings[local]; };
  const auto id_of = [&](std::int32_t id) { return id >= 0 ? id : maps.labels[static_cast<std::size_t>(-1 - id)]; };
  try {
    for (std::size_t i = 0; i < n; ++i) {
      model_.kind.push_back(batch.kind[i]);
      model_.phase.push_back(batch.phase[i]);
      model_.category.push_back(maps.categories[batch.category[i]]);
      model_.name.push_back(str(batch.name[i]));
      model_.ts_ns.push_back(batch.ts_ns[i]);
      model_.dur_ns.push_back(batch.dur_ns[i]);
      model_.pid.push_back(id_of(batch.pid[i]));
      model_.tid.push_back(id_of(batch.tid[i]));
      model_.correlation.push_back(batch.correlation[i]);
      model_.external_id.push_back(batch.external_id[i]);
    }
    append_rows(model_.kernel_args, batch.kernel_args, base,
                [&](KernelArgs& k) { k.limiting_factor = str(k.limiting_factor); });
    append_rows(model_.copy_args, batch.copy_args, base, [](CopyArgs&) {});
    append_rows(model_.op_args, batch.op_args, base, [&](OpArgs& o) {
      o.input_dims = str(o.input_dims);
      o.input_types = str(o.input_types);
      o.input_strides = str(o.input_strides);
      o.concrete_inputs = str(o.concrete_inputs);
    });
    append_rows(model_.collective_args, batch.collective_args, base, [&](CollectiveArgs& c) {
      c.collective_name = str(c.collective_name);
      c.dtype = str(c.dtype);
      c.process_group_name = str(c.process_group_name);
      c.process_group_ranks = str(c.process_group_ranks);
    });
    append_rows(model_.memory_args, batch.memory_args, base, [](MemoryArgs&) {});
    append_rows(model_.counters, batch.counters, base, [&](CounterSample& c) { c.series = str(c.series); });
    append_rows(model_.graph_nodes, batch.graph_nodes, base, [](GraphNodeArgs&) {});
    append_rows(model_.inductor_kernels, batch.inductor_kernels, base, [&](InductorKernelArgs& k) {
      k.backend = str(k.backend);
      k.hash = str(k.hash);
    });
    append_rows(model_.python_frames, batch.python_frames, base, [](PythonFrameArgs&) {});
  } catch (const std::bad_alloc&) {
    // Some columns may have taken the batch's events and others not: back to before the batch.
    model_.truncate_events(base);
    throw;
  }
  return true;
}

TraceModel ModelBuilder::finish() {
  TraceModel done = std::move(model_);
  model_ = TraceModel();
  labels_.clear();
  return done;
}

}  // namespace ferret
