// A safe reader for the data pickles PyTorch writes (torch.cuda.memory._dump_snapshot()): pickle
// protocols 2 to 5 holding only dicts, lists, tuples, sets, strings, bytes, ints, floats, bools
// and None. No code runs and no class is looked up: any opcode that would (GLOBAL, REDUCE, BUILD,
// NEWOBJ, PERSID, ...) is an error naming its byte offset, as is every malformed or truncated
// stream. The memo (BINPUT/BINGET/MEMOIZE) and protocol 4 frames are supported.
//
// Values live in one arena (PickleDocument) and refer to their containers by index, so a stream
// whose memo makes a container hold itself costs nothing and leaks nothing; readers walk a
// document to a fixed depth. Python's own pickle module documents the opcodes
// (Lib/pickletools.py).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ferret {

enum class PickleKind : std::uint8_t { kNone, kBool, kInt, kFloat, kString, kBytes, kList, kTuple, kDict, kSet };
const char* pickle_kind_name(PickleKind kind);  // "None", "bool", "int", ...

// 16 bytes: a snapshot's pickle holds millions of these (every dict entry is two).
struct PickleValue {
  PickleKind kind = PickleKind::kNone;
  bool big = false;       // an int beyond int64 (its value saturates)
  std::uint32_t ref = 0;  // string/bytes: PickleDocument::strings; list/tuple/set: lists; dict: dicts
  union {
    std::int64_t i = 0;  // bool and int
    double f;            // float (read only when kind is kFloat)
  };
};
static_assert(sizeof(PickleValue) == 16);

class PickleDocument {
 public:
  PickleValue root;
  std::vector<std::string> strings;
  std::vector<std::vector<PickleValue>> lists;
  std::vector<std::vector<std::pair<PickleValue, PickleValue>>> dicts;

  bool is_string(const PickleValue& v) const { return v.kind == PickleKind::kString; }
  std::string_view text(const PickleValue& v) const;  // "" unless a string or bytes
  // The items of a list, tuple or set; empty otherwise.
  const std::vector<PickleValue>& items(const PickleValue& v) const;
  // The value under string key `key` of a dict (the last one set), or nullptr.
  const PickleValue* get(const PickleValue& dict, std::string_view key) const;
  const std::vector<std::pair<PickleValue, PickleValue>>& entries(const PickleValue& dict) const;
  // Numbers read leniently: an int or a float (or a bool) as the type asked for, else `fallback`.
  std::int64_t int_or(const PickleValue* v, std::int64_t fallback) const;
  double number_or(const PickleValue* v, double fallback) const;
  std::string string_or(const PickleValue* v, std::string_view fallback) const;
  // Values and entries the stream built: what a reader may walk, memo references aside.
  std::uint64_t size() const;
  // Bytes the values take in memory (what PickleLimits::max_bytes bounded).
  std::uint64_t bytes = 0;
  // One id per distinct string text: the smallest `ref` of a string (or bytes) with the same text,
  // or kNotAString. The memo lets a stream use one long string in millions of places for 5 bytes
  // each; readers compare and index strings by this id, so each text is hashed once, not once per use.
  static constexpr std::uint32_t kNotAString = 0xffffffff;
  std::uint32_t text_id(const PickleValue& v) const;

  // A stream cut short (PickleLimits::keep_truncated): the byte where it ended, and the lists and
  // dicts it left open. Open dicts inside lists (a record half written) were dropped from them;
  // open lists keep the items they had; the root and values under dict keys are kept open.
  std::optional<std::uint64_t> truncated_at;
  bool incomplete(const PickleValue& v) const;
  std::unordered_set<std::uint32_t> incomplete_lists, incomplete_dicts;
  std::uint64_t dropped_partial = 0;  // half-written values left out

 private:
  // Key index of large dicts (text_id -> entry), built on first lookup: a dict the memo shares
  // among many places is looked up many times, and a linear search each time would be quadratic.
  mutable std::unordered_map<std::uint32_t, std::unordered_map<std::uint32_t, std::uint32_t>> index_;
  mutable std::vector<std::uint32_t> text_ids_;  // by ref; kNotAString until computed
  mutable std::unordered_map<std::string_view, std::uint32_t> ref_by_text_;
};

struct PickleLimits {
  std::uint64_t max_bytes = 0;  // arena memory bound; 0: no bound beyond what the input can make
  int max_nesting = 10'000;     // MARKs open at once
  // A stream that ends before STOP: close what it left open and return it (PickleDocument's
  // truncated_at) instead of failing. Only the end of the input is forgiven, nothing else.
  bool keep_truncated = false;
};

// Parses one pickle from `bytes`. `name` is used in messages. Throws InputError.
PickleDocument read_pickle(std::string_view bytes, const std::string& name, const PickleLimits& limits = {});

}  // namespace ferret
