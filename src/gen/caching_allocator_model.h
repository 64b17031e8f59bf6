// A model of PyTorch's CUDA caching allocator, for the fragmented-memory scenario: large pool only
// (every tensor there is over 1 MB). A request rounds up to 512 bytes and takes the smallest cached
// free block that fits, split when more than 1 MB would remain; with none, cudaMalloc adds a
// segment (20 MB for requests under 10 MB, else the request rounded up to 2 MB). A freed block
// merges with free neighbours of its own segment only. Segments are kept (no empty_cache()) until
// a cudaMalloc would not fit the device: then wholly free segments are released and the cudaMalloc
// retried, as PyTorch does.
#pragma once

#include <cstdint>
#include <map>

namespace ferret {

class CachingAllocatorModel {
 public:
  static constexpr std::int64_t kMiB = 1 << 20;

  struct Allocation {
    std::uint64_t addr = 0;
    std::int64_t size = 0;               // block size, as "Bytes" reports it
    std::int64_t new_segment_bytes = 0;  // cudaMalloc'd for this request
    std::int64_t released_bytes = 0;     // cudaFree'd first to make room
  };

  explicit CachingAllocatorModel(std::int64_t device_limit) : limit_(device_limit) {}

  // Throws std::logic_error when the request does not fit the device even after the retry.
  Allocation allocate(std::int64_t request);
  // Frees the block at `addr`; returns its size. Throws std::logic_error for an address that is
  // no allocated block.
  std::int64_t release(std::uint64_t addr);

  std::int64_t allocated() const { return allocated_; }
  std::int64_t reserved() const { return reserved_; }
  std::int64_t retries() const { return retries_; }

 private:
  struct Block {
    std::int64_t size;
    bool free;
    std::uint64_t segment;
  };

  std::int64_t release_free_segments();

  std::int64_t limit_;
  std::map<std::uint64_t, Block> blocks_;           // by address
  std::map<std::uint64_t, std::int64_t> segments_;  // base address -> size
  std::uint64_t next_base_ = 0x7f3a00000000;
  std::int64_t allocated_ = 0, reserved_ = 0, retries_ = 0;
};

}  // namespace ferret
