// VPTQ's stored matrix (codec/vptq.h): the exact ledger, the reference
// decoder against an independent float64 sum (vectors down the output axis,
// outlier columns on their own codebook, the residual added), index streams
// round-tripping, and untrusted fields refused by name (sizes, padding bits,
// outlier columns out of range or not increasing, non-finite values).
#include <gtest/gtest.h>

#include <random>

#include "submoe/codec/vptq.h"
#include "submoe/core/bf16.h"

namespace submoe::vptq {
namespace {

VptqMatrix random_matrix(uint32_t rows, uint32_t cols, Shape s, std::vector<uint32_t> outliers, std::mt19937& rng) {
  VptqMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.shape = s;
  std::normal_distribution<float> g;
  m.indices.resize(size_t{cols} * (rows / kDim));
  for (auto& i : m.indices) i = static_cast<uint16_t>(rng() % s.entries());
  if (s.residual_bits) {
    m.residual_indices.resize(m.indices.size());
    for (auto& i : m.residual_indices) i = static_cast<uint16_t>(rng() % s.residual_entries());
    for (uint32_t i = 0; i < s.residual_entries() * kDim; ++i) m.residual_codebook.push_back(float_to_f16_bits(0.1f * g(rng)));
  }
  for (uint32_t i = 0; i < s.entries() * kDim; ++i) m.codebook.push_back(float_to_f16_bits(g(rng)));
  m.outlier_columns = std::move(outliers);
  if (!m.outlier_columns.empty())
    for (uint32_t i = 0; i < s.entries() * kDim; ++i) m.outlier_codebook.push_back(float_to_f16_bits(3 * g(rng)));
  for (uint32_t q = 0; q < cols; ++q) m.scales.push_back(float_to_f16_bits(q == 2 ? 0.0f : 0.05f * g(rng)));
  return m;
}

std::vector<uint8_t> bytes16(const std::vector<uint16_t>& v) {
  std::vector<uint8_t> b;
  for (uint16_t x : v) {
    b.push_back(static_cast<uint8_t>(x & 0xff));
    b.push_back(static_cast<uint8_t>(x >> 8));
  }
  return b;
}
std::vector<uint8_t> bytes32(const std::vector<uint32_t>& v) {
  std::vector<uint8_t> b;
  for (uint32_t x : v)
    for (int k = 0; k < 4; ++k) b.push_back(static_cast<uint8_t>(x >> (8 * k)));
  return b;
}

struct Owned {
  std::vector<uint8_t> idx, cb, ridx, rcb, oc, ocb, sc, rs;
  FieldsIn view() const { return {idx, cb, ridx, rcb, oc, ocb, sc, rs}; }
};
Owned fields_of(const VptqMatrix& m) {
  Owned o;
  o.idx = pack_indices(m.indices, m.rows, m.cols, m.shape.bits);
  o.cb = bytes16(m.codebook);
  if (m.shape.residual_bits) o.ridx = pack_indices(m.residual_indices, m.rows, m.cols, m.shape.residual_bits);
  o.rcb = bytes16(m.residual_codebook);
  o.oc = bytes32(m.outlier_columns);
  o.ocb = bytes16(m.outlier_codebook);
  o.sc = bytes16(m.scales);
  o.rs = bytes16(m.row_scales);
  return o;
}

TEST(VptqLedger, CountsEveryField) {
  // 8+8 on 256 x 256 with 2 outlier columns.
  EXPECT_EQ(matrix_bytes(256, 256, {8, 8}, 2),
            size_t{256} * 32 * 2 + 3 * 256 * 8 * 2 + 2 * 4 + 256 * 2);
  // The VPTQ paper's 4096 x 4096 example, one 8-bit index per 8 weights: about 1.002 bits (0x07A) + column scales.
  const double bits = 8.0 * static_cast<double>(matrix_bytes(4096, 4096, {8, 0}, 0)) / (4096.0 * 4096.0);
  EXPECT_NEAR(bits, 1.0 + 256.0 * 8 * 16 / (4096.0 * 4096.0) + 16.0 / 4096, 1e-12);
  EXPECT_EQ(index_column_bytes(24, 5), size_t{2});  // 3 x 5 bits
  EXPECT_EQ(matrix_bytes(16, 3, {4, 0, true}, 0), matrix_bytes(16, 3, {4, 0, false}, 0) + 16 * 2);
}

TEST(VptqDecode, MatchesAFloat64SumDownTheOutputAxis) {
  std::mt19937 rng(7);
  for (Shape s : {Shape{8, 0}, Shape{6, 4}, Shape{12, 12}, Shape{5, 5, true}}) {
    VptqMatrix m = random_matrix(24, 7, s, {1, 6}, rng);
    if (s.row_scaled)
      for (uint32_t r = 0; r < m.rows; ++r) m.row_scales.push_back(float_to_f16_bits(r == 3 ? 0.0f : 0.5f + 0.1f * r));
    const std::vector<float> w = decode_matrix(m);
    for (uint32_t r = 0; r < m.rows; ++r)
      for (uint32_t q = 0; q < m.cols; ++q) {
        const size_t v = size_t{q} * (m.rows / kDim) + r / kDim;
        const bool out = q == 1 || q == 6;
        double sum = f16_bits_to_float((out ? m.outlier_codebook : m.codebook)[size_t{m.indices[v]} * kDim + r % kDim]);
        if (s.residual_bits) sum += f16_bits_to_float(m.residual_codebook[size_t{m.residual_indices[v]} * kDim + r % kDim]);
        const double row = s.row_scaled ? f16_bits_to_float(m.row_scales[r]) : 1.0;
        const double want = row * f16_bits_to_float(m.scales[q]) * sum;
        EXPECT_NEAR(w[size_t{r} * m.cols + q], want, 1e-5 * (1 + std::fabs(want))) << s.name();
      }
  }
}

TEST(VptqFromBytes, RoundTripsAndRefusesBadFields) {
  std::mt19937 rng(9);
  const Shape s{5, 3};
  const VptqMatrix m = random_matrix(24, 6, s, {0, 4}, rng);
  const Owned o = fields_of(m);
  auto back = matrix_from_bytes(24, 6, s, o.view());
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back->indices, m.indices);
  EXPECT_EQ(back->residual_indices, m.residual_indices);
  EXPECT_EQ(back->outlier_columns, m.outlier_columns);
  EXPECT_EQ(decode_matrix(*back), decode_matrix(m));
  auto refused = [&](Owned bad, const char* needle) {
    auto r = matrix_from_bytes(24, 6, s, bad.view());
    ASSERT_FALSE(r.is_ok()) << needle;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  Owned bad = o;
  bad.idx.pop_back();
  refused(bad, "indices holds");
  bad = o;
  bad.idx[1] |= 0x80;  // column 0: 15 bits of indices in 2 bytes, bit 15 is padding
  refused(bad, "column 0 of indices has a nonzero padding bit");
  bad = o;
  bad.oc = bytes32({4, 0});
  refused(bad, "does not increase");
  bad = o;
  bad.oc = bytes32({0, 6});
  refused(bad, "is not a column of the matrix");
  bad = o;
  bad.ocb.clear();
  refused(bad, "outlier_codebook holds 0 bytes");
  bad = o;
  bad.rcb[1] = 0x7c;
  bad.rcb[0] = 0x00;
  refused(bad, "residual_codebook value 0 is not finite");
  bad = o;
  bad.sc[5] = 0xfe;
  refused(bad, "scales value 2 is not finite");
  EXPECT_FALSE(matrix_from_bytes(20, 6, s, o.view()).is_ok());  // rows not a multiple of 8
  EXPECT_FALSE(matrix_from_bytes(24, 6, Shape{5, 3, true}, o.view()).is_ok());  // row_scales missing
  bad = o;
  bad.rs.assign(48, 0);
  refused(bad, "row_scales holds 48 bytes");
  EXPECT_FALSE(check_shape({0, 0}).is_ok());
  EXPECT_FALSE(check_shape({8, 17}).is_ok());
}

}  // namespace
}  // namespace submoe::vptq
