// Entry packing (the QMoE bit layout) and entry validation.
#include <gtest/gtest.h>

#include "codec_test_util.h"

namespace submoe::ternary {
namespace {

TEST(DictEntry, PacksTheResearchLayout) {
  // Pair (t0=1, t1=0) -> word0 = L=1 | 1 << 4 (golden entry 12: "00000011 00000001").
  const uint8_t a[] = {1, 0};
  auto e = make_dict_entry(a);
  ASSERT_TRUE(e.is_ok());
  EXPECT_EQ(e->word[0], 0x11u);
  EXPECT_EQ(e->word[1], 0x1u);
  // 15 trits: slots 0..13 in word 0, slot 14 in word 1, slot 15 absent (3).
  std::vector<uint8_t> t(15);
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<uint8_t>(i % 3);
  auto f = make_dict_entry(t);
  ASSERT_TRUE(f.is_ok());
  EXPECT_EQ(entry_pairs(f->word[0]), 8u);
  EXPECT_EQ(entry_pairs(f->word[1]), 8u);
  EXPECT_EQ(entry_length(*f), 15u);
  EXPECT_EQ(entry_symbol(*f, 15), kSymbolAbsent);
  EXPECT_EQ((f->word[1] >> 4) & 3u, 14u % 3);
  EXPECT_EQ(submoe::testing::entry_trits(*f), t);
  EXPECT_TRUE(validate_dict_entry(*f).is_ok());
  // Every length 1..28 round-trips.
  for (size_t n = 1; n <= 28; ++n) {
    std::vector<uint8_t> s(n);
    for (size_t i = 0; i < n; ++i) s[i] = static_cast<uint8_t>((i * 7 + n) % 3);
    auto g = make_dict_entry(s);
    ASSERT_TRUE(g.is_ok());
    EXPECT_EQ(entry_length(*g), n);
    EXPECT_EQ(submoe::testing::entry_trits(*g), s);
    EXPECT_TRUE(validate_dict_entry(*g).is_ok()) << n;
  }
}

TEST(DictEntry, MakeRejectsBadStrings) {
  EXPECT_FALSE(make_dict_entry({}).is_ok());
  EXPECT_FALSE(make_dict_entry(std::vector<uint8_t>(29, 0)).is_ok());
  const uint8_t bad[] = {0, 3};
  EXPECT_FALSE(make_dict_entry(bad).is_ok());
}

TEST(DictEntry, ValidationRejectsEachImpossibleEntry) {
  auto expect_bad = [](DictEntry e, const char* needle) {
    const Status st = validate_dict_entry(e);
    EXPECT_FALSE(st.is_ok()) << needle;
    EXPECT_EQ(st.code(), ErrorCode::kCorruptData);
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
  };
  expect_bad(DictEntry{{0, 0}}, "not in 1..14");                         // L = 0
  expect_bad(DictEntry{{15, 15}}, "not in 1..14");                       // L = 15
  expect_bad(DictEntry{{2, 3}}, "word 1");                               // counts differ
  expect_bad(DictEntry{{1u | (3u << 4), 1}}, "absent");                  // 3 in slot 0 of a 2-slot entry
  expect_bad(DictEntry{{1u | (1u << 8), 1}}, "unused slot 2");           // slot 2 set, L = 1
  expect_bad(DictEntry{{7, 7u | (2u << 4)}}, "unused slot 14");          // word 1 data with L = 7
  EXPECT_TRUE(validate_dict_entry(DictEntry{{1u | (3u << 6), 1}}).is_ok());  // length-1 entry "0"
  EXPECT_EQ(entry_length(DictEntry{{1u | (3u << 6), 1}}), 1u);
}

TEST(DictKindNames, ParseAndPrint) {
  DictKind k;
  ASSERT_TRUE(parse_dict_kind("tunstall", &k));
  EXPECT_EQ(k, DictKind::kTunstall);
  EXPECT_STREQ(dict_kind_name(k), "tunstall");
  ASSERT_TRUE(parse_dict_kind("qmoe", &k));
  EXPECT_STREQ(dict_kind_name(k), "qmoe");
  EXPECT_FALSE(parse_dict_kind("huffman", &k));
}

TEST(FitP0, FractionOfZeros) {
  EXPECT_EQ(fit_p0({}), 1.0);
  const std::vector<uint8_t> s = {0, 1, 2, 0, 0, 0, 2, 1};
  EXPECT_DOUBLE_EQ(fit_p0(s), 0.5);
}

}  // namespace
}  // namespace submoe::ternary
