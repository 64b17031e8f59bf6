#include "gen/caching_allocator_model.h"

#include <iterator>
#include <stdexcept>

namespace ferret {

CachingAllocatorModel::Allocation CachingAllocatorModel::allocate(std::int64_t request) {
  Allocation result;
  const std::int64_t size = (request + 511) / 512 * 512;
  auto best = blocks_.end();
  for (auto it = blocks_.begin(); it != blocks_.end(); ++it)
    if (it->second.free && it->second.size >= size && (best == blocks_.end() || it->second.size < best->second.size))
      best = it;
  if (best == blocks_.end()) {
    const std::int64_t segment = size < 10 * kMiB ? 20 * kMiB : (size + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB);
    if (reserved_ + segment > limit_) result.released_bytes = release_free_segments();
    if (reserved_ + segment > limit_) throw std::logic_error("fragmented-memory scenario exceeds the device's memory");
    const std::uint64_t base = next_base_;
    next_base_ += static_cast<std::uint64_t>(segment + 2 * kMiB);  // the driver leaves gaps between mappings
    segments_[base] = segment;
    reserved_ += segment;
    best = blocks_.emplace(base, Block{segment, true, base}).first;
    result.new_segment_bytes = segment;
  }
  Block& block = best->second;
  if (block.size - size > kMiB) {
    blocks_.emplace(best->first + static_cast<std::uint64_t>(size), Block{block.size - size, true, block.segment});
    block.size = size;
  }
  block.free = false;
  allocated_ += block.size;
  result.addr = best->first;
  result.size = block.size;
  return result;
}

std::int64_t CachingAllocatorModel::release(std::uint64_t addr) {
  auto it = blocks_.find(addr);
  if (it == blocks_.end() || it->second.free) throw std::logic_error("allocator model: bad free");
  it->second.free = true;
  const std::int64_t size = it->second.size;
  allocated_ -= size;
  auto next = std::next(it);
  if (next != blocks_.end() && next->second.free && next->second.segment == it->second.segment &&
      it->first + static_cast<std::uint64_t>(it->second.size) == next->first) {
    it->second.size += next->second.size;
    blocks_.erase(next);
  }
  if (it != blocks_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.free && prev->second.segment == it->second.segment &&
        prev->first + static_cast<std::uint64_t>(prev->second.size) == it->first) {
      prev->second.size += it->second.size;
      blocks_.erase(it);
    }
  }
  return size;
}

// Frees every wholly free segment (cudaFree), as PyTorch does before it retries a cudaMalloc.
std::int64_t CachingAllocatorModel::release_free_segments() {
  ++retries_;
  std::int64_t released = 0;
  for (auto it = segments_.begin(); it != segments_.end();) {
    auto block = blocks_.find(it->first);
    if (block != blocks_.end() && block->second.free && block->second.size == it->second) {
      released += it->second;
      reserved_ -= it->second;
      blocks_.erase(block);
      it = segments_.erase(it);
    } else {
      ++it;
    }
  }
  return released;
}

}  // namespace ferret
