// Pickle streams written opcode by opcode (the opcodes as Python's pickletools documents them),
// so a test's hostile or hand-computed snapshot is exactly the bytes it claims to be.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace ferret::test::pickle_writer {

inline std::string le_bytes(std::uint64_t v, int n) {
  std::string b;
  for (int i = 0; i < n; ++i) b += static_cast<char>((v >> (8 * i)) & 0xff);
  return b;
}
// Strings are built by appending: GCC 12 warns falsely (-Wrestrict) on "literal" + a temporary.
inline std::string p_str(const std::string& s) {  // BINUNICODE
  std::string b = "X";
  b += le_bytes(s.size(), 4);
  return b += s;
}
inline std::string p_int(std::int64_t v) {  // LONG1, 8 bytes
  std::string b = "\x8a\x08";
  return b += le_bytes(static_cast<std::uint64_t>(v), 8);
}
inline std::string p_two_to_64() {  // LONG1, 9 bytes: an int past int64
  std::string b = "\x8a\x09";
  b += le_bytes(0, 8);
  return b += '\x01';
}
inline std::string p_memo_put(std::uint32_t index) {  // LONG_BINPUT: memoize the top of the stack
  std::string b = "r";
  return b += le_bytes(index, 4);
}
inline std::string p_memo_get(std::uint32_t index) {  // LONG_BINGET: push a memoized value again
  std::string b = "j";
  return b += le_bytes(index, 4);
}
inline std::string p_float(double v) {  // BINFLOAT, big-endian
  std::uint64_t bits;
  std::memcpy(&bits, &v, 8);
  std::string b = "G";
  for (int i = 7; i >= 0; --i) b += static_cast<char>((bits >> (8 * i)) & 0xff);
  return b;
}
inline std::string p_list(const std::vector<std::string>& items) {
  std::string b = "]";
  if (items.empty()) return b;
  b += "(";
  for (const std::string& i : items) b += i;
  return b + "e";  // MARK items APPENDS
}
inline std::string p_dict(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string b = "}(";
  for (const auto& [k, v] : items) b += p_str(k) + v;
  return b + "u";  // MARK key value ... SETITEMS
}
inline std::string p_pickle(const std::string& body) { return std::string("\x80\x02", 2) + body + "."; }

inline std::string p_frame(const std::string& file, const std::string& name) {
  return p_dict({{"filename", p_str(file)}, {"line", p_int(42)}, {"name", p_str(name)}});
}
inline std::string p_block(std::int64_t size, const std::string& state, const std::string& frames = "]") {
  return p_dict({{"size", p_int(size)},
                 {"requested_size", p_int(size - 100)},
                 {"state", p_str(state)},
                 {"address", p_int(1 << 20)},
                 {"frames", frames}});
}
inline std::string p_segment(const std::string& device, const std::string& total, const std::string& blocks,
                             const std::string& segment_type = "large") {
  return p_dict({{"device", device},
                 {"address", p_int(1 << 30)},
                 {"total_size", total},
                 {"stream", p_int(0)},
                 {"segment_type", p_str(segment_type)},
                 {"blocks", blocks}});
}
inline std::string p_snapshot(const std::vector<std::string>& segments, const std::string& extra = "") {
  std::string body = p_dict({{"segments", p_list(segments)}});
  // extra: more "key value" pairs, set on the root dict with SETITEMS
  if (!extra.empty()) body += "(" + extra + "u";
  return p_pickle(body);
}

}  // namespace ferret::test::pickle_writer
