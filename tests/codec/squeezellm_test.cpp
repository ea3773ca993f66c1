// The SqueezeLLM format (codec/squeezellm.h): 3- and 4-bit code packing round
// trips on every code and tail; the weighted k-means against its contract
// (0x02D): the weighted objective never increases over rounds, high-weight
// points pull their centroid (the worked trace of 0x02C), zero-mass clusters
// keep their centroid, ties go to the lower index; the reference decoder
// replaces exceptions; untrusted bytes (bad row pointers, duplicate or
// out-of-range columns, NaN tables and values, a nonzero hole code,
// descending tables) are refused naming the row.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "submoe/codec/squeezellm.h"
#include "submoe/core/bf16.h"

namespace submoe::squeezellm {
namespace {

template <typename T>
std::vector<uint8_t> bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

TEST(SqueezeLlmCodec, PackingRoundTripsEveryCode) {
  std::mt19937 rng(1);
  for (uint32_t bits : {3u, 4u}) {
    for (uint32_t cols : {32u, 64u, 96u, 416u}) {
      std::vector<uint8_t> codes(cols);
      for (auto& c : codes) c = static_cast<uint8_t>(rng() % (1u << bits));
      std::vector<uint8_t> packed(row_code_bytes(cols, bits), 0xAA);
      pack_row(codes, bits, packed.data());
      for (uint32_t c = 0; c < cols; ++c) ASSERT_EQ(code_at(packed.data(), c, bits), codes[c]) << bits << " " << c;
    }
  }
  // The documented 3-bit layout: column k of a group at bits [3k, 3k + 3).
  std::vector<uint8_t> codes(32, 0);
  codes[10] = 7;  // bits 30..32: straddles bytes 3 and 4
  std::vector<uint8_t> p(12);
  pack_row(codes, 3, p.data());
  EXPECT_EQ(p[3], 0xC0);
  EXPECT_EQ(p[4], 0x01);
}

TEST(SqueezeLlmCodec, WeightedKmeansFollowsItsContract) {
  // 0x02C: one cluster of {-0.8 (weight 9), 0 (weight 1)} sits near -0.8.
  const std::vector<float> v = {-0.8f, 0.0f}, w = {9.0f, 1.0f};
  const auto c1 = weighted_kmeans(v, w, 1, 10);
  EXPECT_NEAR(c1[0], -0.72f, 1e-6);
  // More rounds never raise the weighted objective; seeds are deterministic.
  std::mt19937 rng(2);
  std::student_t_distribution<float> heavy(3.0f);
  std::uniform_real_distribution<float> u(0.0f, 4.0f);
  std::vector<float> x(500), h(500);
  for (auto& a : x) a = heavy(rng);
  for (auto& a : h) a = u(rng);
  double prev = INFINITY;
  for (uint32_t it : {0u, 1u, 2u, 4u, 8u, 30u}) {
    const auto c = weighted_kmeans(x, h, 8, it);
    EXPECT_TRUE(std::is_sorted(c.begin(), c.end()));
    const double e = weighted_error(x, h, c);
    EXPECT_LE(e, prev * (1 + 1e-9)) << it;
    prev = e;
    EXPECT_EQ(c, weighted_kmeans(x, h, 8, it));
  }
  // The weights matter: upweighting the positive half moves centroids there.
  std::vector<float> hp(500);
  for (size_t i = 0; i < 500; ++i) hp[i] = x[i] > 0 ? 100.0f : 1.0f;
  const auto cw = weighted_kmeans(x, hp, 8, 30), cu = weighted_kmeans(x, std::vector<float>(500, 1.0f), 8, 30);
  int pos_w = 0, pos_u = 0;
  for (int j = 0; j < 8; ++j) pos_w += cw[j] > 0, pos_u += cu[j] > 0;
  EXPECT_GT(pos_w, pos_u);
  // Zero mass everywhere: uniform seeds, finite centroids; empty input: zeros.
  const auto cz = weighted_kmeans(x, std::vector<float>(500, 0.0f), 4, 5);
  for (float a : cz) EXPECT_TRUE(std::isfinite(a));
  EXPECT_EQ(weighted_kmeans({}, {}, 4, 5), std::vector<float>(4, 0.0f));
  // Ties go to the lower index.
  const std::vector<float> t = {-1.0f, 1.0f};
  EXPECT_EQ(nearest(t, 0.0f), 0);
  EXPECT_EQ(nearest(t, 1e-7f), 1);
}

struct Parts {
  uint32_t rows = 3, cols = 64, bits = 4;
  std::vector<uint8_t> codes;
  std::vector<uint16_t> lut;
  std::vector<int32_t> row_ptr{0, 1, 1, 3};
  std::vector<uint16_t> col{5, 0, 63};
  std::vector<uint16_t> value;
  Parts() {
    std::vector<uint8_t> c(cols, 3);
    codes.resize(rows * row_code_bytes(cols, bits));
    for (uint32_t r = 0; r < rows; ++r) {
      c.assign(cols, 3);
      for (uint16_t k : {uint16_t{5}, uint16_t{0}, uint16_t{63}}) c[k] = 0;
      pack_row(c, bits, codes.data() + r * row_code_bytes(cols, bits));
    }
    for (uint32_t r = 0; r < rows; ++r)
      for (int j = 0; j < 16; ++j) lut.push_back(float_to_f16_bits(0.125f * static_cast<float>(j - 8)));
    for (float v : {7.0f, -3.0f, 2.5f}) value.push_back(float_to_f16_bits(v));
  }
  Result<SqueezeMatrix> load() const {
    return from_fields(rows, cols, bits, true, {bytes(codes), bytes(lut), bytes(row_ptr), bytes(col), bytes(value)});
  }
};

TEST(SqueezeLlmCodec, DecoderReplacesExceptions) {
  const Parts p;
  auto m = p.load();
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  const auto w = decode(*m);
  EXPECT_EQ(w[0 * 64 + 5], 7.0f);
  EXPECT_EQ(w[2 * 64 + 0], -3.0f);
  EXPECT_EQ(w[2 * 64 + 63], 2.5f);
  EXPECT_EQ(w[0 * 64 + 6], 0.125f * (3 - 8));
  EXPECT_EQ(w[1 * 64 + 5], 0.125f * (0 - 8)) << "row 1 has no exception: its code 0 decodes";
  EXPECT_EQ(m->bytes(), 3 * 32 + 3 * 32 + 4 * 4 + 3 * 2 + 3 * 2);
}

TEST(SqueezeLlmCodec, UntrustedBytesAreRefusedByName) {
  struct Case {
    std::function<void(Parts&)> edit;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {[](Parts& p) { p.row_ptr = {0, 1, 0, 3}; }, "row_ptr decreases or overruns at row 1"},
      {[](Parts& p) { p.row_ptr = {1, 1, 1, 3}; }, "row_ptr runs from 1"},
      {[](Parts& p) { p.col[2] = 64; }, "row 2 has an exception at column 64"},
      {[](Parts& p) { p.col[2] = 0; }, "a duplicate coordinate"},
      {[](Parts& p) { std::swap(p.col[1], p.col[2]); }, "not strictly increasing"},
      {[](Parts& p) { p.value[1] = 0x7E00; }, "row 2's exception at column 0 is not finite"},
      {[](Parts& p) { p.lut[16 + 4] = 0x7C00; }, "row 1, table entry 4 is not finite"},
      {[](Parts& p) { std::swap(p.lut[2], p.lut[3]); }, "row 0's table decreases at entry 3"},
      {[](Parts& p) { p.codes[2] = 0x13; }, "row 0's dense code under the exception at column 5 is not 0"},
      {[](Parts& p) { p.value.pop_back(); }, "exception arrays"},
      {[](Parts& p) { p.codes.pop_back(); }, "code bytes"},
  };
  for (const Case& c : cases) {
    Parts p;
    c.edit(p);
    const Status st = p.load().status();
    EXPECT_EQ(st.code(), ErrorCode::kCorruptData) << c.needle;
    EXPECT_NE(st.message().find(c.needle), std::string::npos) << st.message();
  }
  Parts p;
  EXPECT_FALSE(from_fields(3, 48, 4, false, {bytes(p.codes), bytes(p.lut), {}, {}, {}}).is_ok()) << "48 columns";
  EXPECT_FALSE(from_fields(3, 64, 5, false, {bytes(p.codes), bytes(p.lut), {}, {}, {}}).is_ok()) << "5 bits";
  EXPECT_FALSE(from_fields(3, 64, 4, false, {bytes(p.codes), bytes(p.lut), bytes(p.row_ptr), {}, {}}).is_ok())
      << "exceptions given to a dense-only matrix";
}

}  // namespace
}  // namespace submoe::squeezellm
