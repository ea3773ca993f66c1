// Encoder and reference decoder: round trips over codes, p0, shapes and edge
// rows; the encoder's parse against a brute-force statement of the documented
// rule; determinism across thread counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "codec_test_util.h"
#include "submoe/core/thread_pool.h"

namespace submoe::ternary {
namespace {

using submoe::testing::random_scales;
using submoe::testing::random_symbols;

const TernaryDictionary& dict_for(DictKind kind) {
  return kind == DictKind::kQmoe ? submoe::testing::qmoe_dict_0885() : submoe::testing::tunstall_dict_0885();
}

// docs/format.md 5.2 stated declaratively, with a map instead of a trie. Let
// S = the row followed by endless zeros. Among the entries equal to
// S[pos, pos + n): if some reach the row end (pos + n >= cols) take the
// shortest of those, else the longest.
// Key of a trit string: 2 bits per trit, then 5 bits of length.
uint64_t string_key(const std::vector<uint8_t>& t) {
  uint64_t k = 0;
  for (uint8_t x : t) k = (k << 2) | x;
  return (k << 5) | t.size();
}

using EntryTable = std::unordered_map<uint64_t, uint16_t>;

EntryTable entry_table(const TernaryDictionary& d) {
  EntryTable table;
  for (uint32_t i = 0; i < kDictEntries; ++i) table[string_key(submoe::testing::entry_trits(d.entries()[i]))] = static_cast<uint16_t>(i);
  return table;
}

std::vector<uint16_t> brute_force_encode_row(const std::vector<uint8_t>& row, const EntryTable& table) {
  std::vector<uint16_t> codes;
  size_t pos = 0;
  const size_t cols = row.size();
  while (pos < cols) {
    int longest = -1, shortest_reaching_end = -1;
    size_t longest_n = 0, reaching_n = 0;
    std::vector<uint8_t> s;
    for (size_t n = 1; n <= kMaxWeightsPerEntry; ++n) {
      s.push_back(pos + n - 1 < cols ? row[pos + n - 1] : 0);
      const auto it = table.find(string_key(s));
      if (it == table.end()) continue;
      longest = it->second;
      longest_n = n;
      if (pos + n >= cols && shortest_reaching_end < 0) {
        shortest_reaching_end = it->second;
        reaching_n = n;
      }
    }
    if (shortest_reaching_end >= 0) {
      codes.push_back(static_cast<uint16_t>(shortest_reaching_end));
      pos += reaching_n;
    } else {
      EXPECT_GE(longest, 0);
      if (longest < 0) return codes;
      codes.push_back(static_cast<uint16_t>(longest));
      pos += longest_n;
    }
  }
  return codes;
}

// table: d's entries for the brute-force parse check (skipped when null or the
// matrix is large).
void expect_round_trip(const std::vector<uint8_t>& symbols, uint32_t rows, uint32_t cols,
                       const std::vector<RowScales>& scales, const TernaryDictionary& d, const std::string& what,
                       const EntryTable* table) {
  auto m = encode_ternary(symbols, rows, cols, scales, d);
  ASSERT_TRUE(m.is_ok()) << what << ": " << m.status().to_string();
  const PackedTernaryView v = m->view();
  ASSERT_TRUE(validate_packed(v).is_ok()) << what << ": " << validate_packed(v).to_string();
  auto back = decode_symbols(v);
  ASSERT_TRUE(back.is_ok()) << what;
  ASSERT_EQ(*back, symbols) << what;
  auto f = decode_to_float(v);
  ASSERT_TRUE(f.is_ok()) << what;
  for (uint32_t r = 0; r < rows; ++r) {
    const float levels[3] = {0.0f, bf16_to_float(scales[r].w_min), bf16_to_float(scales[r].w_max)};
    for (uint32_t c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r) * cols + c;
      ASSERT_EQ((*f)[i], levels[symbols[i]]) << what << " at " << r << "," << c;
    }
  }
  // Symbols that a row's last codeword covers past the row end are zeros, and
  // the parse is the documented one.
  const bool small = table != nullptr && rows * static_cast<size_t>(cols) <= 20000;
  for (uint32_t r = 0; r < rows; ++r) {
    std::vector<uint8_t> row(symbols.begin() + static_cast<long>(r) * cols, symbols.begin() + static_cast<long>(r + 1) * cols);
    std::vector<uint16_t> codes(v.codes + v.row_offsets[r], v.codes + v.row_offsets[r + 1]);
    size_t col = 0;
    for (uint16_t c : codes) {
      const auto t = submoe::testing::entry_trits(d.entries()[c]);
      for (uint8_t s : t) {
        if (col >= cols) {
          ASSERT_EQ(s, 0) << what << ": non-zero tail symbol in row " << r;
        }
        ++col;
      }
    }
    if (cols > 0) {
      ASSERT_LE(col - cols, d.kind() == DictKind::kQmoe ? 1u : kMaxRowOverrun) << what << " row " << r;
    }
    if (small) {
      ASSERT_EQ(codes, brute_force_encode_row(row, *table)) << what << " row " << r;
    }
  }
}

using RoundTripParam = std::tuple<DictKind, double>;
class RoundTrip : public ::testing::TestWithParam<RoundTripParam> {};

TEST_P(RoundTrip, RandomMatricesOfManyShapes) {
  const auto [kind, p0] = GetParam();
  const TernaryDictionary& d = dict_for(kind);
  const std::pair<uint32_t, uint32_t> shapes[] = {{1, 1},    {1, 2},   {1, 3},   {1, 27},  {1, 28},  {1, 29},
                                                  {1, 4099}, {300, 1}, {37, 29}, {13, 57}, {5, 100}, {3, 3333},
                                                  {4, 0},    {0, 5},   {7, 64},  {2, 56},  {9, 31}};
  const EntryTable table = entry_table(d);
  uint64_t seed = 1;
  for (const auto& [rows, cols] : shapes) {
    const auto symbols = random_symbols(static_cast<size_t>(rows) * cols, p0, seed++);
    const auto scales = random_scales(rows, seed++);
    expect_round_trip(symbols, rows, cols, scales, d,
                      std::string(dict_kind_name(kind)) + " p0 " + std::to_string(p0) + " " + std::to_string(rows) +
                          "x" + std::to_string(cols),
                      &table);
  }
}

TEST_P(RoundTrip, DictionaryFittedToTheData) {
  const auto [kind, p0] = GetParam();
  const uint32_t rows = 6, cols = 501;
  const auto symbols = random_symbols(size_t{rows} * cols, p0, 77);
  auto d = build_dictionary(kind, fit_p0(symbols));
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  const EntryTable table = entry_table(*d);
  expect_round_trip(symbols, rows, cols, random_scales(rows, 78), *d, "fitted", &table);
}

INSTANTIATE_TEST_SUITE_P(CodesAndP0, RoundTrip,
                         ::testing::Combine(::testing::Values(DictKind::kQmoe, DictKind::kTunstall),
                                            ::testing::Values(0.5, 0.8, 0.885, 0.95, 1.0)),
                         [](const ::testing::TestParamInfo<RoundTripParam>& p) {
                           return std::string(dict_kind_name(std::get<0>(p.param))) + "_p0_" +
                                  std::to_string(static_cast<int>(std::get<1>(p.param) * 1000));
                         });

TEST(Encode, AllZeroAndAllNonzeroRows) {
  for (DictKind kind : {DictKind::kQmoe, DictKind::kTunstall}) {
    const TernaryDictionary& d = dict_for(kind);
    const EntryTable table = entry_table(d);
    for (uint32_t cols : {1u, 2u, 27u, 28u, 29u, 55u, 56u, 1000u, 1001u}) {
      const uint32_t rows = 5;
      std::vector<uint8_t> s(size_t{rows} * cols);
      for (uint32_t c = 0; c < cols; ++c) {
        s[0 * cols + c] = 0;
        s[1 * cols + c] = 1;
        s[2 * cols + c] = 2;
        s[3 * cols + c] = static_cast<uint8_t>(1 + c % 2);
        s[4 * cols + c] = static_cast<uint8_t>(c % 3);
      }
      expect_round_trip(s, rows, cols, random_scales(rows, cols), d,
                        std::string(dict_kind_name(kind)) + " edge rows width " + std::to_string(cols), &table);
      auto m = encode_ternary(s, rows, cols, random_scales(rows, 1), d);
      ASSERT_TRUE(m.is_ok());
      // An all-zero row of 1000 costs ceil(1000 / 28) codes with either code.
      if (cols == 1000) {
        EXPECT_EQ(m->view().row_offsets[1], 36);
      }
    }
  }
}

TEST(Encode, SameBytesRegardlessOfThreads) {
  const uint32_t rows = 203, cols = 777;
  const auto symbols = random_symbols(size_t{rows} * cols, 0.885, 5);
  const auto scales = random_scales(rows, 6);
  for (DictKind kind : {DictKind::kQmoe, DictKind::kTunstall}) {
    const TernaryDictionary& d = dict_for(kind);
    auto ref = encode_ternary(symbols, rows, cols, scales, d, nullptr);
    ASSERT_TRUE(ref.is_ok());
    for (int threads : {1, 2, 3, 8}) {
      ThreadPool pool(threads);
      for (int rep = 0; rep < 2; ++rep) {
        auto m = encode_ternary(symbols, rows, cols, scales, d, &pool);
        ASSERT_TRUE(m.is_ok());
        ASSERT_TRUE(std::ranges::equal(m->codes(), ref->codes())) << threads << " threads";
        ASSERT_TRUE(std::ranges::equal(m->row_offsets(), ref->row_offsets())) << threads << " threads";
        ASSERT_TRUE(std::equal(m->scales().begin(), m->scales().end(), ref->scales().begin(),
                               [](RowScales a, RowScales b) { return a.w_min.bits == b.w_min.bits && a.w_max.bits == b.w_max.bits; }));
      }
    }
  }
}

TEST(Encode, StorageHasZeroSlackAfterTheLastCode) {
  const auto symbols = random_symbols(3 * 100, 0.885, 9);
  auto m = encode_ternary(symbols, 3, 100, random_scales(3, 9), submoe::testing::qmoe_dict_0885());
  ASSERT_TRUE(m.is_ok());
  const uint16_t* codes = m->view().codes;
  for (size_t i = 0; i < kCodeSlackBytes / 2; ++i) EXPECT_EQ(codes[m->num_codes() + i], 0);
}

TEST(Encode, RejectsBadInput) {
  const TernaryDictionary& d = submoe::testing::qmoe_dict_0885();
  std::vector<uint8_t> s(12, 0);
  std::vector<RowScales> sc(3, RowScales{float_to_bf16(-1.0f), float_to_bf16(1.0f)});
  EXPECT_EQ(encode_ternary(s, 3, 5, sc, d).status().code(), ErrorCode::kInvalidArgument);   // 12 != 15
  EXPECT_EQ(encode_ternary(s, 4, 3, sc, d).status().code(), ErrorCode::kInvalidArgument);   // 3 scales, 4 rows
  s[7] = 3;
  auto bad = encode_ternary(s, 3, 4, sc, d);
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("row 1, column 3"), std::string::npos) << bad.status().message();
}

TEST(Encode, FromPartsCopiesAndValidates) {
  const TernaryDictionary& d = submoe::testing::tunstall_dict_0885();
  const auto symbols = random_symbols(4 * 70, 0.8, 3);
  auto m = encode_ternary(symbols, 4, 70, random_scales(4, 3), d);
  ASSERT_TRUE(m.is_ok());
  auto copy = PackedTernaryMatrix::from_parts(4, 70, m->codes(), m->row_offsets(), m->scales(), d.entries());
  ASSERT_TRUE(copy.is_ok()) << copy.status().to_string();
  EXPECT_EQ(*decode_symbols(copy->view()), symbols);
  // Too wide: the rows' codewords stop short. Too narrow: codewords start past the row end.
  EXPECT_FALSE(PackedTernaryMatrix::from_parts(4, 200, m->codes(), m->row_offsets(), m->scales(), d.entries()).is_ok());
  EXPECT_FALSE(PackedTernaryMatrix::from_parts(4, 10, m->codes(), m->row_offsets(), m->scales(), d.entries()).is_ok());
  EXPECT_FALSE(PackedTernaryMatrix::from_parts(5, 70, m->codes(), m->row_offsets(), m->scales(), d.entries()).is_ok());
}

// Rate on i.i.d. data at p0 0.885, all metadata counted (the targets are
// for 2048 x 8192; per-row costs are the same at 192 rows).
TEST(Encode, RateTargetsAtP0885) {
  const uint32_t rows = 192, cols = 8192;
  const auto symbols = random_symbols(size_t{rows} * cols, 0.885, 2024);
  const auto scales = random_scales(rows, 2025);
  for (DictKind kind : {DictKind::kQmoe, DictKind::kTunstall}) {
    ThreadPool pool(2);
    auto m = encode_ternary(symbols, rows, cols, scales, dict_for(kind), &pool);
    ASSERT_TRUE(m.is_ok());
    auto l = compute_ledger(m->view());
    ASSERT_TRUE(l.is_ok());
    if (kind == DictKind::kQmoe) {
      EXPECT_LE(l->bits_per_weight, 0.76);
      EXPECT_NEAR(l->stream_bits_per_weight, 0.735, 0.01);
    } else {
      EXPECT_LE(l->bits_per_weight, 0.74);
      EXPECT_NEAR(l->stream_bits_per_weight, 0.714, 0.01);
    }
    EXPECT_NEAR(l->entropy_bits_per_weight, 0.630, 0.01);
  }
}

}  // namespace
}  // namespace submoe::ternary
