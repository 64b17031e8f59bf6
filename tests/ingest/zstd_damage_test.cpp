// Damaged zstd input: a bad checksum, a corrupt block, a frame asking for an oversized window and
// a cut-off stream each get their own message naming the file and the compressed byte offset; a
// small file that yields nothing says what is wrong with it, never "empty input"; the events
// decoded before the damage are kept.
#include <zstd.h>

#include <cstdio>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ingest/byte_source.h"
#include "ingest/trace_loader.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace zstd_damage_test {

// One zstd frame of `plain`; with a content checksum, and with or without the content size in the
// header (without it the header carries a window descriptor).
std::string zstd_frame(const std::string& plain, bool checksum, bool content_size = true) {
  ZSTD_CCtx* ctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(ctx, ZSTD_c_checksumFlag, checksum ? 1 : 0);
  ZSTD_CCtx_setParameter(ctx, ZSTD_c_contentSizeFlag, content_size ? 1 : 0);
  std::string out(ZSTD_compressBound(plain.size()), '\0');
  const std::size_t n = ZSTD_compress2(ctx, out.data(), out.size(), plain.data(), plain.size());
  ZSTD_freeCCtx(ctx);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

// n CPU ops with distinct names and times (so the frame holds several compressed blocks when n is
// large), in a {"traceEvents": [...]} document.
std::string ops(int n) {
  std::string s = "{\"traceEvents\":[";
  for (int i = 0; i < n; ++i)
    s += fmt::format(
        "{}{{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::op_{}\",\"pid\":1,\"tid\":1,\"ts\":{},\"dur\":3}}",
        i ? "," : "", i * 7919 % 100003, 10 * i);
  return s + "]}";
}

// The error a load of `bytes` (written to a file) throws, or "" when it loads.
std::string load_error(const std::string& path, const std::string& bytes) {
  test::write_file(path, bytes);
  try {
    load_trace(path);
  } catch (const InputError& e) {
    std::remove(path.c_str());
    return e.what();
  }
  std::remove(path.c_str());
  return "";
}

// Offset of the header of block `k` (0-based) of a single-frame stream: each block header is 3
// bytes, little-endian: bit 0 last block, bits 1-2 type (1 = RLE: one byte of content), then size.
std::size_t block_offset(const std::string& frame, int k) {
  const auto byte = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(frame[i])); };
  // Frame header (RFC 8878 3.1.1.1): magic, descriptor, window descriptor unless single-segment,
  // dictionary id (0/1/2/4 bytes), content size (flag 0: 1 byte if single-segment else none; 2/4/8).
  const std::uint32_t descriptor = byte(4);
  const bool single_segment = (descriptor >> 5) & 1;
  const std::size_t dict_bytes[] = {0, 1, 2, 4};
  const std::size_t size_bytes[] = {single_segment ? 1u : 0u, 2, 4, 8};
  std::size_t pos = 5 + (single_segment ? 0 : 1) + dict_bytes[descriptor & 3] + size_bytes[descriptor >> 6];
  for (int b = 0; b < k; ++b) {
    const std::uint32_t header = byte(pos) | byte(pos + 1) << 8 | byte(pos + 2) << 16;
    const std::uint32_t type = (header >> 1) & 3, size = header >> 3;
    pos += 3 + (type == 1 ? 1 : size);
  }
  return pos;
}

TEST(ZstdDamage, BadChecksumOnASmallFileIsNamed) {
  std::string z = zstd_frame(ops(3), /*checksum=*/true);
  z.back() = static_cast<char>(z.back() ^ 0x5a);  // the checksum is the frame's last 4 bytes
  const std::string path = test::temp_path("bad-checksum.json.zst");
  const std::string error = load_error(path, z);
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("zstd checksum mismatch in the frame that starts at compressed byte 0"), std::string::npos)
      << error;
  EXPECT_EQ(error.find("empty input"), std::string::npos) << error;
}

TEST(ZstdDamage, CorruptBlockOnASmallFileIsNamed) {
  std::string z = zstd_frame(ops(3), /*checksum=*/false);
  z[block_offset(z, 0)] |= 0x06;  // block type 3 is reserved: corrupt by definition
  const std::string path = test::temp_path("corrupt.json.zst");
  const std::string error = load_error(path, z);
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("corrupt zstd data in the frame that starts at compressed byte 0"), std::string::npos) << error;
  EXPECT_EQ(error.find("empty input"), std::string::npos) << error;
}

TEST(ZstdDamage, OversizedWindowIsRefusedWithItsReason) {
  std::string z = zstd_frame(ops(3), /*checksum=*/false, /*content_size=*/false);
  // Frame header: magic (4 bytes), descriptor (byte 4; no single-segment flag without a content
  // size), then the window descriptor: exponent 21 -> a 2^(10+21) = 2 GiB window.
  ASSERT_EQ(static_cast<unsigned char>(z[4]) & 0x20, 0);
  z[5] = static_cast<char>(21 << 3);
  const std::string path = test::temp_path("window.json.zst");
  const std::string error = load_error(path, z);
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("zstd frame at compressed byte 0 asks for a window over the 128 MiB allowed"), std::string::npos)
      << error;
}

TEST(ZstdDamage, TruncatedSmallFileSaysWhereItEnds) {
  const std::string z = zstd_frame(ops(3), /*checksum=*/false);
  const std::string cut = z.substr(0, z.size() / 2);
  const std::string path = test::temp_path("cut.json.zst");
  const std::string error = load_error(path, cut);
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find(fmt::format("zstd stream ends early at compressed byte {}", cut.size())), std::string::npos)
      << error;
}

TEST(ZstdDamage, CorruptThirdBlockKeepsTheEventsBefore) {
  const int kEvents = 20000;  // about 1.6 MB of JSON: zstd blocks hold at most 128 KiB each
  const std::string plain = ops(kEvents);
  std::string z = zstd_frame(plain, /*checksum=*/false);
  const std::size_t third = block_offset(z, 2);
  ASSERT_LT(third + 3, z.size());
  z[third] |= 0x06;
  const std::string path = test::temp_path("corrupt-third.json.zst");
  test::write_file(path, z);
  TraceModel model;
  ASSERT_NO_THROW(model = load_trace(path));
  std::remove(path.c_str());
  // zstd hands back nothing of what the failing call decoded, so the block just before the damage
  // may be lost with it; the first block (128 KiB of JSON, events of at most 90 bytes) is kept.
  EXPECT_GE(model.size(), (128u << 10) / 90);
  EXPECT_LT(model.size(), static_cast<std::size_t>(kEvents));
  EXPECT_TRUE(model.report.truncated);
  bool named = false;
  for (const std::string& note : model.report.notes)
    named |= note.find(path + ": corrupt zstd data in the frame that starts at compressed byte 0") != std::string::npos;
  EXPECT_TRUE(named);
}

}  // namespace zstd_damage_test
}  // namespace
}  // namespace ferret
