#include "ingest/memory/pickle_reader.h"

#include <bit>
#include <cstring>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "base/input_error.h"

namespace ferret {

const char* pickle_kind_name(PickleKind kind) {
  switch (kind) {
    case PickleKind::kNone: return "None";
    case PickleKind::kBool: return "bool";
    case PickleKind::kInt: return "int";
    case PickleKind::kFloat: return "float";
    case PickleKind::kString: return "str";
    case PickleKind::kBytes: return "bytes";
    case PickleKind::kList: return "list";
    case PickleKind::kTuple: return "tuple";
    case PickleKind::kDict: return "dict";
    case PickleKind::kSet: return "set";
  }
  return "?";
}

namespace {
const std::vector<PickleValue> kNoItems;
const std::vector<std::pair<PickleValue, PickleValue>> kNoEntries;
}  // namespace

std::string_view PickleDocument::text(const PickleValue& v) const {
  if (v.kind != PickleKind::kString && v.kind != PickleKind::kBytes) return {};
  return strings[v.ref];
}

const std::vector<PickleValue>& PickleDocument::items(const PickleValue& v) const {
  if (v.kind != PickleKind::kList && v.kind != PickleKind::kTuple && v.kind != PickleKind::kSet) return kNoItems;
  return lists[v.ref];
}

const std::vector<std::pair<PickleValue, PickleValue>>& PickleDocument::entries(const PickleValue& dict) const {
  return dict.kind == PickleKind::kDict ? dicts[dict.ref] : kNoEntries;
}

std::uint32_t PickleDocument::text_id(const PickleValue& v) const {
  if (v.kind != PickleKind::kString && v.kind != PickleKind::kBytes) return kNotAString;
  if (text_ids_.size() != strings.size()) text_ids_.resize(strings.size(), kNotAString);
  std::uint32_t& id = text_ids_[v.ref];
  if (id == kNotAString) id = ref_by_text_.try_emplace(strings[v.ref], v.ref).first->second;
  return id;
}

const PickleValue* PickleDocument::get(const PickleValue& dict, std::string_view key) const {
  const auto& e = entries(dict);
  if (e.size() <= 16) {
    // A length differs in O(1): a long key shared by the memo costs nothing to pass over.
    for (auto it = e.rbegin(); it != e.rend(); ++it)
      if (it->first.kind == PickleKind::kString && strings[it->first.ref] == key) return &it->second;
    return nullptr;
  }
  auto [slot, fresh] = index_.try_emplace(dict.ref);
  if (fresh)
    for (std::uint32_t k = 0; k < e.size(); ++k)
      if (e[k].first.kind == PickleKind::kString) slot->second[text_id(e[k].first)] = k;  // the last set wins
  // Every key of this dict has its text id now: a key with none is in no dict.
  const auto id = ref_by_text_.find(key);
  if (id == ref_by_text_.end()) return nullptr;
  const auto it = slot->second.find(id->second);
  return it == slot->second.end() ? nullptr : &e[it->second].second;
}

bool PickleDocument::incomplete(const PickleValue& v) const {
  if (v.kind == PickleKind::kDict) return incomplete_dicts.count(v.ref) > 0;
  if (v.kind == PickleKind::kList || v.kind == PickleKind::kTuple || v.kind == PickleKind::kSet)
    return incomplete_lists.count(v.ref) > 0;
  return false;
}

std::uint64_t PickleDocument::size() const {
  std::uint64_t n = strings.size() + 1;
  for (const auto& l : lists) n += l.size();
  for (const auto& d : dicts) n += d.size();
  return n;
}

std::int64_t PickleDocument::int_or(const PickleValue* v, std::int64_t fallback) const {
  if (v == nullptr) return fallback;
  if (v->kind == PickleKind::kInt || v->kind == PickleKind::kBool) return v->i;
  if (v->kind == PickleKind::kFloat && v->f > -9.2e18 && v->f < 9.2e18) return static_cast<std::int64_t>(v->f);
  return fallback;
}

double PickleDocument::number_or(const PickleValue* v, double fallback) const {
  if (v == nullptr) return fallback;
  if (v->kind == PickleKind::kInt || v->kind == PickleKind::kBool) return static_cast<double>(v->i);
  if (v->kind == PickleKind::kFloat) return v->f;
  return fallback;
}

std::string PickleDocument::string_or(const PickleValue* v, std::string_view fallback) const {
  if (v == nullptr || (v->kind != PickleKind::kString && v->kind != PickleKind::kBytes)) return std::string(fallback);
  return strings[v->ref];
}

namespace {

// Opcodes of protocols 2-5 that build plain data (pickletools.py names).
enum Op : unsigned char {
  kMark = '(',
  kStop = '.',
  kPop = '0',
  kPopMark = '1',
  kDup = '2',
  kBinFloat = 'G',
  kBinInt = 'J',
  kBinInt1 = 'K',
  kBinInt2 = 'M',
  kNone = 'N',
  kBinString = 'T',
  kShortBinString = 'U',
  kBinUnicode = 'X',
  kAppend = 'a',
  kBinBytes = 'B',
  kShortBinBytes = 'C',
  kAppends = 'e',
  kBinGet = 'h',
  kLongBinGet = 'j',
  kEmptyList = ']',
  kBinPut = 'q',
  kLongBinPut = 'r',
  kSetItem = 's',
  kTuple = 't',
  kSetItems = 'u',
  kEmptyDict = '}',
  kEmptyTuple = ')',
  kProto = 0x80,
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kNewTrue = 0x88,
  kNewFalse = 0x89,
  kLong1 = 0x8a,
  kLong4 = 0x8b,
  kShortBinUnicode = 0x8c,
  kBinUnicode8 = 0x8d,
  kBinBytes8 = 0x8e,
  kEmptySet = 0x8f,
  kAddItems = 0x90,
  kFrozenSet = 0x91,
  kMemoize = 0x94,
  kFrame = 0x95,
  kByteArray8 = 0x96,
};

// Opcodes that exist but call into Python (or need protocol 0/1 text parsing): named in the error.
const char* refused_opcode(unsigned char op) {
  switch (op) {
    case 'c': return "GLOBAL (a class or function lookup)";
    case 0x93: return "STACK_GLOBAL (a class or function lookup)";
    case 'R': return "REDUCE (a call)";
    case 'b': return "BUILD (object state)";
    case 0x81: return "NEWOBJ (an object)";
    case 0x92: return "NEWOBJ_EX (an object)";
    case 'i': return "INST (an object)";
    case 'o': return "OBJ (an object)";
    case 'P': return "PERSID (a persistent id)";
    case 'Q': return "BINPERSID (a persistent id)";
    case 0x82:
    case 0x83:
    case 0x84: return "EXT (a registered extension)";
    case 0x97: return "NEXT_BUFFER (an out-of-band buffer)";
    case 0x98: return "READONLY_BUFFER (an out-of-band buffer)";
    case 'I':
    case 'L':
    case 'F':
    case 'S':
    case 'V':
    case 'p':
    case 'g':
    case 'l':
    case 'd': return "a protocol 0/1 text opcode (ferret reads protocols 2 to 5)";
    default: return nullptr;
  }
}

class Parser {
 public:
  Parser(std::string_view bytes, const std::string& name, const PickleLimits& limits)
      : in_(bytes), name_(name), limits_(limits) {}

  PickleDocument run() {
    while (true) {
      if (pos_ >= in_.size()) {
        if (limits_.keep_truncated && !stack_.empty()) return close_truncated();
        fail(pos_, "ends before its STOP opcode (truncated)");
      }
      const std::size_t at = pos_;
      const auto op = static_cast<unsigned char>(in_[pos_++]);
      if (op == kStop) break;
      try {
        step(op, at);
      } catch (const Truncated&) {
        if (stack_.empty()) fail(at, "argument runs past the end");
        return close_truncated();
      }
      if (limits_.max_bytes > 0 && bytes_ > limits_.max_bytes)
        fail(at, fmt::format("needs more than the {} MiB memory bound to hold", limits_.max_bytes >> 20));
    }
    if (stack_.size() != 1)
      fail(pos_ - 1, fmt::format("STOP with {} values on the stack (expected exactly one)", stack_.size()));
    doc_.root = stack_.back();
    doc_.bytes = bytes_;
    return std::move(doc_);
  }

 private:
  [[noreturn]] void fail(std::size_t at, const std::string& what) const {
    throw InputError(fmt::format("{}: not a readable pickle: byte {}: {}", name_, at, what));
  }
  struct Truncated {};
  std::string_view take(std::size_t n, std::size_t at) {
    if (n > in_.size() - pos_) {
      if (limits_.keep_truncated) throw Truncated{};
      fail(at, fmt::format("argument of {} bytes runs past the end", n));
    }
    const std::string_view s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::uint64_t unsigned_le(std::size_t n, std::size_t at) {
    const std::string_view s = take(n, at);
    std::uint64_t v = 0;
    for (std::size_t k = 0; k < n; ++k) v |= std::uint64_t{static_cast<unsigned char>(s[k])} << (8 * k);
    return v;
  }
  PickleValue pop(std::size_t at) {
    if (stack_.size() <= floor()) fail(at, "pops from an empty stack");
    PickleValue v = stack_.back();
    stack_.pop_back();
    return v;
  }
  PickleValue& top(std::size_t at) {
    if (stack_.size() <= floor()) fail(at, "needs a value on the stack");
    return stack_.back();
  }
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  std::size_t pop_mark(std::size_t at) {
    if (marks_.empty()) fail(at, "no MARK to pop");
    const std::size_t m = marks_.back();
    marks_.pop_back();
    return m;
  }
  void push(PickleValue v) {
    stack_.push_back(v);
    bytes_ += sizeof(PickleValue);
  }
  PickleValue new_string(std::string_view s, PickleKind kind) {
    PickleValue v;
    v.kind = kind;
    v.ref = static_cast<std::uint32_t>(doc_.strings.size());
    doc_.strings.emplace_back(s);
    bytes_ += s.size() + sizeof(std::string);
    return v;
  }
  PickleValue new_list(PickleKind kind, std::vector<PickleValue> items = {}) {
    PickleValue v;
    v.kind = kind;
    v.ref = static_cast<std::uint32_t>(doc_.lists.size());
    bytes_ += items.size() * sizeof(PickleValue) + sizeof(std::vector<PickleValue>);
    doc_.lists.push_back(std::move(items));
    return v;
  }
  std::vector<PickleValue> take_from_mark(std::size_t at) {
    const std::size_t m = pop_mark(at);
    std::vector<PickleValue> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  std::vector<PickleValue>& list_target(std::size_t at, std::size_t below) {
    if (stack_.size() <= floor() + below) fail(at, "needs a list under its items");
    const PickleValue& target = stack_[stack_.size() - 1 - below];
    if (target.kind != PickleKind::kList && target.kind != PickleKind::kSet)
      fail(at, fmt::format("appends to a {}, not a list", pickle_kind_name(target.kind)));
    return doc_.lists[target.ref];
  }
  void set_items(std::vector<PickleValue> kv, std::size_t at) {
    if (kv.size() % 2 != 0) fail(at, "SETITEMS with an odd number of values");
    if (stack_.empty() || stack_.size() <= floor() || stack_.back().kind != PickleKind::kDict)
      fail(at, "sets items on something that is not a dict");
    auto& entries = doc_.dicts[stack_.back().ref];
    for (std::size_t k = 0; k < kv.size(); k += 2) entries.push_back({kv[k], kv[k + 1]});
    bytes_ += kv.size() / 2 * sizeof(std::pair<PickleValue, PickleValue>);
  }
  PickleValue int_value(std::int64_t i) {
    PickleValue v;
    v.kind = PickleKind::kInt;
    v.i = i;
    return v;
  }
  // Little-endian two's complement of any length; beyond 64 bits it saturates (flagged `big`).
  PickleValue long_value(std::string_view s) {
    PickleValue v = int_value(0);
    if (s.empty()) return v;
    const bool negative = (static_cast<unsigned char>(s.back()) & 0x80) != 0;
    std::size_t used = s.size();
    // Bytes past the 8th that only extend the sign do not change the value.
    while (used > 8 && static_cast<unsigned char>(s[used - 1]) == (negative ? 0xff : 0x00)) --used;
    if (used > 8 || (used == 8 && negative != ((static_cast<unsigned char>(s[7]) & 0x80) != 0))) {
      v.big = true;
      v.i = negative ? std::numeric_limits<std::int64_t>::min() : std::numeric_limits<std::int64_t>::max();
      return v;
    }
    std::uint64_t u = negative ? ~std::uint64_t{0} : 0;
    for (std::size_t k = 0; k < used; ++k) {
      u &= ~(std::uint64_t{0xff} << (8 * k));
      u |= std::uint64_t{static_cast<unsigned char>(s[k])} << (8 * k);
    }
    v.i = static_cast<std::int64_t>(u);
    return v;
  }
  void memo_put(std::uint64_t index, std::size_t at) {
    memo_[index] = top(at);
    bytes_ += sizeof(PickleValue) + 16;
  }
  void memo_get(std::uint64_t index, std::size_t at) {
    const auto it = memo_.find(index);
    if (it == memo_.end()) fail(at, fmt::format("memo entry {} was never stored", index));
    push(it->second);
  }

  // The input ended before STOP. Each open MARK is closed from the innermost out as
  // the opcode that would have ended it: its items go to the dict (in pairs) or list right under
  // it, and that container is marked incomplete. A half-written record - an incomplete dict
  // bound for a list - is dropped, so what a reader sees is whole records and lists that stop
  // early. Items of a MARK that no container owns (a tuple being built) are dropped.
  PickleDocument close_truncated() {
    doc_.truncated_at = in_.size();
    const auto note_incomplete = [&](const PickleValue& v) {
      if (v.kind == PickleKind::kDict) doc_.incomplete_dicts.insert(v.ref);
      if (v.kind == PickleKind::kList || v.kind == PickleKind::kSet) doc_.incomplete_lists.insert(v.ref);
    };
    // The last value pushed, when a container, may be one just begun (no MARK yet) or one between
    // two batches of 1,000 items: it cannot be told from a finished one, so it counts as begun.
    // At worst one finished record is left out; a half-written one is never taken as whole.
    note_incomplete(stack_.back());
    const auto attach = [&](const PickleValue& container, std::vector<PickleValue> items) {
      if (container.kind == PickleKind::kDict) {
        if (items.size() % 2 != 0) {  // a key without its value, or an item bound elsewhere
          items.pop_back();
          ++doc_.dropped_partial;
        }
        auto& entries = doc_.dicts[container.ref];
        for (std::size_t k = 0; k < items.size(); k += 2) entries.push_back({items[k], items[k + 1]});
      } else if (container.kind == PickleKind::kList || container.kind == PickleKind::kSet) {
        auto& list = doc_.lists[container.ref];
        for (const PickleValue& v : items) {
          if (v.kind == PickleKind::kDict && doc_.incomplete(v)) {
            ++doc_.dropped_partial;
            continue;
          }
          list.push_back(v);
        }
      } else {
        doc_.dropped_partial += items.size();
        return;
      }
      note_incomplete(container);
    };
    while (!marks_.empty()) {
      const std::size_t m = marks_.back();
      marks_.pop_back();
      std::vector<PickleValue> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
      stack_.resize(m);
      // A MARK at the same depth as the one outside it opens a tuple inside that batch, not a
      // batch of the container under both.
      const bool owned = m > 0 && (marks_.empty() || marks_.back() < m);
      if (owned)
        attach(stack_[m - 1], std::move(items));
      else
        doc_.dropped_partial += items.size();
    }
    // Values above the root that no MARK groups: single SETITEM / APPEND operands.
    if (stack_.size() > 1) attach(stack_[0], std::vector<PickleValue>(stack_.begin() + 1, stack_.end()));
    note_incomplete(stack_[0]);
    doc_.root = stack_[0];
    doc_.bytes = bytes_;
    return std::move(doc_);
  }

  void step(unsigned char op, std::size_t at) {
    switch (op) {
      case kProto: {
        const auto version = static_cast<unsigned char>(take(1, at)[0]);
        if (version < 2 || version > 5) fail(at, fmt::format("protocol {} (ferret reads protocols 2 to 5)", version));
        return;
      }
      case kFrame: take(8, at); return;  // frames only group opcodes for buffered reading
      case kMark:
        if (static_cast<int>(marks_.size()) >= limits_.max_nesting) fail(at, "nested deeper than ferret follows");
        marks_.push_back(stack_.size());
        return;
      case kPop:
        if (!marks_.empty() && stack_.size() == marks_.back())
          marks_.pop_back();  // POP of a MARK on top discards the mark
        else
          pop(at);
        return;
      case kPopMark: {
        const std::size_t m = pop_mark(at);
        stack_.resize(m);
        return;
      }
      case kDup: push(top(at)); return;
      case kNone: push({}); return;
      case kNewTrue:
      case kNewFalse: {
        PickleValue v;
        v.kind = PickleKind::kBool;
        v.i = op == kNewTrue ? 1 : 0;
        push(v);
        return;
      }
      case kBinInt: push(int_value(static_cast<std::int32_t>(static_cast<std::uint32_t>(unsigned_le(4, at))))); return;
      case kBinInt1: push(int_value(static_cast<std::int64_t>(unsigned_le(1, at)))); return;
      case kBinInt2: push(int_value(static_cast<std::int64_t>(unsigned_le(2, at)))); return;
      case kLong1: {
        const std::size_t n = unsigned_le(1, at);
        push(long_value(take(n, at)));
        return;
      }
      case kLong4: {
        const std::uint64_t n = unsigned_le(4, at);
        if (n > 0x7fffffff) fail(at, "LONG4 with a negative length");
        push(long_value(take(n, at)));
        return;
      }
      case kBinFloat: {
        const std::string_view s = take(8, at);
        std::uint64_t u = 0;
        for (int k = 0; k < 8; ++k) u = (u << 8) | static_cast<unsigned char>(s[static_cast<std::size_t>(k)]);
        PickleValue v;
        v.kind = PickleKind::kFloat;
        v.f = std::bit_cast<double>(u);
        push(v);
        return;
      }
      case kShortBinUnicode: push(new_string(take(unsigned_le(1, at), at), PickleKind::kString)); return;
      case kBinUnicode: push(new_string(take(unsigned_le(4, at), at), PickleKind::kString)); return;
      case kBinUnicode8: push(new_string(take(unsigned_le(8, at), at), PickleKind::kString)); return;
      case kShortBinString: push(new_string(take(unsigned_le(1, at), at), PickleKind::kString)); return;
      case kBinString: push(new_string(take(unsigned_le(4, at), at), PickleKind::kString)); return;
      case kShortBinBytes: push(new_string(take(unsigned_le(1, at), at), PickleKind::kBytes)); return;
      case kBinBytes: push(new_string(take(unsigned_le(4, at), at), PickleKind::kBytes)); return;
      case kBinBytes8:
      case kByteArray8: push(new_string(take(unsigned_le(8, at), at), PickleKind::kBytes)); return;
      case kEmptyList: push(new_list(PickleKind::kList)); return;
      case kEmptyTuple: push(new_list(PickleKind::kTuple)); return;
      case kEmptySet: push(new_list(PickleKind::kSet)); return;
      case kEmptyDict: {
        PickleValue v;
        v.kind = PickleKind::kDict;
        v.ref = static_cast<std::uint32_t>(doc_.dicts.size());
        doc_.dicts.emplace_back();
        bytes_ += sizeof(std::vector<std::pair<PickleValue, PickleValue>>);
        push(v);
        return;
      }
      case kTuple: push(new_list(PickleKind::kTuple, take_from_mark(at))); return;
      case kFrozenSet: push(new_list(PickleKind::kSet, take_from_mark(at))); return;
      case kTuple1:
      case kTuple2:
      case kTuple3: {
        const std::size_t n = op - kTuple1 + 1;
        if (stack_.size() < floor() + n) fail(at, fmt::format("TUPLE{} with fewer than {} values", n, n));
        std::vector<PickleValue> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
        stack_.resize(stack_.size() - n);
        push(new_list(PickleKind::kTuple, std::move(items)));
        return;
      }
      case kAppend: {
        const PickleValue v = pop(at);
        list_target(at, 0).push_back(v);
        bytes_ += sizeof(PickleValue);
        return;
      }
      case kAppends:
      case kAddItems: {
        std::vector<PickleValue> items = take_from_mark(at);
        auto& target = list_target(at, 0);
        target.insert(target.end(), items.begin(), items.end());
        bytes_ += items.size() * sizeof(PickleValue);
        return;
      }
      case kSetItem: {
        const PickleValue value = pop(at);
        const PickleValue key = pop(at);
        set_items({key, value}, at);
        return;
      }
      case kSetItems: set_items(take_from_mark(at), at); return;
      case kBinPut: memo_put(unsigned_le(1, at), at); return;
      case kLongBinPut: memo_put(unsigned_le(4, at), at); return;
      case kMemoize: memo_put(memo_.size(), at); return;
      case kBinGet: memo_get(unsigned_le(1, at), at); return;
      case kLongBinGet: memo_get(unsigned_le(4, at), at); return;
      default: break;
    }
    if (const char* refused = refused_opcode(op)) fail(at, fmt::format("opcode 0x{:02x} {} is refused", op, refused));
    fail(at, fmt::format("unknown opcode 0x{:02x}", op));
  }

  std::string_view in_;
  const std::string& name_;
  PickleLimits limits_;
  std::size_t pos_ = 0;
  std::uint64_t bytes_ = 0;
  std::vector<PickleValue> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, PickleValue> memo_;
  PickleDocument doc_;
};

}  // namespace

PickleDocument read_pickle(std::string_view bytes, const std::string& name, const PickleLimits& limits) {
  if (bytes.empty()) throw InputError(name + ": empty: no pickle in it");
  return Parser(bytes, name, limits).run();
}

}  // namespace ferret
