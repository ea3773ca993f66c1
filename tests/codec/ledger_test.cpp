// Ledger: every byte counted once, rates derived from them, entropy of the
// symbol histogram.
#include <gtest/gtest.h>

#include <cmath>

#include "codec_test_util.h"

namespace submoe::ternary {
namespace {

TEST(Ledger, CountsEveryByteOfASmallMatrix) {
  // qmoe, 3 x 5: each row [0 0 0 0 1] -> pairs (0,0)(0,0)(1,pad): one codeword
  // of 6 symbols per row, so 1 tail symbol per row.
  const TernaryDictionary& d = submoe::testing::qmoe_dict_0885();
  const std::vector<uint8_t> s = {0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  const std::vector<RowScales> sc(3, RowScales{float_to_bf16(-1.0f), float_to_bf16(1.0f)});
  auto m = encode_ternary(s, 3, 5, sc, d);
  ASSERT_TRUE(m.is_ok());
  ASSERT_EQ(m->num_codes(), 3u);
  LedgerOptions unpadded;
  unpadded.array_alignment = 1;
  auto l = compute_ledger(m->view(), unpadded);
  ASSERT_TRUE(l.is_ok());
  EXPECT_EQ(l->weights, 15u);
  EXPECT_EQ(l->codeword_bytes, 6u);
  EXPECT_EQ(l->row_offset_bytes, 16u);
  EXPECT_EQ(l->scale_bytes, 12u);
  EXPECT_EQ(l->padding_bytes, 0u);
  EXPECT_EQ(l->tail_symbols, 3u);
  EXPECT_EQ(l->symbol_counts[0], 12u);
  EXPECT_EQ(l->symbol_counts[1], 3u);
  EXPECT_EQ(l->symbol_counts[2], 0u);
  EXPECT_DOUBLE_EQ(l->stream_bits_per_weight, 48.0 / 15);
  EXPECT_DOUBLE_EQ(l->metadata_bits_per_weight, 8.0 * 28 / 15);
  EXPECT_DOUBLE_EQ(l->dictionary_bits_per_weight, 0.0);
  EXPECT_DOUBLE_EQ(l->bits_per_weight, 8.0 * 34 / 15);
  EXPECT_DOUBLE_EQ(l->bits_per_weight_standalone_dict, 8.0 * (34 + 524288) / 15);
  EXPECT_DOUBLE_EQ(l->weights_per_codeword, 5.0);
  EXPECT_DOUBLE_EQ(l->compression_vs_bf16, 16.0 / (8.0 * 34 / 15));
  EXPECT_DOUBLE_EQ(l->p0_observed, 0.8);
  EXPECT_NEAR(l->entropy_bits_per_weight, -(0.8 * std::log2(0.8) + 0.2 * std::log2(0.2)), 1e-12);

  // Default 64-byte alignment: 6 -> 64, 16 -> 64, 12 -> 64.
  auto padded = compute_ledger(m->view());
  ASSERT_TRUE(padded.is_ok());
  EXPECT_EQ(padded->padding_bytes, 58u + 48u + 52u);

  // A dictionary amortized over exactly this matrix counts in full.
  LedgerOptions own;
  own.array_alignment = 1;
  own.dictionary_amortization_weights = 15;
  auto o = compute_ledger(m->view(), own);
  ASSERT_TRUE(o.is_ok());
  EXPECT_DOUBLE_EQ(o->bits_per_weight, o->bits_per_weight_standalone_dict);
  own.dictionary_amortization_weights = 14;
  EXPECT_EQ(compute_ledger(m->view(), own).status().code(), ErrorCode::kInvalidArgument);
  own.dictionary_amortization_weights = 1500;
  o = compute_ledger(m->view(), own);
  ASSERT_TRUE(o.is_ok());
  EXPECT_DOUBLE_EQ(o->dictionary_amortized_bytes, 524288.0 / 100);
}

TEST(Ledger, EntropyOfHistogram) {
  const uint64_t uniform[3] = {5, 5, 5};
  EXPECT_NEAR(entropy_bits(uniform), std::log2(3.0), 1e-12);
  const uint64_t single[3] = {0, 9, 0};
  EXPECT_EQ(entropy_bits(single), 0.0);
  const uint64_t none[3] = {0, 0, 0};
  EXPECT_EQ(entropy_bits(none), 0.0);
  // p0 0.885 with symmetric non-zeros: 0.630 bits (ENTROPY_NOTES.md).
  const uint64_t qmoe[3] = {885000, 57500, 57500};
  EXPECT_NEAR(entropy_bits(qmoe), 0.630, 0.0005);
}

TEST(Ledger, EmptyMatrixHasZeroRates) {
  const int32_t offsets[1] = {0};
  const PackedTernaryView v{0, 0, nullptr, 0, offsets, nullptr, submoe::testing::qmoe_dict_0885().entries()};
  auto l = compute_ledger(v);
  ASSERT_TRUE(l.is_ok());
  EXPECT_EQ(l->bits_per_weight, 0.0);
  EXPECT_EQ(l->weights, 0u);
}

}  // namespace
}  // namespace submoe::ternary
