// A growable column stored in fixed-size blocks.
//
// Why not std::vector: a vector that doubles while a multi-GB trace streams in briefly holds the
// old and the new buffer (up to 3x the final size). Blocks never move, so peak memory stays within
// one block of the data itself, and appends stay O(1) with no copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace ferret {

template <class T, std::size_t kBlockBits = 16>
class Column {
 public:
  static constexpr std::size_t kBlockSize = std::size_t{1} << kBlockBits;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  void push_back(const T& value) {
    if ((size_ & (kBlockSize - 1)) == 0 && (size_ >> kBlockBits) == blocks_.size()) {
      blocks_.push_back(std::make_unique<T[]>(kBlockSize));
    }
    blocks_[size_ >> kBlockBits][size_ & (kBlockSize - 1)] = value;
    ++size_;
  }

  // Appends a contiguous run, copying block by block.
  void append(std::span<const T> values) {
    for (const T& v : values) push_back(v);
  }

  T& operator[](std::size_t i) { return blocks_[i >> kBlockBits][i & (kBlockSize - 1)]; }
  const T& operator[](std::size_t i) const {
    return blocks_[i >> kBlockBits][i & (kBlockSize - 1)];
  }

  std::size_t memory_bytes() const { return blocks_.size() * kBlockSize * sizeof(T); }

 private:
  std::vector<std::unique_ptr<T[]>> blocks_;
  std::size_t size_ = 0;
};

}  // namespace ferret
