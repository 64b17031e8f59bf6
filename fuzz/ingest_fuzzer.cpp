// libFuzzer harness: arbitrary bytes as a trace file (plain, or gzip by magic bytes) through the
// whole ingestion path. Must never crash, hang or leak, and must be deterministic: a differential
// oracle traps when the same bytes give different events
//   - with 1 and 2 parser threads, and with small and default batch sizes (batch boundaries fall
//     elsewhere), events, repairs and skips must all agree;
//   - a bare event array `[...]` and the same bytes inside `{"traceEvents": [...]` must keep the
//     same events (the two containers share one scanner, but not its code paths).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "ingest/byte_source.h"
#include "ingest/trace_loader.h"

namespace {

// FNV-1a over everything an event holds, in order, plus the side tables' sizes.
struct Fingerprint {
  std::uint64_t events = 0, hash = 1469598103934665603ull, repairs = 0, skips = 0;
  bool data_after_document = false;  // bytes after the root value, ignored (and noted)
  void mix(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) hash = (hash ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ull;
  }
  void mix(std::string_view s) {
    mix(s.size());
    for (unsigned char c : s) hash = (hash ^ c) * 1099511628211ull;
  }
};

Fingerprint fingerprint(const ferret::TraceModel& m) {
  Fingerprint f;
  f.events = m.size();
  for (std::size_t i = 0; i < m.size(); ++i) {
    const auto e = static_cast<ferret::EventIndex>(i);
    f.mix(static_cast<std::uint64_t>(m.kind[e]));
    f.mix(static_cast<std::uint64_t>(m.phase[e]));
    f.mix(static_cast<std::uint64_t>(m.ts_ns[e]));
    f.mix(static_cast<std::uint64_t>(m.dur_ns[e]));
    f.mix(m.name_of(e));
    f.mix(static_cast<std::uint64_t>(m.correlation[e]));
    f.mix(static_cast<std::uint64_t>(m.external_id[e]));
  }
  f.mix(m.kernel_args.size());
  f.mix(m.copy_args.size());
  f.mix(m.op_args.size());
  f.mix(m.memory_args.size());
  f.repairs = m.report.repair_count();
  f.skips = m.report.skip_count();
  for (const std::string& note : m.report.notes)
    if (note.find("after the end of the JSON document") != std::string::npos) f.data_after_document = true;
  return f;
}

// The events of `bytes` (gzip told by magic bytes), or nothing when the input is unusable.
std::optional<Fingerprint> load(const std::string& bytes, unsigned threads, std::size_t batch_bytes) {
  ferret::LoadOptions options;
  options.threads = threads;
  options.limits.batch_bytes = batch_bytes;
  options.max_memory_bytes = 64u << 20;
  try {
    auto source = ferret::make_memory_source(bytes);
    std::unique_ptr<ferret::ByteSource> decoded;
    if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
        static_cast<unsigned char>(bytes[1]) == 0x8b)
      decoded = ferret::make_gzip_source(std::move(source), "fuzz");
    else
      decoded = std::move(source);
    ferret::InflationLimits limits;
    limits.min_bytes = 1 << 20;
    auto guarded = ferret::guard_inflation(std::move(decoded), "fuzz", limits);
    return fingerprint(ferret::load_trace_from(*guarded, "fuzz", "fuzz", options));
  } catch (const ferret::InputError&) {
    return std::nullopt;  // unusable input is a clean, reported outcome
  }
}

bool same_events(const Fingerprint& a, const Fingerprint& b) { return a.events == b.events && a.hash == b.hash; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const auto one = load(bytes, 1, 4096);  // many batch boundaries in small inputs
  const auto two = load(bytes, 2, 4096);
  const auto two_default = load(bytes, 2, ferret::ScanLimits{}.batch_bytes);
  if (one.has_value() != two.has_value() || one.has_value() != two_default.has_value()) __builtin_trap();
  if (one) {
    for (const Fingerprint* other : {&*two, &*two_default})
      if (!same_events(*one, *other) || one->repairs != other->repairs || one->skips != other->skips) __builtin_trap();
  }
  // A bare array and the same array as the traceEvents value of an object keep the same events.
  std::size_t start = bytes.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  while (start < bytes.size() &&
         (bytes[start] == ' ' || bytes[start] == '\n' || bytes[start] == '\r' || bytes[start] == '\t'))
    ++start;
  // Only when the array is the whole document: bytes after a bare array's ']' are ignored, while
  // inside an object they are more keys (another "traceEvents" array is read too).
  if (one && !one->data_after_document && start < bytes.size() && bytes[start] == '[') {
    // Not closed with '}': a truncated array must stay truncated in the object too.
    const auto wrapped = load("{\"traceEvents\":" + bytes.substr(start), 1, 4096);
    if (wrapped && !same_events(*one, *wrapped)) __builtin_trap();
  }
  return 0;
}
