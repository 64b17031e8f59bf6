#include "ingest/kineto/kineto_importer.h"

#include <simdjson.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <new>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "base/threads.h"
#include "ingest/kineto/decimal.h"
#include "ingest/kineto/event_parser.h"
#include "ingest/kineto/header_parser.h"
#include "ingest/proc/memory_limit.h"
#include "model/model_builder.h"
#include "model/relations.h"
#include "model/time_outliers.h"

namespace ferret {

namespace {

// Feeds parsed batches to the model builder in stream order, mapping batch-local ids to global
// ones, and decides when loading must stop (memory limit, a stream of nothing but skipped events).
class BatchMerger {
 public:
  // `held_outside_model`: what ingestion holds beside the model (read buffers, batches in flight,
  // decompression windows), counted against the limit with the model.
  BatchMerger(ModelBuilder& builder, MemoryLimit limit, std::function<std::uint64_t()> held_outside_model,
              std::uint64_t max_bytes_without_kept_event)
      : builder_(builder),
        limit_(std::move(limit)),
        held_outside_model_(std::move(held_outside_model)),
        max_bytes_without_kept_(max_bytes_without_kept_event) {}

  // Why the pipeline should stop feeding the model, or "" to go on.
  const std::string& stop_reason() const { return stop_reason_; }
  bool limit_reached() const { return !stop_reason_.empty(); }

  void merge(ParsedBatch& batch) {
    if (limit_reached()) return;
    // An endless stream of events that are all skipped (unsupported phases, broken fields) would
    // otherwise be read forever without growing the model.
    bytes_without_kept_ = batch.size() > 0 ? 0 : bytes_without_kept_ + batch.input_bytes;
    if (bytes_without_kept_ > max_bytes_without_kept_) {
      stop_reason_ =
          fmt::format("stopped loading after {} events: the last {} bytes of events held none that could be kept",
                      builder_.size(), bytes_without_kept_);
    }
    if (!append(batch)) return;
    merged_bytes_ += batch.input_bytes;
    for (const EventKind k : batch.kind) {
      host_spans_ += is_host_span(k) ? 1 : 0;
      gpu_and_launches_ += is_gpu_activity(k) || is_launch_api(k) ? 1 : 0;
    }
    IngestReport& report = builder_.report();
    for (const auto& [reason, issue] : batch.repairs) report.repair(reason, issue.first_location, issue.count);
    for (const auto& [reason, issue] : batch.skips) report.skip(reason, issue.first_location, issue.count);
    if (batch.has_decimal_ts) has_decimal_ts_ = true;
    if (limit_.bytes == 0) return;
    const std::uint64_t model_bytes = builder_.model().memory_bytes();
    const std::uint64_t later = analysis_bytes_expected();
    const std::uint64_t outside = held_outside_model_ ? held_outside_model_() : 0;
    if (model_bytes + later + outside > limit_.bytes) {
      stop_reason_ = fmt::format(
          "stopped loading after {} events at the memory limit of {} MiB ({}): the model holds {} MiB, reading "
          "{} MiB, and analysing it needs about {} MiB more; raise it with --max-memory, or analyse a shorter trace",
          builder_.size(), limit_.bytes >> 20, limit_.origin, model_bytes >> 20, outside >> 20, later >> 20);
    }
  }

  bool has_decimal_ts() const { return has_decimal_ts_; }
  // Bytes of the event array in the batches merged so far: where a stop happened, the same on
  // every run (the scanner, on its own thread, is somewhere ahead by then).
  std::uint64_t merged_bytes() const { return merged_bytes_; }

  // What relations and the analyses will allocate for the model as it stands, measured as peak RSS
  // minus model bytes (bench/resource_bench.sh): per event (span parents, step and window scans);
  // per host span the nesting pass's worst case, spans all nested in one another on one thread
  // (thread bucket 4 + sort key 24 + open-span stack 16, doubled by growth); per GPU activity or
  // launch call (correlation index, launch tables, per-device timelines: an inflated ResNet DDP
  // trace).
  std::uint64_t analysis_bytes_expected() const {
    return kAnalysisBytesPerEvent * builder_.size() + kAnalysisBytesPerHostSpan * host_spans_ +
           kAnalysisBytesPerGpuOrLaunch * gpu_and_launches_;
  }

 private:
  static constexpr std::uint64_t kAnalysisBytesPerEvent = 8;
  static constexpr std::uint64_t kAnalysisBytesPerHostSpan = 60;
  static constexpr std::uint64_t kAnalysisBytesPerGpuOrLaunch = 40;

  // Interns the batch's few distinct strings, categories and id labels, then appends its rows.
  bool append(ParsedBatch& batch) {
    string_map_.resize(batch.strings.texts().size());
    for (std::size_t i = 0; i < string_map_.size(); ++i) string_map_[i] = builder_.intern(batch.strings.texts()[i]);
    cat_map_.resize(batch.cats.texts().size());
    for (std::size_t i = 0; i < cat_map_.size(); ++i) cat_map_[i] = builder_.intern_category(batch.cats.texts()[i]);
    label_map_.resize(batch.labels.size());
    for (std::size_t i = 0; i < batch.labels.size(); ++i) label_map_[i] = builder_.label_id(batch.labels[i]);
    const EventBatchView view{batch.kind,         batch.phase,
                              batch.category,     batch.name,
                              batch.ts_ns,        batch.dur_ns,
                              batch.pid,          batch.tid,
                              batch.correlation,  batch.external_id,
                              batch.kernel_args,  batch.copy_args,
                              batch.op_args,      batch.collective_args,
                              batch.memory_args,  batch.counters,
                              batch.graph_nodes,  batch.inductor_kernels,
                              batch.python_frames};
    if (!builder_.append_batch(view, {string_map_, cat_map_, label_map_})) return false;
    auto map_id = [&](std::int32_t id) { return id >= 0 ? id : label_map_[static_cast<std::size_t>(-1 - id)]; };
    for (const auto& meta : batch.meta_names) {
      std::string text(builder_.model().strings.view(string_map_[meta.text]));
      if (meta.is_thread)
        builder_.set_thread_name(map_id(meta.pid), map_id(meta.tid), std::move(text));
      else
        builder_.set_process_name(map_id(meta.pid), std::move(text));
    }
    return true;
  }

  ModelBuilder& builder_;
  std::vector<StrId> string_map_;
  std::vector<std::uint16_t> cat_map_;
  std::vector<std::int32_t> label_map_;
  bool has_decimal_ts_ = false;
  MemoryLimit limit_;
  std::function<std::uint64_t()> held_outside_model_;
  std::uint64_t host_spans_ = 0;
  std::uint64_t gpu_and_launches_ = 0;
  std::uint64_t max_bytes_without_kept_ = 0;
  std::uint64_t bytes_without_kept_ = 0;
  std::uint64_t merged_bytes_ = 0;
  std::string stop_reason_;
};

// Parses batches in order with one scanning thread, `threads` parsers and this thread merging.
// The three meet in this state: bounded queues keep at most a few batches in flight, so memory
// stays independent of the input size.
class ParallelPipeline {
 public:
  ParallelPipeline(EventScanner& scanner, BufferPool& pool, BatchMerger& merger, unsigned threads,
                   const std::function<void()>& on_batch)
      : scanner_(scanner),
        pool_(pool),
        merger_(merger),
        threads_(threads),
        on_batch_(on_batch),
        max_in_flight_(2 * std::size_t{threads} + 2) {}

  // False when no producer could start (the system refused the threads): nothing was read, and the
  // caller runs the serial loop instead.
  bool run() {
    // Workers first (they wait for batches), then the producer: if either cannot start, nothing has
    // been read yet and the serial loop takes over.
    std::vector<std::thread> workers;
    try {
      for (unsigned t = 0; t < threads_; ++t) workers.push_back(start_thread([this] { parse_batches(); }));
    } catch (const std::system_error&) {
    }
    std::thread producer;
    if (!workers.empty()) {
      try {
        producer = start_thread([this] { produce(); });
      } catch (const std::system_error&) {
      }
    }
    if (!producer.joinable()) {
      {
        std::lock_guard lock(mu_);
        producer_done_ = true;
        cv_raw_.notify_all();
      }
      for (auto& w : workers) w.join();
      return false;
    }
    merge_in_order();
    producer.join();
    for (auto& w : workers) w.join();
    if (failure_) std::rethrow_exception(failure_);
    return true;
  }

 private:
  void produce() {
    try {
      for (;;) {
        RawBatch raw;
        {
          std::unique_lock lock(mu_);
          cv_space_.wait(lock, [&] { return in_flight_ < max_in_flight_ || failure_ || stop_; });
          if (failure_ || stop_) break;
        }
        if (!scanner_.next(raw)) break;
        std::lock_guard lock(mu_);
        raw_queue_.push_back(std::move(raw));
        ++in_flight_;
        ++produced_;
        cv_raw_.notify_one();
      }
    } catch (...) {
      std::lock_guard lock(mu_);
      failure_ = std::current_exception();
    }
    std::lock_guard lock(mu_);
    producer_done_ = true;
    cv_raw_.notify_all();
    cv_parsed_.notify_all();
  }

  void parse_batches() {
    EventParser parser;
    for (;;) {
      RawBatch raw;
      std::unique_ptr<ParsedBatch> out;
      {
        std::unique_lock lock(mu_);
        cv_raw_.wait(lock, [&] { return !raw_queue_.empty() || producer_done_; });
        if (raw_queue_.empty()) return;
        raw = std::move(raw_queue_.front());
        raw_queue_.pop_front();
        if (!spare_.empty()) {
          out = std::move(spare_.back());
          spare_.pop_back();
        }
      }
      try {
        if (!out) out = std::make_unique<ParsedBatch>();
        parser.parse(raw, *out);
      } catch (...) {
        // std::bad_alloc above all: the loading thread stops and reports what was merged.
        std::lock_guard lock(mu_);
        if (!failure_) failure_ = std::current_exception();
        cv_parsed_.notify_all();
        cv_space_.notify_all();
        return;
      }
      pool_.give(std::move(raw.data), raw.capacity);
      std::lock_guard lock(mu_);
      parsed_.emplace(out->sequence, std::move(out));
      cv_parsed_.notify_all();
    }
  }

  // Merges the parsed batches in stream order, until the input ends, a failure, or the memory limit.
  void merge_in_order() {
    std::uint64_t next_seq = 0;
    for (;;) {
      std::unique_ptr<ParsedBatch> batch;
      {
        std::unique_lock lock(mu_);
        cv_parsed_.wait(lock, [&] {
          return parsed_.count(next_seq) != 0 || (producer_done_ && next_seq == produced_) || failure_;
        });
        auto it = parsed_.find(next_seq);
        if (it == parsed_.end()) break;
        batch = std::move(it->second);
        parsed_.erase(it);
      }
      try {
        merger_.merge(*batch);
      } catch (...) {
        std::lock_guard lock(mu_);
        if (!failure_) failure_ = std::current_exception();
        stop_ = true;
        raw_queue_.clear();
        cv_space_.notify_all();
        break;
      }
      on_batch_();
      ++next_seq;
      std::lock_guard lock(mu_);
      --in_flight_;
      spare_.push_back(std::move(batch));
      cv_space_.notify_one();
      if (merger_.limit_reached()) {
        stop_ = true;
        raw_queue_.clear();
        cv_space_.notify_all();
        break;
      }
    }
  }

  EventScanner& scanner_;
  BufferPool& pool_;
  BatchMerger& merger_;
  const unsigned threads_;
  const std::function<void()>& on_batch_;
  const std::size_t max_in_flight_;

  std::mutex mu_;
  std::condition_variable cv_raw_, cv_parsed_, cv_space_;
  std::deque<RawBatch> raw_queue_;
  std::map<std::uint64_t, std::unique_ptr<ParsedBatch>> parsed_;
  std::vector<std::unique_ptr<ParsedBatch>> spare_;
  bool producer_done_ = false;
  bool stop_ = false;  // the model reached its memory limit
  std::uint64_t produced_ = 0;
  std::exception_ptr failure_;
  std::size_t in_flight_ = 0;  // raw batches queued or being parsed, plus parsed not yet merged
};

// Producer (scan) -> workers (parse) -> this thread (merge in order). Bounded queues keep at
// most a few batches in flight, so memory stays independent of the input size.
// When the system refuses a thread (std::system_error: a low `ulimit -u`), the pipeline runs with
// the workers it has, or serially in this thread when it has none or no producer.
void run_pipeline(EventScanner& scanner, BufferPool& pool, BatchMerger& merger, unsigned threads,
                  const std::function<void()>& on_batch) {
  threads = std::min(threads, thread_cap());
  if (threads > 1 && ParallelPipeline(scanner, pool, merger, threads, on_batch).run()) return;
  EventParser parser;
  RawBatch raw;
  ParsedBatch parsed;
  while (!merger.limit_reached() && scanner.next(raw)) {
    parser.parse(raw, parsed);
    pool.give(std::move(raw.data), raw.capacity);
    merger.merge(parsed);
    on_batch();
  }
}

FormatGeneration detect_generation(const TraceModel& model, const ScanSummary& scan, bool decimal_ts) {
  if (scan.root_is_array) return FormatGeneration::kLegacyAutograd;
  bool old_names = false, transitional = false, modern = false;
  for (std::size_t i = 1; i < model.categories.size(); ++i) {
    const std::string_view cat = model.categories.view(static_cast<StrId>(i));
    if (cat == "Operator" || cat == "Runtime" || cat == "Kernel" || cat == "Memcpy" || cat == "Memset" ||
        cat == "async" || cat == "async_gpu")
      old_names = true;
    if (cat == "async_cpu_to_gpu" || cat == "forward_backward") transitional = true;
    if (cat == "cpu_op" || cat == "kernel" || cat == "cuda_runtime" || cat == "user_annotation" || cat == "ac2g" ||
        cat == "fwdbwd" || cat == "python_function")
      modern = true;
  }
  if (old_names && !modern) return FormatGeneration::kKineto18;
  if (transitional) return FormatGeneration::kKineto110;
  if (model.info.base_time_ns || decimal_ts) return FormatGeneration::kKineto2;
  if (modern || old_names) return FormatGeneration::kKinetoModern;
  return FormatGeneration::kUnknown;
}

}  // namespace

// The Kineto JSON importer (and the legacy autograd array): scan, parse on worker threads, merge
// in order; then the root object's other keys and what the scan repaired or skipped.
void load_kineto_json(ByteSource& source, const std::string& name, const LoadOptions& options, ModelBuilder& builder) {
  const MemoryLimit limit =
      options.max_memory_bytes
          ? MemoryLimit{options.max_memory_bytes,
                        options.max_memory_origin.empty() ? "--max-memory" : options.max_memory_origin}
          : default_memory_limit();
  const unsigned threads =
      std::min(options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency()), thread_cap());
  BufferPool pool;
  EventScanner scanner(source, name, options.limits, &pool);
  const std::uint64_t pipeline_bytes = ingest_buffer_bytes(threads, options.limits.batch_bytes);
  BatchMerger merger(
      builder, limit, [&] { return pipeline_bytes + source.memory_bytes(); },
      options.limits.max_bytes_without_progress);
  auto on_batch = [&] {
    if (options.progress) options.progress(source.consumed(), 0);
  };
  std::string out_of_memory;
  try {
    run_pipeline(scanner, pool, merger, threads, on_batch);
  } catch (const std::bad_alloc&) {
    // The system refused memory below the limit (ulimit -v, a cgroup shared with other processes,
    // overcommit off). Drop a quarter of the events read so that relations and the analyses have
    // room, and analyse the rest rather than die with nothing.
    const std::size_t read = builder.size();
    builder.truncate_events(read - read / 4);
    out_of_memory = fmt::format(
        "ran out of memory at byte {} of the JSON, event {} (the system refused an allocation below the memory "
        "limit of {} MiB, {}); kept the first {} events and analysed what was read",
        scanner.summary().bytes, read, limit.bytes >> 20, limit.origin, builder.size());
  }

  const ScanSummary& scan = scanner.summary();
  // The document may close before the stream ends; damage (a bad CRC, garbage) can lie after
  // it. Read a bounded tail so a broken compressed stream is still reported.
  std::string stream_damage = scan.stream_damage;
  IngestReport& report = builder.report();
  TraceInfo& info = builder.info();
  if (!out_of_memory.empty()) {
    report.truncated = true;
    report.truncated_at_byte = scan.bytes;
    report.notes.push_back(out_of_memory);
    report.skip("events dropped after running out of memory", fmt::format("byte {}", scan.bytes),
                scan.events > builder.size() ? scan.events - builder.size() : 0);
  } else if (merger.limit_reached()) {
    report.truncated = true;
    report.truncated_at_byte = merger.merged_bytes();
    report.notes.push_back(
        fmt::format("{} (after about {} bytes of events)", merger.stop_reason(), merger.merged_bytes()));
  } else if (stream_damage.empty()) {
    std::vector<char> sink(64 << 10);
    std::uint64_t drained = 0;
    while (drained < (64u << 20)) {
      const std::size_t n = source.read(sink.data(), sink.size());
      if (n == 0) break;
      drained += n;
    }
    stream_damage = source.damage();
  }
  // Stopped at a limit, the scanner (on its own thread) had read ahead by some amount; the bytes of
  // the events read up to the stop are the same on every run.
  info.json_bytes = merger.limit_reached() ? merger.merged_bytes() : scan.bytes;
  info.compressed_bytes = source.consumed();
  parse_header(scan.header, info, report);
  for (const auto& key : scan.header_dropped)
    report.skip("top-level value larger than the header limit", "key \"" + key + "\"");
  if (!scan.root_is_array && !scan.saw_trace_events) {
    // A damaged compressed stream that yields nothing (a small zstd frame with a bad checksum,
    // a cut-off first block) is that damage, not an empty file.
    if (scan.bytes == 0) throw InputError(stream_damage.empty() ? name + ": empty input" : stream_damage);
    report.notes.push_back(kNotATraceDocument);
  }
  if (!stream_damage.empty()) {
    report.notes.push_back(stream_damage);
    report.repair("damaged compressed stream: kept the events before the damage", stream_damage);
  }
  if (scan.truncated) {
    report.truncated = true;
    report.truncated_at_byte = scan.truncated_at;
    if (!scan.stop_reason.empty()) {
      report.notes.push_back(scan.stop_reason + "; every complete event before it was kept");
      if (scan.truncation_detail == "an event")
        report.skip("event cut off where reading stopped", fmt::format("byte {}", scan.truncated_at));
    } else {
      report.notes.push_back(
          fmt::format("trace is truncated: the input ends inside {} at byte {}; "
                      "every complete event before it was kept",
                      scan.truncation_detail, scan.truncated_at));
      if (scan.truncation_detail == "an event")
        report.skip("incomplete event cut off by truncation", fmt::format("byte {}", scan.truncated_at));
    }
  }
  for (const auto& w : scan.warnings) report.notes.push_back(w);
  if (scan.skipped_non_objects > 0)
    report.skip("traceEvents elements that are not objects", "traceEvents", scan.skipped_non_objects);
  if (scan.stray_closers > 0) report.skip("stray '}' between events", "traceEvents", scan.stray_closers);
  if (scan.missing_commas > 0) report.repair(kMissingCommaReason, scan.first_missing_comma, scan.missing_commas);
  if (scan.comments > 0) report.repair(kCommentReason, fmt::format("byte {}", scan.first_comment_at), scan.comments);
  if (scan.extra_event_arrays > 0) {
    const std::uint64_t merged = scan.events - scan.events_before_extra_array;
    report.repair(kMergedArraysReason, fmt::format("byte {}", scan.first_extra_array_at), merged);
    report.notes.push_back(
        fmt::format("the root object holds {} \"traceEvents\" arrays (the second at byte {}); the {} events "
                    "of the later ones were read as part of one event list, in file order",
                    scan.extra_event_arrays + 1, scan.first_extra_array_at, merged));
  }
  info.generation = detect_generation(builder.model(), scan, merger.has_decimal_ts());
}

// How sure the input is Kineto JSON: a JSON document (after a byte order mark, whitespace or a
// comment) that opens with '{' or '[', surest when it names "traceEvents". Empty or blank heads
// go to it too, so that its messages (empty input, a damaged stream, only whitespace) stay.
int sniff_kineto_json(std::string_view head) {
  if (head.starts_with("\xEF\xBB\xBF")) head.remove_prefix(3);
  const std::size_t first = head.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return 1;
  const char c = head[first];
  if (c == '{') return head.find("\"traceEvents\"") != std::string_view::npos ? 100 : 50;
  if (c == '[') return 50;
  if (c == '/') return 10;  // a comment before the document (accepted, docs/JSON.md)
  return 0;
}

std::uint64_t ingest_buffer_bytes(unsigned threads, std::size_t batch_bytes) {
  // Batches in flight (2 per thread + 2) and pooled (8), each a raw buffer and its parsed columns
  // (about the same size again), plus each parser's simdjson index (structural offsets, 4 bytes per
  // structural character, and a string buffer: about 6x the batch).
  const std::uint64_t batches = 2 * std::uint64_t{threads} + 2 + 8;
  return batches * 2 * batch_bytes + std::uint64_t{threads} * 6 * batch_bytes;
}

}  // namespace ferret
