// Reads torch.cuda.memory_summary() tables and out-of-memory messages out of text (a pasted
// summary, a training log, a traceback) into the MemoryText model (model/memory_text.h, which
// describes both layouts), and tells that text from an allocator snapshot pickle by content.
//
// Text is scanned line by line (std::string_view, no regex): a summary starts at its title line
// and reads the box's rows between the first and last '|' of each line, so any log prefix
// ("[rank0]:", timestamps) is tolerated; an out-of-memory message starts at "out of memory. Tried
// to allocate" and, when wrapped, takes up to kOomMessageLines lines until its last field. Nothing
// here throws on content: a malformed cell, an unknown row or a box cut short is counted with the
// line of its first occurrence, and what was sound is kept.
//
// Bounds (hostile input): lines are cut at kMaxMemoryTextLineBytes (counted); at most
// kMaxMemoryTextRecords summaries and messages are kept per file (the rest counted); reading stops,
// keeping what was read, after kMemoryTextBytesWithoutProgress bytes without a summary or message,
// so an endless stream ends. Memory is therefore bounded whatever the size of the log.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "model/allocator_snapshot.h"
#include "model/memory_text.h"

namespace ferret {

inline constexpr std::size_t kMaxMemoryTextLineBytes = 64 * 1024;
inline constexpr std::size_t kOomMessageLines = 8;
inline constexpr std::uint64_t kMemoryTextBytesWithoutProgress = std::uint64_t{1} << 30;

// Feeds lines of one text into a MemoryText.
class MemoryTextParser {
 public:
  explicit MemoryTextParser(MemoryText& out) : out_(out) {}
  void feed_line(std::string_view line);  // one line without its '\n'
  void finish();                          // the end of the text: closes what is open, writes the notes
  std::uint64_t records() const { return out_.summaries.size() + out_.ooms.size() + out_.dropped_records; }

 private:
  void summary_line(std::string_view line);
  void close_summary(bool complete);
  void oom_line(std::string_view line);
  void close_oom();
  void issue(const std::string& kind, std::string_view example = {}, std::uint64_t line = 0);

  MemoryText& out_;
  std::uint64_t line_ = 0;
  // The summary being read.
  bool in_box_ = false;
  MemorySummary box_;
  std::uint64_t box_lines_ = 0;
  std::uint64_t box_rows_ = 0;
  int box_metric_ = -1;  // the metric the "from ... pool" rows belong to
  bool last_was_border_ = false;
  // The out-of-memory message being gathered.
  bool in_oom_ = false;
  std::string oom_text_;
  OomMessage oom_;
  std::uint64_t last_oom_line_ = 0;
  // Issue kind -> (count, first line and example).
  std::map<std::string, std::pair<std::uint64_t, std::string>> issues_;
};

MemoryText parse_memory_text(std::string_view text, const std::string& name = "<text>");

// What `ferret memory` reads from one file: a snapshot pickle or text.
struct MemoryInput {
  bool is_snapshot = false;
  AllocatorSnapshot snapshot;
  MemoryText text;
};

// Opens `path` (gzip/zstd by magic bytes) and reads it as a snapshot when its first byte is a
// pickle's PROTO opcode (0x80), else as text. Throws InputError when it cannot be opened, when the
// snapshot is unreadable, or when the text holds no summary and no out-of-memory message.
// `max_bytes` bounds a snapshot's size (0: 3/4 of memory); text is streamed.
MemoryInput read_memory_input(const std::string& path, std::uint64_t max_bytes = 0);
// The same from bytes in memory (tests, fuzzing).
MemoryInput read_memory_input_bytes(const std::string& bytes, const std::string& name, std::uint64_t max_bytes = 0);

}  // namespace ferret
