#include "model/string_table.h"

#include <cstring>

namespace ferret {

namespace {
constexpr std::size_t kArenaBlock = 1 << 20;
}

std::size_t StringTable::Hash::operator()(std::string_view s) const noexcept {
  // FNV-1a over 8-byte words: names are short and repeat; this is cheap and spreads well enough.
  std::uint64_t h = 1469598103934665603ull ^ s.size();
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 1099511628211ull;
    h ^= h >> 29;
  }
  for (; i < s.size(); ++i) h = (h ^ static_cast<unsigned char>(s[i])) * 1099511628211ull;
  return static_cast<std::size_t>(h ^ (h >> 32));
}

StringTable::StringTable() {
  views_.emplace_back();
  index_.emplace(std::string_view(), kEmptyStr);
}

std::string_view StringTable::store(std::string_view text) {
  if (text.size() > kArenaBlock / 4) {
    // Long strings get their own allocation so they do not waste the tail of a shared block.
    long_strings_.emplace_back(text);
    arena_bytes_ += text.size();
    return long_strings_.back();
  }
  if (arena_.empty() || arena_used_ + text.size() > arena_.back().capacity()) {
    arena_.emplace_back();
    arena_.back().reserve(kArenaBlock);
    arena_used_ = 0;
    arena_bytes_ += kArenaBlock;
  }
  std::string& block = arena_.back();
  const std::size_t at = block.size();
  block.append(text);
  arena_used_ = block.size();
  return std::string_view(block.data() + at, text.size());
}

StrId StringTable::intern(std::string_view text) {
  if (auto it = index_.find(text); it != index_.end()) return it->second;
  const std::string_view stored = store(text);
  const StrId id = static_cast<StrId>(views_.size());
  views_.push_back(stored);
  index_.emplace(stored, id);
  return id;
}

StrId StringTable::find(std::string_view text) const {
  auto it = index_.find(text);
  return it == index_.end() ? kEmptyStr : it->second;
}

}  // namespace ferret
