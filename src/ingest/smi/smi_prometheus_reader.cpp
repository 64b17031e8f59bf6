// dcgm-exporter's metrics (Prometheus text exposition), scraped to a file.
#include "ingest/smi/smi_reader.h"

#include <fmt/format.h>

#include "base/terminal_text.h"
#include "base/text.h"

namespace ferret {

namespace {

// ---- dcgm-exporter (Prometheus text exposition) ----------------------------------------------------

class SmiPrometheusReader : public SmiReader {
 public:
  using SmiReader::SmiReader;

  void line(std::string_view text) override {
    std::string_view t = trim(text);
    if (t.empty() || t.front() == '#') return;
    std::size_t i = 0;
    while (i < t.size() && t[i] != '{' && t[i] != ' ' && t[i] != '\t') ++i;
    const std::string_view metric = t.substr(0, i);
    std::string gpu_label, host, uuid, model, bus;
    if (i < t.size() && t[i] == '{') {
      ++i;
      while (i < t.size() && t[i] != '}') {
        while (i < t.size() && (t[i] == ' ' || t[i] == ',')) ++i;
        const std::size_t name_start = i;
        while (i < t.size() && t[i] != '=' && t[i] != '}') ++i;
        if (i >= t.size() || t[i] != '=') break;
        const std::string_view label = trim(t.substr(name_start, i - name_start));
        ++i;
        if (i >= t.size() || t[i] != '"') {
          skip("a label value without quotes");
          return;
        }
        std::string value;
        for (++i; i < t.size() && t[i] != '"'; ++i) {
          if (t[i] == '\\' && i + 1 < t.size()) {
            ++i;
            value += t[i] == 'n' ? '\n' : t[i];
          } else {
            value += t[i];
          }
          if (value.size() > 256) value.resize(256);
        }
        if (i >= t.size()) {
          skip("an unterminated label value");
          return;
        }
        ++i;  // the closing quote
        if (label == "gpu")
          gpu_label = value;
        else if (label == "Hostname")
          host = value;
        else if (label == "UUID")
          uuid = value;
        else if (label == "modelName")
          model = value;
        else if (label == "pci_bus_id")
          bus = value;
      }
      if (i >= t.size()) {
        skip("labels without a closing brace");
        return;
      }
      ++i;
    }
    const std::vector<std::string_view> rest = smi_words(t.substr(std::min(i, t.size())));
    if (metric.empty() || rest.empty() || rest.size() > 2) {
      skip("not a `metric{labels} value [timestamp]` line");
      return;
    }
    // A metric name is [a-zA-Z_:][a-zA-Z0-9_:]* (the Prometheus text format); anything else is not a sample.
    bool valid_name = !metric.empty() && !(metric.front() >= '0' && metric.front() <= '9');
    for (const char ch : metric)
      valid_name = valid_name && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                                  ch == '_' || ch == ':');
    if (!valid_name) {
      skip("not a metric name");
      return;
    }
    const SmiColumn c = prometheus_column(metric);
    if (c.field == SmiField::kIgnore) {
      note_ignored(metric);
      return;
    }
    std::int64_t t_ns = kSmiNoTime;
    if (rest.size() == 2) {
      std::int64_t ms = 0;
      const auto [end, ec] = std::from_chars(rest[1].data(), rest[1].data() + rest[1].size(), ms);
      if (ec != std::errc() || end != rest[1].data() + rest[1].size() || ms < 0 || ms > kSmiMaxTimeNs / 1000000) {
        skip("a timestamp that is not milliseconds");
        return;
      }
      t_ns = ms * 1000000;
    }
    if (gpu_label.empty()) gpu_label = uuid.empty() ? "0" : uuid;
    const std::string key = host.empty() ? gpu_label : host + ":" + gpu_label;
    SmiGpu* g = gpu(key);
    if (g == nullptr) return;
    if (g->name.empty()) g->name = model;
    if (g->uuid.empty()) g->uuid = uuid;
    if (g->bus_id.empty()) g->bus_id = bus;
    const auto gi = static_cast<std::uint32_t>(g - log_.gpus.data());
    if (gi >= pending_.size()) pending_.resize(gi + 1);
    Pending& p = pending_[gi];
    const auto bit = std::uint64_t{1} << static_cast<unsigned>(c.field);
    if (p.open && ((p.fields & bit) != 0 || p.time_ns != t_ns)) flush(gi);
    if (!p.open) {
      p = Pending{};
      p.open = true;
      p.time_ns = t_ns;
      p.sample.time_ns = t_ns;
      p.sample.line = line_number;
    }
    p.fields |= bit;
    free_mib_ = p.free_mib;
    gr_active_ = p.gr_active;
    if (!set_value(g, p.sample, c, rest[0])) skip("a value that is not a number");
    p.free_mib = free_mib_;
    p.gr_active = gr_active_;
    free_mib_ = gr_active_ = kSmiNone;
  }

  void finish() override {
    for (std::uint32_t gi = 0; gi < pending_.size(); ++gi) flush(gi);
  }

 private:
  struct Pending {
    bool open = false;
    std::uint64_t fields = 0;
    std::int64_t time_ns = kSmiNoTime;
    SmiSample sample;
    double free_mib = kSmiNone, gr_active = kSmiNone;
  };
  std::vector<Pending> pending_;  // by GPU index in the log
  std::vector<std::string> ignored_seen_;

  void flush(std::uint32_t gi) {
    Pending& p = pending_[gi];
    if (!p.open) return;
    gr_active_ = p.gr_active;
    free_mib_ = p.free_mib;
    settle(p.sample);
    add_sample(log_.gpus[gi], p.sample);
    p.open = false;
  }

  void note_ignored(std::string_view metric) {
    if (ignored_seen_.size() >= 64) return;
    const std::string name = terminal_safe(metric.substr(0, 80));
    if (std::find(ignored_seen_.begin(), ignored_seen_.end(), name) != ignored_seen_.end()) return;
    ignored_seen_.push_back(name);
    source().ignored_columns.push_back(name);
  }
};

}  // namespace

std::unique_ptr<SmiReader> make_prometheus_reader(SmiLog& log, SmiSource& src, const SmiReadOptions& options) {
  return std::make_unique<SmiPrometheusReader>(log, src, options);
}

}  // namespace ferret
