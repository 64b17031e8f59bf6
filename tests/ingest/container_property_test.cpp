// Property: every event of a trace is kept exactly once, in order, whatever the container (a bare
// legacy array or {"traceEvents": [...]}), the size (1 KB to 100 MB), the event sizes (long names,
// big args, events larger than a batch), the layout (compact or pretty-printed, with or without a
// trailing newline), the compression (none, gzip, zstd) and the number of parser threads.
//
// The reference is the generator itself: it knows how many events it wrote and what each one is
// (event i has ts = 10 * i + 3 us and a name that starts with "op_<i>/"), so the check is exact,
// independent of ferret's reader, and cannot pass by luck: a lost, duplicated, reordered or
// corrupted event changes the count or the event at some index.
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ingest/byte_source.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace container_property_test {

struct GeneratedTrace {
  std::string array_text;   // [ {...}, ... ]
  std::string object_text;  // {"schemaVersion": 1, "traceEvents": [ ... ], "traceName": "t"}
  std::vector<std::string> names;
};

// A name of `length` bytes that exercises the scanner: JSON structure characters and escapes
// inside strings, multi-byte UTF-8 and \u escapes (the reader stores the unescaped text).
void append_tricky_text(std::mt19937_64& rng, std::size_t length, std::string& json, std::string& unescaped) {
  static constexpr std::string_view kPieces[] = {"abc", "{", "}",    "[",    "]", ",",
                                                 ":",   " ", "\\\"", "\\\\", "é", "\\u00e9"};
  static constexpr std::string_view kUnescaped[] = {"abc", "{", "}", "[", "]", ",", ":", " ", "\"", "\\", "é", "é"};
  while (unescaped.size() < length) {
    const std::size_t k = rng() % std::size(kPieces);
    json += kPieces[k];
    unescaped += kUnescaped[k];
  }
}

// Events until the document reaches `target_bytes`. `huge_every` > 0 makes every such event carry
// a 300 KB name, more than one scanner batch (256 KB).
GeneratedTrace generate(std::size_t target_bytes, bool pretty, std::uint64_t seed, std::size_t huge_every) {
  std::mt19937_64 rng(seed);
  GeneratedTrace g;
  std::string events;
  const char* sep = pretty ? ",\n  " : ",";
  const char* colon = pretty ? ": " : ":";
  const char* field_sep = pretty ? ",\n    " : ",";
  for (std::size_t i = 0; events.size() < target_bytes; ++i) {
    std::string name_json = fmt::format("op_{}/", i), name = name_json;
    std::size_t extra = rng() % 8 == 0 ? rng() % 4096 : rng() % 24;  // mostly short, some long
    if (huge_every > 0 && i % huge_every == huge_every - 1) extra = 300 << 10;
    append_tricky_text(rng, name.size() + extra, name_json, name);
    std::string dims;
    const std::size_t n_dims = rng() % 4 == 0 ? rng() % 200 : rng() % 3;  // some big args
    for (std::size_t d = 0; d < n_dims; ++d) dims += fmt::format("{}[{}, {}]", d ? ", " : "", rng() % 4096, d);
    if (i) events += sep;
    events += pretty ? "{\n    " : "{";
    events += fmt::format(R"("name"{}"{}"{})", colon, name_json, field_sep);
    events += fmt::format(R"("ph"{}"X"{}"ts"{}{}{}"dur"{}{}{})", colon, field_sep, colon, 10 * i + 3, field_sep, colon,
                          1 + rng() % 9, field_sep);
    events += fmt::format(R"("tid"{}{}{}"pid"{}"CPU functions"{})", colon, 1 + i % 3, field_sep, colon, field_sep);
    events += fmt::format(R"("args"{}{{"Input Dims"{}[{}], "Call stack"{}"a.py(1): f"}})", colon, colon, dims, colon);
    events += pretty ? "\n  }" : "}";
    g.names.push_back(std::move(name));
  }
  const char* nl = pretty ? "\n" : "";
  g.array_text = fmt::format("[{}{}{}]\n", nl, events, nl);  // a trailing newline, as print() writes
  g.object_text = fmt::format(R"({{"schemaVersion"{}1,{}"traceEvents"{}[{}{}{}],{}"traceName"{}"t"}})", colon, nl,
                              colon, nl, events, nl, nl, colon);
  return g;
}

// Loads `plain` compressed as asked and checks every event against the generator.
void expect_every_event(const GeneratedTrace& g, const std::string& plain, const std::string& compression,
                        unsigned threads, std::size_t batch_bytes, const std::string& label) {
  SCOPED_TRACE(label);
  std::unique_ptr<ByteSource> source;
  if (compression == "gzip")
    source = make_gzip_source(make_memory_source(test::gzip_bytes(plain, 1)), label);
  else if (compression == "zstd")
    source = make_zstd_source(make_memory_source(test::zstd_bytes(plain)), label);
  else
    source = make_memory_source(plain);
  LoadOptions options;
  options.threads = threads;
  options.build_relations = false;
  if (batch_bytes) options.limits.batch_bytes = batch_bytes;
  const TraceModel m = load_trace_from(*source, label, compression, options);
  ASSERT_EQ(m.size(), g.names.size());
  EXPECT_EQ(m.report.skip_count(), 0u);
  EXPECT_EQ(m.report.repair_count(), 0u);
  for (std::size_t i = 0; i < g.names.size(); ++i) {
    const auto e = static_cast<EventIndex>(i);
    if (m.ts_ns[e] != static_cast<std::int64_t>(10 * i + 3) * 1000 || m.name_of(e) != g.names[i]) {
      ADD_FAILURE() << "event " << i << " is not the generated one: ts " << m.ts_ns[e] << " ns, name starts \""
                    << m.name_of(e).substr(0, 40) << "\"";
      return;
    }
  }
}

class ContainerProperty : public ::testing::TestWithParam<std::size_t> {};

TEST_P(ContainerProperty, EveryEventKeptExactlyOnceInOrder) {
  const std::size_t target = GetParam();
  // Events larger than a scanner batch once the trace is big enough to hold several.
  const std::size_t huge_every = target >= (1u << 20) ? 997 : 0;
  for (bool pretty : {false, true}) {
    const GeneratedTrace g = generate(target, pretty, 0x5eed + target, huge_every);
    for (const char* container : {"array", "object"}) {
      const std::string& plain = std::string_view(container) == "array" ? g.array_text : g.object_text;
      for (const char* compression : {"none", "gzip", "zstd"}) {
        for (unsigned threads : {1u, 2u}) {
          // 100 MB inputs take a second per load: each compression once, with 1 or 2 threads.
          if (target > (16u << 20) && threads != (std::string_view(compression) == "gzip" ? 1u : 2u)) continue;
          // The default batch size (what users get) and a small one (many more batch boundaries).
          for (std::size_t batch : {std::size_t{0}, std::size_t{4096}}) {
            if (batch && target > (4u << 20)) continue;  // small batches on big inputs add time, not cases
            expect_every_event(g, plain, compression, threads, batch,
                               fmt::format("{} bytes, {}, {}, {}, {} thread(s), batch {}", plain.size(), container,
                                           pretty ? "pretty" : "compact", compression, threads, batch));
            if (HasFailure()) return;
          }
        }
      }
    }
  }
}

// Sanitizer builds are 10-20x slower; they stop at 4 MB, which still crosses many batch boundaries.
constexpr std::size_t kLargest = test::kUnderSanitizer ? 4u << 20 : 100u << 20;

std::vector<std::size_t> sizes() {
  std::vector<std::size_t> out;
  for (std::size_t s : {std::size_t{1} << 10, std::size_t{64} << 10, std::size_t{200} << 10, std::size_t{1} << 20,
                        std::size_t{4} << 20, std::size_t{16} << 20, std::size_t{100} << 20})
    if (s <= kLargest) out.push_back(s);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Sizes, ContainerProperty, ::testing::ValuesIn(sizes()),
                         [](const auto& info) { return fmt::format("{}KB", info.param >> 10); });

// The reproduction from the bug report, end to end through the CLI: 2,000 legacy events in a bare
// array with a trailing newline were all lost ("the trace holds no events"); 1,900 loaded.
TEST(ContainerCli, BareArrayOfTwoThousandEventsKeepsThemAll) {
  std::string text = "[";
  for (int i = 0; i < 2000; ++i)
    text += fmt::format(
        R"({}{{"name": "aten::add", "ph": "X", "ts": {}, "dur": 5, "tid": 1, "pid": "CPU functions", "args": {{}}}})",
        i ? ", " : "", i * 10);
  text += "]\n";
  const std::string path = test::temp_path("bare-array-2000.json");
  test::write_file(path, text);
  for (const char* threads : {"1", "2"}) {
    const test::CommandResult r = test::run_ferret(std::string("info --json --threads ") + threads + " " + path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out).at("traces")[0].at("events"), 2000);
  }
  std::remove(path.c_str());
}

}  // namespace container_property_test
}  // namespace
}  // namespace ferret
