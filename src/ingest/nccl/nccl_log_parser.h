// NCCL_DEBUG=INFO logs: lines -> typed records. No judgement happens here; analysis/nccl_setup
// decides what the records mean for the job.
//
// A line is recognised by its marker (" NCCL INFO " or " NCCL WARN "); the text before the marker
// holds NCCL's prefix `host:pid:tid [dev]` (the device is missing on some lines, WARN lines add
// `file.cc:123 (func)`), itself preceded by whatever the launcher added: torchrun's `[rank3]:` or
// `[default0]:`, mpirun's `[1,0]<stdout>:`, pdsh's `host: `, Ray's `(RayTrainWorker pid=1) `,
// timestamps. The prefix is read from the right, so any outer decoration is tolerated. Older NCCL
// prints the version line bare (`NCCL version 2.10.3+cuda11.3`, no prefix); it is attributed to
// the process whose NCCL line came just before it under the same launcher prefix.
//
// Input is scanned line by line with std::string_view (no regex): the marker search is one
// memmem per line, so text that is not NCCL costs little. Lines longer than kMaxLineBytes are
// cut (counted) and binary or invalid UTF-8 is carried as bytes: nothing here throws on content.
//
// Hostile input is bounded (docs/NCCL.md, "Bounds"): no structure is sized by a number read from
// the log; communicator and init-timing lines whose nranks exceeds kMaxNcclRanks, or whose rank
// lies outside 0..nranks-1, are ignored and noted (file and line); reading stops, keeping what
// was read, after NcclReadLimits::max_bytes_without_progress bytes without an NCCL line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ingest/byte_source.h"
#include "model/nccl_log.h"

namespace ferret {

inline constexpr std::size_t kMaxLineBytes = 64 * 1024;
// The largest nranks taken from a log: 1,048,576 (65,536 hosts x 16 GPUs) is beyond any job run
// to date; a larger value is damage (or an attack) and the line carrying it is ignored.
inline constexpr int kMaxNcclRanks = 1 << 20;
// How many ignored-value notes a source keeps (all are counted).
inline constexpr std::size_t kMaxImplausibleSamples = 5;

struct NcclReadLimits {
  // Reading a source stops when this many bytes pass without an NCCL line: /dev/zero, `yes |`
  // or any endless stream without NCCL content must not keep ferret running forever. What was
  // read is kept and NcclSource::stopped says where reading stopped. 0: no limit.
  std::uint64_t max_bytes_without_progress = std::uint64_t{1} << 30;
  // Reading stops, keeping what was read, once the process holds this many resident bytes: a log
  // of endless valid lines (`yes "<an NCCL line>" | ferret nccl -`) makes progress on every line,
  // and its records would otherwise grow until the kernel kills ferret. 0: no limit.
  std::uint64_t max_memory_bytes = 0;
};

// Parses a `via ...` clause (NcclTransport says what each field holds).
NcclTransport parse_nccl_transport(std::string_view via);

// Feeds lines of one source into an NcclLog. Keeps the little context the format needs: the
// last prefixed process per launcher prefix, for bare version lines.
class NcclLogParser {
 public:
  NcclLogParser(NcclLog& log, std::string source_name, std::string compression = "none");
  void feed_line(std::string_view line);  // one line without its '\n'
  NcclSource& source();

 private:
  struct LastProcess {
    std::string outer;  // launcher prefix text
    NcclOrigin origin;
  };
  NcclLog& log_;
  std::uint32_t source_index_;
  std::uint64_t line_number_ = 0;
  std::vector<LastProcess> last_process_;  // small: one per launcher prefix seen
  NcclOrigin last_any_;                    // the last prefixed line's process, whatever its prefix
  std::uint32_t last_host_ = kNoHost;      // intern_host's cache: lines of one host come in runs
  // Name -> index in log_.hosts / log_.transports: a log naming 100,000 hosts must not make
  // interning quadratic (it took 35 s for 7 MB by linear search).
  std::unordered_map<std::string, std::uint32_t> host_index_;
  std::unordered_map<std::string, std::uint32_t> transport_index_;
  void remember_process(std::string_view outer, const NcclOrigin& origin);
  bool attribute_bare(std::string_view outer, NcclOrigin& origin) const;
  // Reads `host:pid:tid` at the end of `pre` (the line before the marker) into origin.
  void take_process(std::string_view line, std::string_view pre, NcclOrigin& origin);
  // Where a second process's NCCL line starts inside `line` (its host:pid:tid prefix), or npos.
  std::size_t interleaved_split(std::string_view line, std::size_t first_marker) const;
  // One NCCL line whose marker ("NCCL INFO"/"WARN" or a bare version) is at `marker_at`.
  void feed_nccl_part(std::string_view line, std::size_t marker_at, bool warn, bool bare_version);
  bool parse_message(std::string_view message, const NcclOrigin& origin);
  std::uint32_t intern_host(std::string_view host);
  std::uint32_t intern_transport(std::string_view via);
  void note_implausible(const NcclOrigin& origin, std::string what);
  // The message handlers (one per kind of message, in nccl_log_parser.cpp) fill log_ through it.
  friend struct NcclMessageContext;
};

// Reads a whole source line by line into `log`. Throws InputError only when reading fails
// before anything was read; later failures are kept as the source's damage.
void parse_nccl_source(ByteSource& source, const std::string& name, const std::string& compression, NcclLog& log,
                       const NcclReadLimits& limits = {});
// Opens `path` ("-" is stdin; gzip/zstd by magic bytes) and parses it. Throws InputError when it
// cannot be opened.
void parse_nccl_file(const std::string& path, NcclLog& log, const NcclReadLimits& limits = {});
// Parses text held in memory (tests).
NcclLog parse_nccl_text(std::string_view text, const std::string& name = "<text>", const NcclReadLimits& limits = {});

}  // namespace ferret
