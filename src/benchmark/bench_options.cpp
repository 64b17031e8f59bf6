// The torch-free half of `ferret bench`: input specs, options, the warm-up and stopping rules,
// and the statistics of a finished run. The libtorch half is src/benchmark/torch/model_runner.cpp.
#include "base/text.h"
#include "benchmark/model_runner.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace ferret::bench {

namespace {

struct DTypeName {
  std::string_view name;
  DType dtype;
};
// Canonical names first: dtype_name() returns the first entry of each dtype.
constexpr DTypeName kDTypeNames[] = {
    {"float32", DType::kFloat32}, {"float16", DType::kFloat16}, {"bfloat16", DType::kBFloat16},
    {"float64", DType::kFloat64}, {"int64", DType::kInt64},     {"int32", DType::kInt32},
    {"uint8", DType::kUInt8},     {"bool", DType::kBool},       {"float", DType::kFloat32},
    {"f32", DType::kFloat32},     {"half", DType::kFloat16},    {"f16", DType::kFloat16},
    {"bf16", DType::kBFloat16},   {"double", DType::kFloat64},  {"f64", DType::kFloat64},
    {"long", DType::kInt64},      {"int", DType::kInt32},
};
constexpr std::string_view kDTypeList = "float32, float16, bfloat16, float64, int64, int32, uint8, bool";

// A non-negative decimal integer, whole string; false on anything else or overflow.
bool parse_count(std::string_view text, std::uint64_t& value) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string_view dtype_name(DType dtype) {
  for (const DTypeName& d : kDTypeNames)
    if (d.dtype == dtype) return d.name;
  return "?";
}

std::size_t dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kInt32: return 4;
    case DType::kFloat16:
    case DType::kBFloat16: return 2;
    case DType::kFloat64:
    case DType::kInt64: return 8;
    case DType::kUInt8:
    case DType::kBool: return 1;
  }
  return 1;
}

std::string InputSpec::text() const {
  std::string out;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += 'x';
    out += std::to_string(shape[i]);
  }
  out += ':';
  out += dtype_name(dtype);
  return out;
}

std::uint64_t InputSpec::elements() const {
  std::uint64_t n = 1;
  for (std::int64_t d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

std::string input_specs_text(const std::vector<InputSpec>& specs) {
  std::string out;
  for (const InputSpec& spec : specs) {
    if (!out.empty()) out += ' ';
    out += spec.text();
  }
  return out;
}

InputSpec parse_input_spec(std::string_view raw) {
  const std::string_view text = trim(raw);
  const std::string quoted = fmt::format("--input \"{}\"", raw);
  if (text.empty()) throw BenchError(quoted + ": expected SHAPE[:DTYPE], e.g. 8x3x224x224:float32");
  InputSpec spec;
  std::string_view shape_text = text;
  if (const std::size_t colon = text.find(':'); colon != std::string_view::npos) {
    shape_text = trim(text.substr(0, colon));
    const std::string_view dtype_text = trim(text.substr(colon + 1));
    const auto* found = std::find_if(std::begin(kDTypeNames), std::end(kDTypeNames),
                                     [&](const DTypeName& d) { return d.name == dtype_text; });
    if (found == std::end(kDTypeNames))
      throw BenchError(fmt::format("{}: unknown dtype \"{}\" (one of {})", quoted, dtype_text, kDTypeList));
    spec.dtype = found->dtype;
  }
  if (shape_text.empty()) throw BenchError(quoted + ": no shape before the dtype; expected e.g. 8x3x224x224:float32");
  // "2 x 4" unquoted on a command line is three arguments, so spaces are not part of the form.
  if (shape_text.find_first_of(" \t") != std::string_view::npos) {
    std::string joined;
    for (char c : shape_text)
      if (c != ' ' && c != '\t') joined += c;
    throw BenchError(
        fmt::format("{}: spaces inside the shape; dimensions are joined by 'x' alone: {}", quoted, joined));
  }
  // The product is checked in floating point so the message can say how much a typo would need.
  double needed_bytes = static_cast<double>(dtype_bytes(spec.dtype));
  std::uint64_t bytes = dtype_bytes(spec.dtype);
  bool too_large = false;
  std::size_t start = 0;
  for (;;) {
    const std::size_t x = shape_text.find('x', start);
    const std::string_view dim_text = trim(shape_text.substr(start, x == std::string_view::npos ? x : x - start));
    const std::size_t position = spec.shape.size() + 1;
    std::uint64_t dim = 0;
    if (!parse_count(dim_text, dim) || dim == 0)
      throw BenchError(fmt::format("{}: dimension {} (\"{}\") is not a positive integer", quoted, position, dim_text));
    if (spec.shape.size() == kMaxInputDims)
      throw BenchError(fmt::format("{}: more than {} dimensions", quoted, kMaxInputDims));
    needed_bytes *= static_cast<double>(dim);
    too_large = too_large || dim > kMaxInputBytes || bytes > kMaxInputBytes / dim;
    if (!too_large) bytes *= dim;
    spec.shape.push_back(static_cast<std::int64_t>(dim));
    if (x == std::string_view::npos) break;
    start = x + 1;
  }
  if (too_large)
    throw BenchError(fmt::format("{}: the tensor would need {:.3g} bytes, larger than {} TiB", quoted, needed_bytes,
                                 kMaxInputBytes >> 40));
  return spec;
}

std::uint64_t input_host_bytes(const std::vector<InputSpec>& inputs, bool on_cpu) {
  std::uint64_t kept = 0, largest_staging = 0;
  for (const InputSpec& spec : inputs) {
    const bool floating = spec.dtype == DType::kFloat32 || spec.dtype == DType::kFloat16 ||
                          spec.dtype == DType::kBFloat16 || spec.dtype == DType::kFloat64;
    // A CPU input already in the staging dtype is the staging tensor itself (no conversion copy).
    const bool converted = !on_cpu || spec.dtype != (floating ? DType::kFloat32 : DType::kInt64);
    if (converted) largest_staging = std::max(largest_staging, spec.elements() * (floating ? 4 : 8));
    if (on_cpu) kept += spec.bytes();
  }
  return kept + largest_staging;
}

void check_inputs_fit(const std::vector<InputSpec>& inputs, bool on_cpu, std::uint64_t available_bytes) {
  if (available_bytes == 0) return;
  const std::uint64_t needed = input_host_bytes(inputs, on_cpu);
  if (needed <= available_bytes) return;
  throw BenchError(
      fmt::format("--input {}: making the inputs needs {} bytes ({:.1f} GiB) of memory, but only {} bytes "
                  "({:.1f} GiB) are available; use smaller shapes",
                  input_specs_text(inputs), needed, static_cast<double>(needed) / (1ull << 30), available_bytes,
                  static_cast<double>(available_bytes) / (1ull << 30)));
}

std::uint64_t available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

std::string_view unicode_text_encoding(std::string_view head) {
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(head[i]); };
  if (head.size() >= 4 && byte(0) == 0xFF && byte(1) == 0xFE && byte(2) == 0 && byte(3) == 0) return "UTF-32LE";
  if (head.size() >= 4 && byte(0) == 0 && byte(1) == 0 && byte(2) == 0xFE && byte(3) == 0xFF) return "UTF-32BE";
  if (head.size() >= 2 && byte(0) == 0xFF && byte(1) == 0xFE) return "UTF-16LE";
  if (head.size() >= 2 && byte(0) == 0xFE && byte(1) == 0xFF) return "UTF-16BE";
  // Without a mark: ASCII characters leave every other byte (UTF-16) or three bytes in four
  // (UTF-32) zero, in a fixed position. Judged on whole units of the first 64 bytes.
  const std::size_t length = std::min<std::size_t>(head.size(), 64) / 4 * 4;
  if (length == 0) return "";
  auto matches = [&](std::size_t period, std::size_t ascii_at) {
    for (std::size_t i = 0; i < length; ++i)
      if ((byte(i) == 0) == (i % period == ascii_at)) return false;
    return true;
  };
  if (matches(4, 0)) return "UTF-32LE";
  if (matches(4, 3)) return "UTF-32BE";
  if (matches(2, 0)) return "UTF-16LE";
  if (matches(2, 1)) return "UTF-16BE";
  return "";
}

void check_not_unicode_text(const std::string& model_path) {
  std::ifstream in(model_path, std::ios::binary);
  char head[64];
  in.read(head, sizeof head);
  const std::string_view encoding =
      unicode_text_encoding(std::string_view(head, static_cast<std::size_t>(in.gcount())));
  if (!encoding.empty())
    throw BenchError(fmt::format("{} is {} text, not a TorchScript model (the zip archive torch.jit.save writes)",
                                 model_path, encoding));
}

std::string DeviceSpec::text() const { return cuda ? fmt::format("cuda:{}", index) : std::string("cpu"); }

DeviceSpec parse_device(std::string_view raw) {
  const std::string_view text = trim(raw);
  DeviceSpec device;
  if (text == "cpu") return device;
  if (text == "cuda") {
    device.cuda = true;
    return device;
  }
  std::uint64_t index = 0;
  if (text.starts_with("cuda:") && parse_count(text.substr(5), index) && index < 1024) {
    device.cuda = true;
    device.index = static_cast<int>(index);
    return device;
  }
  throw BenchError(fmt::format("--device \"{}\": expected cpu, cuda or cuda:N", raw));
}

void parse_warmup(std::string_view raw, BenchOptions& options) {
  const std::string_view text = trim(raw);
  if (text == "auto") {
    options.warmup_auto = true;
    return;
  }
  std::uint64_t count = 0;
  if (!parse_count(text, count) || count > kAutoWarmupMaxCalls * 100)
    throw BenchError(
        fmt::format("--warmup \"{}\": expected auto or a number of calls (0 to {})", raw, kAutoWarmupMaxCalls * 100));
  options.warmup_auto = false;
  options.warmup_calls = static_cast<std::size_t>(count);
}

void finalize_options(BenchOptions& o) {
  if (o.model_path.empty()) throw BenchError("no model file given");
  if (o.threads < 0) throw BenchError(fmt::format("--threads {}: expected 1 or more", o.threads));
  if (o.runs > 0 && o.time_seconds > 0) throw BenchError("choose one of --runs and --time");
  if (o.runs > kMaxRuns) throw BenchError(fmt::format("--runs {}: at most {}", o.runs, kMaxRuns));
  if (!std::isfinite(o.time_seconds) || o.time_seconds < 0)
    throw BenchError(fmt::format("--time {}: expected a positive number of seconds", o.time_seconds));
  if (o.runs == 0 && o.time_seconds == 0) o.time_seconds = kDefaultTimeSeconds;
  if (!std::isfinite(o.batch_size) || o.batch_size < 0)
    throw BenchError(fmt::format("--batch-size {}: expected a positive number of items per call", o.batch_size));
  if (o.batch_size == 0) o.batch_size = o.inputs.empty() ? 1.0 : static_cast<double>(o.inputs.front().shape.front());
  check_inputs_fit(o.inputs, !o.device.cuda, available_memory_bytes());
  if (o.profile_calls == 0 || o.profile_calls > kMaxProfileCalls)
    throw BenchError(fmt::format("--profile-calls {}: expected 1 to {}", o.profile_calls, kMaxProfileCalls));
}

std::string run_rule_text(const BenchOptions& o) {
  if (o.runs > 0) return fmt::format("{} calls", o.runs);
  return fmt::format("{:g} s ({}..{} calls)", o.time_seconds, kMinTimedRuns, kMaxTimedRuns);
}

// ---- Warm-up and stopping rules ------------------------------------------------------------

WarmupTracker::WarmupTracker(const BenchOptions& options)
    : automatic_(options.warmup_auto), target_(options.warmup_calls) {
  if (!automatic_) {
    steady_ = true;
    done_ = target_ == 0;
  }
}

bool WarmupTracker::add(double seconds) {
  if (done_) return true;
  ++calls_;
  seconds_ += seconds;
  if (!automatic_) {
    done_ = calls_ >= target_;
    return done_;
  }
  window_.push_back(seconds);
  if (window_.size() > kAutoWarmupWindow) window_.pop_front();
  if (window_.size() == kAutoWarmupWindow) {
    const std::vector<double> window(window_.begin(), window_.end());
    if (stats::steady_state_start(window) == 0) {
      steady_ = true;
      done_ = true;
      return true;
    }
  }
  if (calls_ >= kAutoWarmupMaxCalls || seconds_ >= kAutoWarmupMaxSeconds) done_ = true;
  return done_;
}

bool timed_runs_done(const BenchOptions& o, std::size_t calls, double elapsed_seconds) {
  if (o.runs > 0) return calls >= o.runs;
  if (calls >= kMaxTimedRuns) return true;
  return calls >= kMinTimedRuns && elapsed_seconds >= o.time_seconds;
}

int bootstrap_resamples_for(std::size_t n) {
  constexpr std::size_t kDrawBudget = 100000000;  // resamples x n
  if (n <= kDrawBudget / stats::kDefaultBootstrapResamples) return stats::kDefaultBootstrapResamples;
  return static_cast<int>(std::max<std::size_t>(1000, kDrawBudget / n));
}

// ---- Result ----------------------------------------------------------------------------------

void summarize_samples(BenchResult& r) {
  const std::vector<double>& samples = r.record.samples;
  r.summary = stats::summarize(samples);
  r.median_ci = stats::bootstrap_median_ci(samples, stats::kDefaultConfidence, bootstrap_resamples_for(samples.size()));
  r.outliers = stats::tukey_outliers(samples);
  r.relative_iqr = stats::relative_iqr(r.summary);
  r.noisy = stats::is_noisy(r.summary);
  r.items_per_second = r.summary.median > 0 ? r.record.batch_size / r.summary.median : stats::kNaN;
}

Fields bench_settings(const BenchOptions& o) {
  Fields f;
  f.emplace_back("device", o.device.text());
  f.emplace_back("threads", o.threads > 0 ? std::to_string(o.threads) : std::string("default"));
  f.emplace_back("inputs", input_specs_text(o.inputs));
  f.emplace_back("warmup", o.warmup_auto ? std::string("auto") : std::to_string(o.warmup_calls));
  if (o.runs > 0)
    f.emplace_back("runs", std::to_string(o.runs));
  else
    f.emplace_back("time_s", fmt::format("{:g}", o.time_seconds));
  f.emplace_back("batch_size", fmt::format("{:g}", o.batch_size));
  f.emplace_back("input_seed", std::to_string(o.input_seed));
  return f;
}

std::string iso8601_utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

std::uint64_t parse_vm_hwm(std::string_view status) {
  // A line "VmHWM:\t  123456 kB" (the kernel always writes kB).
  std::size_t at = 0;
  while (at < status.size()) {
    std::size_t end = status.find('\n', at);
    if (end == std::string_view::npos) end = status.size();
    std::string_view line = status.substr(at, end - at);
    at = end + 1;
    if (!line.starts_with("VmHWM:")) continue;
    line = trim(line.substr(6));
    const std::size_t space = line.find(' ');
    std::uint64_t kib = 0;
    if (!parse_count(line.substr(0, space), kib)) return 0;
    return kib * 1024;
  }
  return 0;
}

std::uint64_t peak_rss_bytes() {
  std::ifstream in("/proc/self/status");
  if (!in) return 0;
  std::ostringstream text;
  text << in.rdbuf();
  return parse_vm_hwm(text.str());
}

}  // namespace ferret::bench
