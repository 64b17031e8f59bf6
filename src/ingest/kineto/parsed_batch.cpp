// Clearing a parsed batch (and its batch-local string table) for reuse. Interning stays in
// event_parser.cpp, on the parse's hot path.
#include "ingest/kineto/event_parser.h"

namespace ferret {

void LocalStrings::clear() {
  texts_.clear();
  texts_.emplace_back();
  index_.clear();
}

void ParsedBatch::clear() {
  events_seen = 0;
  input_bytes = 0;
  kind.clear();
  phase.clear();
  category.clear();
  name.clear();
  ts_ns.clear();
  dur_ns.clear();
  pid.clear();
  tid.clear();
  correlation.clear();
  external_id.clear();
  kernel_args.clear();
  copy_args.clear();
  op_args.clear();
  collective_args.clear();
  memory_args.clear();
  counters.clear();
  graph_nodes.clear();
  inductor_kernels.clear();
  python_frames.clear();
  meta_names.clear();
  strings.clear();
  cats.clear();
  labels.clear();
  label_index.clear();
  repairs.clear();
  skips.clear();
  has_decimal_ts = false;
}

}  // namespace ferret
