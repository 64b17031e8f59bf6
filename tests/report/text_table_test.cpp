// TextTable: columns sized by their widest cell, shrunk toward their minimum, optional columns
// dropped highest first; numbers never cut. Layouts below are worked out by hand.
#include "report/text_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ferret {
namespace {
namespace text_table_test {

const std::vector<TableColumn> kColumns = {
    {"name", 20, 4}, {"count", 0, 0, true}, {"where", 10, 5, false, 1}, {"note", 0, 4, false, 2}};
const std::vector<std::vector<std::string>> kRows = {{"alpha-beta-gamma", "12345", "hostA", "ok"},
                                                     {"x", "7", "a-long-place", "fine"}};

TEST(TextTable, ColumnsTakeTheirWidestCellUpToTheCap) {
  // name 16 (widest cell), count 5, where 10 (capped from 12), note 4: 2 + 16+5+10+4 + 3 = 40.
  const TextTable t(kColumns, kRows, 2, 80);
  EXPECT_EQ(t.column_width(0), 16u);
  EXPECT_EQ(t.column_width(1), 5u);
  EXPECT_EQ(t.column_width(2), 10u);
  EXPECT_EQ(t.column_width(3), 4u);
  EXPECT_EQ(t.render(kRows),
            "  name             count where      note\n"
            "  alpha-beta-gamma 12345 hostA      ok\n"
            "  x                    7 a-long-... fine\n");
}

TEST(TextTable, TheWidestSlackShrinksFirst) {
  // 40 -> 34: name has 12 to give, where 5; six columns come off name (16 -> 10).
  const TextTable t(kColumns, kRows, 2, 34);
  EXPECT_EQ(t.column_width(0), 10u);
  EXPECT_EQ(t.column_width(2), 10u);
  const std::string text = t.render(kRows);
  EXPECT_NE(text.find("  alpha-b... 12345 hostA      ok\n"), std::string::npos) << text;
  // 40 -> 25: 15 off. name gives 7 until its slack (5) equals where's, then the two alternate,
  // name first on a tie: 8 more steps leave name 5 and where 6.
  const TextTable narrow(kColumns, kRows, 2, 25);
  EXPECT_EQ(narrow.column_width(0), 5u);
  EXPECT_EQ(narrow.column_width(2), 6u);
  EXPECT_EQ(narrow.column_width(3), 4u);  // nothing dropped: the minimums fit
}

TEST(TextTable, OptionalColumnsDropHighestFirstAndNumbersAreNeverCut) {
  // At every minimum: 2 + 4+5+5+4 + 3 = 23. At 20 'note' (drop 2) goes: 2 + 4+5+5 + 2 = 18,
  // and the freed room is laid out again: name 4 + 2 = 6.
  const TextTable t(kColumns, kRows, 2, 20);
  EXPECT_EQ(t.column_width(3), 0u);
  EXPECT_EQ(t.column_width(1), 5u);  // "12345" is whole
  EXPECT_EQ(t.column_width(0) + t.column_width(2), 20u - 2 - 5 - 2);
  const std::string text = t.render(kRows);
  EXPECT_NE(text.find("12345"), std::string::npos) << text;
  EXPECT_EQ(text.find("note"), std::string::npos) << text;
  // At 14, 'where' goes too: 2 + name + 5 + 1 = 14 leaves name 6.
  const TextTable tiny(kColumns, kRows, 2, 14);
  EXPECT_EQ(tiny.column_width(2), 0u);
  EXPECT_EQ(tiny.column_width(0), 6u);
  EXPECT_EQ(tiny.render(kRows),
            "  name   count\n"
            "  alp... 12345\n"
            "  x          7\n");
}

TEST(TextTable, CellsAreMadeTerminalSafe) {
  const std::vector<std::vector<std::string>> rows = {{"evil\x1b]0;x\x07", "1"}};
  const TextTable t({{"name", 40}, {"n", 0, 0, true}}, rows, 0, 80);
  const std::string text = t.render(rows);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
}

}  // namespace text_table_test
}  // namespace
}  // namespace ferret
