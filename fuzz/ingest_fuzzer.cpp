// libFuzzer harness: arbitrary bytes as a trace file (plain, or gzip/zstd by magic bytes) through
// the whole ingestion path, single- and multi-threaded. Must never crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ingest/byte_source.h"
#include "ingest/trace_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  for (unsigned threads : {1u, 2u}) {
    ferret::LoadOptions options;
    options.threads = threads;
    options.limits.batch_bytes = 4096;  // many batch boundaries in small inputs
    options.max_memory_bytes = 64u << 20;
    try {
      auto source = ferret::make_memory_source(bytes);
      const std::string_view head(bytes.data(), std::min<std::size_t>(bytes.size(), 4));
      std::unique_ptr<ferret::ByteSource> decoded;
      if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
          static_cast<unsigned char>(head[1]) == 0x8b)
        decoded = ferret::make_gzip_source(std::move(source), "fuzz");
      else
        decoded = std::move(source);
      ferret::InflationLimits limits;
      limits.min_bytes = 1 << 20;
      auto guarded = ferret::guard_inflation(std::move(decoded), "fuzz", limits);
      (void)ferret::load_trace_from(*guarded, "fuzz", "fuzz", options);
    } catch (const ferret::InputError&) {
      // Unusable input is a clean, reported outcome.
    }
  }
  return 0;
}
