// GPU utilisation logs: bytes -> SmiLog (model/smi_log.h). No judgement happens here;
// analysis/smi_stats decides what the samples mean.
//
// The format is told from the content (the first lines), never from the file name:
//   nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]   a CSV header of query names
//       (`timestamp, index, utilization.gpu [%], memory.used [MiB], ...`), one row per GPU and
//       sample; units in the header or in each cell (`87 %`, `40536 MiB`) are both read. Without a
//       header (`noheader`) the columns cannot be known: the query list must be given
//       (SmiReadOptions::columns, `--columns`), and a log without one is refused with that advice
//       rather than guessed at.
//   nvidia-smi dmon / pmon   `#`-comment headers (`# gpu pwr gtemp ... sm mem ...`, then a units
//       line), repeated every few screens; `-o DT` adds `#Date Time`; `-` is not available.
//       pmon prints one row per process: a GPU's sample is the sum of its processes' sm.
//   dcgmi dmon   `#Entity SMACT SMOCC TENSO DRAMA ...` and an `ID` line; rows `GPU 0  0.52 ...`.
//   dcgm-exporter   Prometheus text (`# HELP`, `# TYPE`, `DCGM_FI_...{gpu="0",...} 87 [ms]`);
//       several scrapes concatenated are a series: a metric seen again for a GPU starts its next
//       sample.
//   rocm-smi --csv (`device,GPU use (%),...`, rows `card0,...`), amd-smi metric --csv (`gpu,...`).
//   nvidia-smi's default table (`nvidia-smi -l 5`, or a loop in a job script): a date line, the
//       boxed `| NVIDIA-SMI ... Driver Version ...` table, two lines per GPU (index, name and bus
//       id; then temperature, power, memory and GPU-Util); each table is one sample per GPU. The
//       job's own output around the tables (a Slurm log) is skipped and counted; the version line
//       anywhere in the first 64 KiB tells the layout.
// Each format has one small row parser behind one function (smi_reader.h and a file per layout); columns are
// mapped by name, never by position.
//
// Hostile input is bounded: lines longer than kSmiMaxLineBytes are skipped (counted), at most
// kSmiMaxGpus GPUs are kept per log, and reading stops, keeping what was read, after
// kSmiMaxBytesWithoutSample bytes without a sample or when the process holds more than
// SmiReadOptions::max_memory_bytes. Nothing here throws on content except the
// two refusals named above (not a utilisation log; a headerless CSV without --columns).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/byte_source.h"
#include "model/smi_log.h"

namespace ferret {

inline constexpr std::size_t kSmiMaxLineBytes = 64 * 1024;
inline constexpr std::size_t kSmiMaxGpus = 1024;
// Reading stops, keeping what was read, after this many bytes without a new sample.
inline constexpr std::uint64_t kSmiMaxBytesWithoutSample = std::uint64_t{1} << 30;
// The command a refused log's message suggests: a CSV every reading of `ferret smi` can use.
inline constexpr std::string_view kSmiLogCommand =
    "nvidia-smi --query-gpu=timestamp,index,name,utilization.gpu,memory.used,memory.total,power.draw,temperature.gpu "
    "--format=csv -l 1";
// How many skipped-line examples a source keeps (all are counted).
inline constexpr std::size_t kSmiSkippedExamples = 5;

struct SmiReadOptions {
  // The --query-gpu list of a CSV written with `noheader` ("timestamp,index,utilization.gpu").
  std::string columns;
  // Spacing of samples in logs that print no time (dcgmi dmon, rocm-smi, dmon without -o T):
  // sample k of a GPU is placed at k x interval. nvidia-smi -l and dcgmi dmon default to 1 s.
  double interval_s = 1.0;
  // nvidia-smi and dmon print local wall-clock time without a zone: their times are read as UTC
  // plus this offset (seconds east of UTC) and moved to UTC. Times in ms since the epoch
  // (Prometheus) are UTC already.
  std::int64_t utc_offset_s = 0;
  // Stop reading, keeping what was read, once the process holds this many resident bytes. 0: no limit.
  std::uint64_t max_memory_bytes = 0;
};

// The format the first lines of a log show; kUnknown when none. `head` is the first few KiB.
SmiFormat sniff_smi_format(std::string_view head);

// "2024/01/31 12:34:56.789" (nvidia-smi), "2024-01-31 12:34:56", or dmon's "20240131" +
// "12:34:56" joined by a space: ns since the epoch as if UTC, kSmiNoTime when it is not a time.
std::int64_t parse_smi_time(std::string_view text);

// Reads one source into `log`. Throws InputError naming the source when it is empty, not a
// utilisation log of a known layout, or a headerless CSV without options.columns.
void parse_smi_source(ByteSource& source, const std::string& name, const std::string& compression, SmiLog& log,
                      const SmiReadOptions& options = {});
// Opens `path` ("-" is stdin; gzip/zstd by magic bytes) and parses it.
void parse_smi_file(const std::string& path, SmiLog& log, const SmiReadOptions& options = {});
// Parses text held in memory (tests, the fuzzer).
SmiLog parse_smi_text(std::string_view text, const std::string& name = "<text>", const SmiReadOptions& options = {});

}  // namespace ferret
