#include "ingest/trace_loader.h"

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "ingest/importer.h"
#include "model/model_builder.h"
#include "model/relations.h"
#include "model/time_outliers.h"

namespace ferret {

namespace {

Platform detect_platform(const TraceModel& model) {
  for (const auto& [key, value] : model.info.versions)
    if (key.rfind("hip", 0) == 0 || key.rfind("roctracer", 0) == 0) return Platform::kRocm;
  bool gpu = false;
  for (std::size_t i = 1; i < model.categories.size(); ++i)
    if (model.categories.view(static_cast<StrId>(i)).rfind("mtia", 0) == 0) return Platform::kMtia;
  for (std::size_t e = 0; e < model.size(); ++e) {
    const EventKind k = model.kind[e];
    if (is_launch_api(k)) {
      if (model.name_of(static_cast<EventIndex>(e)).rfind("hip", 0) == 0) return Platform::kRocm;
      gpu = true;
    }
    if (is_gpu_activity(k)) gpu = true;
  }
  for (const auto& d : model.info.devices)
    if (d.name.find("AMD") != std::string::npos || d.name.find("Instinct") != std::string::npos) return Platform::kRocm;
  if (gpu || !model.info.devices.empty()) return Platform::kCuda;
  return Platform::kCpuOnly;
}

// Reads the first bytes of a source for sniffing, then serves them again ahead of the rest.
class SniffedSource : public ByteSource {
 public:
  explicit SniffedSource(ByteSource& inner) : inner_(inner) {
    head_.resize(kSniffBytes);
    std::size_t filled = 0;
    while (filled < head_.size()) {
      const std::size_t n = inner_.read(head_.data() + filled, head_.size() - filled);
      if (n == 0) break;
      filled += n;
    }
    head_.resize(filled);
  }
  std::string_view head() const { return head_; }

  std::size_t read(char* dst, std::size_t capacity) override {
    if (served_ < head_.size()) {
      const std::size_t n = std::min(capacity, head_.size() - served_);
      std::memcpy(dst, head_.data() + served_, n);
      served_ += n;
      return n;
    }
    return inner_.read(dst, capacity);
  }
  std::uint64_t consumed() const override { return inner_.consumed(); }
  std::string damage() const override { return inner_.damage(); }
  std::uint64_t memory_bytes() const override { return inner_.memory_bytes() + head_.capacity(); }

 private:
  ByteSource& inner_;
  std::string head_;
  std::size_t served_ = 0;
};

}  // namespace

TraceModel load_trace_from(ByteSource& source, const std::string& name, const std::string& compression,
                           const LoadOptions& options) {
  SniffedSource sniffed(source);
  const Importer importer = pick_importer(sniffed.head(), name);
  ModelBuilder builder;
  builder.info().source = name;
  builder.info().compression = compression;
  importer.load(sniffed, name, options, builder);
  TraceModel model = builder.finish();
  if (model.info.platform == Platform::kUnknown) model.info.platform = detect_platform(model);
  // Before relations: an event with a broken clock value must not enter steps or any analysis.
  set_aside_time_outliers(model);
  if (options.build_relations) build_relations(model);
#ifndef NDEBUG
  // A broken invariant is a bug in an importer or a model pass; say which, before an analysis
  // reads past a column's end.
  if (const std::string broken = model.check_invariants(); !broken.empty())
    throw std::logic_error(
        fmt::format("{}: the loaded model is inconsistent ({} importer): {}", name, importer.name, broken));
#endif
  return model;
}

TraceModel load_trace(const std::string& path, const LoadOptions& options) {
  OpenedSource opened = open_byte_source(path, options.inflation);
  LoadOptions opts = options;
  if (options.progress) {
    const std::uint64_t total = opened.file_size;
    opts.progress = [&, total](std::uint64_t done, std::uint64_t) { options.progress(done, total); };
  }
  return load_trace_from(*opened.source, path == "-" ? "<stdin>" : path, opened.compression, opts);
}

TraceModel load_trace_text(std::string json, const LoadOptions& options) {
  auto source = make_memory_source(std::move(json));
  return load_trace_from(*source, "<text>", "none", options);
}

}  // namespace ferret
