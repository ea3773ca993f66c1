// The E8P lattice code (codec/e8p.h) against its definition (REPRESENTATIONS.md
// §4): the packed table's published words and CRC-32, the abs patterns
// re-derived here by brute force over signed D8^ points, every one of the
// 65,536 codewords (distinct, in E8 + 1/4 with the shift the parity picks,
// mean norm^2 9.5703), the 1-bit table's points, the nearest-codeword search
// against an exhaustive scan of all codes on random and adversarial vectors,
// the residual stages, and the matrix format's validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "submoe/codec/e8p.h"
#include "submoe/core/bf16.h"

namespace submoe::e8p {
namespace {

double dist2(const float* x, const float* c) {
  double d = 0;
  for (uint32_t i = 0; i < kDim; ++i) d += (double{x[i]} - c[i]) * (double{x[i]} - c[i]);
  return d;
}

TEST(E8pTable, PublishedWordsAndCrc) {
  const auto& t = packed_abs_table();
  EXPECT_EQ(t[0], 0x99999999u);
  EXPECT_EQ(t[1], 0x59999999u);
  EXPECT_EQ(t[227], 0x5b99bb9bu);
  EXPECT_EQ(t[255], 0x7b9bbb9bu);
  EXPECT_EQ(packed_abs_table_crc32(), kE8pTableCrc32);
  const uint8_t check[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  EXPECT_EQ(crc32(check), 0xcbf43926u);  // the CRC-32 check value
}

TEST(E8pTable, AbsPatternsAreTheBallOfD8HalfRederived) {
  // Brute force: every signed half-integer x in [-3.5, 3.5]^8 with even sum
  // and |x|^2 <= 10, |x| deduplicated in lexicographic order.
  std::set<std::array<int, kDim>> abs_set;
  std::array<int, kDim> x2{};
  for (uint32_t n = 0; n < (1u << 24); ++n) {  // 8 coordinates x 3 bits: 2x in {-7,-5,...,7}
    int sum2 = 0, norm4 = 0;
    for (uint32_t i = 0; i < kDim; ++i) {
      x2[i] = 2 * static_cast<int>((n >> (3 * i)) & 7u) - 7;
      sum2 += x2[i];
      norm4 += x2[i] * x2[i];
    }
    if (norm4 > 40 || (sum2 / 2) % 2 != 0) continue;
    std::array<int, kDim> a;
    for (uint32_t i = 0; i < kDim; ++i) a[i] = std::abs(x2[i]);
    abs_set.insert(a);
  }
  ASSERT_EQ(abs_set.size(), 227u);
  std::map<int, int> histogram;
  const auto& t = packed_abs_table();
  uint32_t a = 0, odd_sum = 0;
  std::set<std::array<int, kDim>> all;
  auto pattern_of = [&](uint32_t e) {
    std::array<int, kDim> p;
    for (uint32_t i = 0; i < kDim; ++i)
      p[i] = std::abs(static_cast<int>((t[e] >> (4 * kE8pNibbleOfCoordinate[i])) & 15u) - 8);
    return p;
  };
  for (const auto& want : abs_set) {
    const auto got = pattern_of(a);
    EXPECT_EQ(got, want) << "entry " << a;
    int norm4 = 0;
    for (int v : got) norm4 += v * v;
    ++histogram[norm4 / 4];
    ++a;
  }
  EXPECT_EQ(histogram, (std::map<int, int>{{2, 1}, {4, 8}, {6, 28}, {8, 64}, {10, 126}}));
  for (uint32_t e = 0; e < kAbsEntries; ++e) {
    const auto p = pattern_of(e);
    all.insert(p);
    int norm4 = 0, sum2 = 0;
    for (int v : p) {
      norm4 += v * v;
      sum2 += v;
    }
    if (e >= 227) {
      EXPECT_EQ(norm4, 48) << "entry " << e;
    }
    if ((sum2 / 2) % 2 != 0) {
      ++odd_sum;
      // Stored with coordinate 7 negated (nibble 7 below 8).
      EXPECT_LT((t[e] >> 28) & 15u, 8u) << "entry " << e;
    } else {
      for (uint32_t j = 0; j < kDim; ++j) EXPECT_GT((t[e] >> (4 * j)) & 15u, 8u) << "entry " << e;
    }
  }
  EXPECT_EQ(all.size(), 256u);
  EXPECT_EQ(odd_sum, 149u);
}

TEST(E8pCodebook, EveryCodewordIsDistinctAndInE8ShiftedByTheParity) {
  std::set<std::array<int, kDim>> seen;
  double norm_sum = 0;
  for (uint32_t c = 0; c < 65536; ++c) {
    int8_t q[kDim];
    float v[kDim];
    quarters(static_cast<uint16_t>(c), q);
    decode(static_cast<uint16_t>(c), v);
    const int parity = std::popcount(c & 0xffu) & 1;
    std::array<int, kDim> key;
    int sum_unshifted_x2 = 0;
    for (uint32_t i = 0; i < kDim; ++i) {
      key[i] = q[i];
      ASSERT_EQ(v[i], 0.25f * q[i]);
      ASSERT_NE(q[i] % 2, 0) << "code " << c;
      ASSERT_LE(std::abs(q[i]), 15);
      // Unshift: p = 0 adds +1/4, p = 1 adds -1/4; what remains is a point of D8^.
      const int x4 = q[i] - (parity ? -1 : 1);
      ASSERT_EQ(x4 % 2, 0);
      ASSERT_NE((x4 / 2) % 2, 0) << "a half-integer coordinate, code " << c;
      sum_unshifted_x2 += x4 / 2;
      norm_sum += double{v[i]} * v[i];
    }
    ASSERT_EQ((sum_unshifted_x2 / 2) % 2, 0) << "even coordinate sum, code " << c;
    ASSERT_TRUE(seen.insert(key).second) << "duplicate codeword at code " << c;
  }
  EXPECT_NEAR(norm_sum / 65536, 9.5703, 5e-5);
  float v[kDim];
  decode(0x0000, v);
  for (float x : v) EXPECT_EQ(x, 0.75f);
  decode(0x0001, v);
  for (float x : v) EXPECT_EQ(x, 0.25f);
  decode(0x0100, v);
  for (uint32_t i = 0; i < 7; ++i) EXPECT_EQ(v[i], 0.75f);
  EXPECT_EQ(v[7], -1.25f);
}

TEST(E8pOneBit, TheZeroTheRootsAndFifteenNormFourPoints) {
  const auto& t = one_bit_halves();
  std::map<int, int> by_norm;  // norm^2 x 4
  std::set<std::array<int8_t, kDim>> unique(t.begin(), t.end());
  EXPECT_EQ(unique.size(), 256u);
  EXPECT_TRUE(std::is_sorted(t.begin(), t.end()));
  for (const auto& p : t) {
    int n4 = 0, sum2 = 0;
    bool all_odd = true, all_even = true;
    for (int8_t v : p) {
      n4 += v * v;
      sum2 += v;
      all_odd = all_odd && (v % 2 != 0);
      all_even = all_even && (v % 2 == 0);
    }
    ++by_norm[n4];
    // E8 = D8 u (D8 + 1/2): integer points with even sum, or all half-integers with even sum.
    EXPECT_TRUE(all_even || all_odd);
    EXPECT_EQ((sum2 / 2) % 2, 0);
    if (all_odd) {
      for (int8_t v : p) EXPECT_EQ(std::abs(v), 1);
    }
  }
  EXPECT_EQ(by_norm, (std::map<int, int>{{0, 1}, {8, 240}, {16, 15}}));
  const std::array<int8_t, kDim> minus_2e8 = {0, 0, 0, 0, 0, 0, 0, -4};
  EXPECT_EQ(unique.count(minus_2e8), 0u);
}

std::vector<std::array<float, kDim>> probe_vectors() {
  std::vector<std::array<float, kDim>> out;
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (float sigma : {0.3f, 1.0f, 1.7f, 4.0f})
    for (int k = 0; k < 60; ++k) {
      std::array<float, kDim> x;
      for (float& v : x) v = sigma * g(rng);
      out.push_back(x);
    }
  // Adversarial: zeros, exact codewords, midpoints, huge, tiny, one spike.
  out.push_back({});
  for (uint16_t c : {0x0000, 0x0001, 0x1234, 0xffff, 0x8080}) {
    std::array<float, kDim> x;
    decode(c, x.data());
    out.push_back(x);
  }
  out.push_back({0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f});
  out.push_back({1e6f, -1e6f, 0, 0, 0, 0, 0, 0});
  out.push_back({1e-30f, -1e-30f, 0, 0, 0, 0, 0, 1e-30f});
  out.push_back({0, 0, 0, 9.0f, 0, 0, 0, 0});
  out.push_back({-0.25f, -0.25f, -0.25f, -0.25f, -0.25f, -0.25f, -0.25f, -0.25f});
  return out;
}

TEST(E8pNearest, MatchesAnExhaustiveScanOfAllCodes) {
  static std::vector<std::array<float, kDim>> codebook = [] {
    std::vector<std::array<float, kDim>> cb(65536);
    for (uint32_t c = 0; c < 65536; ++c) decode(static_cast<uint16_t>(c), cb[c].data());
    return cb;
  }();
  for (const auto& x : probe_vectors()) {
    double best = INFINITY;
    for (const auto& c : codebook) best = std::min(best, dist2(x.data(), c.data()));
    const uint16_t code = nearest(x.data());
    float v[kDim];
    decode(code, v);
    EXPECT_LE(dist2(x.data(), v), best * (1 + 1e-6) + 1e-9) << "x[0] = " << x[0];
  }
}

TEST(E8pNearest, CandidatesAreSortedDistinctAndStartAtTheNearest) {
  for (const auto& x : probe_vectors()) {
    uint16_t codes[1024];
    const uint32_t n = nearest_k(x.data(), 1024, codes);
    ASSERT_EQ(n, 1024u);
    float v[kDim];
    decode(nearest(x.data()), v);
    const double best = dist2(x.data(), v);
    std::set<uint16_t> seen;
    double previous = -1;
    for (uint32_t k = 0; k < n; ++k) {
      decode(codes[k], v);
      const double d = dist2(x.data(), v);
      if (k == 0) {
        EXPECT_LE(d, best * (1 + 1e-6) + 1e-9);
      }
      EXPECT_GE(d, previous * (1 - 1e-6) - 1e-9) << k;
      previous = d;
      seen.insert(codes[k]);
    }
    EXPECT_EQ(seen.size(), size_t{n});
    uint16_t few[3];
    ASSERT_EQ(nearest_k(x.data(), 3, few), 3u);
    EXPECT_TRUE(std::equal(few, few + 3, codes));
  }
}

TEST(E8pNearest, OneBitMatchesAnExhaustiveScan) {
  const auto& t = one_bit_halves();
  for (const auto& x : probe_vectors()) {
    double best = INFINITY;
    for (const auto& p : t) {
      float c[kDim];
      for (uint32_t i = 0; i < kDim; ++i) c[i] = 0.5f * p[i];
      best = std::min(best, dist2(x.data(), c));
    }
    const uint8_t e = nearest_one_bit(x.data());
    float c[kDim];
    for (uint32_t i = 0; i < kDim; ++i) c[i] = 0.5f * t[e][i];
    EXPECT_LE(dist2(x.data(), c), best * (1 + 1e-6) + 1e-9);
  }
}

TEST(E8pStages, EachRateReconstructsAsDecodedAndLowersTheError) {
  std::mt19937 rng(11);
  std::normal_distribution<float> g(0.0f, 1.0f);
  double err[3] = {0, 0, 0};
  for (int k = 0; k < 2000; ++k) {
    float x[kDim];
    for (float& v : x) v = g(rng);
    for (uint32_t bits = 2; bits <= 4; ++bits) {
      const Stage2 s = stage2_of_bits(bits);
      uint16_t c1, c2;
      float out[kDim], again[kDim];
      encode(s, x, &c1, &c2, out);
      reconstruct(s, c1, c2, again);
      for (uint32_t i = 0; i < kDim; ++i) ASSERT_EQ(out[i], again[i]);
      if (s == Stage2::kOneBit) {
        ASSERT_LT(c2, 256u);
      }
      err[bits - 2] += dist2(x, out);
    }
  }
  // Per-coordinate MSE on N(0, 1) at the unit scale: each stage must help a lot.
  const double mse2 = err[0] / 16000, mse3 = err[1] / 16000, mse4 = err[2] / 16000;
  EXPECT_LT(mse2, 0.12);
  EXPECT_LT(mse3, 0.6 * mse2);
  EXPECT_LT(mse4, 0.6 * mse3);
}

TEST(E8pMatrix, ValidatesAndDecodes) {
  const uint32_t rows = 3, cols = 16;
  for (uint32_t bits = 2; bits <= 4; ++bits) {
    const size_t n = rows * cols / kDim;
    const uint32_t rb = residual_bytes_per_code(bits);
    std::vector<uint8_t> codes(n * 2), residual(n * rb), scales(rows * 2);
    for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint8_t>(i * 37 + 5);
    for (size_t i = 0; i < residual.size(); ++i) residual[i] = static_cast<uint8_t>(i * 91 + 3);
    const uint16_t s[3] = {float_to_f16_bits(0.5f), float_to_f16_bits(-2.0f), float_to_f16_bits(0.0f)};
    std::memcpy(scales.data(), s, sizeof s);
    auto m = matrix_from_bytes(rows, cols, bits, codes, residual, scales);
    ASSERT_TRUE(m.is_ok()) << m.status().message();
    EXPECT_EQ(m->bytes(), n * (2 + rb) + rows * 2);
    const auto w = decode_matrix(*m);
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t k = 0; k < cols / kDim; ++k) {
        float v[kDim];
        const size_t i = r * (cols / kDim) + k;
        reconstruct(stage2_of_bits(bits), m->codes[i], rb ? m->residual[i] : 0, v);
        for (uint32_t j = 0; j < kDim; ++j)
          EXPECT_EQ(w[r * cols + k * kDim + j], f16_bits_to_float(s[r]) * v[j]);
      }
    // Bad bytes: sizes, a non-finite scale.
    EXPECT_FALSE(matrix_from_bytes(rows, cols, bits, std::span(codes).first(codes.size() - 1), residual, scales).is_ok());
    if (rb) {
      EXPECT_FALSE(matrix_from_bytes(rows, cols, bits, codes, std::span(residual).first(1), scales).is_ok());
    } else {
      EXPECT_FALSE(matrix_from_bytes(rows, cols, bits, codes, codes, scales).is_ok());
    }
    std::vector<uint8_t> nan_scales = scales;
    const uint16_t nan = 0x7e00;
    std::memcpy(nan_scales.data() + 2, &nan, 2);
    const auto bad = matrix_from_bytes(rows, cols, bits, codes, residual, nan_scales);
    ASSERT_FALSE(bad.is_ok());
    EXPECT_NE(bad.status().message().find("row 1"), std::string::npos);
  }
  EXPECT_FALSE(check_shape(4, 12).is_ok());
  EXPECT_FALSE(check_shape(0, 8).is_ok());
  EXPECT_FALSE(check_bits(1).is_ok());
  EXPECT_FALSE(check_bits(5).is_ok());
}

}  // namespace
}  // namespace submoe::e8p
