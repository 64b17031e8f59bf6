// libFuzzer harness: `ferret annotate`'s copy of a trace (report/trace/trace_annotation.h's splicer behind
// report/strict_json_source.h) on any bytes. Must never crash or hang; refused inputs are
// InputErrors. Oracle: when the input is JSON a lenient reader takes (nlohmann with comments
// allowed), the copy is strict JSON holding the trace's events and then the added ones.
// Seeds: fuzz/seeds (traces) and fuzz/seeds-annotate (comments, NaN, BOM, trailing data, keys
// written with escapes).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/input_error.h"
#include "base/trace_writer.h"
#include "ingest/byte_source.h"
#include "report/trace/trace_annotation.h"

namespace {

std::string read_all(const std::string& path) {
  std::string out;
  if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
    char buf[65536];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
    std::fclose(f);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  static const std::string path = "/tmp/ferret-annotate-fuzz-" + std::to_string(::getpid()) + ".json";
  const std::vector<std::string> added = {R"({"ph":"i","name":"ferret-added","pid":1,"tid":1,"ts":0,"s":"g"})"};
  try {
    auto source = ferret::make_memory_source(input);
    ferret::OutputFile out(path, ferret::OutputCompression::kNone);
    const ferret::SpliceResult r = ferret::splice_trace(*source, "fuzz", added, out);
    out.close();
    const nlohmann::json lenient = nlohmann::json::parse(input, nullptr, false, /*ignore_comments=*/true);
    if (!lenient.is_discarded() && (lenient.is_object() || lenient.is_array()) &&
        r.repair.find("ends early") == std::string::npos) {
      const nlohmann::json copy = nlohmann::json::parse(read_all(path), nullptr, false);
      if (copy.is_discarded()) __builtin_trap();  // a sound trace copied into invalid JSON
      const nlohmann::json& events = copy.is_array() ? copy : copy["traceEvents"];
      if (!events.is_array() || events.empty() || events.back().value("name", "") != "ferret-added") __builtin_trap();
    }
  } catch (const ferret::InputError&) {
  }
  std::remove(path.c_str());
  return 0;
}
