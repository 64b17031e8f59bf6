// Event-boundary scanner: turns a stream of trace JSON into batches of whole event objects.
//
// The trace is one huge JSON value ({"traceEvents": [...], ...} or a bare [...] array), so no
// JSON library can parse it piecewise. The scanner tracks only string/escape state and bracket
// depth - at several GB/s, 64 bytes at a time - to find where each element of the event array
// begins and ends. The elements themselves are parsed later, in parallel, by event_parser.
// Root-level keys other than "traceEvents" are small; their raw text is kept for header parsing.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ingest/byte_source.h"

namespace ferret {

// Recycles batch buffers between the scanner and the parser threads: allocating a fresh 4 MB
// buffer per batch costs a page fault per 4 KB page, which showed up as 15% of load time.
class BufferPool {
 public:
  std::unique_ptr<char[]> take(std::size_t min_capacity, std::size_t& capacity);
  void give(std::unique_ptr<char[]> buffer, std::size_t capacity);

 private:
  std::mutex mu_;
  std::vector<std::pair<std::unique_ptr<char[]>, std::size_t>> free_;
};

// A buffer holding consecutive whole events "{...},{...}". One byte of headroom precedes the
// first event and padding follows the last, so the parser can wrap them as "[...]" in place.
struct RawBatch {
  std::unique_ptr<char[]> data;
  std::size_t capacity = 0;
  std::vector<std::uint32_t> event_begin;  // offset of each event's '{'
  std::vector<std::uint32_t> event_end;    // one past each event's '}'
  std::uint64_t stream_offset = 0;         // offset of data[0] in the decompressed stream
  std::uint64_t first_event_index = 0;     // index of the first event in the whole trace
  std::uint64_t sequence = 0;              // batch number, for in-order merging
};

struct ScanLimits {
  std::size_t batch_bytes = 256 << 10;  // a batch plus simdjson's index of it stays in L2 cache
  // One event larger than this is an error. Real events stay under a few MB (the biggest carry
  // long shape lists); buffering a never-closing one must not exhaust memory.
  std::size_t max_event_bytes = std::size_t{256} << 20;
  std::size_t max_header_value_bytes = 64 << 20;  // root-level values other than traceEvents
  // Reading stops when this many bytes pass without a complete event or top-level value: an
  // endless stream of whitespace, commas or scalars on stdin must not keep ferret running forever.
  std::uint64_t max_bytes_without_progress = std::uint64_t{1} << 30;
};

// What the scanner saw outside the event array.
struct ScanSummary {
  bool root_is_array = false;  // legacy autograd export
  bool saw_trace_events = false;
  std::vector<std::pair<std::string, std::string>> header;  // root key -> raw JSON value
  std::vector<std::string> header_dropped;                  // keys whose value exceeded the size limit
  std::uint64_t bytes = 0;                                  // decompressed bytes read
  std::uint64_t events = 0;                                 // complete events found
  bool truncated = false;                                   // the stream ended inside the document
  std::uint64_t truncated_at = 0;                           // byte offset where it ended
  std::string truncation_detail;                            // what was open when it ended
  std::string stream_damage;                                // decompressor's report of a broken stream
  std::vector<std::string> warnings;                        // e.g. trailing garbage after the root value
  std::uint64_t skipped_non_objects = 0;                    // array elements that are not objects
  std::uint64_t stray_closers = 0;                          // '}' between events, outside any element
  // Leniencies accepted and counted (see docs/JSON.md): elements with no comma before them,
  // "//" and "/* */" comments (blanked in place, so the parser never sees them), and further
  // "traceEvents" arrays in the root object, whose events are read as if they were one array.
  std::uint64_t missing_commas = 0;
  std::string first_missing_comma;  // "byte N (event #K)"
  std::uint64_t comments = 0;
  std::uint64_t first_comment_at = 0;
  std::uint64_t extra_event_arrays = 0;
  std::uint64_t first_extra_array_at = 0;       // byte of the repeated "traceEvents" key
  std::uint64_t events_before_extra_array = 0;  // events found before the second array began
  // Why reading stopped before the end of the stream (an oversized event, no progress), or "".
  std::string stop_reason;
};

class EventScanner {
 public:
  EventScanner(ByteSource& source, std::string name, ScanLimits limits = {}, BufferPool* pool = nullptr);
  // Returns the next batch of whole events, or false when the stream is exhausted.
  // Throws InputError when the input is not a trace at all (names file and byte offset).
  bool next(RawBatch& batch);
  const ScanSummary& summary() const { return summary_; }

 private:
  enum class Mode { kStart, kRootObject, kEvents, kAfterRootArray, kDone };

  bool fill();  // reads more input; false at end of stream
  void start_new_buffer(std::size_t keep_from);
  void start_new_buffer_keep_old(std::size_t keep_from, std::unique_ptr<char[]>& old);
  bool emit_if_ready(RawBatch& batch, bool force);
  int next_byte();  // root-level pull parsing; -1 at end
  int peek_byte();
  void open_document();  // the first byte of the document sets the mode
  void skip_ws();
  bool read_key(std::string& key);
  bool capture_value(std::string* out, bool& too_big);
  void scan_events();  // advances pos_ through the event array
  void scan_events_scalar(std::size_t stop);
  void open_element(std::size_t at, char c);
  bool scan_comment_byte(char* b, std::size_t p);
  void close_event_array(std::size_t at);
  void finish_truncated(const char* what);

  std::unique_ptr<char[]> allocate(std::size_t min_capacity, std::size_t& capacity);

  ByteSource& source_;
  BufferPool* pool_;
  std::string name_;
  ScanLimits limits_;
  ScanSummary summary_;
  Mode mode_ = Mode::kStart;

  std::unique_ptr<char[]> buf_;
  std::size_t capacity_ = 0;
  std::size_t pos_ = 0, end_ = 0;        // unread region [pos_, end_)
  std::uint64_t buf_stream_offset_ = 0;  // stream offset of buf_[0]
  bool eof_ = false;

  // Event-array scanning state.
  bool in_string_ = false;
  bool escaped_ = false;
  int depth_ = 0;  // 0 between events, 1 inside an event object
  std::size_t event_start_ = 0;
  std::vector<std::uint32_t> pending_begin_, pending_end_;
  std::uint64_t batches_ = 0;
  bool array_closed_ = false;
  std::uint64_t top_level_commas_ = 0;  // commas between elements of the event array
  std::uint64_t array_objects_ = 0;     // object elements seen
  std::uint64_t nested_arrays_ = 0;     // array elements seen
  // top_level_commas_ when the last element closed; equal at the next opening = a missing comma.
  static constexpr std::uint64_t kNoElementClosed = ~std::uint64_t{0};
  std::uint64_t commas_at_last_close_ = kNoElementClosed;
  // Comment state outside strings: a '/' seen, inside "// ...", inside "/* ... */" (and just
  // after a '*' in one).
  enum class Comment : std::uint8_t { kNone, kSlash, kLine, kBlock, kBlockStar };
  Comment comment_ = Comment::kNone;
  // Progress watchdog: bytes read when the last event or top-level value completed.
  std::uint64_t progress_count_ = 0;
  std::uint64_t progress_at_byte_ = 0;
};

}  // namespace ferret
