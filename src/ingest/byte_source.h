// Byte sources: a file or stdin, decompressed on the fly. The format is told by magic bytes,
// never by the file name: gzip (1f 8b), zstd (28 b5 2f fd), else plain.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "base/input_error.h"

namespace ferret {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Fills up to `capacity` bytes; returns 0 only at the end of the stream. Throws InputError.
  virtual std::size_t read(char* dst, std::size_t capacity) = 0;
  // Bytes taken from the underlying file so far (compressed bytes for compressed input).
  virtual std::uint64_t consumed() const = 0;
  // A stream that ended early (truncated compressed data) reports it here after read() returns 0.
  virtual std::string damage() const { return {}; }
  // Bytes the source holds (decompression buffers and windows), counted against --max-memory.
  virtual std::uint64_t memory_bytes() const { return 0; }
};

struct OpenedSource {
  std::unique_ptr<ByteSource> source;
  std::string compression;      // "gzip", "zstd", "none"
  std::uint64_t file_size = 0;  // 0 when unknown (stdin, pipes)
};

// Limits against decompression bombs (a 40 KB gzip that inflates to 40 GB). Real gzipped traces
// inflate 10-40x (the corpus: 13-32x); past `min_bytes`, output beyond `max_ratio` x the
// compressed input read so far stops the stream, reported as damage, with what came before kept.
struct InflationLimits {
  double max_ratio = 1000.0;
  std::uint64_t min_bytes = std::uint64_t{1} << 30;
};

// Opens `path` ("-" is stdin) and wraps it in the decompressor its first bytes call for.
OpenedSource open_byte_source(const std::string& path, const InflationLimits& limits = {});
// Wraps a decompressor so it stops at the inflation limits (exposed for tests).
std::unique_ptr<ByteSource> guard_inflation(std::unique_ptr<ByteSource> decompressed, std::string name,
                                            const InflationLimits& limits);

// Decompressors over any source; exposed for tests.
std::unique_ptr<ByteSource> make_gzip_source(std::unique_ptr<ByteSource> compressed, std::string name);
std::unique_ptr<ByteSource> make_zstd_source(std::unique_ptr<ByteSource> compressed, std::string name);
// A source over bytes held in memory (tests, generated data).
std::unique_ptr<ByteSource> make_memory_source(std::string bytes);

}  // namespace ferret
