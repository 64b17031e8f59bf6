#include "report/strict_json_source.h"

#include <cstring>

#include <fmt/format.h>

namespace ferret {

namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '+' ||
         c == '-' || c == '_';
}

}  // namespace

std::size_t StrictJsonSource::read(char* dst, std::size_t capacity) {
  while (out_pos_ >= out_.size()) {
    out_.clear();
    out_pos_ = 0;
    if (finished_) return 0;
    if (inner_done_) {
      finish();
      finished_ = true;
      continue;
    }
    in_.resize(std::size_t{1} << 20);
    const std::size_t n = inner_.read(in_.data(), in_.size());
    if (n == 0) {
      inner_done_ = true;
      continue;
    }
    for (std::size_t i = 0; i < n; ++i) take(in_[i]);
  }
  const std::size_t n = std::min(capacity, out_.size() - out_pos_);
  std::memcpy(dst, out_.data() + out_pos_, n);
  out_pos_ += n;
  return n;
}

void StrictJsonSource::emit(char c) {
  if (root_closed_) {  // after the document: left out (a second document, garbage); whitespace stays
    if (is_space(c))
      out_ += c;
    else
      ++after_root_;
    return;
  }
  out_ += c;
}

// A bracket outside strings: the document's structure (the root closes at depth 0).
void StrictJsonSource::emit_structure(char c) {
  const bool closed_before = root_closed_;
  emit(c);
  if (closed_before) return;
  if (c == '{' || c == '[') {
    ++depth_;
    root_opened_ = true;
  } else if ((c == '}' || c == ']') && depth_ > 0 && --depth_ == 0) {
    root_closed_ = root_opened_;
  }
}

// A bare word ends: NaN and +-Infinity (JavaScript's spellings, which Python's json writes) are
// no JSON number; the loader reads them as missing, so null says the same.
void StrictJsonSource::flush_word() {
  if (word_.empty()) return;
  const std::string_view w = word_;
  const bool non_finite = w == "NaN" || w == "-NaN" || w == "Infinity" || w == "-Infinity" || w == "+Infinity" ||
                          w == "nan" || w == "-nan" || w == "inf" || w == "-inf";
  if (non_finite) {
    ++non_finite_;
    for (const char c : std::string_view("null")) emit(c);
  } else {
    for (const char c : w) emit(c);
  }
  word_.clear();
}

void StrictJsonSource::flush_comma() {
  if (!pending_comma_) return;
  pending_comma_ = false;
  emit(',');
  for (const char c : pending_space_) emit(c);
  pending_space_.clear();
}

void StrictJsonSource::take(char c) {
  const std::uint64_t at = offset_++;
  if (bom_matched_ >= 0 && at < 3) {  // a UTF-8 byte order mark at the start: left out
    static constexpr char kBom[] = "\xEF\xBB\xBF";
    if (c == kBom[at]) {
      if (++bom_matched_ == 3) bom_ = true;
      return;
    }
    // Not a BOM after all: its bytes so far pass on.
    for (int k = 0; k < bom_matched_; ++k) emit(kBom[k]);
    bom_matched_ = -1;
  } else if (at >= 3) {
    bom_matched_ = -1;
  }
  if (quote_ != 0) {
    if (escape_) {  // the backslash waited for what it escapes
      escape_ = false;
      if (quote_ != '\'' || c != '\'') emit('\\');  // \' is no JSON escape: the quote itself
      emit(c);
      return;
    }
    if (c == '\\') {
      escape_ = true;
      return;
    }
    if (c == quote_) {
      quote_ = 0;
      emit('"');
      return;
    }
    if (quote_ == '\'' && c == '"') {
      emit('\\');
      emit('"');
      return;
    }
    emit(c);
    return;
  }
  switch (comment_) {
    case Comment::kSlash:
      if (c == '/' || c == '*') {
        comment_ = c == '/' ? Comment::kLine : Comment::kBlock;
        ++comments_;
        return;
      }
      comment_ = Comment::kNone;
      flush_word();
      flush_comma();
      emit('/');  // a lone slash: not ours to fix (the loader refuses it too)
      break;
    case Comment::kLine:
      if (c == '\n') {
        comment_ = Comment::kNone;
        break;  // the line break stays, as whitespace
      }
      return;
    case Comment::kBlock:
    case Comment::kBlockStar:
      if (comment_ == Comment::kBlockStar && c == '/') {
        comment_ = Comment::kNone;
        if (pending_comma_)
          pending_space_ += ' ';
        else
          emit(' ');  // a comment separates tokens
        return;
      }
      comment_ = c == '*' ? Comment::kBlockStar : Comment::kBlock;
      return;
    case Comment::kNone: break;
  }
  if (c == '/') {
    comment_ = Comment::kSlash;
    return;
  }
  if (is_word_char(c)) {
    if (word_.empty()) flush_comma();
    word_ += c;
    return;
  }
  flush_word();
  if (is_space(c)) {
    if (pending_comma_)
      pending_space_ += c;
    else
      emit(c);
    return;
  }
  if (c == ',') {
    flush_comma();
    pending_comma_ = true;
    return;
  }
  if (pending_comma_ && (c == ']' || c == '}')) {  // a trailing comma
    pending_comma_ = false;
    ++trailing_commas_;
    for (const char s : pending_space_) emit(s);
    pending_space_.clear();
  }
  flush_comma();
  if (c == '"' || c == '\'') {
    quote_ = c;
    if (c == '\'') ++single_quoted_;
    emit('"');
    return;
  }
  emit_structure(c);
}

void StrictJsonSource::finish() {
  flush_word();
  flush_comma();
}

std::string StrictJsonSource::rewrites() const {
  std::string out;
  const auto add = [&](std::uint64_t n, const char* what) {
    if (n > 0) out += fmt::format("{}{} x {}", out.empty() ? "" : ", ", n, what);
  };
  if (bom_) out += "the byte order mark left out";
  add(comments_, "comment left out");
  add(non_finite_, "NaN or Infinity written as null");
  add(trailing_commas_, "trailing comma left out");
  add(single_quoted_, "single-quoted string double-quoted");
  if (after_root_ > 0)
    out += fmt::format("{}{} bytes after the document left out", out.empty() ? "" : ", ", after_root_);
  return out;
}

}  // namespace ferret
