// A growable column stored in fixed-size blocks.
//
// Why not std::vector: a vector that doubles while a multi-GB trace streams in briefly holds the
// old and the new buffer (up to 3x the final size). Blocks never move, so peak memory stays within
// one block of the data itself, and appends stay O(1) with no copy.
#pragma once

#include <algorithm>
#include <climits>
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
      blocks_.push_back(std::make_unique_for_overwrite<T[]>(kBlockSize));
    }
    blocks_[size_ >> kBlockBits][size_ & (kBlockSize - 1)] = value;
    ++size_;
  }

  // Appends a contiguous run, copying block by block.
  void append(std::span<const T> values) {
    for (const T& v : values) push_back(v);
  }

  T& operator[](std::size_t i) { return blocks_[i >> kBlockBits][i & (kBlockSize - 1)]; }
  const T& operator[](std::size_t i) const { return blocks_[i >> kBlockBits][i & (kBlockSize - 1)]; }

  std::size_t memory_bytes() const { return blocks_.size() * kBlockSize * sizeof(T); }

  // Keeps the first n values and frees the blocks past them; never allocates (used after a failed
  // allocation to bring the columns back to one length).
  void truncate(std::size_t n) {
    if (n >= size_) return;
    size_ = n;
    blocks_.resize((n + kBlockSize - 1) >> kBlockBits);
  }

  // Read-only forward iteration, so side tables can be walked with range-for.
  class const_iterator {
   public:
    const_iterator(const Column* c, std::size_t i) : column_(c), index_(i) {}
    const T& operator*() const { return (*column_)[index_]; }
    const T* operator->() const { return &(*column_)[index_]; }
    const_iterator& operator++() {
      ++index_;
      return *this;
    }
    bool operator==(const const_iterator& o) const { return index_ == o.index_; }
    bool operator!=(const const_iterator& o) const { return index_ != o.index_; }

   private:
    const Column* column_;
    std::size_t index_;
  };
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size_); }
  const T& back() const { return (*this)[size_ - 1]; }

 private:
  std::vector<std::unique_ptr<T[]>> blocks_;
  std::size_t size_ = 0;
};

// An int64 column stored as 32-bit offsets from a per-block base where the block's values allow
// it (timestamps, durations and ids of nearby events are close), and as full 64-bit values in
// blocks where they do not. Reads return values; there is no reference to write through.
class PackedInt64Column {
 public:
  static constexpr std::size_t kBlockBits = 16;
  static constexpr std::size_t kBlockSize = std::size_t{1} << kBlockBits;
  // Narrow code reserved for INT64_MIN, the model's "absent" marker.
  static constexpr std::int32_t kAbsentCode = INT32_MIN;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  void push_back(std::int64_t value) {
    const std::size_t j = size_ & (kBlockSize - 1);
    if (j == 0) {
      blocks_.emplace_back();
      Block& fresh = blocks_.back();
      fresh.narrow = std::make_unique_for_overwrite<std::int32_t[]>(kBlockSize);
      fresh.base = value == INT64_MIN ? 0 : value;
    }
    ++size_;
    store(blocks_.back(), j, j, value);
  }

  // Overwrites value i (i < size()); the block widens when the value does not fit its base.
  void set(std::size_t i, std::int64_t value) {
    const std::size_t block = i >> kBlockBits;
    store(blocks_[block], i & (kBlockSize - 1), std::min(kBlockSize, size_ - (block << kBlockBits)), value);
  }

  // Inlined always: the analyses read timestamps in their inner loops, and the out-of-line call
  // cost as much as the read (GCC's heuristics left it a call under LTO).
  [[gnu::always_inline]] std::int64_t operator[](std::size_t i) const {
    const Block& b = blocks_[i >> kBlockBits];
    const std::size_t j = i & (kBlockSize - 1);
    if (b.narrow) {
      const std::int32_t code = b.narrow[j];
      return code == kAbsentCode ? INT64_MIN : b.base + code;
    }
    return b.wide[j];
  }

  // As Column::truncate.
  void truncate(std::size_t n) {
    if (n >= size_) return;
    size_ = n;
    blocks_.resize((n + kBlockSize - 1) >> kBlockBits);
  }

  std::size_t memory_bytes() const {
    std::size_t n = 0;
    for (const Block& b : blocks_) n += b.narrow ? kBlockSize * 4 : kBlockSize * 8;
    return n;
  }

 private:
  struct Block {
    std::int64_t base = 0;
    std::unique_ptr<std::int32_t[]> narrow;
    std::unique_ptr<std::int64_t[]> wide;
  };
  // Writes slot j of a block whose first `filled` slots hold values (j < filled).
  void store(Block& b, std::size_t j, std::size_t filled, std::int64_t value) {
    if (b.narrow) {
      if (value == INT64_MIN) {
        b.narrow[j] = kAbsentCode;
        return;
      }
      // Offsets in (INT32_MIN, INT32_MAX] fit; compute in unsigned to avoid overflow.
      const std::uint64_t diff = static_cast<std::uint64_t>(value) - static_cast<std::uint64_t>(b.base);
      const auto offset = static_cast<std::int64_t>(diff);
      const bool no_wrap = (value >= b.base) == (offset >= 0);
      if (no_wrap && offset > INT32_MIN && offset <= INT32_MAX) {
        b.narrow[j] = static_cast<std::int32_t>(offset);
        return;
      }
      widen(b, filled);
    }
    b.wide[j] = value;
  }
  void widen(Block& b, std::size_t filled) {
    b.wide = std::make_unique_for_overwrite<std::int64_t[]>(kBlockSize);
    for (std::size_t k = 0; k < filled; ++k) b.wide[k] = b.narrow[k] == kAbsentCode ? INT64_MIN : b.base + b.narrow[k];
    b.narrow.reset();
  }
  std::vector<Block> blocks_;
  std::size_t size_ = 0;
};

}  // namespace ferret
