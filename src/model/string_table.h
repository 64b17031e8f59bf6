// Interned strings: each distinct text is stored once and named by a dense 32-bit id.
// Id 0 is always the empty string, so a zero-initialised column means "absent".
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ferret {

using StrId = std::uint32_t;
inline constexpr StrId kEmptyStr = 0;

class StringTable {
 public:
  StringTable();
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;
  StringTable(StringTable&&) = default;
  StringTable& operator=(StringTable&&) = default;

  StrId intern(std::string_view text);
  // The id of `text` if it was interned, else kEmptyStr (never inserts).
  StrId find(std::string_view text) const;
  std::string_view view(StrId id) const { return views_[id]; }
  std::size_t size() const { return views_.size(); }
  std::size_t memory_bytes() const { return arena_bytes_ + views_.size() * 48; }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept;
  };
  // Text lives in fixed arena blocks that never move, so string_views into them stay valid.
  std::deque<std::string> arena_;
  std::deque<std::string> long_strings_;
  std::size_t arena_used_ = 0;
  std::size_t arena_bytes_ = 0;
  std::vector<std::string_view> views_;
  std::unordered_map<std::string_view, StrId, Hash, std::equal_to<>> index_;

  std::string_view store(std::string_view text);
};

}  // namespace ferret
