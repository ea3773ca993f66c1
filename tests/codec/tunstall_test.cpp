// Structure of the tunstall code: a complete ternary tree of 65535 leaves plus
// one extra child entry, ordered by probability, with the Tunstall property.
#include <gtest/gtest.h>

#include <cmath>
#include <unordered_map>

#include "codec_test_util.h"

namespace submoe::ternary {
namespace {

// A trit string as one integer: 2 bits per trit, then 5 bits of length.
uint64_t key(const std::vector<uint8_t>& t, size_t len) {
  uint64_t k = 0;
  for (size_t i = 0; i < len; ++i) k = (k << 2) | t[i];
  return (k << 5) | len;
}

long double string_prob(const std::vector<uint8_t>& t, size_t len, double p0) {
  const long double q = (1.0L - p0) / 2.0L;
  long double p = 1.0L;
  for (size_t i = 0; i < len; ++i) p *= t[i] == 0 ? static_cast<long double>(p0) : q;
  return p;
}

struct TreeView {
  std::vector<std::vector<uint8_t>> strings;
  std::unordered_map<uint64_t, uint32_t> index;
  int extra = -1;  // the entry whose parent string is also an entry
};

TreeView view_of(const TernaryDictionary& d) {
  TreeView v;
  v.strings.resize(kDictEntries);
  for (uint32_t i = 0; i < kDictEntries; ++i) {
    v.strings[i] = submoe::testing::entry_trits(d.entries()[i]);
    EXPECT_TRUE(v.index.emplace(key(v.strings[i], v.strings[i].size()), i).second) << "duplicate entry " << i;
  }
  for (uint32_t i = 0; i < kDictEntries; ++i) {
    for (size_t len = 1; len < v.strings[i].size(); ++len) {
      if (v.index.count(key(v.strings[i], len))) {
        EXPECT_EQ(v.extra, -1) << "second entry with an entry as a proper prefix: " << i;
        EXPECT_EQ(len + 1, v.strings[i].size()) << "the extra entry extends an entry by one trit";
        v.extra = static_cast<int>(i);
      }
    }
  }
  return v;
}

class TunstallTree : public ::testing::TestWithParam<double> {};

// Leaves (all entries but the extra one) are prefix-free and satisfy Kraft's
// equality sum 3^-len = 1 exactly (in integers: sum 3^(28-len) = 3^28), so every
// trit string of length 28 has exactly one leaf as a prefix.
TEST_P(TunstallTree, LeavesFormACompleteTernaryTree) {
  const double p0 = GetParam();
  auto d = build_tunstall_dictionary(p0);
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  const TreeView v = view_of(*d);
  ASSERT_GE(v.extra, 0);
  uint64_t pow3[29] = {1};
  for (int i = 1; i <= 28; ++i) pow3[i] = pow3[i - 1] * 3;
  uint64_t kraft = 0;
  for (uint32_t i = 0; i < kDictEntries; ++i) {
    if (static_cast<int>(i) == v.extra) continue;
    ASSERT_LE(v.strings[i].size(), 28u);
    kraft += pow3[28 - v.strings[i].size()];
  }
  EXPECT_EQ(kraft, pow3[28]);
  // The extra entry is the likeliest child of the leaf that would be split next.
  const auto& x = v.strings[static_cast<size_t>(v.extra)];
  EXPECT_EQ(x.back(), p0 >= (1.0 - p0) / 2.0 ? 0 : 1);
}

// Index order is decreasing probability, and the greedy Tunstall property
// holds: no unsplit leaf shallower than 28 is more probable than a split node.
TEST_P(TunstallTree, OrderedByProbabilityWithTunstallProperty) {
  const double p0 = GetParam();
  auto d = build_tunstall_dictionary(p0);
  ASSERT_TRUE(d.is_ok());
  const TreeView v = view_of(*d);
  const long double tol = 1.0L + 1e-12L;
  long double prev = 2.0L;
  long double max_shallow_leaf = 0.0L;
  long double min_split = 2.0L;
  std::unordered_map<uint64_t, bool> seen_internal;
  for (uint32_t i = 0; i < kDictEntries; ++i) {
    const auto& s = v.strings[i];
    const long double p = string_prob(s, s.size(), p0);
    EXPECT_LE(p, prev * tol) << "entry " << i;
    prev = p;
    if (static_cast<int>(i) == v.extra) continue;
    if (s.size() < 28) max_shallow_leaf = std::max(max_shallow_leaf, p);
    for (size_t len = 0; len < s.size(); ++len) {
      if (seen_internal.emplace(key(s, len), true).second) min_split = std::min(min_split, string_prob(s, len, p0));
    }
  }
  EXPECT_LE(max_shallow_leaf, min_split * tol);
}

INSTANTIATE_TEST_SUITE_P(P0, TunstallTree, ::testing::Values(0.885, 0.5, 1.0, 0.0, 0.2));

// Rate of the leaf parse on an endless i.i.d. stream: 16 / E[leaf length],
// E[len] = sum P(leaf) len. ENTROPY_NOTES.md reports 0.714 at p0 = 0.885.
TEST(TunstallDictionary, ExpectedStreamRateMatchesPublishedFigure) {
  const TernaryDictionary& d = submoe::testing::tunstall_dict_0885();
  const TreeView v = view_of(d);
  long double expected_len = 0;
  long double total = 0;
  for (uint32_t i = 0; i < kDictEntries; ++i) {
    if (static_cast<int>(i) == v.extra) continue;
    const long double p = string_prob(v.strings[i], v.strings[i].size(), 0.885);
    expected_len += p * static_cast<long double>(v.strings[i].size());
    total += p;
  }
  EXPECT_NEAR(static_cast<double>(total), 1.0, 1e-9);
  const double rate = 16.0 / static_cast<double>(expected_len);
  EXPECT_NEAR(rate, 0.714, 0.0015) << "E[len] = " << static_cast<double>(expected_len);
  EXPECT_EQ(d.max_entry_length(), 28u);
}

TEST(TunstallDictionary, RejectsBadP0) {
  EXPECT_FALSE(build_tunstall_dictionary(-1e-9).is_ok());
  EXPECT_FALSE(build_tunstall_dictionary(1.0000001).is_ok());
  EXPECT_FALSE(build_tunstall_dictionary(std::nan("")).is_ok());
}

}  // namespace
}  // namespace submoe::ternary
