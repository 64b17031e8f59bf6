#include "ingest/byte_source.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#ifdef FERRET_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#else
#include <zlib.h>
#endif

namespace ferret {

namespace {

class FdSource final : public ByteSource {
 public:
  FdSource(int fd, std::string name, bool owned) : fd_(fd), name_(std::move(name)), owned_(owned) {}
  ~FdSource() override {
    if (owned_ && fd_ >= 0) ::close(fd_);
  }
  std::size_t read(char* dst, std::size_t capacity) override {
    std::size_t got = 0;
    // Replay the bytes peeked for magic detection first.
    if (replay_pos_ < replay_.size()) {
      got = std::min(capacity, replay_.size() - replay_pos_);
      std::memcpy(dst, replay_.data() + replay_pos_, got);
      replay_pos_ += got;
      return got;
    }
    return read_fd(dst, capacity);
  }
  std::uint64_t consumed() const override { return consumed_; }
  // Reads up to n bytes for magic detection; they are returned again by later read() calls.
  std::string_view peek(std::size_t n) {
    while (replay_.size() < n) {
      char buf[16];
      // Straight from the descriptor: read() would hand back the bytes peeked so far (a file
      // shorter than the magic once came out twice).
      const std::size_t got = read_fd(buf, n - replay_.size());
      if (got == 0) break;
      replay_.append(buf, got);
    }
    replay_pos_ = 0;
    return replay_;
  }

 private:
  std::size_t read_fd(char* dst, std::size_t capacity) {
    for (;;) {
      const ssize_t n = ::read(fd_, dst, capacity);
      if (n >= 0) {
        consumed_ += static_cast<std::uint64_t>(n);
        return static_cast<std::size_t>(n);
      }
      if (errno == EINTR) continue;
      throw InputError(fmt::format("{}: read failed at byte {}: {}", name_, consumed_, std::strerror(errno)));
    }
  }

  int fd_;
  std::string name_;
  bool owned_;
  std::uint64_t consumed_ = 0;
  std::string replay_;
  std::size_t replay_pos_ = 0;
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::string bytes) : bytes_(std::move(bytes)) {}
  std::size_t read(char* dst, std::size_t capacity) override {
    const std::size_t n = std::min(capacity, bytes_.size() - pos_);
    std::memcpy(dst, bytes_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  std::uint64_t consumed() const override { return pos_; }

 private:
  std::string bytes_;
  std::size_t pos_ = 0;
};

constexpr std::size_t kCompressedChunk = 1 << 20;

#ifdef FERRET_HAVE_ISAL
// gzip through ISA-L's igzip: several times faster than zlib's inflate on x86-64.
class GzipSource final : public ByteSource {
 public:
  GzipSource(std::unique_ptr<ByteSource> in, std::string name)
      : in_(std::move(in)), name_(std::move(name)), buf_(kCompressedChunk) {
    reset_member();
  }
  std::size_t read(char* dst, std::size_t capacity) override {
    std::size_t produced = 0;
    while (produced == 0 && !finished_) {
      if (state_.avail_in == 0 && !input_eof_) refill();
      if (state_.avail_in == 0 && input_eof_) {
        if (state_.block_state != ISAL_BLOCK_FINISH && member_started_) {
          damage_ = fmt::format("{}: gzip stream ends early at compressed byte {}", name_, in_->consumed());
        }
        finished_ = true;
        break;
      }
      state_.next_out = reinterpret_cast<std::uint8_t*>(dst);
      state_.avail_out = static_cast<std::uint32_t>(std::min<std::size_t>(capacity, UINT32_MAX));
      member_started_ = true;
      const int rc = isal_inflate(&state_);
      produced = capacity - state_.avail_out;
      if (rc != ISAL_DECOMP_OK) {
        damage_ = fmt::format("{}: corrupt gzip data near compressed byte {} (igzip error {})", name_,
                              in_->consumed() - state_.avail_in, rc);
        finished_ = true;
        break;
      }
      if (state_.block_state == ISAL_BLOCK_FINISH) {
        // Concatenated gzip members are one stream (gzip -c a b > c).
        const std::uint32_t left = state_.avail_in;
        std::uint8_t* next = state_.next_in;
        reset_member();
        state_.next_in = next;
        state_.avail_in = left;
        member_started_ = false;
        if (left == 0 && !input_eof_) refill();
        if (state_.avail_in == 0) finished_ = true;
      }
    }
    return produced;
  }
  std::uint64_t consumed() const override { return in_->consumed(); }
  std::string damage() const override { return damage_; }
  std::uint64_t memory_bytes() const override { return buf_.size() + sizeof(state_); }

 private:
  void reset_member() {
    isal_inflate_init(&state_);
    state_.crc_flag = ISAL_GZIP;
  }
  void refill() {
    const std::size_t n = in_->read(buf_.data(), buf_.size());
    if (n == 0) input_eof_ = true;
    state_.next_in = reinterpret_cast<std::uint8_t*>(buf_.data());
    state_.avail_in = static_cast<std::uint32_t>(n);
  }
  std::unique_ptr<ByteSource> in_;
  std::string name_;
  std::vector<char> buf_;
  inflate_state state_{};
  bool input_eof_ = false;
  bool finished_ = false;
  bool member_started_ = false;
  std::string damage_;
};
#else
// gzip through zlib: the portable path when ISA-L is not available.
class GzipSource final : public ByteSource {
 public:
  GzipSource(std::unique_ptr<ByteSource> in, std::string name)
      : in_(std::move(in)), name_(std::move(name)), buf_(kCompressedChunk) {
    std::memset(&z_, 0, sizeof z_);
    if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) throw InputError(name_ + ": zlib init failed");
  }
  ~GzipSource() override { inflateEnd(&z_); }
  std::size_t read(char* dst, std::size_t capacity) override {
    std::size_t produced = 0;
    while (produced == 0 && !finished_) {
      if (z_.avail_in == 0 && !input_eof_) refill();
      if (z_.avail_in == 0 && input_eof_) {
        if (member_open_)
          damage_ = fmt::format("{}: gzip stream ends early at compressed byte {}", name_, in_->consumed());
        finished_ = true;
        break;
      }
      z_.next_out = reinterpret_cast<Bytef*>(dst);
      z_.avail_out = static_cast<uInt>(std::min<std::size_t>(capacity, UINT32_MAX));
      member_open_ = true;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      produced = capacity - z_.avail_out;
      if (rc == Z_STREAM_END) {
        member_open_ = false;
        if (z_.avail_in == 0 && !input_eof_) refill();
        if (z_.avail_in == 0)
          finished_ = true;
        else
          inflateReset(&z_);
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        damage_ = fmt::format("{}: corrupt gzip data near compressed byte {} ({})", name_,
                              in_->consumed() - z_.avail_in, z_.msg ? z_.msg : "zlib error");
        finished_ = true;
      }
    }
    return produced;
  }
  std::uint64_t consumed() const override { return in_->consumed(); }
  std::string damage() const override { return damage_; }
  // zlib's inflate state and its 32 KiB window
  std::uint64_t memory_bytes() const override { return buf_.size() + (48u << 10); }

 private:
  void refill() {
    const std::size_t n = in_->read(buf_.data(), buf_.size());
    if (n == 0) input_eof_ = true;
    z_.next_in = reinterpret_cast<Bytef*>(buf_.data());
    z_.avail_in = static_cast<uInt>(n);
  }
  std::unique_ptr<ByteSource> in_;
  std::string name_;
  std::vector<char> buf_;
  z_stream z_;
  bool input_eof_ = false, finished_ = false, member_open_ = false;
  std::string damage_;
};
#endif

// The largest zstd window accepted: 2^27 = 128 MiB, zstd's own default. A frame header asking for
// more (zstd --long=31 writes 2 GiB windows) would make the decoder allocate that much up front.
constexpr int kZstdWindowLogMax = 27;

class ZstdSource final : public ByteSource {
 public:
  ZstdSource(std::unique_ptr<ByteSource> in, std::string name)
      : in_(std::move(in)), name_(std::move(name)), buf_(ZSTD_DStreamInSize()), ctx_(ZSTD_createDCtx()) {
    ZSTD_DCtx_setParameter(ctx_, ZSTD_d_windowLogMax, kZstdWindowLogMax);
  }
  ~ZstdSource() override { ZSTD_freeDCtx(ctx_); }
  std::size_t read(char* dst, std::size_t capacity) override {
    // At most one block's output per call: a call that fails hands back nothing of what it decoded
    // before the damage, so the blocks before a corrupt one must have been returned by then.
    ZSTD_outBuffer out{dst, std::min(capacity, ZSTD_DStreamOutSize()), 0};
    while (out.pos == 0 && !finished_) {
      if (in_buf_.pos == in_buf_.size) {
        const std::size_t n = in_->read(buf_.data(), buf_.size());
        if (n == 0) {
          if (frame_open_)
            damage_ = fmt::format(
                "{}: zstd stream ends early at compressed byte {} (inside the frame that starts at byte {})", name_,
                in_->consumed(), frame_start_);
          finished_ = true;
          break;
        }
        in_buf_ = ZSTD_inBuffer{buf_.data(), n, 0};
      }
      if (!frame_open_) frame_start_ = offset_of_next_input();
      const std::size_t rc = ZSTD_decompressStream(ctx_, &out, &in_buf_);
      held_bytes_.store(buf_.size() + ZSTD_sizeof_DCtx(ctx_), std::memory_order_relaxed);
      if (ZSTD_isError(rc)) {
        damage_ = describe_error(rc);
        finished_ = true;
        break;
      }
      frame_open_ = rc != 0;
    }
    return out.pos;
  }
  std::uint64_t consumed() const override { return in_->consumed(); }
  std::string damage() const override { return damage_; }
  // Read by the thread that checks the memory bound while this one decompresses.
  std::uint64_t memory_bytes() const override { return held_bytes_.load(std::memory_order_relaxed); }

 private:
  // Compressed offset of the first byte the decoder has not taken yet.
  std::uint64_t offset_of_next_input() const { return in_->consumed() - (in_buf_.size - in_buf_.pos); }

  // Each kind of damage in its own words: "corrupt" alone said nothing about what to do.
  std::string describe_error(std::size_t rc) const {
    const std::uint64_t at = offset_of_next_input();
    switch (ZSTD_getErrorCode(rc)) {
      case ZSTD_error_checksum_wrong:
        return fmt::format(
            "{}: zstd checksum mismatch in the frame that starts at compressed byte {} (checked at byte {}): "
            "the data was altered after compression",
            name_, frame_start_, at);
      case ZSTD_error_frameParameter_windowTooLarge:
        return fmt::format(
            "{}: zstd frame at compressed byte {} asks for a window over the {} MiB allowed (written with "
            "zstd --long or a high --window-log?): recompress with a smaller window",
            name_, frame_start_, (std::size_t{1} << kZstdWindowLogMax) >> 20);
      case ZSTD_error_prefix_unknown:
        return fmt::format("{}: not a zstd frame at compressed byte {} (unknown magic number)", name_, at);
      default:
        return fmt::format("{}: corrupt zstd data in the frame that starts at compressed byte {}, near byte {} ({})",
                           name_, frame_start_, at, ZSTD_getErrorName(rc));
    }
  }

  std::unique_ptr<ByteSource> in_;
  std::string name_;
  std::vector<char> buf_;
  ZSTD_DCtx* ctx_;
  ZSTD_inBuffer in_buf_{nullptr, 0, 0};
  bool finished_ = false, frame_open_ = false;
  std::uint64_t frame_start_ = 0;
  std::atomic<std::uint64_t> held_bytes_{0};  // the window grows with the frame being decoded
  std::string damage_;
};

class InflationGuard final : public ByteSource {
 public:
  InflationGuard(std::unique_ptr<ByteSource> inner, std::string name, InflationLimits limits)
      : inner_(std::move(inner)), name_(std::move(name)), limits_(limits) {}
  std::size_t read(char* dst, std::size_t capacity) override {
    if (stopped_) return 0;
    const std::size_t n = inner_->read(dst, capacity);
    produced_ += n;
    const double ratio =
        static_cast<double>(produced_) / static_cast<double>(std::max<std::uint64_t>(1, inner_->consumed()));
    if (produced_ > limits_.min_bytes && ratio > limits_.max_ratio) {
      stopped_ = true;
      damage_ = fmt::format(
          "{}: stopped inflating after {} bytes from {} compressed bytes (ratio {:.0f}:1 is over the {:.0f}:1 "
          "limit for traces; a decompression bomb?)",
          name_, produced_, inner_->consumed(), ratio, limits_.max_ratio);
    }
    return n;
  }
  std::uint64_t consumed() const override { return inner_->consumed(); }
  std::string damage() const override { return damage_.empty() ? inner_->damage() : damage_; }
  std::uint64_t memory_bytes() const override { return inner_->memory_bytes(); }

 private:
  std::unique_ptr<ByteSource> inner_;
  std::string name_;
  InflationLimits limits_;
  std::uint64_t produced_ = 0;
  bool stopped_ = false;
  std::string damage_;
};

}  // namespace

std::unique_ptr<ByteSource> guard_inflation(std::unique_ptr<ByteSource> decompressed, std::string name,
                                            const InflationLimits& limits) {
  return std::make_unique<InflationGuard>(std::move(decompressed), std::move(name), limits);
}

std::unique_ptr<ByteSource> make_gzip_source(std::unique_ptr<ByteSource> compressed, std::string name) {
  return std::make_unique<GzipSource>(std::move(compressed), std::move(name));
}
std::unique_ptr<ByteSource> make_zstd_source(std::unique_ptr<ByteSource> compressed, std::string name) {
  return std::make_unique<ZstdSource>(std::move(compressed), std::move(name));
}
std::unique_ptr<ByteSource> make_memory_source(std::string bytes) {
  return std::make_unique<MemorySource>(std::move(bytes));
}

OpenedSource open_byte_source(const std::string& path, const InflationLimits& limits) {
  OpenedSource opened;
  int fd = 0;
  const bool is_stdin = path == "-";
  if (!is_stdin) {
    // Non-blocking open: a named pipe without a writer would otherwise block open() forever.
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw InputError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd, &st) == 0) {
      if (S_ISDIR(st.st_mode)) {
        ::close(fd);
        throw InputError(fmt::format("{}: is a directory, not a trace file", path));
      }
      if (S_ISREG(st.st_mode)) opened.file_size = static_cast<std::uint64_t>(st.st_size);
      if (S_ISFIFO(st.st_mode)) {
        // Give a writer a while to connect (`mkfifo p; ferret info p & gzip -dc t.gz > p`).
        constexpr int kFifoWriterWaitMs = 10000;
        pollfd pfd{fd, POLLIN, 0};
        if (::poll(&pfd, 1, kFifoWriterWaitMs) == 0) {
          ::close(fd);
          throw InputError(fmt::format("{}: named pipe with no writer after {} s", path, kFifoWriterWaitMs / 1000));
        }
      }
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
#ifdef POSIX_FADV_SEQUENTIAL
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  }
  const std::string name = is_stdin ? std::string("<stdin>") : path;
  auto raw = std::make_unique<FdSource>(fd, name, !is_stdin);
  const std::string_view magic = raw->peek(4);
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(magic[i]); };
  if (magic.size() >= 2 && byte(0) == 0x1f && byte(1) == 0x8b) {
    opened.compression = "gzip";
    opened.source = guard_inflation(make_gzip_source(std::move(raw), name), name, limits);
  } else if (magic.size() >= 4 &&
             ((byte(0) == 0x28 && byte(1) == 0xb5 && byte(2) == 0x2f && byte(3) == 0xfd) ||
              // a skippable frame (magic 0x184D2A50..5F, little-endian) may
              // open a zstd stream: the decoder steps over it
              ((byte(0) & 0xf0) == 0x50 && byte(1) == 0x2a && byte(2) == 0x4d && byte(3) == 0x18))) {
    opened.compression = "zstd";
    opened.source = guard_inflation(make_zstd_source(std::move(raw), name), name, limits);
  } else {
    opened.compression = "none";
    opened.source = std::move(raw);
  }
  return opened;
}

}  // namespace ferret
