// nvidia-smi --query-gpu, rocm-smi --csv and amd-smi metric --csv: one row per GPU per sample.
#include "ingest/smi/smi_reader.h"

#include <fmt/format.h>

#include "base/terminal_text.h"
#include "base/text.h"

namespace ferret {

namespace {

// ---- CSV formats: nvidia-smi --query-gpu, rocm-smi, amd-smi -------------------------------------

class SmiCsvReader : public SmiReader {
 public:
  SmiCsvReader(SmiLog& log, SmiSource& src, const SmiReadOptions& options, SmiColumnMapper mapper)
      : SmiReader(log, src, options), mapper_(mapper) {
    if (src.format == SmiFormat::kQueryCsv && !options.columns.empty()) {
      given_columns_ = true;
      set_header(options.columns);
    }
  }

  void line(std::string_view text) override {
    if (trim(text).empty()) return;
    if (is_header(text)) {
      set_header(text);
      return;
    }
    if (columns_.empty()) {
      skip("a row before any header");
      return;
    }
    std::vector<std::string_view> cells = smi_split(text, ',');
    if (cells.size() != columns_.size()) {
      // Fewer than half the columns, or a single field: not a row of this table.
      if (cells.size() * 2 < columns_.size() || cells.size() < 2) {
        skip(fmt::format("{} fields where the header has {}", cells.size(), columns_.size()));
        return;
      }
      ++source().ragged_rows;
    }
    SmiSample s;
    s.time_ns = kSmiNoTime;
    s.line = line_number;
    std::string key;
    std::int64_t time_ns = kSmiNoTime;
    std::size_t read = 0, garbage = 0;
    // The identity first: name/uuid/bus land on the GPU the row belongs to.
    for (std::size_t i = 0; i < cells.size() && i < columns_.size(); ++i) {
      const SmiColumn& c = columns_[i];
      if (c.field == SmiField::kKey && !smi_not_available(cells[i])) key = std::string(cells[i].substr(0, 128));
      if (c.field == SmiField::kTime || c.field == SmiField::kEpochS) {
        SmiSample probe;
        probe.time_ns = kSmiNoTime;
        if (set_value(nullptr, probe, c, cells[i])) time_ns = probe.time_ns;
      }
    }
    for (std::size_t i = 0; i < cells.size() && i < columns_.size(); ++i) {
      if (columns_[i].field == SmiField::kIgnore) continue;
      if (set_value(nullptr, s, columns_[i], cells[i]))
        ++read;
      else
        ++garbage;
    }
    settle(s);
    if (read == 0 || garbage * 2 > columns_.size()) {
      skip("no readable value");
      return;
    }
    if (key.empty()) key = fallback_key(cells, time_ns);
    SmiGpu* g = gpu(key);
    if (g == nullptr) return;
    for (std::size_t i = 0; i < cells.size() && i < columns_.size(); ++i) {
      const SmiField f = columns_[i].field;
      if (f == SmiField::kName || f == SmiField::kUuid || f == SmiField::kBusId) set_value(g, s, columns_[i], cells[i]);
    }
    add_sample(*g, s);
  }

 private:
  SmiColumnMapper mapper_;
  std::vector<SmiColumn> columns_;
  bool given_columns_ = false;
  bool has_identity_ = false;
  std::int64_t group_time_ = kSmiNoTime;
  std::size_t position_in_group_ = 0;

  bool is_header(std::string_view text) const {
    const std::vector<std::string_view> cells = smi_split(text, ',');
    // A header holds no number where a value would be (checked first: it settles every data row
    // at its first number, before the column names are looked up), and names known columns.
    for (std::string_view c : cells) {
      double v = 0;
      if (smi_parse_number(c, v) == SmiValue::kNumber) return false;
    }
    for (std::string_view c : cells) {
      const std::size_t bracket = c.find(" [");
      const std::string_view name = trim(c.substr(0, bracket));
      if (mapper_(name, "").field != SmiField::kIgnore) return true;
    }
    return false;
  }

  void set_header(std::string_view text) {
    if (given_columns_ && !columns_.empty() && text != options_.columns) {
      source().notes.push_back(fmt::format("line {}: the log's own header replaces --columns", line_number));
      given_columns_ = false;
    }
    columns_.clear();
    has_identity_ = false;
    std::vector<std::string> read, ignored;
    for (std::string_view cell : smi_split(text, ',')) {
      std::string_view name = cell, unit;
      const std::size_t bracket = cell.find(" [");
      if (bracket != std::string_view::npos && cell.back() == ']') {
        name = trim(cell.substr(0, bracket));
        unit = cell.substr(bracket + 2, cell.size() - bracket - 3);
      }
      SmiColumn c = mapper_(name, unit);
      if (c.field == SmiField::kKey || c.field == SmiField::kUuid || c.field == SmiField::kBusId) has_identity_ = true;
      (c.field == SmiField::kIgnore ? ignored : read).push_back(terminal_safe(c.name.substr(0, 80)));
      columns_.push_back(std::move(c));
    }
    // The identity column when there is no index: the uuid, else the bus id.
    identity_column_ = columns_.size();
    bool has_index = false;
    for (const SmiColumn& c : columns_) has_index = has_index || c.field == SmiField::kKey;
    for (SmiField f : {SmiField::kUuid, SmiField::kBusId})
      for (std::size_t i = 0; i < columns_.size() && !has_index; ++i)
        if (identity_column_ == columns_.size() && columns_[i].field == f) identity_column_ = i;
    if (source().columns.empty()) {
      source().columns = std::move(read);
      source().ignored_columns = std::move(ignored);
    }
    if (!has_identity_ && source().notes.empty())
      source().notes.push_back(
          "no index, uuid or pci.bus_id column: rows sharing a timestamp are told apart by their order (one GPU when "
          "no timestamp either)");
  }

  std::size_t identity_column_ = 0;

  std::string fallback_key(const std::vector<std::string_view>& cells, std::int64_t time_ns) {
    if (identity_column_ < cells.size() && identity_column_ < columns_.size() &&
        !smi_not_available(cells[identity_column_]))
      return std::string(cells[identity_column_].substr(0, 128));
    if (time_ns == kSmiNoTime) return "0";
    if (time_ns != group_time_) group_time_ = time_ns, position_in_group_ = 0;
    return std::to_string(position_in_group_++);
  }
};

}  // namespace

std::unique_ptr<SmiReader> make_csv_reader(SmiLog& log, SmiSource& src, const SmiReadOptions& options,
                                           SmiColumnMapper mapper) {
  return std::make_unique<SmiCsvReader>(log, src, options, mapper);
}

}  // namespace ferret
