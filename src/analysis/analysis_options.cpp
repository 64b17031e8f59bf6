#include "analysis/analysis_options.h"

#include <charconv>
#include <optional>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/text.h"

namespace ferret {

namespace {

// A step number: digits only, fits int64. nullopt for "" ; throws for anything else.
std::optional<std::int64_t> step_number(std::string_view s, bool& ok) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end != s.data() + s.size() || value < 0) ok = false;
  return value;
}

}  // namespace

void parse_step_range(const std::string& text, AnalysisOptions& options) {
  if (text.empty()) return;
  const std::string_view all = text;
  const std::size_t dash = all.find('-');
  bool ok = true;
  std::optional<std::int64_t> first;
  std::optional<std::int64_t> last;
  if (dash == std::string_view::npos) {
    first = last = step_number(all, ok);
  } else {
    first = step_number(all.substr(0, dash), ok);
    last = step_number(all.substr(dash + 1), ok);
  }
  if (!ok || (!first && !last)) {
    throw OptionError(fmt::format("--steps: expected A-B, A-, -B or N (step numbers), got \"{}\"", text));
  }
  options.first_step = first;
  options.last_step = last;
}

void parse_time_range(const std::string& text, AnalysisOptions& options) {
  if (text.empty()) return;
  const std::size_t dash = text.find('-');
  auto number = [](std::string_view s, std::optional<double>& out) {
    if (s.empty()) return true;
    double v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || !(v >= 0) || v > 1e12) return false;
    out = v;
    return true;
  };
  std::optional<double> from, to;
  const std::string_view all = text;
  const bool ok = dash != std::string_view::npos && dash > 0 && number(all.substr(0, dash), from) &&
                  number(all.substr(dash + 1), to) && (!to || *to > *from);
  if (!ok) {
    throw OptionError(
        fmt::format("--time: expected A-B or A- (milliseconds from the trace start, A < B), got \"{}\"", text));
  }
  options.time_from_ms = from;
  options.time_to_ms = to;
}

TimelineDefinition parse_timeline_definition(const std::string& text) {
  if (text == "ferret") return TimelineDefinition::kFerret;
  if (text == "hta") return TimelineDefinition::kHta;
  throw OptionError(fmt::format("--timeline-definition: expected ferret or hta, got \"{}\"", text));
}

std::string DataLoaderSettings::describe() const {
  std::string out = "DataLoader(";
  auto add = [&](const char* name, const std::string& value) {
    if (out.back() != '(') out += ", ";
    out += fmt::format("{}={}", name, value);
  };
  auto flag = [](int v) { return std::string(v ? "True" : "False"); };
  if (batch_size >= 0) add("batch_size", std::to_string(batch_size));
  if (num_workers >= 0) add("num_workers", std::to_string(num_workers));
  if (pin_memory >= 0) add("pin_memory", flag(pin_memory));
  if (prefetch_factor >= 0) add("prefetch_factor", std::to_string(prefetch_factor));
  if (persistent_workers >= 0) add("persistent_workers", flag(persistent_workers));
  return out + ")";
}

std::vector<DataLoaderSettings> parse_dataloader_settings(const std::string& json_text, const std::string& source) {
  if (json_nesting_depth(json_text, 8) > 8) throw InputError(source + ": not a JSON list of DataLoader settings");
  const nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_array()) throw InputError(source + ": not a JSON list of DataLoader settings");
  std::vector<DataLoaderSettings> out;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& o = j[i];
    if (!o.is_object()) throw InputError(fmt::format("{}: entry {} is not an object", source, i));
    DataLoaderSettings s;
    auto number = [&](const char* key, std::int64_t& field) {
      const auto it = o.find(key);
      if (it == o.end() || it->is_null()) return;
      if (!it->is_number_integer() || it->get<std::int64_t>() < 0)
        throw InputError(fmt::format("{}: entry {}: {} is not a count", source, i, key));
      field = it->get<std::int64_t>();
    };
    auto boolean = [&](const char* key, int& field) {
      const auto it = o.find(key);
      if (it == o.end() || it->is_null()) return;
      if (!it->is_boolean()) throw InputError(fmt::format("{}: entry {}: {} is not true or false", source, i, key));
      field = it->get<bool>() ? 1 : 0;
    };
    number("batch_size", s.batch_size);
    number("num_workers", s.num_workers);
    number("prefetch_factor", s.prefetch_factor);
    boolean("pin_memory", s.pin_memory);
    boolean("persistent_workers", s.persistent_workers);
    out.push_back(s);
  }
  return out;
}

}  // namespace ferret
