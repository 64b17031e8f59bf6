// nvidia-smi dmon and pmon, and dcgmi dmon: whitespace columns under a '#' heading.
#include "ingest/smi/smi_reader.h"

#include <fmt/format.h>

#include "base/terminal_text.h"
#include "base/text.h"

namespace ferret {

namespace {

// ---- nvidia-smi dmon -------------------------------------------------------------------------------

class SmiDmonReader : public SmiReader {
 public:
  using SmiReader::SmiReader;

  void line(std::string_view text) override {
    std::string_view t = trim(text);
    if (t.empty()) return;
    if (t.front() == '#') {
      const std::vector<std::string_view> words = smi_words(t.substr(1));
      bool names_gpu = false;
      for (std::string_view w : words) names_gpu = names_gpu || ascii_lower(w) == "gpu";
      if (names_gpu) set_header(words);  // the units line (`# Idx W C ...`) is skipped
      return;
    }
    if (columns_.empty()) {
      skip("a row before any `# gpu ...` header");
      return;
    }
    const std::vector<std::string_view> words = smi_words(t);
    // Whitespace columns cannot be realigned: a row of another width is skipped.
    if (words.size() != columns_.size()) {
      ++source().ragged_rows;
      skip(fmt::format("{} fields where the header has {}", words.size(), columns_.size()));
      return;
    }
    row(words);
  }

 protected:
  std::vector<SmiColumn> columns_;

  void set_header(const std::vector<std::string_view>& words) {
    columns_.clear();
    std::vector<std::string> read, ignored;
    for (std::string_view w : words) {
      SmiColumn c = dmon_column(w);
      (c.field == SmiField::kIgnore ? ignored : read).push_back(terminal_safe(c.name.substr(0, 80)));
      columns_.push_back(std::move(c));
    }
    if (source().columns.empty()) {
      source().columns = std::move(read);
      source().ignored_columns = std::move(ignored);
    }
  }

  // The row's time from Date and Time columns: both (-o DT) give wall-clock time, Time alone a
  // time of day (placed on 1970-01-01, so not absolute), neither kSmiNoTime.
  std::int64_t row_time(const std::vector<std::string_view>& words, bool& absolute) const {
    std::string_view date, clock;
    for (std::size_t i = 0; i < columns_.size(); ++i) {
      if (columns_[i].field == SmiField::kDate) date = words[i];
      if (columns_[i].field == SmiField::kClock) clock = words[i];
    }
    absolute = !date.empty();
    if (clock.empty()) return kSmiNoTime;
    const std::int64_t t = parse_smi_time(std::string(date.empty() ? "19700101" : date) + " " + std::string(clock));
    return t == kSmiNoTime ? t : t - options_.utc_offset_s * 1000000000;
  }

  virtual void row(const std::vector<std::string_view>& words) {
    std::string key;
    for (std::size_t i = 0; i < columns_.size(); ++i)
      if (columns_[i].field == SmiField::kKey) key = std::string(words[i].substr(0, 64));
    double idx = 0;
    if (key.empty() || smi_parse_number(key, idx) != SmiValue::kNumber) {
      skip("no GPU index");
      return;
    }
    SmiSample s;
    s.line = line_number;
    bool absolute = false;
    s.time_ns = row_time(words, absolute);
    if (!absolute) s.time_ns = kSmiNoTime;  // a time of day alone cannot be placed on a date
    std::size_t garbage = 0;
    for (std::size_t i = 0; i < columns_.size(); ++i)
      if (!set_value(nullptr, s, columns_[i], words[i])) ++garbage;
    if (garbage > 0) {
      skip("a value that is not a number");
      return;
    }
    settle(s);
    if (SmiGpu* g = gpu(key)) add_sample(*g, s);
  }
};

// ---- nvidia-smi pmon -------------------------------------------------------------------------------

// One row per process per GPU and sample (`-` for no process). A GPU's sample is the sum of its
// processes' sm (capped at 100). Samples are told apart by their Date/Time when printed, else by
// the order of rows: a GPU index lower than the row before, or a (GPU, pid) already seen, starts
// the next sample.
class SmiPmonReader : public SmiDmonReader {
 public:
  using SmiDmonReader::SmiDmonReader;

  void finish() override { flush(); }

 private:
  struct Pending {
    std::uint32_t gpu = 0;
    SmiSample sample;
  };
  std::vector<Pending> pending_;                              // this sample's GPUs, in row order
  std::vector<std::pair<std::uint32_t, std::int64_t>> seen_;  // (gpu, pid) in this sample
  std::int64_t pending_time_ = kSmiNoTime;
  double last_index_ = -1;

  void flush() {
    for (Pending& p : pending_) {
      if (smi_has(p.sample.util_pct)) p.sample.util_pct = std::min(100.0, p.sample.util_pct);
      add_sample(log_.gpus[p.gpu], p.sample);
    }
    pending_.clear();
    seen_.clear();
  }

  void row(const std::vector<std::string_view>& words) override {
    std::string_view key, pid_text, command, sm_text;
    for (std::size_t i = 0; i < columns_.size(); ++i) {
      const SmiColumn& c = columns_[i];
      if (c.field == SmiField::kKey) key = words[i];
      if (c.field == SmiField::kPid) pid_text = words[i];
      if (c.field == SmiField::kCommand) command = words[i];
      if (c.field == SmiField::kUtil) sm_text = words[i];
    }
    double index = 0;
    if (smi_parse_number(key, index) != SmiValue::kNumber) {
      skip("no GPU index");
      return;
    }
    bool absolute = false;
    std::int64_t t = row_time(words, absolute);
    if (!absolute) t = kSmiNoTime;
    double pid_value = -1;
    const bool has_process = smi_parse_number(pid_text, pid_value) == SmiValue::kNumber;
    const std::int64_t pid =
        has_process && pid_value >= 0 && pid_value < 9.2e18 ? static_cast<std::int64_t>(pid_value) : -1;
    double sm = 0;
    const SmiValue sm_read = smi_parse_number(sm_text, sm);
    if (sm_read == SmiValue::kGarbage) {
      skip("an sm value that is not a number");
      return;
    }
    if (sm_read == SmiValue::kNotAvailable) {
      if (has_process) note_na();
      sm = 0;  // an idle GPU (pid -) or a process with no sample in the period: nothing ran
    }
    SmiGpu* g = gpu(key);
    if (g == nullptr) return;
    const auto gi = static_cast<std::uint32_t>(g - log_.gpus.data());
    // A sample holds at most kSmiMaxProcesses rows: the search for a repeated (GPU, pid) stays short.
    const bool new_sample = seen_.size() >= kSmiMaxProcesses ||
                            (t != kSmiNoTime ? t != pending_time_
                                             : index < last_index_ || std::find(seen_.begin(), seen_.end(),
                                                                                std::pair{gi, pid}) != seen_.end());
    if (new_sample) flush();
    pending_time_ = t;
    last_index_ = index;
    seen_.push_back({gi, pid});
    auto it = std::find_if(pending_.begin(), pending_.end(), [&](const Pending& p) { return p.gpu == gi; });
    if (it == pending_.end()) {
      Pending p;
      p.gpu = gi;
      p.sample.time_ns = t;
      p.sample.line = line_number;
      p.sample.util_pct = 0;
      pending_.push_back(p);
      it = pending_.end() - 1;
    }
    it->sample.util_pct += sm;
    if (!has_process) return;
    SmiGpu& gref = log_.gpus[gi];
    auto proc =
        std::find_if(gref.processes.begin(), gref.processes.end(), [&](const SmiProcess& p) { return p.pid == pid; });
    if (proc == gref.processes.end()) {
      if (gref.processes.size() >= kSmiMaxProcesses) return;
      SmiProcess p;
      p.pid = pid;
      p.command = terminal_safe(command.substr(0, 64));
      gref.processes.push_back(p);
      proc = gref.processes.end() - 1;
    }
    ++proc->samples;
    proc->sm_pct_sum += sm;
  }
};

// ---- dcgmi dmon ------------------------------------------------------------------------------------

class SmiDcgmiReader : public SmiReader {
 public:
  using SmiReader::SmiReader;

  void line(std::string_view text) override {
    std::string_view t = trim(text);
    if (t.empty() || t == "ID" || t.starts_with("ID ")) return;
    if (t.front() == '#') {
      const std::vector<std::string_view> words = smi_words(t.substr(1));
      if (words.empty() || ascii_lower(words.front()) != "entity") return;
      columns_.clear();
      std::vector<std::string> read, ignored;
      for (std::size_t i = 1; i < words.size(); ++i) {
        SmiColumn c = dcgmi_column(words[i]);
        (c.field == SmiField::kIgnore ? ignored : read).push_back(terminal_safe(c.name.substr(0, 80)));
        columns_.push_back(std::move(c));
      }
      if (source().columns.empty()) {
        source().columns = std::move(read);
        source().ignored_columns = std::move(ignored);
      }
      return;
    }
    if (columns_.empty()) {
      skip("a row before any `#Entity ...` header");
      return;
    }
    // `GPU 0   0.523 ...`, `GPU-I 3 ...`: the entity is the first two words.
    const std::vector<std::string_view> words = smi_words(t);
    if (words.size() != columns_.size() + 2) {
      ++source().ragged_rows;
      skip(fmt::format("{} values where the header has {}", words.size() < 2 ? 0 : words.size() - 2, columns_.size()));
      return;
    }
    double id = 0;
    if (smi_parse_number(words[1], id) != SmiValue::kNumber) {
      skip("no entity id");
      return;
    }
    SmiSample s;
    s.time_ns = kSmiNoTime;
    s.line = line_number;
    for (std::size_t i = 0; i < columns_.size(); ++i)
      if (!set_value(nullptr, s, columns_[i], words[i + 2])) {
        skip("a value that is not a number");
        return;
      }
    settle(s);
    const std::string key = std::string(words[0].substr(0, 16)) + " " + std::string(words[1].substr(0, 32));
    if (SmiGpu* g = gpu(key)) add_sample(*g, s);
  }

 private:
  std::vector<SmiColumn> columns_;
};

}  // namespace

std::unique_ptr<SmiReader> make_dmon_reader(SmiLog& log, SmiSource& src, const SmiReadOptions& options) {
  return std::make_unique<SmiDmonReader>(log, src, options);
}

std::unique_ptr<SmiReader> make_pmon_reader(SmiLog& log, SmiSource& src, const SmiReadOptions& options) {
  return std::make_unique<SmiPmonReader>(log, src, options);
}

std::unique_ptr<SmiReader> make_dcgmi_reader(SmiLog& log, SmiSource& src, const SmiReadOptions& options) {
  return std::make_unique<SmiDcgmiReader>(log, src, options);
}

}  // namespace ferret
