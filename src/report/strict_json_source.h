// The bytes of a JSON trace as strict JSON (RFC 8259), for the commands that copy a trace through
// (`ferret annotate`). The loader reads more than JSON - what real traces hold: comments, NaN and
// Infinity, a byte order mark, trailing commas, single-quoted strings, bytes or a second document
// after the first. Copied as they are, those would make the output invalid JSON for the tools
// it is written for. This source re-emits each in strict form, as the loader read it: comments,
// the BOM and what follows the document are left out, NaN and +-Infinity become null, a trailing
// comma goes, a single-quoted string is double-quoted. Everything else passes byte for byte.
#pragma once

#include <cstdint>
#include <string>

#include "ingest/byte_source.h"

namespace ferret {

class StrictJsonSource final : public ByteSource {
 public:
  explicit StrictJsonSource(ByteSource& inner) : inner_(inner) {}
  std::size_t read(char* dst, std::size_t capacity) override;
  std::uint64_t consumed() const override { return inner_.consumed(); }
  std::string damage() const override { return inner_.damage(); }
  std::uint64_t memory_bytes() const override { return inner_.memory_bytes() + in_.capacity() + out_.capacity(); }

  // What was rewritten, for the user's note ("" when the input was strict JSON already).
  std::string rewrites() const;

 private:
  void take(char c);
  void emit(char c);
  void emit_structure(char c);
  void flush_word();
  void flush_comma();
  void finish();

  ByteSource& inner_;
  std::string in_, out_;
  std::size_t out_pos_ = 0;
  bool inner_done_ = false, finished_ = false;
  std::uint64_t offset_ = 0;
  // Lexical state outside and inside strings.
  char quote_ = 0;  // '"' or '\'' inside a string, 0 outside
  bool escape_ = false;
  enum class Comment { kNone, kSlash, kLine, kBlock, kBlockStar } comment_ = Comment::kNone;
  std::string word_;  // a bare word being read (NaN, Infinity, true, ...), with a leading '-'
  bool pending_comma_ = false;
  std::string pending_space_;  // whitespace after a held comma
  int depth_ = 0;
  bool root_opened_ = false, root_closed_ = false;
  int bom_matched_ = 0;
  // What was rewritten.
  std::uint64_t comments_ = 0, non_finite_ = 0, trailing_commas_ = 0, single_quoted_ = 0, after_root_ = 0;
  bool bom_ = false;
};

}  // namespace ferret
