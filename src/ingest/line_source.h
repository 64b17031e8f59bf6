// The lines of a byte source, as the text readers take them (NCCL logs, GPU utilisation logs): one
// read loop and one splitter, so that every line reader salvages, bounds and counts alike.
//
// read_chunks: the source in 1 MiB chunks. A read that fails before the first byte throws (there is
// nothing to salvage); a later one ends reading, and its message is the damage to report, as is a
// stream that ended early (ByteSource::damage()).
// LineSplitter: '\n'-terminated lines across chunk boundaries. A line longer than the reader's
// limit reaches it as its first limit + 1 bytes with `cut` set (the reader truncates or skips it):
// hostile input (a gigabyte without a newline) never grows the carried line past the limit.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "base/input_error.h"
#include "ingest/byte_source.h"

namespace ferret {

struct ReadEnd {
  std::uint64_t bytes = 0;  // bytes read
  std::string damage;       // a read that failed after the first byte, or the source's damage(); empty if none
};

// Calls `on_chunk(std::string_view chunk, std::uint64_t offset)` (offset: the chunk's first byte in
// the source) for each chunk until the source ends or on_chunk returns false.
template <typename OnChunk>
ReadEnd read_chunks(ByteSource& source, OnChunk on_chunk) {
  constexpr std::size_t kChunk = 1 << 20;
  std::unique_ptr<char[]> buffer(new char[kChunk]);
  ReadEnd end;
  while (true) {
    std::size_t n = 0;
    try {
      n = source.read(buffer.get(), kChunk);
    } catch (const InputError& e) {
      if (end.bytes == 0) throw;
      end.damage = e.what();
      return end;
    }
    if (n == 0) break;
    const std::uint64_t offset = end.bytes;
    end.bytes += n;
    if (!on_chunk(std::string_view(buffer.get(), n), offset)) break;
  }
  end.damage = source.damage();
  return end;
}

class LineSplitter {
 public:
  explicit LineSplitter(std::size_t max_line_bytes) : max_(max_line_bytes) {}

  // Calls `on_line(std::string_view line, bool cut, std::uint64_t end)` for each line `chunk` ends
  // (`end`: the offset just past its '\n'; `chunk` starts at `offset`), without the '\n'. Returns
  // false as soon as on_line does (the reader stops), true once the chunk is consumed.
  template <typename OnLine>
  bool split(std::string_view chunk, std::uint64_t offset, OnLine on_line) {
    const char* const begin = chunk.data();
    while (!chunk.empty()) {
      const void* nl = std::memchr(chunk.data(), '\n', chunk.size());
      if (nl == nullptr) {
        keep(chunk);
        return true;
      }
      const auto len = static_cast<std::size_t>(static_cast<const char*>(nl) - chunk.data());
      const std::uint64_t end = offset + static_cast<std::uint64_t>(chunk.data() - begin) + len + 1;
      bool go_on = true;
      if (carry_.empty() && !cut_) {
        go_on = on_line(chunk.substr(0, len), false, end);
      } else {
        keep(chunk.substr(0, len));
        go_on = on_line(std::string_view(carry_), cut_, end);
        drop_partial();
      }
      chunk.remove_prefix(len + 1);
      if (!go_on) return false;
    }
    return true;
  }

  // The last line, when the source does not end in '\n' (`end`: the bytes read).
  template <typename OnLine>
  void finish(std::uint64_t end, OnLine on_line) {
    if (!carry_.empty() || cut_) on_line(std::string_view(carry_), cut_, end);
    drop_partial();
  }

  // Reading stops mid-line: the carried part is not a line.
  void drop_partial() {
    carry_.clear();
    cut_ = false;
  }

 private:
  // Keeps at most max + 1 bytes of the line being carried: the reader sees it as too long.
  void keep(std::string_view piece) {
    if (carry_.size() <= max_) carry_.append(piece.substr(0, max_ + 1 - carry_.size()));
    cut_ = cut_ || carry_.size() > max_;
  }

  std::size_t max_;
  std::string carry_;  // a line split across chunks
  bool cut_ = false;   // the carried line is over the limit: the rest of it is dropped
};

}  // namespace ferret
