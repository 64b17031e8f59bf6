#include "base/trace_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <zlib.h>

#include "base/safe_file.h"

#ifdef FERRET_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

namespace ferret {

OutputCompression output_compression_for(const std::string& path, bool force_gzip, bool force_plain) {
  if (force_gzip) return OutputCompression::kGzip;
  if (force_plain) return OutputCompression::kNone;
  const bool gz_suffix = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  return gz_suffix ? OutputCompression::kGzip : OutputCompression::kNone;
}

// Named, not anonymous: OutputFile::Impl (a class with linkage) holds these types.
namespace output_file_detail {

constexpr std::size_t kBufferBytes = 1 << 20;

// The file end of the output (a SafeFile, or stdout), counting what reaches it.
struct FileSink {
  int fd = -1;
  std::unique_ptr<SafeFile> file;
  std::string path;
  std::uint64_t written = 0;

  // Writes all of `data`, retrying short writes.
  void put(const char* data, std::size_t size) {
    written += size;
    if (file) {
      file->write(std::string_view(data, size));
      return;
    }
    while (size > 0) {
      const ssize_t n = ::write(fd, data, size);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw std::runtime_error(fmt::format("{}: write failed: {}", path, std::strerror(errno)));
      }
      data += n;
      size -= static_cast<std::size_t>(n);
    }
  }
};

// One deflate stream with a gzip wrapper. Input arrives in chunks; compressed output goes to `fd`.
class GzipEncoder {
 public:
  virtual ~GzipEncoder() = default;
  virtual void compress(const char* data, std::size_t size, bool last) = 0;
};

#ifdef FERRET_HAVE_ISAL
// ISA-L level 1: about 4x zlib -1 here, with a similar ratio on trace JSON.
class IsalEncoder final : public GzipEncoder {
 public:
  explicit IsalEncoder(FileSink& sink) : sink_(sink), level_buf_(ISAL_DEF_LVL1_DEFAULT), out_(kBufferBytes) {
    isal_deflate_init(&stream_);
    stream_.level = 1;
    stream_.level_buf = level_buf_.data();
    stream_.level_buf_size = static_cast<std::uint32_t>(level_buf_.size());
    stream_.gzip_flag = IGZIP_GZIP;
    stream_.flush = NO_FLUSH;
  }

  void compress(const char* data, std::size_t size, bool last) override {
    stream_.next_in = reinterpret_cast<std::uint8_t*>(const_cast<char*>(data));
    stream_.avail_in = static_cast<std::uint32_t>(size);
    stream_.end_of_stream = last ? 1 : 0;
    do {
      stream_.next_out = out_.data();
      stream_.avail_out = static_cast<std::uint32_t>(out_.size());
      const int rc = isal_deflate(&stream_);
      if (rc != COMP_OK)
        throw std::runtime_error(fmt::format("{}: gzip compression failed (ISA-L error {})", sink_.path, rc));
      sink_.put(reinterpret_cast<const char*>(out_.data()), out_.size() - stream_.avail_out);
    } while (stream_.avail_in > 0 || stream_.avail_out == 0 || (last && stream_.internal_state.state != ZSTATE_END));
  }

 private:
  FileSink& sink_;
  isal_zstream stream_{};
  std::vector<std::uint8_t> level_buf_;
  std::vector<std::uint8_t> out_;
};
#endif

class ZlibEncoder final : public GzipEncoder {
 public:
  explicit ZlibEncoder(FileSink& sink) : sink_(sink), out_(kBufferBytes) {
    // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
    if (deflateInit2(&stream_, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      throw std::runtime_error(sink_.path + ": cannot start gzip compression");
  }
  ~ZlibEncoder() override { deflateEnd(&stream_); }

  void compress(const char* data, std::size_t size, bool last) override {
    stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
    stream_.avail_in = static_cast<uInt>(size);
    for (;;) {
      stream_.next_out = out_.data();
      stream_.avail_out = static_cast<uInt>(out_.size());
      const int rc = deflate(&stream_, last ? Z_FINISH : Z_NO_FLUSH);
      if (rc == Z_STREAM_ERROR) throw std::runtime_error(sink_.path + ": gzip compression failed");
      sink_.put(reinterpret_cast<const char*>(out_.data()), out_.size() - stream_.avail_out);
      if (last ? rc == Z_STREAM_END : (stream_.avail_in == 0 && stream_.avail_out != 0)) break;
    }
  }

 private:
  FileSink& sink_;
  z_stream stream_{};
  std::vector<Bytef> out_;
};

}  // namespace output_file_detail

using namespace output_file_detail;

struct OutputFile::Impl {
  FileSink sink;
  bool closed = false;
  std::unique_ptr<GzipEncoder> gzip;
  std::string buffer;
  std::uint64_t bytes_in = 0;

  void drain(bool last) {
    if (gzip)
      gzip->compress(buffer.data(), buffer.size(), last);
    else
      sink.put(buffer.data(), buffer.size());
    buffer.clear();
  }
};

OutputFile::OutputFile(const std::string& path, OutputCompression compression, const std::vector<std::string>& inputs)
    : impl_(std::make_unique<Impl>()) {
  FileSink& sink = impl_->sink;
  sink.path = path;
  if (path == "-")
    sink.fd = STDOUT_FILENO;
  else
    sink.file = std::make_unique<SafeFile>(path, inputs);
  if (compression == OutputCompression::kGzip) {
#ifdef FERRET_HAVE_ISAL
    impl_->gzip = std::make_unique<IsalEncoder>(sink);
#else
    impl_->gzip = std::make_unique<ZlibEncoder>(sink);
#endif
  }
  impl_->buffer.reserve(kBufferBytes);
}

OutputFile::~OutputFile() = default;  // not closed: a file output is left out whole (SafeFile)

void OutputFile::write(std::string_view bytes) {
  Impl& s = *impl_;
  if (s.closed) throw std::logic_error("OutputFile::write after close");
  s.bytes_in += bytes.size();
  if (s.buffer.size() + bytes.size() > kBufferBytes) {
    s.drain(false);
    if (bytes.size() >= kBufferBytes) {  // large writes skip the copy into the buffer
      s.buffer.assign(bytes);
      s.drain(false);
      return;
    }
  }
  s.buffer.append(bytes);
}

void OutputFile::close() {
  Impl& s = *impl_;
  if (s.closed) return;
  s.closed = true;
  s.drain(true);
  if (s.sink.file) s.sink.file->commit();
}

std::uint64_t OutputFile::bytes_in() const { return impl_->bytes_in; }
std::uint64_t OutputFile::bytes_out() const { return impl_->sink.written; }

TraceWriter::TraceWriter(OutputFile& out, bool bare_array) : out_(out), bare_array_(bare_array) {}

void TraceWriter::header(std::string_view key, std::string_view raw_json_value) {
  if (bare_array_) throw std::logic_error("a bare-array trace has no header keys");
  if (events_open_ && !events_closed_) {
    out_.write("\n]");
    events_closed_ = true;
  }
  scratch_.clear();
  if (!root_open_) {
    scratch_ += "{\n";
    root_open_ = true;
  }
  if (need_comma_) scratch_ += ",\n";
  scratch_ += "  ";
  append_json_string(scratch_, key);
  scratch_ += ": ";
  scratch_ += raw_json_value;
  need_comma_ = true;
  out_.write(scratch_);
}

void TraceWriter::open_events() {
  if (events_closed_) throw std::logic_error("traceEvents was already closed");
  scratch_.clear();
  if (bare_array_) {
    scratch_ += "[";
  } else {
    if (!root_open_) {
      scratch_ += "{\n";
      root_open_ = true;
    }
    if (need_comma_) scratch_ += ",\n";
    scratch_ += "  \"traceEvents\": [";
    need_comma_ = true;
  }
  out_.write(scratch_);
  events_open_ = true;
}

void TraceWriter::event(std::string_view event_json) {
  if (!events_open_) open_events();
  if (events_closed_) throw std::logic_error("event written after the header that follows traceEvents");
  out_.write(events_ == 0 ? std::string_view("\n  ") : std::string_view(",\n  "));
  out_.write(event_json);
  ++events_;
}

void TraceWriter::finish() {
  if (finished_) return;
  if (!events_open_) open_events();  // a trace always has its array, even when empty
  if (!events_closed_) {
    out_.write(events_ == 0 ? "]" : "\n]");
    events_closed_ = true;
  }
  out_.write(bare_array_ ? "\n" : "\n}\n");
  finished_ = true;
}

void append_int(std::string& out, std::int64_t value) {
  char digits[24];
  std::uint64_t magnitude = value < 0 ? 0 - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + magnitude % 10);
    magnitude /= 10;
  } while (magnitude > 0);
  if (value < 0) out.push_back('-');
  while (n > 0) out.push_back(digits[--n]);
}

void append_micros(std::string& out, std::int64_t nanos) {
  // Split on the magnitude so that INT64_MIN and negative fractions format correctly.
  const bool negative = nanos < 0;
  const std::uint64_t magnitude = negative ? 0 - static_cast<std::uint64_t>(nanos) : static_cast<std::uint64_t>(nanos);
  if (negative) out.push_back('-');
  const std::uint64_t whole = magnitude / 1000, fraction = magnitude % 1000;
  append_int(out, static_cast<std::int64_t>(whole));
  out.push_back('.');
  out.push_back(static_cast<char>('0' + fraction / 100));
  out.push_back(static_cast<char>('0' + fraction / 10 % 10));
  out.push_back(static_cast<char>('0' + fraction % 10));
}

void append_ratio(std::string& out, std::uint64_t numerator, std::uint64_t denominator, int decimals) {
  std::uint64_t scale = 1;
  for (int i = 0; i < decimals; ++i) scale *= 10;
  // 128-bit intermediate: kernel-time sums in ns times 10^6 overflow 64 bits.
  const unsigned __int128 scaled = (static_cast<unsigned __int128>(numerator) * scale + denominator / 2) / denominator;
  const auto whole = static_cast<std::uint64_t>(scaled / scale);
  auto fraction = static_cast<std::uint64_t>(scaled % scale);
  append_int(out, static_cast<std::int64_t>(whole));
  if (decimals == 0) return;
  out.push_back('.');
  char digits[20];
  for (int i = decimals - 1; i >= 0; --i) {
    digits[i] = static_cast<char>('0' + fraction % 10);
    fraction /= 10;
  }
  out.append(digits, static_cast<std::size_t>(decimals));
}

void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

}  // namespace ferret
