// A text table that fits a layout width. Each column is as wide as its widest cell (up to a
// cap); when the line is still too wide, columns shrink toward their minimum (text cut with
// "...", numbers never cut) and then optional columns drop out, so a report keeps one line per
// row at --width 60 instead of wrapping mid-row.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ferret {

struct TableColumn {
  std::string header;
  std::size_t cap = 0;        // the widest it grows to for long cells
  std::size_t min_width = 0;  // the narrowest it may shrink to (0, or above the cap: the cap)
  bool right = false;         // right-aligned numbers: never cut, they overflow instead
  int drop = 0;               // 0: always shown; otherwise dropped when nothing else fits, highest first
  std::size_t gap = 1;        // spaces before the column (none before the first one shown)
};

// Cells keep Style's colours (a renderer may colour a cell); text read from an input must not,
// or a colour sequence written into a log would pass as ferret's own. This escapes every control
// character of every cell, colours included: for tables built from input text only.
std::vector<std::vector<std::string>> plain_cells(std::vector<std::vector<std::string>> rows);

class TextTable {
 public:
  // `rows` size the columns (each row one cell per column); `indent` spaces start each line, each
  // column's gap separates it from the one before, and `width` is the whole line's.
  TextTable(std::vector<TableColumn> columns, const std::vector<std::vector<std::string>>& rows, std::size_t indent,
            std::size_t width);

  std::string header() const;
  // One line ending in '\n', trailing spaces trimmed; missing cells are empty.
  std::string row(const std::vector<std::string>& cells) const;
  // The header and every row.
  std::string render(const std::vector<std::vector<std::string>>& rows) const;
  // The width column `i` got (0 when it was dropped).
  std::size_t column_width(std::size_t i) const { return widths_[i]; }

 private:
  std::vector<TableColumn> columns_;
  std::vector<std::size_t> widths_;
  std::size_t indent_;
};

}  // namespace ferret
