#include "report/text_table.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/terminal_text.h"
#include "base/text.h"

namespace ferret {

namespace {

std::size_t line_width(const std::vector<TableColumn>& columns, const std::vector<std::size_t>& widths,
                       std::size_t indent) {
  std::size_t total = indent;
  bool first = true;
  for (std::size_t i = 0; i < widths.size(); ++i) {
    if (widths[i] == 0) continue;
    total += widths[i] + (first ? 0 : columns[i].gap);
    first = false;
  }
  return total;
}

std::string safe(const std::string& cell) { return terminal_safe(cell, {.keep_colour = true}); }

}  // namespace

TextTable::TextTable(std::vector<TableColumn> columns, const std::vector<std::vector<std::string>>& rows,
                     std::size_t indent, std::size_t width)
    : columns_(std::move(columns)), indent_(indent) {
  std::vector<std::size_t> natural;
  std::vector<std::size_t> minimum;
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    const TableColumn& c = columns_[i];
    std::size_t widest = c.header.size();
    for (const std::vector<std::string>& r : rows)
      if (i < r.size()) widest = std::max(widest, safe(r[i]).size());
    if (c.cap != 0 && !c.right) widest = std::min(widest, c.cap);
    widest = std::max<std::size_t>(widest, 1);
    std::size_t narrowest = c.min_width == 0 ? widest : std::min(c.min_width, widest);
    if (c.right)  // numbers are never cut: the column keeps its widest number
      for (const std::vector<std::string>& r : rows)
        if (i < r.size()) narrowest = std::max(narrowest, std::min(widest, safe(r[i]).size()));
    natural.push_back(widest);
    minimum.push_back(narrowest);
  }
  std::vector<std::size_t> droppable;
  for (std::size_t i = 0; i < columns_.size(); ++i)
    if (columns_[i].drop > 0) droppable.push_back(i);
  std::stable_sort(droppable.begin(), droppable.end(),
                   [&](std::size_t a, std::size_t b) { return columns_[a].drop > columns_[b].drop; });

  std::vector<std::size_t> gaps;
  for (const TableColumn& c : columns_) gaps.push_back(c.gap);
  std::vector<bool> shown(columns_.size(), true);
  for (std::size_t dropped = 0;; ++dropped) {
    widths_.assign(columns_.size(), 0);
    for (std::size_t i = 0; i < columns_.size(); ++i) {
      columns_[i].gap = gaps[i];
      if (shown[i]) widths_[i] = natural[i];
    }
    // Wide gaps close to one space before any text is cut, the widest (then the last) first.
    while (line_width(columns_, widths_, indent_) > width) {
      std::size_t widest = columns_.size();
      for (std::size_t i = 0; i < columns_.size(); ++i)
        if (shown[i] && columns_[i].gap > 1 && (widest == columns_.size() || columns_[i].gap >= columns_[widest].gap))
          widest = i;
      if (widest == columns_.size()) break;
      --columns_[widest].gap;
    }
    // Shrink the column with the most room to give, one column at a time, so the cut spreads
    // over the wide text columns instead of eating one of them.
    while (line_width(columns_, widths_, indent_) > width) {
      std::size_t best = columns_.size();
      std::size_t best_slack = 0;
      for (std::size_t i = 0; i < columns_.size(); ++i) {
        const std::size_t slack = shown[i] ? widths_[i] - minimum[i] : 0;
        if (slack > best_slack) {
          best = i;
          best_slack = slack;
        }
      }
      if (best == columns_.size()) break;
      --widths_[best];
    }
    // Still too wide at every minimum: drop the next optional column and lay out again.
    if (line_width(columns_, widths_, indent_) <= width || dropped == droppable.size()) break;
    shown[droppable[dropped]] = false;
  }
}

std::string TextTable::header() const {
  std::vector<std::string> cells;
  cells.reserve(columns_.size());
  for (std::size_t i = 0; i < columns_.size(); ++i)
    cells.push_back(columns_[i].right ? fit_width(columns_[i].header, widths_[i]) : columns_[i].header);
  return row(cells);
}

std::string TextTable::row(const std::vector<std::string>& cells) const {
  std::string out(indent_, ' ');
  bool first = true;
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    if (widths_[i] == 0) continue;
    if (!first) out.append(columns_[i].gap, ' ');
    first = false;
    const std::string cell = i < cells.size() ? cells[i] : std::string();
    if (columns_[i].right)
      out += fmt::format("{:>{}}", safe(cell), widths_[i]);
    else
      out += fmt::format("{:<{}}", fit_width(cell, widths_[i]), widths_[i]);
  }
  while (out.size() > indent_ && out.back() == ' ') out.pop_back();
  return out + '\n';
}

std::string TextTable::render(const std::vector<std::vector<std::string>>& rows) const {
  std::string out = header();
  for (const std::vector<std::string>& r : rows) out += row(r);
  return out;
}

std::vector<std::vector<std::string>> plain_cells(std::vector<std::vector<std::string>> rows) {
  for (auto& row : rows)
    for (std::string& cell : row) cell = terminal_safe(cell);
  return rows;
}

}  // namespace ferret
