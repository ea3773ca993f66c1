// The qmoe code against the research format's golden data (tests/fixtures/qmoe, copied from ../shared/testdata/qmoe).
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "codec_test_util.h"
#include "submoe/core/sha256.h"

namespace submoe::ternary {
namespace {

using submoe::testing::qmoe_dict_0885;

nlohmann::json golden() {
  const auto bytes = submoe::testing::read_file_bytes(submoe::testing::fixture_path("qmoe/golden.json"));
  return nlohmann::json::parse(bytes.begin(), bytes.end());
}

std::vector<uint8_t> table_bytes_le(const TernaryDictionary& d) {
  std::vector<uint8_t> out;
  out.reserve(kDictTableBytes);
  for (const DictEntry& e : d.entry_span()) {
    for (uint32_t w : e.word) {
      for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(w >> (8 * i)));
    }
  }
  return out;
}

TEST(QmoeGolden, DictionaryReproducesResearchTableByteForByte) {
  const nlohmann::json g = golden();
  const auto file = submoe::testing::read_file_bytes(submoe::testing::fixture_path("qmoe/dictionary_p0885.bin"));
  ASSERT_EQ(file.size(), kDictTableBytes);
  ASSERT_EQ(submoe::sha256_hex(file), g["sha256"].get<std::string>()) << "golden file damaged";
  const std::vector<uint8_t> mine = table_bytes_le(qmoe_dict_0885());
  EXPECT_EQ(submoe::sha256_hex(mine), g["sha256"].get<std::string>());
  size_t first_diff = 0;
  while (first_diff < mine.size() && mine[first_diff] == file[first_diff]) ++first_diff;
  EXPECT_EQ(first_diff, mine.size()) << "first differing byte (entry " << first_diff / 8 << ")";
}

TEST(QmoeGolden, PairHistogramAndFirstEntries) {
  const nlohmann::json g = golden();
  const TernaryDictionary& d = qmoe_dict_0885();
  std::map<std::string, int> hist;
  for (const DictEntry& e : d.entry_span()) hist[std::to_string(entry_pairs(e.word[0]))]++;
  for (const auto& [pairs, count] : g["pairs_per_entry_histogram"].items()) {
    EXPECT_EQ(hist[pairs], count.get<int>()) << pairs << " pairs";
  }
  const auto& words = g["first_entries_words_hex"];
  const auto& pair_lists = g["first_entries_pairs"];
  for (size_t i = 0; i < words.size(); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%08x %08x", d.entries()[i].word[0], d.entries()[i].word[1]);
    EXPECT_EQ(buf, words[i].get<std::string>()) << "entry " << i;
    const std::vector<uint8_t> trits = submoe::testing::entry_trits(d.entries()[i]);
    std::vector<int> pairs;
    for (size_t k = 0; k + 1 < trits.size(); k += 2) pairs.push_back(3 * trits[k + 1] + trits[k]);
    EXPECT_EQ(pairs, pair_lists[i].get<std::vector<int>>()) << "entry " << i;
  }
}

TEST(QmoeGolden, ExampleRowsEncodeToGoldenCodesAndBack) {
  const nlohmann::json g = golden();
  const TernaryDictionary& d = qmoe_dict_0885();
  ASSERT_FALSE(g["examples"].empty());
  for (const auto& ex : g["examples"]) {
    const uint32_t width = ex["width"].get<uint32_t>();
    const std::vector<uint8_t> symbols = ex["symbols"].get<std::vector<uint8_t>>();
    const std::vector<uint16_t> expected = ex["codes"].get<std::vector<uint16_t>>();
    const std::vector<RowScales> scales = {{float_to_bf16(-1.0f), float_to_bf16(1.0f)}};
    auto m = encode_ternary(symbols, 1, width, scales, d);
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    const std::vector<uint16_t> codes(m->codes().begin(), m->codes().end());
    EXPECT_EQ(codes, expected) << "width " << width;
    auto back = decode_symbols(m->view());
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_EQ(*back, symbols) << "width " << width;
  }
}

// Prefix-closed: every proper pair prefix of an entry is an entry with a
// smaller index (it is more probable and popped first). So all 9 single pairs
// are present and every row is encodable.
TEST(QmoeDictionary, PrefixClosedAndOrderedByPopOrder) {
  const TernaryDictionary& d = qmoe_dict_0885();
  // A trit string as one integer: 2 bits per trit, then 5 bits of length.
  auto key = [](const std::vector<uint8_t>& t, size_t len) {
    uint64_t k = 0;
    for (size_t i = 0; i < len; ++i) k = (k << 2) | t[i];
    return (k << 5) | len;
  };
  std::map<uint64_t, uint32_t> index;
  std::vector<std::vector<uint8_t>> strings(kDictEntries);
  for (uint32_t i = 0; i < kDictEntries; ++i) {
    strings[i] = submoe::testing::entry_trits(d.entries()[i]);
    ASSERT_EQ(strings[i].size() % 2, 0u);
    ASSERT_TRUE(index.emplace(key(strings[i], strings[i].size()), i).second) << "duplicate entry " << i;
  }
  for (uint32_t i = 0; i < kDictEntries; ++i) {
    for (size_t len = 2; len < strings[i].size(); len += 2) {
      const auto it = index.find(key(strings[i], len));
      ASSERT_NE(it, index.end()) << "prefix of entry " << i << " missing";
      EXPECT_LT(it->second, i);
    }
  }
}

// Probabilities in pop order never increase (recomputed in long double, so the
// check is independent of the builder's double products up to rounding).
TEST(QmoeDictionary, ProbabilityDecreasesWithIndex) {
  for (double p0 : {0.885, 0.5, 0.95}) {
    auto d = build_qmoe_dictionary(p0);
    ASSERT_TRUE(d.is_ok());
    const long double q = (1.0L - p0) / 2.0L;
    long double prev = 2.0L;
    for (uint32_t i = 0; i < kDictEntries; ++i) {
      long double p = 1.0L;
      for (uint8_t t : submoe::testing::entry_trits(d->entries()[i])) p *= t == 0 ? static_cast<long double>(p0) : q;
      EXPECT_LE(p, prev * (1.0L + 1e-12L)) << "p0 " << p0 << " entry " << i;
      prev = p;
    }
  }
}

TEST(QmoeDictionary, ExtremeP0BuildsCompleteDictionaries) {
  for (double p0 : {0.0, 1.0, 1.0 / 3.0, 0.999999}) {
    auto d = build_qmoe_dictionary(p0);
    ASSERT_TRUE(d.is_ok()) << p0 << ": " << d.status().to_string();
    EXPECT_EQ(d->kind(), DictKind::kQmoe);
  }
  EXPECT_FALSE(build_qmoe_dictionary(-0.1).is_ok());
  EXPECT_FALSE(build_qmoe_dictionary(1.5).is_ok());
  EXPECT_FALSE(build_qmoe_dictionary(std::nan("")).is_ok());
}

}  // namespace
}  // namespace submoe::ternary
