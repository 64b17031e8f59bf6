// The safe pickle reader against pickles written by Python's own pickle module
// (tests/tools/make_pickles.py), protocols 2 to 5, and against every truncation of them.
#include "ingest/memory/pickle_reader.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "base/input_error.h"
#include "test_util.h"

namespace ferret {
namespace {
namespace pickle_reader_test {

const std::string& pickle_dir() {
  static const std::string dir = test::python_generated_dir("tests/tools/make_pickles.py");
  return dir;
}

#define REQUIRE_PICKLES() \
  if (pickle_dir().empty()) GTEST_SKIP() << "SKIPPED: /usr/bin/python3 could not write the test pickles"

std::string pickle_file(const std::string& name) { return test::read_file(pickle_dir() + "/" + name); }

class Protocols : public ::testing::TestWithParam<int> {};

TEST_P(Protocols, EveryPlainTypeReadsAsPythonWroteIt) {
  REQUIRE_PICKLES();
  const std::string name = "values-p" + std::to_string(GetParam()) + ".pickle";
  const PickleDocument doc = read_pickle(pickle_file(name), name);
  const PickleValue& root = doc.root;
  ASSERT_EQ(root.kind, PickleKind::kDict);
  const auto& ints = doc.items(*doc.get(root, "ints"));
  const std::vector<std::int64_t> expected = {
      0, 1, -1, 255, 256, 65535, 65536, -2147483648LL, 2147483647, 1LL << 40, -(1LL << 40), INT64_MAX, INT64_MIN};
  ASSERT_EQ(ints.size(), expected.size());
  for (std::size_t k = 0; k < expected.size(); ++k) {
    EXPECT_EQ(ints[k].kind, PickleKind::kInt) << k;
    EXPECT_EQ(ints[k].i, expected[k]) << k;
    EXPECT_FALSE(ints[k].big) << k;
  }
  const PickleValue* big = doc.get(root, "big");
  EXPECT_TRUE(big->big);
  EXPECT_EQ(big->i, INT64_MAX);
  EXPECT_EQ(doc.number_or(doc.get(root, "float"), 0), 1.5);
  EXPECT_EQ(doc.number_or(doc.get(root, "neg_float"), 0), -0.25);
  const auto& bools = doc.items(*doc.get(root, "bools"));
  ASSERT_EQ(bools.size(), 2u);
  EXPECT_EQ(bools[0].kind, PickleKind::kBool);
  EXPECT_EQ(bools[0].i, 1);
  EXPECT_EQ(bools[1].i, 0);
  EXPECT_EQ(doc.get(root, "none")->kind, PickleKind::kNone);
  EXPECT_EQ(doc.text(*doc.get(root, "text")), "h\xc3\xa9llo");
  EXPECT_EQ(doc.text(*doc.get(root, "long_text")), std::string(300, 'y'));
  if (GetParam() >= 3) {  // protocol 2 pickles bytes as a call (refused), so the script leaves them out
    EXPECT_EQ(doc.get(root, "bytes")->kind, PickleKind::kBytes);
    EXPECT_EQ(doc.text(*doc.get(root, "bytes")), std::string("\x00\x01\xff", 3));
  }
  const auto& tuples = doc.items(*doc.get(root, "tuples"));
  ASSERT_EQ(tuples.size(), 5u);
  for (std::size_t k = 0; k < 5; ++k) {
    EXPECT_EQ(tuples[k].kind, PickleKind::kTuple);
    EXPECT_EQ(doc.items(tuples[k]).size(), k);
  }
  const PickleValue* nested = doc.get(root, "nested");
  EXPECT_TRUE(doc.entries(*doc.get(*nested, "empty")).empty());
  const auto& list = doc.items(*doc.get(*nested, "list"));
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(doc.items(doc.items(list[1])[0])[0].i, 1);
  if (GetParam() >= 4) {  // EMPTY_SET and FROZENSET came with protocol 4
    EXPECT_EQ(doc.get(root, "set")->kind, PickleKind::kSet);
    EXPECT_EQ(doc.items(*doc.get(root, "set"))[0].i, 3);
    EXPECT_EQ(doc.items(*doc.get(root, "frozen"))[0].i, 4);
  }
  // The memo: both keys refer to the one list.
  EXPECT_EQ(doc.get(root, "shared_a")->ref, doc.get(root, "shared_b")->ref);
  EXPECT_EQ(doc.text(doc.items(*doc.get(root, "shared_a"))[0]), "x");
}

TEST_P(Protocols, ClassLookupsAreRefusedAtTheirByte) {
  REQUIRE_PICKLES();
  const std::string name = "global-p" + std::to_string(GetParam()) + ".pickle";
  const std::string offset = pickle_file("global-p" + std::to_string(GetParam()) + ".offset");
  try {
    read_pickle(pickle_file(name), name);
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(name + ": not a readable pickle: byte " + offset + ": "), std::string::npos) << what;
    EXPECT_NE(what.find("GLOBAL"), std::string::npos) << what;
    EXPECT_NE(what.find("refused"), std::string::npos) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Pickle, Protocols, ::testing::Values(2, 3, 4, 5));

TEST(PickleReader, EveryTruncationIsAnErrorNamingAByte) {
  REQUIRE_PICKLES();
  const std::string whole = pickle_file("values-p4.pickle");
  for (std::size_t n = 0; n < whole.size(); ++n) {
    try {
      read_pickle(whole.substr(0, n), "cut");
      ADD_FAILURE() << "a prefix of " << n << " bytes read as a whole pickle";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("cut: "), std::string::npos);
    }
  }
}

TEST(PickleReader, AContainerHoldingItselfReads) {
  REQUIRE_PICKLES();
  const PickleDocument doc = read_pickle(pickle_file("cycle.pickle"), "cycle");
  ASSERT_EQ(doc.root.kind, PickleKind::kList);
  ASSERT_EQ(doc.items(doc.root).size(), 1u);
  EXPECT_EQ(doc.items(doc.root)[0].ref, doc.root.ref);  // no copy, no leak: the arena holds it once
}

TEST(PickleReader, HandMadeStreams) {
  // PROTO 2, EMPTY_DICT, SHORT_BINUNICODE "k", BININT1 7, SETITEM, STOP.
  const std::string ok = std::string("\x80\x02}\x8c\x01kK\x07s.", 10);
  const PickleDocument doc = read_pickle(ok, "ok");
  EXPECT_EQ(doc.int_or(doc.get(doc.root, "k"), -1), 7);
  EXPECT_THROW(read_pickle(std::string("\x80\x01}.", 4), "p1"), InputError);  // protocol 1
  EXPECT_THROW(read_pickle("", "empty"), InputError);
  EXPECT_THROW(read_pickle(std::string("\x80\x02K\x01K\x02.", 7), "two"), InputError);  // two values at STOP
  EXPECT_THROW(read_pickle(std::string("\x80\x02h\x05.", 5), "memo"), InputError);      // memo never stored
  EXPECT_THROW(read_pickle(std::string("\x80\x02K\x01"
                                       "a.",
                                       6),
                           "append"),
               InputError);  // APPEND to an int
  EXPECT_THROW(read_pickle(std::string("\x80\x02\x8c\xff"
                                       "ab.",
                                       7),
                           "long"),
               InputError);  // string past the end
  try {
    read_pickle(std::string("\x80\x02\xfe.", 4), "unknown");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("byte 2: unknown opcode 0xfe"), std::string::npos) << e.what();
  }
}

// A dict whose keys are one memoized 1 MiB string used 200,000 times (5 bytes a use in the stream):
// looking a key up hashes each distinct text once. Before, every use of the key was hashed (200 GB of
// hashing; 33-77 s). Then the same text under two refs is one key (the last set wins), and a key no
// dict holds is found in none.
TEST(PickleReader, KeysSharedByTheMemoAreHashedOncePerText) {
  const std::string big(std::size_t{1} << 20, 'k');
  std::string s("\x80\x04}(X", 5);
  for (int i = 0; i < 4; ++i) s += static_cast<char>((big.size() >> (8 * i)) & 0xff);
  s += big + "\x94" + "K\x01";                                          // key 1: the big string (memo 0) -> 1
  for (int i = 0; i < 200'000; ++i) s += std::string("h\x00K\x02", 4);  // the same key -> 2
  s += std::string(
      "\x8c\x01"
      "aK\x03",
      5);  // "a" -> 3
  s += "X";
  for (int i = 0; i < 4; ++i) s += static_cast<char>((big.size() >> (8 * i)) & 0xff);
  s += big + "K\x04u.";  // the big text again under a new ref -> 4, set last
  const PickleDocument doc = read_pickle(s, "keys");
  ASSERT_EQ(doc.entries(doc.root).size(), 200'003u);
  EXPECT_EQ(doc.int_or(doc.get(doc.root, big), -1), 4);
  EXPECT_EQ(doc.int_or(doc.get(doc.root, "a"), -1), 3);
  EXPECT_EQ(doc.get(doc.root, "b"), nullptr);
  EXPECT_EQ(doc.get(doc.root, big + "!"), nullptr);
  const auto& e = doc.entries(doc.root);
  EXPECT_EQ(doc.text_id(e[0].first), doc.text_id(e.back().first));  // two refs, one text
  EXPECT_NE(doc.text_id(e[0].first), doc.text_id(e[200'001].first));
  EXPECT_EQ(doc.text_id(e[0].second), PickleDocument::kNotAString);
}

}  // namespace pickle_reader_test
}  // namespace
}  // namespace ferret
