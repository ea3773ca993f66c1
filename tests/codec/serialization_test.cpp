// Dictionary blob: round trip and rejection of every malformed header or table.
#include <gtest/gtest.h>

#include <cstring>

#include "codec_test_util.h"

namespace submoe::ternary {
namespace {

void put_u32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
}

TEST(DictionaryBlob, RoundTripsBothKinds) {
  for (const TernaryDictionary* d : {&submoe::testing::qmoe_dict_0885(), &submoe::testing::tunstall_dict_0885()}) {
    const std::vector<uint8_t> blob = serialize_dictionary(*d);
    ASSERT_EQ(blob.size(), kDictBlobBytes);
    EXPECT_EQ(std::memcmp(blob.data(), "SMOEDICT", 8), 0);
    EXPECT_EQ(blob[8], 1);  // version
    EXPECT_EQ(blob[12], static_cast<uint8_t>(d->kind()));
    double p0;
    std::memcpy(&p0, blob.data() + 16, 8);  // little-endian host
    EXPECT_EQ(p0, 0.885);
    auto back = deserialize_dictionary(blob);
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_EQ(back->kind(), d->kind());
    EXPECT_EQ(back->p0(), d->p0());
    EXPECT_EQ(std::memcmp(back->entries(), d->entries(), kDictTableBytes), 0);
    EXPECT_EQ(back->trie().size(), d->trie().size());
  }
}

TEST(DictionaryBlob, QmoeTableFollowsTheHeaderAsInTheResearchFile) {
  const std::vector<uint8_t> blob = serialize_dictionary(submoe::testing::qmoe_dict_0885());
  const auto file = submoe::testing::read_file_bytes(submoe::testing::fixture_path("qmoe/dictionary_p0885.bin"));
  ASSERT_EQ(file.size(), kDictTableBytes);
  EXPECT_EQ(std::memcmp(blob.data() + kDictHeaderBytes, file.data(), kDictTableBytes), 0);
}

TEST(DictionaryBlob, RejectsMalformedBlobs) {
  const std::vector<uint8_t> good = serialize_dictionary(submoe::testing::tunstall_dict_0885());
  auto expect_bad = [](const std::vector<uint8_t>& b, const char* needle) {
    auto r = deserialize_dictionary(b);
    ASSERT_FALSE(r.is_ok()) << needle;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  expect_bad({}, "shorter than");
  expect_bad(std::vector<uint8_t>(good.begin(), good.begin() + 31), "shorter than");
  expect_bad(std::vector<uint8_t>(good.begin(), good.end() - 8), "truncated");
  {
    auto b = good;
    b.push_back(0);
    expect_bad(b, "trailing");
  }
  {
    auto b = good;
    b[0] = 'X';
    expect_bad(b, "magic");
  }
  {
    auto b = good;
    put_u32(b, 8, 2);
    expect_bad(b, "version 2");
  }
  {
    auto b = good;
    put_u32(b, 12, 7);
    expect_bad(b, "unknown kind");
  }
  {
    auto b = good;
    const double nan = std::nan("");
    std::memcpy(b.data() + 16, &nan, 8);
    expect_bad(b, "p0");
    const double big = 1.5;
    std::memcpy(b.data() + 16, &big, 8);
    expect_bad(b, "p0");
  }
  {
    auto b = good;
    put_u32(b, 24, 65535);
    expect_bad(b, "entries");
  }
  {
    auto b = good;
    put_u32(b, 28, 4);
    expect_bad(b, "entries");
  }
  {
    auto b = good;  // entry 123: L = 0
    put_u32(b, kDictHeaderBytes + 123 * 8, 0);
    expect_bad(b, "entry 123");
  }
  {
    auto b = good;  // entry 7 duplicates entry 5
    std::memcpy(b.data() + kDictHeaderBytes + 7 * 8, b.data() + kDictHeaderBytes + 5 * 8, 8);
    expect_bad(b, "distinct");
  }
  {
    // The tunstall table has odd-length entries: not a qmoe table.
    auto b = good;
    put_u32(b, 12, 0);
    expect_bad(b, "odd length");
  }
}

// A table of distinct, well-formed entries that cannot encode a row starting
// with symbol 1: every entry starts with 0.
TEST(DictionaryBlob, RejectsIncompleteTables) {
  std::vector<DictEntry> entries(kDictEntries);
  for (uint32_t i = 0; i < kDictEntries; ++i) {
    std::vector<uint8_t> t(12, 0);
    uint32_t x = i;
    for (size_t k = 1; k < 12; ++k, x /= 3) t[k] = static_cast<uint8_t>(x % 3);
    entries[i] = make_dict_entry(t).value();
  }
  auto d = TernaryDictionary::from_entries(DictKind::kQmoe, 0.5, entries);
  ASSERT_FALSE(d.is_ok());
  EXPECT_NE(d.status().message().find("cannot encode every row"), std::string::npos) << d.status().message();
  // Wrong table size.
  EXPECT_FALSE(TernaryDictionary::from_entries(DictKind::kQmoe, 0.5, std::span(entries).first(100)).is_ok());
}

}  // namespace
}  // namespace submoe::ternary
