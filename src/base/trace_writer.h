// Trace output (`ferret gen`, `ferret annotate`): a file sink that writes plain or gzip-compressed bytes, a writer
// for the trace document around the events, and exact number formatting for trace fields.
//
// Timestamps are int64 nanoseconds inside ferret and microseconds with three decimals in the file
// ("1712195495505582.988"): 19 significant digits, more than a double holds, so they are formatted
// with integer arithmetic only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ferret {

enum class OutputCompression { kNone, kGzip };

// gzip when asked for, or when the path ends in ".gz" and plain output was not forced.
OutputCompression output_compression_for(const std::string& path, bool force_gzip, bool force_plain);

// A buffered output file ("-" is stdout). Gzip goes through ISA-L's igzip at its fastest level
// with a real compressor (level 1) when ferret was built with it, else zlib at level 1.
// Memory use is a few fixed buffers, whatever the size of the output. A file is written through
// base/safe_file.h: it appears at `path` complete, at close(), and is never one of `inputs`.
class OutputFile {
 public:
  OutputFile(const std::string& path, OutputCompression compression, const std::vector<std::string>& inputs = {});
  ~OutputFile();  // without close() a file output is not written at all (an error cut it short)
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::string_view bytes);  // throws std::runtime_error on I/O failure
  void close();                        // flushes and finishes the gzip stream; idempotent
  std::uint64_t bytes_in() const;      // uncompressed bytes written so far
  std::uint64_t bytes_out() const;     // bytes that reached the file (after compression)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Writes a trace document: the root object's keys in order, with "traceEvents" among them.
// Keys given before the first event precede the array; keys given after it follow it, as Kineto
// writes traceName and baseTimeNanoseconds after the events. A bare array root (the legacy
// autograd export) has no keys at all.
class TraceWriter {
 public:
  explicit TraceWriter(OutputFile& out, bool bare_array = false);

  void header(std::string_view key, std::string_view raw_json_value);
  void event(std::string_view event_json);  // one whole event object
  void finish();                            // closes the array and the root
  std::uint64_t events() const { return events_; }

 private:
  void open_events();

  OutputFile& out_;
  bool bare_array_;
  bool root_open_ = false;
  bool events_open_ = false;
  bool events_closed_ = false;
  bool finished_ = false;
  bool need_comma_ = false;  // between root keys
  std::uint64_t events_ = 0;
  std::string scratch_;
};

// Exact formatting helpers (append to `out`).
void append_int(std::string& out, std::int64_t value);
// Nanoseconds as microseconds with exactly three decimals: 1712195495505582988 -> "1712195495505582.988".
void append_micros(std::string& out, std::int64_t nanos);
// numerator / denominator rounded half up to `decimals` places (both >= 0, denominator > 0).
void append_ratio(std::string& out, std::uint64_t numerator, std::uint64_t denominator, int decimals);
// A JSON string literal with quotes, escaping quotes, backslashes and control characters.
void append_json_string(std::string& out, std::string_view text);

}  // namespace ferret
