#include "ingest/kineto/json_scanner.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "base/text.h"

#if defined(__AVX2__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ferret {

namespace {

constexpr std::size_t kHeadroom = 64;  // room for '[' before the first event, kept aligned
constexpr std::size_t kPadding = 128;  // simdjson reads up to 64 bytes past the end
constexpr std::size_t kMinRead = 64 << 10;

inline bool is_ws(int c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Bit i set iff byte i of the 64-byte block equals the given class.
struct BlockMasks {
  std::uint64_t quote, backslash, open, close, comma, slash;  // slash: comments, never valid outside strings
};

// Bits [from, to) of a 64-bit mask (0 <= from <= to <= 64).
inline std::uint64_t bit_range(unsigned from, unsigned to) {
  const std::uint64_t below_to = to >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << to) - 1;
  const std::uint64_t below_from = from >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << from) - 1;
  return below_to & ~below_from;
}

inline BlockMasks classify_block(const char* p) {
  BlockMasks m{0, 0, 0, 0, 0, 0};
#if defined(__AVX2__)
  const __m256i quote = _mm256_set1_epi8('"');
  const __m256i backslash = _mm256_set1_epi8('\\');
  const __m256i lower = _mm256_set1_epi8(0x20);
  const __m256i open = _mm256_set1_epi8('{');
  const __m256i close = _mm256_set1_epi8('}');
  const __m256i comma = _mm256_set1_epi8(',');
  const __m256i slash = _mm256_set1_epi8('/');
  for (int k = 0; k < 2; ++k) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * k));
    const __m256i folded = _mm256_or_si256(v, lower);
    const int shift = 32 * k;
    m.quote |= static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, quote))))
               << shift;
    m.backslash |=
        static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, backslash))))
        << shift;
    m.open |=
        static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(folded, open))))
        << shift;
    m.close |=
        static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(folded, close))))
        << shift;
    m.comma |= static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, comma))))
               << shift;
    m.slash |= static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, slash))))
               << shift;
  }
#elif defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  // '[' | 0x20 == '{' and ']' | 0x20 == '}': one compare finds both bracket kinds.
  const __m128i lower = _mm_set1_epi8(0x20);
  const __m128i open = _mm_set1_epi8('{');
  const __m128i close = _mm_set1_epi8('}');
  const __m128i comma = _mm_set1_epi8(',');
  const __m128i slash = _mm_set1_epi8('/');
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const __m128i folded = _mm_or_si128(v, lower);
    const int shift = 16 * k;
    m.quote |= static_cast<std::uint64_t>(static_cast<std::uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote))))
               << shift;
    m.backslash |=
        static_cast<std::uint64_t>(static_cast<std::uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, backslash))))
        << shift;
    m.open |= static_cast<std::uint64_t>(static_cast<std::uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(folded, open))))
              << shift;
    m.close |= static_cast<std::uint64_t>(static_cast<std::uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(folded, close))))
               << shift;
    m.comma |= static_cast<std::uint64_t>(static_cast<std::uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, comma))))
               << shift;
    m.slash |= static_cast<std::uint64_t>(static_cast<std::uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, slash))))
               << shift;
  }
#else
  for (int i = 0; i < 64; ++i) {
    const char c = p[i];
    const std::uint64_t bit = std::uint64_t{1} << i;
    if (c == '"') m.quote |= bit;
    if (c == '\\') m.backslash |= bit;
    if ((c | 0x20) == '{') m.open |= bit;
    if ((c | 0x20) == '}') m.close |= bit;
    if (c == ',') m.comma |= bit;
    if (c == '/') m.slash |= bit;
  }
#endif
  return m;
}

// Bit i of the result is the XOR of bits 0..i: marks bytes from an opening quote up to
// (not including) its closing quote.
inline std::uint64_t prefix_xor(std::uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

}  // namespace

std::unique_ptr<char[]> BufferPool::take(std::size_t min_capacity, std::size_t& capacity) {
  std::lock_guard lock(mu_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second >= min_capacity) {
      auto buffer = std::move(it->first);
      capacity = it->second;
      free_.erase(it);
      return buffer;
    }
  }
  capacity = min_capacity;
  return std::make_unique_for_overwrite<char[]>(min_capacity);
}

void BufferPool::give(std::unique_ptr<char[]> buffer, std::size_t capacity) {
  constexpr std::size_t kMaxPooled = 8;  // about the number of batches in flight
  std::lock_guard lock(mu_);
  if (buffer && free_.size() < kMaxPooled && capacity <= (64u << 20)) free_.emplace_back(std::move(buffer), capacity);
}

std::unique_ptr<char[]> EventScanner::allocate(std::size_t min_capacity, std::size_t& capacity) {
  if (pool_) return pool_->take(min_capacity, capacity);
  capacity = min_capacity;
  return std::make_unique_for_overwrite<char[]>(min_capacity);
}

EventScanner::EventScanner(ByteSource& source, std::string name, ScanLimits limits, BufferPool* pool)
    : source_(source), pool_(pool), name_(std::move(name)), limits_(limits) {
  buf_ = allocate(kHeadroom + limits_.batch_bytes + kPadding, capacity_);
  pos_ = end_ = kHeadroom;
  buf_stream_offset_ = 0;
}

// Moves the unread tail [keep_from, end_) into a fresh buffer (the old one may belong to a batch).
void EventScanner::start_new_buffer(std::size_t keep_from) {
  std::unique_ptr<char[]> old;
  const std::size_t old_capacity = capacity_;
  start_new_buffer_keep_old(keep_from, old);
  if (pool_) pool_->give(std::move(old), old_capacity);
}

void EventScanner::start_new_buffer_keep_old(std::size_t keep_from, std::unique_ptr<char[]>& old) {
  const std::size_t keep = end_ - keep_from;
  std::size_t cap = kHeadroom + limits_.batch_bytes + kPadding;
  while (cap < kHeadroom + 2 * keep + kMinRead + kPadding) cap *= 2;
  auto fresh = allocate(cap, cap);
  std::memcpy(fresh.get() + kHeadroom, buf_.get() + keep_from, keep);
  const std::ptrdiff_t shift = static_cast<std::ptrdiff_t>(keep_from) - static_cast<std::ptrdiff_t>(kHeadroom);
  buf_stream_offset_ += static_cast<std::uint64_t>(shift);
  pos_ -= static_cast<std::size_t>(shift);
  end_ -= static_cast<std::size_t>(shift);
  if (depth_ > 0) event_start_ -= static_cast<std::size_t>(shift);
  old = std::move(buf_);
  buf_ = std::move(fresh);
  capacity_ = cap;
}

bool EventScanner::fill() {
  if (eof_) return false;
  // Progress = complete elements of the event array plus completed top-level values. Checked
  // per refill (every 64 KB or more), so the hot loop pays nothing for it.
  const std::uint64_t progress =
      array_objects_ + summary_.header.size() + summary_.header_dropped.size() + (mode_ == Mode::kEvents ? 1 : 0);
  if (progress != progress_count_) {
    progress_count_ = progress;
    progress_at_byte_ = summary_.bytes;
  } else if (summary_.bytes - progress_at_byte_ > limits_.max_bytes_without_progress) {
    summary_.stop_reason = fmt::format(
        "stopped reading at byte {}: no complete event or top-level value in the last {} bytes "
        "(an endless or padded stream?)",
        summary_.bytes, summary_.bytes - progress_at_byte_);
    eof_ = true;
    return false;
  }
  if (capacity_ - kPadding - end_ < kMinRead) {
    // No room: drop consumed bytes (nothing pending may reference them) or grow.
    const std::size_t keep_from = (mode_ == Mode::kEvents && depth_ > 0) ? event_start_ : pos_;
    if (end_ - keep_from > limits_.max_event_bytes) {
      // Keep everything before it: stop here as if the stream ended inside this event.
      summary_.stop_reason = fmt::format("the event at byte {} is larger than {} bytes; stopped reading there",
                                         buf_stream_offset_ + keep_from - kHeadroom, limits_.max_event_bytes);
      eof_ = true;
      return false;
    }
    // Events found but not yet emitted point into this buffer: keep all of it (offsets unchanged)
    // rather than let a batch read bytes that were moved or recycled.
    start_new_buffer(pending_begin_.empty() ? keep_from : kHeadroom);
  }
  for (;;) {
    const std::size_t n = source_.read(buf_.get() + end_, capacity_ - kPadding - end_);
    if (n == 0) {
      eof_ = true;
      summary_.stream_damage = source_.damage();
      return false;
    }
    end_ += n;
    summary_.bytes += n;
    return true;
  }
}

int EventScanner::peek_byte() {
  if (pos_ == end_ && !fill()) return -1;
  return static_cast<unsigned char>(buf_[pos_]);
}

int EventScanner::next_byte() {
  const int c = peek_byte();
  if (c >= 0) ++pos_;
  return c;
}

// Whitespace and comments between root-level tokens (counted like those between events).
void EventScanner::skip_ws() {
  for (;;) {
    const int c = peek_byte();
    if (c == '/') {
      const std::uint64_t at = buf_stream_offset_ + pos_ - kHeadroom;
      ++pos_;
      const int kind = peek_byte();
      if (kind != '/' && kind != '*') return;  // not a comment: the caller reports what follows
      ++pos_;
      if (summary_.comments++ == 0) summary_.first_comment_at = at;
      for (int prev = 0, d; (d = next_byte()) >= 0; prev = d)
        if ((kind == '/' && d == '\n') || (kind == '*' && prev == '*' && d == '/')) break;
      continue;
    }
    if (c < 0 || !is_ws(c)) return;
    ++pos_;
  }
}

void EventScanner::finish_truncated(const char* what) {
  summary_.truncated = true;
  summary_.truncated_at = buf_stream_offset_ + pos_ - kHeadroom;
  summary_.truncation_detail = what;
  mode_ = Mode::kDone;
}

// Reads a root-level key (after its opening quote). Keys are short. A key whose escapes all stand
// for printable ASCII is decoded ("trace\u0045vents" is traceEvents); any other keeps its escapes
// verbatim, backslash included ("evil\u001b_version" stays that text: never a raw control
// character, and never mangled into "evilu001b_version").
bool EventScanner::read_key(std::string& key) {
  key.clear();
  bool escaped = false;
  for (;;) {
    const int c = next_byte();
    if (c < 0) return false;
    if (escaped) {
      escaped = false;
    } else if (c == '\\') {
      escaped = true;
    } else if (c == '"') {
      if (key.find('\\') != std::string::npos)
        if (std::optional<std::string> decoded = decode_json_key(key)) key = std::move(*decoded);
      return true;
    }
    if (key.size() < 4096) key.push_back(static_cast<char>(c));
  }
}

// Copies one root-level JSON value's text into *out (up to the size limit).
bool EventScanner::capture_value(std::string* out, bool& too_big) {
  int depth = 0;
  JsonStringState strings;
  for (;;) {
    const int c = peek_byte();
    if (c < 0) return false;
    if (!strings.in_string && depth == 0 && (c == ',' || c == '}' || c == ']')) return true;
    ++pos_;
    if (out) {
      if (out->size() < limits_.max_header_value_bytes)
        out->push_back(static_cast<char>(c));
      else
        too_big = true;
    }
    if (strings.feed(static_cast<char>(c))) continue;
    if (c == '{' || c == '[')
      ++depth;
    else if (c == '}' || c == ']')
      --depth;
  }
}

void EventScanner::close_event_array(std::size_t at) {
  array_closed_ = true;
  pos_ = at + 1;
  // Elements = commas + 1 when the array holds anything; those that were neither objects nor
  // arrays were scalars (numbers, strings, null, booleans).
  const std::uint64_t elements =
      (top_level_commas_ > 0 || array_objects_ > 0 || nested_arrays_ > 0) ? top_level_commas_ + 1 : 0;
  const std::uint64_t structured = array_objects_ + nested_arrays_;
  summary_.skipped_non_objects += nested_arrays_ + (elements > structured ? elements - structured : 0);
}

// An element of the event array opens at `at`: every element's start, object or not, so that
// buffer refills keep the element from here.
inline void EventScanner::open_element(std::size_t at, char c) {
  event_start_ = at;
  if (c == '[') ++nested_arrays_;
  if (top_level_commas_ == commas_at_last_close_) [[unlikely]] {
    if (summary_.missing_commas++ == 0)
      summary_.first_missing_comma = fmt::format("byte {} (event #{})", buf_stream_offset_ + at - kHeadroom,
                                                 summary_.events + pending_begin_.size());
  }
}

// One byte while a comment may be open (comment_ != kNone); true when the byte belongs to the
// comment. Comment bytes become spaces in place, so the parser's strict JSON never sees them.
bool EventScanner::scan_comment_byte(char* b, std::size_t p) {
  const char c = b[p];
  switch (comment_) {
    case Comment::kNone: return false;
    case Comment::kSlash:
      if (c != '/' && c != '*') {
        comment_ = Comment::kNone;  // a lone '/': left in place, for the parser to reject
        return false;
      }
      comment_ = c == '/' ? Comment::kLine : Comment::kBlock;
      if (summary_.comments++ == 0) summary_.first_comment_at = buf_stream_offset_ + p - 1 - kHeadroom;
      b[p - 1] = ' ';  // after a refill the '/' may sit just before kHeadroom: still this buffer
      b[p] = ' ';
      return true;
    case Comment::kLine:
      if (c == '\n')
        comment_ = Comment::kNone;
      else
        b[p] = ' ';
      return true;
    case Comment::kBlock:
    case Comment::kBlockStar:
      if (c == '/' && comment_ == Comment::kBlockStar)
        comment_ = Comment::kNone;
      else
        comment_ = c == '*' ? Comment::kBlockStar : Comment::kBlock;
      b[p] = ' ';
      return true;
  }
  return false;
}

void EventScanner::scan_events_scalar(std::size_t stop) {
  char* b = buf_.get();
  for (std::size_t p = pos_; p < stop; ++p) {
    const char c = b[p];
    if (in_string_) {
      if (escaped_)
        escaped_ = false;
      else if (c == '\\')
        escaped_ = true;
      else if (c == '"')
        in_string_ = false;
      continue;
    }
    if (comment_ != Comment::kNone && scan_comment_byte(b, p)) continue;
    if (c == '/') {
      comment_ = Comment::kSlash;
    } else if (c == '"') {
      in_string_ = true;
    } else if (c == ',') {
      if (depth_ == 0) ++top_level_commas_;
    } else if (c == '{' || c == '[') {
      if (depth_ == 0) open_element(p, c);
      ++depth_;
    } else if (c == '}' || c == ']') {
      if (depth_ == 0) {
        if (c == ']') {
          close_event_array(p);
          return;
        }
        ++summary_.stray_closers;  // a '}' between events: nothing to parse, counted
        continue;
      }
      if (--depth_ == 0) {
        commas_at_last_close_ = top_level_commas_;
        if (c == '}') {
          pending_begin_.push_back(static_cast<std::uint32_t>(event_start_));
          pending_end_.push_back(static_cast<std::uint32_t>(p + 1));
          ++array_objects_;
        }
      }
    }
  }
  pos_ = stop;
}

void EventScanner::scan_events() {
  const char* b = buf_.get();
  while (pos_ < end_ && !array_closed_) {
    if (end_ - pos_ < 64 || escaped_ || comment_ != Comment::kNone) {
      scan_events_scalar(std::min(end_, pos_ + 64));
      continue;
    }
    const BlockMasks m = classify_block(b + pos_);
    if (m.backslash != 0) {
      // Escapes are rare in traces; resolve them byte by byte rather than with carry tricks.
      scan_events_scalar(pos_ + 64);
      continue;
    }
    const std::uint64_t inside = prefix_xor(m.quote) ^ (in_string_ ? ~std::uint64_t{0} : 0);
    if ((m.slash & ~inside) != 0) {
      // A '/' outside strings starts a comment (or is junk): the byte loop knows comments.
      scan_events_scalar(pos_ + 64);
      continue;
    }
    in_string_ = (inside >> 63) != 0;
    std::uint64_t structural = (m.open | m.close) & ~inside;
    const std::uint64_t commas = m.comma & ~inside;
    // Commas between events (at depth 0) count the array's elements, so elements that are not
    // objects (numbers, strings, null) can be counted as skipped rather than vanish.
    unsigned depth0_from = depth_ == 0 ? 0 : 64;
    const std::size_t base = pos_;
    while (structural != 0) {
      const int bit = __builtin_ctzll(structural);
      structural &= structural - 1;
      const std::size_t p = base + static_cast<std::size_t>(bit);
      const char c = b[p];
      if (c == '{' || c == '[') {
        if (depth_ == 0) {
          top_level_commas_ += static_cast<std::uint64_t>(
              __builtin_popcountll(commas & bit_range(depth0_from, static_cast<unsigned>(bit))));
          depth0_from = 64;
          open_element(p, c);
        }
        ++depth_;
      } else if (depth_ == 0) {
        if (c == ']') {
          // The event array ends inside this block; the string state past it is recomputed by
          // the root-level parser, which reads byte by byte.
          top_level_commas_ += static_cast<std::uint64_t>(
              __builtin_popcountll(commas & bit_range(depth0_from, static_cast<unsigned>(bit))));
          in_string_ = false;
          close_event_array(p);
          return;
        }
        ++summary_.stray_closers;
      } else if (--depth_ == 0) {
        depth0_from = static_cast<unsigned>(bit) + 1;
        commas_at_last_close_ = top_level_commas_;
        if (c == '}') {
          pending_begin_.push_back(static_cast<std::uint32_t>(event_start_));
          pending_end_.push_back(static_cast<std::uint32_t>(p + 1));
          ++array_objects_;
        }
      }
    }
    if (depth_ == 0)
      top_level_commas_ += static_cast<std::uint64_t>(__builtin_popcountll(commas & bit_range(depth0_from, 64)));
    pos_ += 64;
  }
}

bool EventScanner::emit_if_ready(RawBatch& batch, bool force) {
  if (pending_begin_.empty()) return false;
  const bool full = end_ - kHeadroom >= limits_.batch_bytes * 3 / 4 || capacity_ - kPadding - end_ < kMinRead;
  if (!force && !full) return false;
  // Hand the current buffer to the batch; the unread tail moves to a fresh buffer.
  const std::size_t keep_from = (mode_ == Mode::kEvents && depth_ > 0) ? event_start_ : pos_;
  batch.stream_offset = buf_stream_offset_ - kHeadroom;
  batch.capacity = capacity_;
  std::unique_ptr<char[]> old_buffer;
  start_new_buffer_keep_old(keep_from, old_buffer);
  batch.data = std::move(old_buffer);
  batch.event_begin.swap(pending_begin_);
  batch.event_end.swap(pending_end_);
  pending_begin_.clear();
  pending_end_.clear();
  batch.first_event_index = summary_.events;
  batch.sequence = batches_++;
  summary_.events += batch.event_begin.size();
  return true;
}

// The document's first byte (after a byte order mark and whitespace): '[' opens a legacy event
// array, '{' the root object; anything else, or nothing, is not a trace.
void EventScanner::open_document() {
  // Skip a UTF-8 byte order mark and leading whitespace.
  if (peek_byte() == 0xEF) {
    pos_ += 1;
    if (peek_byte() == 0xBB) ++pos_;
    if (peek_byte() == 0xBF) ++pos_;
  }
  skip_ws();
  const int c = next_byte();
  if (c < 0 && !summary_.stop_reason.empty())
    throw InputError(
        fmt::format("{}: no JSON document in the first {} bytes (only whitespace)", name_, summary_.bytes));
  // A compressed stream damaged before its first byte of JSON: say what is wrong with it.
  if (c < 0 && !summary_.stream_damage.empty()) throw InputError(summary_.stream_damage);
  if (c < 0) throw InputError(fmt::format("{}: empty input (no JSON at all)", name_));
  if (c == '[') {
    summary_.root_is_array = true;
    summary_.saw_trace_events = true;
    mode_ = Mode::kEvents;
  } else if (c == '{') {
    mode_ = Mode::kRootObject;
  } else {
    throw InputError(fmt::format(
        "{}: byte {}: not a trace: expected '{{' or '[' to open the JSON document, found {}", name_,
        buf_stream_offset_ + pos_ - 1 - kHeadroom,
        (c >= 0x20 && c < 0x7f) ? fmt::format("'{}'", static_cast<char>(c)) : fmt::format("byte 0x{:02x}", c)));
  }
}

bool EventScanner::next(RawBatch& batch) {
  std::string key;
  for (;;) {
    switch (mode_) {
      case Mode::kStart: open_document(); break;
      case Mode::kRootObject: {
        skip_ws();
        int c = next_byte();
        if (c == ',') {
          skip_ws();
          c = next_byte();
        }
        if (c < 0) {
          finish_truncated("the top-level object");
          break;
        }
        if (c == '}') {
          skip_ws();
          if (peek_byte() >= 0)
            summary_.warnings.push_back(fmt::format("ignored data after the end of the JSON document at byte {}",
                                                    buf_stream_offset_ + pos_ - kHeadroom));
          mode_ = Mode::kDone;
          break;
        }
        if (c != '"') {
          throw InputError(fmt::format("{}: byte {}: expected a key in the top-level object", name_,
                                       buf_stream_offset_ + pos_ - 1 - kHeadroom));
        }
        const std::uint64_t key_at = buf_stream_offset_ + pos_ - 1 - kHeadroom;
        if (!read_key(key)) {
          finish_truncated("a top-level key");
          break;
        }
        skip_ws();
        if (next_byte() != ':') {
          if (eof_) {
            finish_truncated("a top-level key");
            break;
          }
          throw InputError(fmt::format("{}: byte {}: expected ':' after top-level key \"{}\"", name_,
                                       buf_stream_offset_ + pos_ - 1 - kHeadroom, key));
        }
        skip_ws();
        if (key == "traceEvents" && peek_byte() == '[') {
          if (summary_.saw_trace_events && summary_.extra_event_arrays++ == 0) {
            summary_.first_extra_array_at = key_at;
            summary_.events_before_extra_array = summary_.events + pending_begin_.size();
          }
          ++pos_;
          summary_.saw_trace_events = true;
          mode_ = Mode::kEvents;
          in_string_ = escaped_ = false;
          depth_ = 0;
          array_closed_ = false;
          top_level_commas_ = array_objects_ = nested_arrays_ = 0;
          commas_at_last_close_ = kNoElementClosed;
          comment_ = Comment::kNone;
          break;
        }
        std::string value;
        bool too_big = false;
        if (!capture_value(&value, too_big)) {
          finish_truncated("a top-level value");
          break;
        }
        if (too_big)
          summary_.header_dropped.push_back(key);
        else
          summary_.header.emplace_back(key, std::move(value));
        break;
      }
      case Mode::kEvents: {
        scan_events();
        if (array_closed_) {
          // Emit before reading on: a read may move to a fresh buffer, and the pending events
          // still point into this one.
          mode_ = summary_.root_is_array ? Mode::kAfterRootArray : Mode::kRootObject;
          if (emit_if_ready(batch, true)) return true;
          break;
        }
        if (emit_if_ready(batch, false)) return true;
        if (!fill()) {
          finish_truncated(depth_ > 0 ? "an event" : "the traceEvents array");
          if (depth_ > 0) summary_.truncated_at = buf_stream_offset_ + event_start_ - kHeadroom;
          if (emit_if_ready(batch, true)) return true;
        }
        break;
      }
      case Mode::kAfterRootArray: {
        skip_ws();
        if (peek_byte() >= 0)
          summary_.warnings.push_back(fmt::format("ignored data after the end of the JSON document at byte {}",
                                                  buf_stream_offset_ + pos_ - kHeadroom));
        mode_ = Mode::kDone;
        break;
      }
      case Mode::kDone: return emit_if_ready(batch, true);
    }
  }
}

}  // namespace ferret
