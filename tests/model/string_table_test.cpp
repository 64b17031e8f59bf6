#include "model/string_table.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ferret {
namespace {
namespace string_table_test {

TEST(StringTable, IdZeroIsTheEmptyString) {
  StringTable t;
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.view(kEmptyStr), "");
  EXPECT_EQ(t.intern(""), kEmptyStr);
  EXPECT_EQ(t.size(), 1u);
}

TEST(StringTable, EqualStringsShareAnIdDifferentOnesDoNot) {
  StringTable t;
  const StrId a = t.intern("aten::mm");
  const StrId b = t.intern("aten::addmm");
  std::string copy = "aten::";
  copy += "mm";  // equal text from a different buffer
  EXPECT_EQ(t.intern(copy), a);
  EXPECT_NE(a, b);
  EXPECT_NE(a, kEmptyStr);
  EXPECT_NE(b, kEmptyStr);
  EXPECT_EQ(t.view(a), "aten::mm");
  EXPECT_EQ(t.view(b), "aten::addmm");
  EXPECT_EQ(t.size(), 3u);
  // Prefixes, embedded NULs and case are distinct strings.
  EXPECT_NE(t.intern("aten::m"), a);
  EXPECT_NE(t.intern(std::string_view("aten::mm\0x", 10)), a);
  EXPECT_NE(t.intern("ATEN::MM"), a);
  EXPECT_EQ(t.view(t.intern(std::string_view("aten::mm\0x", 10))).size(), 10u);
}

TEST(StringTable, FindNeverInserts) {
  StringTable t;
  const StrId a = t.intern("kernel");
  EXPECT_EQ(t.find("kernel"), a);
  EXPECT_EQ(t.find("missing"), kEmptyStr);
  EXPECT_EQ(t.size(), 2u);
}

TEST(StringTable, ViewsStayValidAfter100kInserts) {
  StringTable t;
  std::vector<StrId> ids;
  std::vector<std::string_view> views;
  std::vector<const char*> data;
  for (int i = 0; i < 100; ++i) {
    ids.push_back(t.intern("early string #" + std::to_string(i)));
    views.push_back(t.view(ids.back()));
    data.push_back(views.back().data());
  }
  // 100k more strings of varied length: several arena blocks (1 MiB each) fill up.
  for (int i = 0; i < 100000; ++i)
    t.intern("later string " + std::to_string(i) + std::string(static_cast<std::size_t>(i % 40), 'x'));
  EXPECT_EQ(t.size(), 1u + 100u + 100000u);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(views[i], "early string #" + std::to_string(i));  // the old views still read the same bytes
    EXPECT_EQ(t.view(ids[i]).data(), data[i]);                  // and the text never moved
    EXPECT_EQ(t.intern("early string #" + std::to_string(i)), ids[i]);
  }
  EXPECT_EQ(t.view(t.find("later string 99999" + std::string(99999 % 40, 'x'))),
            "later string 99999" + std::string(99999 % 40, 'x'));
}

TEST(StringTable, VeryLongStringsAreStoredWhole) {
  StringTable t;
  const std::string big(600 * 1024, 'y');  // larger than a quarter of an arena block
  const StrId id = t.intern(big);
  const std::string_view v = t.view(id);
  for (int i = 0; i < 1000; ++i) t.intern(std::to_string(i));
  EXPECT_EQ(t.view(id), big);
  EXPECT_EQ(t.view(id).data(), v.data());
  EXPECT_EQ(t.intern(big), id);
}

TEST(StringTable, MovedTableKeepsItsStrings) {
  StringTable t;
  const StrId a = t.intern("alpha");
  StringTable moved = std::move(t);
  EXPECT_EQ(moved.view(a), "alpha");
  EXPECT_EQ(moved.intern("alpha"), a);
}

}  // namespace string_table_test
}  // namespace
}  // namespace ferret
