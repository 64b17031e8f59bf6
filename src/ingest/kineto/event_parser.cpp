#include "ingest/kineto/event_parser.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <iterator>
#include <limits>

#include <fmt/format.h>

#include "ingest/kineto/cpu_level.h"
#include "ingest/kineto/decimal.h"
#include "ingest/kineto/event_repair.h"
#include "ingest/load_options.h"
#include "model/event_kind.h"

namespace ferret {

namespace od = simdjson::ondemand;

std::size_t LocalStrings::SampledHash::operator()(std::string_view s) const noexcept {
  if (s.size() <= 48) return std::hash<std::string_view>{}(s);
  char sample[48];
  std::memcpy(sample, s.data(), 16);
  std::memcpy(sample + 16, s.data() + s.size() / 2 - 8, 16);
  std::memcpy(sample + 32, s.data() + s.size() - 16, 16);
  return std::hash<std::string_view>{}(std::string_view(sample, 48)) ^ (s.size() * 0x9E3779B97F4A7C15ull);
}

std::uint32_t LocalStrings::intern(std::string_view s) {
  if (s.empty()) return 0;
  if (auto it = index_.find(s); it != index_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(texts_.size());
  texts_.emplace_back(s);  // a deque: elements never move, so the key view stays valid
  index_.emplace(std::string_view(texts_.back()), id);
  return id;
}

namespace {

// Durations beyond this are a broken clock ("236-year durations"), not a real span.
constexpr std::int64_t kAbsurdDurationNs = std::int64_t{30} * 24 * 3600 * 1000000000;

// The phases of the Trace Event Format; anything else is stored as an event of kind other.
bool is_trace_format_phase(char ph) {
  static constexpr std::string_view kPhases = "XiIsfCMtnbeBESTpFPNODVvRc()";
  return kPhases.find(ph) != std::string_view::npos;
}

struct EventRow {
  char ph = 0;
  bool has_cat = false, has_ts = false, has_dur = false, has_name = false;
  std::string_view cat, name;
  std::int64_t ts = 0, dur = 0;
  std::int32_t pid = 0, tid = 0;
  std::int64_t correlation = kNoId, external_id = kNoId, flow_id = kNoId;
  std::int64_t stream = kNoId;  // args.stream: places sync rows (tid = stream + offset) on their stream
  bool kernel_seen = false, copy_seen = false, op_seen = false, coll_seen = false, mem_seen = false;
  bool graph_seen = false;
  bool inductor_seen = false, python_seen = false;
  KernelArgs kernel;
  GraphNodeArgs graph;
  CopyArgs copy;
  OpArgs op;
  CollectiveArgs coll;
  MemoryArgs mem;
  InductorKernelArgs inductor;
  PythonFrameArgs python;
  std::string_view meta_name;
  bool has_meta_name = false;
  std::vector<std::pair<std::string_view, double>> counter_values;
  const char* bad_field = nullptr;  // ts/dur whose value had the wrong type
  const char* bad_type = nullptr;   // another field of the wrong JSON type (ignored)
  bool lenient_number = false;      // a number JSON forbids ("01", "1."), read by its digits
  bool nan_id = false;              // NaN or Infinity as a correlation or External id
  bool phase_is_one_char = true;
};

class Context {
 public:
  Context(RawBatch& raw, ParsedBatch& out, std::size_t index) : raw_(raw), out_(out), index_(index) {}
  std::string where() const {
    return fmt::format("byte {} (event #{})", raw_.stream_offset + raw_.event_begin[index_],
                       raw_.first_event_index + index_);
  }
  void repair(const std::string& reason) { note(out_.repairs, reason); }
  void skip(const std::string& reason) { note(out_.skips, reason); }

 private:
  void note(std::unordered_map<std::string, LocalIssue>& map, const std::string& reason) {
    LocalIssue& issue = map[reason];
    if (issue.count++ == 0) issue.first_location = where();
  }
  RawBatch& raw_;
  ParsedBatch& out_;
  std::size_t index_;
};

// The text of a JSON string straight from the input when it holds no escapes (the common case):
// no copy, no unescaping. `raw` points just past the opening quote.
bool raw_string_view(const char* raw, std::string_view& out) {
  // One pass: most strings are short keys, where a byte loop beats two memchr calls.
  const char* p = raw;
  for (;;) {
    const char c = *p;
    if (c == '"') break;
    if (c == '\\') return false;
    ++p;
  }
  out = std::string_view(raw, static_cast<std::size_t>(p - raw));
  return true;
}

std::string_view field_key(od::field& field) {
  std::string_view key;
  if (raw_string_view(field.key().raw(), key)) return key;
  return field.unescaped_key();
}

std::string_view string_value(od::value v) {
  std::string_view text;
  od::raw_json_string raw = v.get_raw_json_string();
  if (raw_string_view(raw.raw(), text)) return text;
  return v.get_string();
}

// A pid/tid: a number, or a string ("stream 7", "25738", "CPU functions").
std::int32_t id_from_text(std::string_view text, ParsedBatch& out) {
  std::string_view digits = text;
  if (digits.substr(0, 7) == "stream ") digits.remove_prefix(7);
  std::int64_t v = 0;
  if (!digits.empty() && parse_int64(digits, v) == DecimalStatus::kOk && v >= 0 && v <= INT32_MAX)
    return static_cast<std::int32_t>(v);
  std::string label(text);
  auto it = out.label_index.find(label);
  if (it != out.label_index.end()) return it->second;
  const std::int32_t id = -1 - static_cast<std::int32_t>(out.labels.size());
  out.labels.push_back(label);
  out.label_index.emplace(std::move(label), id);
  return id;
}

std::int32_t read_id(od::value v, ParsedBatch& out, EventRow& row) {
  const od::json_type t = v.type();
  if (t == od::json_type::string) return id_from_text(std::string_view(v.get_string()), out);
  if (t != od::json_type::number) {
    row.bad_type = "pid/tid";
    return 0;
  }
  std::string_view raw = json_token_text(v.raw_json_token());
  if (may_be_lenient_number(raw) && is_lenient_number(raw)) row.lenient_number = true;
  std::int64_t n = 0;
  if (parse_int64(raw, n) == DecimalStatus::kOk && n >= INT32_MIN / 2 && n <= INT32_MAX && n >= 0)
    return static_cast<std::int32_t>(n);
  // Other numbers (negative, huge, fractional) name a process or thread; text that is not a
  // JSON number at all (NaN, 0x10) is kept the same way but counted.
  double d = 0;
  if (v.get_double().get(d) != simdjson::SUCCESS) row.bad_type = "pid/tid: not a JSON number, kept as a name";
  return id_from_text(raw, out);
}

// An integer-valued arg; false when the value is not a number (or numeric string). Ids may be
// unsigned 64-bit (kept as their bit pattern); quantities (`id` false) must fit int64.
bool read_int(EventRow& row, od::value v, std::int64_t& n, bool id = true) {
  const od::json_type t = v.type();
  if (t != od::json_type::number && t != od::json_type::string) return false;
  const std::string_view raw =
      t == od::json_type::string ? std::string_view(v.get_string()) : json_token_text(v.raw_json_token());
  if (t == od::json_type::number && may_be_lenient_number(raw) && is_lenient_number(raw)) row.lenient_number = true;
  const DecimalStatus st = parse_int64(raw, n);
  if (st != DecimalStatus::kOk && st != DecimalStatus::kRounded) return false;
  return id || n >= 0 || (!raw.empty() && raw[0] == '-');
}

// NaN, Infinity and their kin, which simdjson types by their first byte (a number by a sign,
// null by an 'n').
bool is_not_a_number(od::value v) {
  const od::json_type type = v.type();
  if (type != od::json_type::number && type != od::json_type::null) return false;
  std::string_view raw = json_token_text(v.raw_json_token());
  if (raw == "null") return false;
  if (!raw.empty() && (raw[0] == '-' || raw[0] == '+')) raw.remove_prefix(1);
  return !raw.empty() && ((raw[0] | 0x20) == 'n' || (raw[0] | 0x20) == 'i');
}

bool read_double(od::value v, double& d) {
  if (v.type() != od::json_type::number) return false;
  return v.get_double().get(d) == simdjson::SUCCESS;
}

std::string_view raw_value_text(od::value v) {
  switch (v.type()) {
    case od::json_type::array: {
      od::array a = v.get_array();
      return a.raw_json();
    }
    case od::json_type::object: {
      od::object o = v.get_object();
      return o.raw_json();
    }
    case od::json_type::string: return v.get_string();
    default: return json_token_text(v.raw_json_token());
  }
}

bool read_triplet(EventRow& row, od::value v, std::int32_t (&dst)[3]) {
  if (v.type() != od::json_type::array) return false;
  int k = 0;
  bool ok = true;
  for (auto element : v.get_array()) {
    std::int64_t n = 0;
    if (k < 3 && read_int(row, element.value(), n))
      dst[k] = static_cast<std::int32_t>(n);
    else if (k < 3)
      ok = false;
    ++k;
  }
  return ok;
}

// The nested "occupancy" object of CUDA 12+ kernels: only its limiting factors are kept. The key
// is "limitingFactors" in Kineto's typed metadata ("REGS|SMEM"); "limiting factor" in older drafts.
void parse_occupancy(od::object occupancy, EventRow& row, ParsedBatch& out) {
  for (auto field_result : occupancy) {
    od::field field;
    if (const auto error = std::move(field_result).get(field)) throw simdjson::simdjson_error(error);
    const std::string_view key = field_key(field);
    if (key != "limitingFactors" && key != "limiting factor") continue;
    od::value v = field.value();
    if (v.type() == od::json_type::string) {
      row.kernel.limiting_factor = out.strings.intern(string_value(v));
      row.kernel_seen = true;
    } else if (v.type() != od::json_type::null) {
      row.bad_type = "args.occupancy.limitingFactors";
    }
  }
}

// Inductor's kernel_* args on Triton cpu_ops ("kernel_backend", "kernel_hash", "kernel_flop",
// "kernel_num_gb"); kernel_file, kernel_name and kernel_kwargs are not kept.
void parse_inductor_arg(std::string_view key, od::value v, EventRow& row, ParsedBatch& out) {
  const od::json_type type = v.type();
  if (key == "kernel_backend" || key == "kernel_hash") {
    if (type == od::json_type::string) {
      (key[7] == 'b' ? row.inductor.backend : row.inductor.hash) = out.strings.intern(string_value(v));
      row.inductor_seen = true;
    } else if (type != od::json_type::null) {
      row.bad_type = key[7] == 'b' ? "args.kernel_backend" : "args.kernel_hash";
    }
  } else if (key == "kernel_flop") {
    std::int64_t n = 0;
    if (read_int(row, v, n, false))
      row.inductor.flop = n, row.inductor_seen = true;
    else if (type != od::json_type::null)
      row.bad_type = "args.kernel_flop";
  } else if (key == "kernel_num_gb") {
    double d = 0;
    if (read_double(v, d))
      row.inductor.num_gb = d, row.inductor_seen = true;
    else if (type != od::json_type::null)
      row.bad_type = "args.kernel_num_gb";
  }
}

// How the value of an arg the table knows is read. A value of another JSON type is counted under
// the row's "args.<key>" (bad_type) and ignored; null is ignored silently, except where noted.
enum class ArgKind {
  kId,       // integer; unsigned 64-bit ids kept as their bit pattern
  kIdOrNaN,  // kId, and NaN / Infinity counted as nan_id (correlation and External id)
  kCount,    // integer that must fit int64 (an unsigned 64-bit pattern is a wrong type)
  kNumber,   // any JSON number
  kText,     // anything, interned as its text (strings unquoted); never a wrong type
  kTriplet,  // [x, y, z] integers; null is a wrong type too
};

// What was read, for a row's store.
struct ArgValue {
  std::int64_t n = 0;
  double d = 0;
  std::uint32_t text = 0;
};

// One row per known arg key: "args.<key>" (the key, and the name its wrong types are counted
// under), how its value is read, and where it goes. store returns false to count the value as a
// wrong type (out of its field's range).
struct ArgRule {
  const char* qualified_key;
  ArgKind kind;
  bool (*store)(EventRow&, ArgValue&);
  std::string_view key_view;  // measured once, at compile time: the search compares it per arg
  constexpr ArgRule(const char* qualified, ArgKind how, bool (*to)(EventRow&, ArgValue&))
      : qualified_key(qualified), kind(how), store(to), key_view(std::string_view(qualified).substr(5)) {}
  constexpr std::string_view key() const { return key_view; }
};

// Sorted by key (after "args."), so that the keys with one first byte are side by side.
constexpr ArgRule kArgRules[] = {
    {"args.Addr", ArgKind::kId,
     [](EventRow& r, ArgValue& a) { return r.mem.addr = static_cast<std::uint64_t>(a.n), r.mem_seen = true; }},
    {"args.Bytes", ArgKind::kCount, [](EventRow& r, ArgValue& a) { return r.mem.bytes = a.n, r.mem_seen = true; }},
    {"args.Collective name", ArgKind::kText,
     [](EventRow& r, ArgValue& a) { return r.coll.collective_name = a.text, r.coll_seen = true; }},
    {"args.Comms Id", ArgKind::kId, [](EventRow& r, ArgValue& a) { return r.coll.comms_id = a.n, r.coll_seen = true; }},
    {"args.Concrete Inputs", ArgKind::kText,
     [](EventRow& r, ArgValue& a) { return r.op.concrete_inputs = a.text, r.op_seen = true; }},
    {"args.Device Id", ArgKind::kCount,
     [](EventRow& r, ArgValue& a) { return r.mem.device_id = static_cast<std::int16_t>(a.n), r.mem_seen = true; }},
    {"args.Device Type", ArgKind::kCount,
     [](EventRow& r, ArgValue& a) { return r.mem.device_type = static_cast<std::int8_t>(a.n), r.mem_seen = true; }},
    {"args.External id", ArgKind::kIdOrNaN, [](EventRow& r, ArgValue& a) { return r.external_id = a.n, true; }},
    {"args.Fwd thread id", ArgKind::kId,
     [](EventRow& r, ArgValue& a) { return r.op.fwd_thread_id = static_cast<std::int32_t>(a.n), r.op_seen = true; }},
    {"args.Group size", ArgKind::kCount,
     [](EventRow& r, ArgValue& a) { return r.coll.group_size = static_cast<std::int32_t>(a.n), r.coll_seen = true; }},
    {"args.In msg nelems", ArgKind::kCount,
     [](EventRow& r, ArgValue& a) { return r.coll.in_msg_nelems = a.n, r.coll_seen = true; }},
    {"args.Input Dims", ArgKind::kText,
     [](EventRow& r, ArgValue& a) { return r.op.input_dims = a.text, r.op_seen = true; }},
    {"args.Input Strides", ArgKind::kText,
     [](EventRow& r, ArgValue& a) { return r.op.input_strides = a.text, r.op_seen = true; }},
    {"args.Input type", ArgKind::kText,
     [](EventRow& r, ArgValue& a) { return r.op.input_types = a.text, r.op_seen = true; }},
    {"args.Out msg nelems", ArgKind::kCount,
     [](EventRow& r, ArgValue& a) { return r.coll.out_msg_nelems = a.n, r.coll_seen = true; }},
    {"args.Process Group Name", ArgKind::kText,
     [](EventRow& r, ArgValue& a) { return r.coll.process_group_name = a.text, r.coll_seen = true; }},
    {"args.Process Group Ranks", ArgKind::kText,
     [](EventRow& r, ArgValue& a) { return r.coll.process_group_ranks = a.text, r.coll_seen = true; }},
    {"args.Python id", ArgKind::kId, [](EventRow& r, ArgValue& a) { return r.python.id = a.n, r.python_seen = true; }},
    {"args.Python parent id", ArgKind::kId,
     [](EventRow& r, ArgValue& a) { return r.python.parent_id = a.n, r.python_seen = true; }},
    {"args.Rank", ArgKind::kCount,
     [](EventRow& r, ArgValue& a) { return r.coll.rank = static_cast<std::int32_t>(a.n), r.coll_seen = true; }},
    {"args.Seq", ArgKind::kId, [](EventRow& r, ArgValue& a) { return r.coll.seq = a.n, r.coll_seen = true; }},
    {"args.Sequence number", ArgKind::kId,
     [](EventRow& r, ArgValue& a) { return r.op.sequence_number = a.n, r.op_seen = true; }},
    {"args.Total Allocated", ArgKind::kCount,
     [](EventRow& r, ArgValue& a) { return r.mem.total_allocated = a.n, r.mem_seen = true; }},
    {"args.Total Reserved", ArgKind::kCount,
     [](EventRow& r, ArgValue& a) { return r.mem.total_reserved = a.n, r.mem_seen = true; }},
    {"args.block", ArgKind::kTriplet, nullptr},
    {"args.blocks per SM", ArgKind::kNumber,
     [](EventRow& r, ArgValue& a) { return r.kernel.blocks_per_sm = static_cast<float>(a.d), r.kernel_seen = true; }},
    {"args.bytes", ArgKind::kCount, [](EventRow& r, ArgValue& a) { return r.copy.bytes = a.n, r.copy_seen = true; }},
    {"args.correlation", ArgKind::kIdOrNaN, [](EventRow& r, ArgValue& a) { return r.correlation = a.n, true; }},
    {"args.dtype", ArgKind::kText, [](EventRow& r, ArgValue& a) { return r.coll.dtype = a.text, r.coll_seen = true; }},
    {"args.est. achieved occupancy %", ArgKind::kNumber,
     [](EventRow& r, ArgValue& a) {
       return r.kernel.est_occupancy_pct = static_cast<float>(a.d), r.kernel_seen = true;
     }},
    {"args.external id", ArgKind::kIdOrNaN,
     [](EventRow& r, ArgValue& a) { return r.external_id = a.n, true; }},  // torch 1.8-1.9
    {"args.graph id", ArgKind::kId,
     [](EventRow& r, ArgValue& a) { return r.graph.graph_id = a.n, r.graph_seen = true; }},
    {"args.graph node id", ArgKind::kId,
     [](EventRow& r, ArgValue& a) { return r.graph.node_id = a.n, r.graph_seen = true; }},
    {"args.grid", ArgKind::kTriplet, nullptr},
    {"args.memory bandwidth (GB/s)", ArgKind::kNumber,
     [](EventRow& r, ArgValue& a) { return r.copy.bandwidth_gbps = static_cast<float>(a.d), r.copy_seen = true; }},
    {"args.priority", ArgKind::kId,
     [](EventRow& r, ArgValue& a) {
       if (a.n < INT32_MIN + 1 || a.n > INT32_MAX) return false;
       return r.kernel.priority = static_cast<std::int32_t>(a.n), r.kernel_seen = true;
     }},
    {"args.registers per thread", ArgKind::kCount,
     [](EventRow& r, ArgValue& a) {
       return r.kernel.registers_per_thread = static_cast<std::int32_t>(a.n), r.kernel_seen = true;
     }},
    {"args.shared memory", ArgKind::kCount,
     [](EventRow& r, ArgValue& a) {
       return r.kernel.shared_memory = static_cast<std::int32_t>(a.n), r.kernel_seen = true;
     }},
    {"args.warps per SM", ArgKind::kNumber,
     [](EventRow& r, ArgValue& a) { return r.kernel.warps_per_sm = static_cast<float>(a.d), r.kernel_seen = true; }},
};

constexpr bool arg_rules_sorted() {
  for (std::size_t i = 1; i < std::size(kArgRules); ++i)
    if (!(kArgRules[i - 1].key() < kArgRules[i].key())) return false;
  return true;
}
static_assert(arg_rules_sorted(), "kArgRules must be sorted by key: the keys of one first byte side by side");

// Per first byte of a key, the range of kArgRules that start with it: a lookup compares the one
// to four keys of that range (size first), as cheap as a switch on the first byte.
struct ArgRuleRange {
  std::uint8_t begin = 0, end = 0;
};
constexpr std::array<ArgRuleRange, 128> arg_rule_ranges() {
  std::array<ArgRuleRange, 128> ranges{};
  for (std::size_t i = 0; i < std::size(kArgRules); ++i) {
    ArgRuleRange& r = ranges[static_cast<unsigned char>(kArgRules[i].key()[0])];
    if (r.begin == r.end) r.begin = static_cast<std::uint8_t>(i);
    r.end = static_cast<std::uint8_t>(i + 1);
  }
  return ranges;
}
constexpr std::array<ArgRuleRange, 128> kArgRuleRanges = arg_rule_ranges();

const ArgRule* find_arg_rule(std::string_view key) {
  const auto first = static_cast<unsigned char>(key[0]);
  if (first >= kArgRuleRanges.size()) return nullptr;
  for (std::uint8_t i = kArgRuleRanges[first].begin; i < kArgRuleRanges[first].end; ++i)
    if (kArgRules[i].key() == key) return &kArgRules[i];
  return nullptr;
}

// Reads and stores one known arg; counts a wrong type.
void apply_arg_rule(const ArgRule& rule, od::value v, EventRow& row, ParsedBatch& out) {
  const od::json_type type = v.type();
  ArgValue a;
  bool read = false;
  switch (rule.kind) {
    case ArgKind::kId: read = read_int(row, v, a.n); break;
    case ArgKind::kIdOrNaN:
      read = read_int(row, v, a.n);
      if (!read && is_not_a_number(v)) {
        row.nan_id = true;
        return;
      }
      break;
    case ArgKind::kCount: read = read_int(row, v, a.n, false); break;
    case ArgKind::kNumber: read = read_double(v, a.d); break;
    case ArgKind::kText:
      a.text = out.strings.intern(raw_value_text(v));
      read = true;
      break;
    case ArgKind::kTriplet: {
      // Kept even when partly wrong (the good elements are set); null is counted too.
      std::int32_t(&dst)[3] = rule.key() == "grid" ? row.kernel.grid : row.kernel.block;
      if (!read_triplet(row, v, dst)) row.bad_type = rule.qualified_key;
      row.kernel_seen = true;
      return;
    }
  }
  if (read ? !rule.store(row, a) : type != od::json_type::null) row.bad_type = rule.qualified_key;
}

void parse_args(od::object args, EventRow& row, ParsedBatch& out) {
  for (auto field_result : args) {
    od::field field;
    if (const auto error = std::move(field_result).get(field)) throw simdjson::simdjson_error(error);
    const std::string_view key = field_key(field);
    od::value v = field.value();
    if (key.empty()) continue;
    if (const ArgRule* rule = find_arg_rule(key)) {
      apply_arg_rule(*rule, v, row, out);
      continue;
    }
    if (key.size() > 7 && key.substr(0, 7) == "kernel_") {
      parse_inductor_arg(key, v, row, out);
      continue;
    }
    const od::json_type type = v.type();
    if (key == "occupancy") {
      if (type == od::json_type::object)
        parse_occupancy(v.get_object(), row, out);
      else if (type != od::json_type::null)
        row.bad_type = "args.occupancy";
      continue;
    }
    if (key == "stream") {
      std::int64_t n = 0;
      if (read_int(row, v, n)) row.stream = n;  // ROCm may write a 64-bit HIP stream here: only compared
      continue;
    }
    if (key == "name") {  // metadata events: {"name": "process_name", "args": {"name": "..."}}
      if (type == od::json_type::string)
        row.meta_name = v.get_string(), row.has_meta_name = true;
      else
        row.bad_type = "args.name";
      continue;
    }
    // Counter events carry their series as numeric args.
    double d = 0;
    if ((row.ph == 'C' || row.ph == 0) && type == od::json_type::number && read_double(v, d))
      row.counter_values.emplace_back(key, d);
  }
}

void parse_fields(od::object obj, EventRow& row, ParsedBatch& out) {
  for (auto field_result : obj) {
    od::field field;
    if (const auto error = std::move(field_result).get(field)) throw simdjson::simdjson_error(error);
    const std::string_view key = field_key(field);
    od::value v = field.value();
    if (key == "ph") {
      const std::string_view ph = v.get_string();
      row.phase_is_one_char = ph.size() == 1;
      row.ph = row.phase_is_one_char ? ph[0] : '?';
    } else if (key == "cat") {
      if (v.type() == od::json_type::string) {
        row.cat = string_value(v);
        row.has_cat = true;
      } else if (v.type() != od::json_type::null) {
        row.bad_type = "cat";
      }
    } else if (key == "name") {
      if (v.type() == od::json_type::string) {
        row.name = string_value(v);
        row.has_name = true;
      } else {
        // Kept as its JSON text, so the event still has a recognisable name.
        if (v.type() != od::json_type::null) row.bad_type = "name";
        row.name = raw_value_text(v);
        row.has_name = true;
      }
    } else if (key == "ts" || key == "dur") {
      const bool is_ts = key == "ts";
      const od::json_type t = v.type();
      std::string_view text;
      if (t == od::json_type::number)
        text = json_token_text(v.raw_json_token());
      else if (t == od::json_type::string)
        text = v.get_string();
      else {
        row.bad_field = is_ts ? "ts" : "dur";
        continue;
      }
      if (t == od::json_type::number && may_be_lenient_number(text) && is_lenient_number(text))
        row.lenient_number = true;
      std::int64_t ns = 0;
      const DecimalStatus st = parse_micros_to_nanos(text, ns);
      if (st == DecimalStatus::kOk || st == DecimalStatus::kRounded) {
        if (is_ts) {
          row.ts = ns, row.has_ts = true;
          if (text.find('.') != std::string_view::npos) out.has_decimal_ts = true;
        } else {
          row.dur = ns, row.has_dur = true;
        }
      } else {
        row.bad_field = is_ts ? "ts" : "dur";
      }
    } else if (key == "pid") {
      row.pid = read_id(v, out, row);
    } else if (key == "tid") {
      row.tid = read_id(v, out, row);
    } else if (key == "id") {
      std::int64_t n = 0;
      const od::json_type type = v.type();
      if (read_int(row, v, n))
        row.flow_id = n;
      else if (type == od::json_type::string)
        row.flow_id = static_cast<std::int64_t>(std::hash<std::string_view>{}(v.get_string()) >> 1);
      else if (type != od::json_type::null)
        row.bad_type = "id";
    } else if (key == "args") {
      if (v.type() == od::json_type::object)
        parse_args(v.get_object(), row, out);
      else if (v.type() != od::json_type::null)
        row.bad_type = "args";
    }
    // Other fields (bp, s, tts, ...) are not used by any analysis.
  }
}

void commit(EventRow& row, ParsedBatch& out, Context& ctx) {
  if (row.ph == 0) {
    ctx.skip("event without \"ph\"");
    return;
  }
  if (!row.has_ts && row.ph != 'M') {
    ctx.skip(row.bad_field && std::strcmp(row.bad_field, "ts") == 0 ? "event with a non-numeric or out-of-range \"ts\""
                                                                    : "event without \"ts\"");
    return;
  }
  if (row.has_cat && row.cat == kAnnotationCategory) {
    ctx.skip(kAnnotationReason);
    return;
  }
  if (row.ph == 'B' || row.ph == 'E') {
    ctx.skip("begin/end ('B'/'E') events are not produced by PyTorch profilers");
    return;
  }
  if (row.bad_type)
    ctx.repair(std::string("field of the wrong JSON type or out of range, ignored (") + row.bad_type + ")");
  if (row.lenient_number) ctx.repair(kLenientNumberReason);
  if (row.nan_id) ctx.repair(kNanIdReason);
  if (!is_trace_format_phase(row.ph) || !row.phase_is_one_char)
    ctx.repair(unknown_phase_reason(row.ph, row.phase_is_one_char));
  const EventKind kind = classify_event(row.ph, row.cat, row.has_cat, row.name);
  if (row.ph == 'X') {
    if (!row.has_dur) {
      ctx.repair(row.bad_field && std::strcmp(row.bad_field, "dur") == 0 ? "non-numeric \"dur\" set to 0"
                                                                         : "complete event without \"dur\" set to 0");
      row.dur = 0;
    } else if (row.dur < 0) {
      ctx.repair("negative duration set to 0");
      row.dur = 0;
    } else if (row.dur > kAbsurdDurationNs) {
      ctx.repair("absurd duration (over 30 days) set to 0");
      row.dur = 0;
    }
  } else {
    row.dur = 0;
  }
  // Kineto 2025+ draws stream N's syncs on a row of their own, tid N + 1000000 ("stream N (sync)"):
  // they are still waits of stream N, so they go back on it.
  if (kind == EventKind::kSync && row.tid >= kSyncRowTidOffset && row.stream >= 0 &&
      row.stream == row.tid - kSyncRowTidOffset)
    row.tid = static_cast<std::int32_t>(row.stream);
  const auto index = static_cast<EventIndex>(out.kind.size());
  out.kind.push_back(kind);
  out.phase.push_back(row.ph);
  out.category.push_back(static_cast<std::uint16_t>(row.has_cat ? out.cats.intern(row.cat) : 0));
  out.name.push_back(out.strings.intern(row.name));
  out.ts_ns.push_back(row.ts);
  out.dur_ns.push_back(row.dur);
  out.pid.push_back(row.pid);
  out.tid.push_back(row.tid);
  const bool is_flow = kind == EventKind::kFlowStart || kind == EventKind::kFlowEnd;
  out.correlation.push_back(is_flow ? row.flow_id : row.correlation);
  out.external_id.push_back(row.external_id);

  switch (kind) {
    case EventKind::kKernel:
      if (row.kernel_seen) {
        row.kernel.event = index;
        out.kernel_args.push_back(row.kernel);
      }
      break;
    case EventKind::kMemcpy:
    case EventKind::kMemset:
      if (row.copy_seen) {
        row.copy.event = index;
        out.copy_args.push_back(row.copy);
      }
      break;
    case EventKind::kCpuOp:
    case EventKind::kUserAnnotation:
      if (row.op_seen) {
        row.op.event = index;
        out.op_args.push_back(row.op);
      }
      if (row.inductor_seen) {
        row.inductor.event = index;
        out.inductor_kernels.push_back(row.inductor);
      }
      break;
    case EventKind::kPythonFunction:
      if (row.python_seen) {
        row.python.event = index;
        out.python_frames.push_back(row.python);
      }
      break;
    case EventKind::kMemoryInstant:
      if (row.mem_seen) {
        row.mem.event = index;
        out.memory_args.push_back(row.mem);
      } else {
        ctx.repair("[memory] event without allocation fields");
      }
      break;
    case EventKind::kMetadata:
      if (row.has_meta_name && (row.name == "process_name" || row.name == "thread_name")) {
        out.meta_names.push_back({row.pid, row.tid, row.name == "thread_name", out.strings.intern(row.meta_name)});
      }
      break;
    case EventKind::kCounter:
      for (const auto& [series, value] : row.counter_values)
        out.counters.push_back({index, out.strings.intern(series), value});
      break;
    default: break;
  }
  // Graph node ids on GPU work (replayed or captured) and on the launch calls of a capture.
  if (row.graph_seen &&
      (kind == EventKind::kKernel || kind == EventKind::kMemcpy || kind == EventKind::kMemset || is_launch_api(kind))) {
    row.graph.event = index;
    out.graph_nodes.push_back(row.graph);
  }
  if (row.coll_seen &&
      (kind == EventKind::kCpuOp || kind == EventKind::kKernel || kind == EventKind::kUserAnnotation)) {
    row.coll.event = index;
    out.collective_args.push_back(row.coll);
  }
}

}  // namespace

struct EventParser::Impl {
  od::parser batch_parser;
  od::parser event_parser;
  std::string scratch;

  bool parse_one(const char* text, std::size_t len, ParsedBatch& out, Context& ctx, std::string& error) {
    scratch.assign(text, len);
    scratch.append(simdjson::SIMDJSON_PADDING, ' ');
    try {
      od::document doc = event_parser.iterate(scratch.data(), len, scratch.size());
      od::object obj = doc.get_object();
      EventRow row;
      parse_fields(obj, row, out);
      commit(row, out, ctx);
      return true;
    } catch (const simdjson::simdjson_error& e) {
      error = e.what();
      return false;
    }
  }

  void parse_individually(RawBatch& raw, ParsedBatch& out, std::size_t from) {
    for (std::size_t i = from; i < raw.event_begin.size(); ++i) {
      Context ctx(raw, out, i);
      char* text = raw.data.get() + raw.event_begin[i];
      const std::size_t len = raw.event_end[i] - raw.event_begin[i];
      std::string error;
      if (parse_one(text, len, out, ctx, error)) continue;
      bool control = false, utf8 = false;
      repair_bytes(text, len, control, utf8);
      std::string error2;
      bool ok = (control || utf8) && parse_one(text, len, out, ctx, error2);
      if (!ok) {
        blank_all_controls(text, len);
        ok = parse_one(text, len, out, ctx, error2);
        if (ok) control = true;
      }
      LenientFixes fixes;
      if (!ok) {
        const std::string rewritten = lenient_rewrite(std::string_view(text, len), fixes);
        ok = fixes.any() && parse_one(rewritten.data(), rewritten.size(), out, ctx, error2);
      }
      if (ok) {
        if (control) ctx.repair("raw control characters replaced by spaces");
        if (utf8) ctx.repair("invalid UTF-8 bytes replaced by '?'");
        if (fixes.numbers) ctx.repair(kLenientNumberReason);
        if (fixes.nan_ids) ctx.repair(kNanIdReason);
        if (fixes.nan_values) ctx.repair(kNanValueReason);
        if (fixes.missing_commas) ctx.repair(kMissingFieldCommaReason);
        continue;
      }
      ctx.skip("malformed event JSON (" + error + ")");
    }
  }
};

EventParser::EventParser() : impl_((require_parser_cpu(), new Impl)) {}
EventParser::~EventParser() { delete impl_; }

void EventParser::parse(RawBatch& raw, ParsedBatch& out) {
  out.clear();
  out.sequence = raw.sequence;
  out.events_seen = raw.event_begin.size();
  if (raw.event_begin.empty()) return;
  out.input_bytes = raw.event_end.back() - raw.event_begin.front();
  const std::size_t n = raw.event_begin.size();
  const std::size_t reserve = n;
  out.kind.reserve(reserve);
  out.phase.reserve(reserve);
  out.category.reserve(reserve);
  out.name.reserve(reserve);
  out.ts_ns.reserve(reserve);
  out.dur_ns.reserve(reserve);
  out.pid.reserve(reserve);
  out.tid.reserve(reserve);
  out.correlation.reserve(reserve);
  out.external_id.reserve(reserve);

  // Fast path: the events "{..},{..}" become one array document "[{..},{..}]" in place.
  char* data = raw.data.get();
  const std::size_t begin = raw.event_begin.front() - 1;
  const std::size_t end = raw.event_end.back() + 1;
  data[begin] = '[';
  data[end - 1] = ']';
  // What lies between two events becomes one comma. The scanner has counted anything else there
  // (a stray '}' or ']', a bare word) as skipped; left in the array, it could make the on-demand
  // parser, which does not validate what it skips, read a malformed event as sound in this batch
  // and refuse it where the batch fails and each event is read alone: the outcome would depend
  // on where the batch boundaries fell (found by ingest_fuzzer's 1-vs-2-threads oracle).
  for (std::size_t i = 0; i + 1 < n; ++i) {
    const std::size_t gap_begin = raw.event_end[i], gap_end = raw.event_begin[i + 1];
    if (gap_end <= gap_begin) continue;  // "}{": no room; the batch fails and events are read alone
    data[gap_begin] = ',';
    if (gap_end - gap_begin > 1) std::memset(data + gap_begin + 1, ' ', gap_end - gap_begin - 1);
  }
  std::size_t done = 0;
  try {
    od::document doc = impl_->batch_parser.iterate(data + begin, end - begin, raw.capacity - begin);
    for (auto element : doc.get_array()) {
      Context ctx(raw, out, done);
      od::object obj = element.get_object();
      EventRow row;
      parse_fields(obj, row, out);
      commit(row, out, ctx);
      ++done;
    }
    if (done == n) return;
  } catch (const simdjson::simdjson_error&) {
    // Fall through: parse what is left one event at a time, repairing or skipping bad events.
  }
  // Drop a partial commit of the failing event (commit happens last, so none exists), then retry
  // the remainder individually. Events before `done` are already stored.
  impl_->parse_individually(raw, out, done);
}

}  // namespace ferret
