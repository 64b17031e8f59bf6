// The importer seam: one entry per trace format, picked by the first bytes of the input.
//
// load_trace reads the first kSniffBytes of the (decompressed) input, asks every registered
// importer how sure it is that they are its format, and hands the whole input to the surest one,
// which fills a ModelBuilder. What every format shares (time outliers, relations, the platform
// when the importer left it unknown) runs after it, in trace_loader. A new format is one file: its
// sniff and load functions, registered with register_importer (or in the built-in list).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/byte_source.h"
#include "ingest/load_options.h"
#include "model/model_builder.h"

namespace ferret {

// What an importer sees to decide: enough for any magic bytes or a JSON document's first keys.
inline constexpr std::size_t kSniffBytes = 4096;

struct Importer {
  std::string name;  // shown in messages: "kineto-json"
  // 0: not this format; higher: surer. The importer with the highest answer reads the input
  // (registration order breaks ties). `head` is the input's first bytes, at most kSniffBytes
  // (fewer only when the input is shorter; empty for an empty input).
  std::function<int(std::string_view head)> sniff;
  // What it expects the input to start with, for the error naming a file no importer accepts.
  std::string expects;
  // Reads the whole input (from its first byte: the sniffed bytes are read again) into the
  // builder, its trace-level facts and repairs included. `name` labels messages. Throws
  // InputError when nothing usable can be read.
  std::function<void(ByteSource& source, const std::string& name, const LoadOptions& options, ModelBuilder& builder)>
      load;
};

// The built-in importer: Kineto JSON of every torch generation and the legacy autograd array.
Importer kineto_json_importer();

// Built-in importers first, then registered ones, in registration order.
std::vector<Importer> importers();
// Adds an importer for every later load (a format of one's own; tests). A name already
// registered is replaced.
void register_importer(Importer importer);
// Removes a registered importer; the built-in ones stay.
void unregister_importer(const std::string& name);

// The importer for an input whose first bytes are `head`; throws InputError naming `source_name`
// and what each importer expects when none accepts it.
Importer pick_importer(std::string_view head, const std::string& source_name);

}  // namespace ferret
