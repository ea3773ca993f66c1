// The SpQR format (codec/spqr.h): code and statistics streams round-trip
// bit-exactly at every width and offset; the min-max grids hit their range
// ends and survive constant and narrow inputs in fp16; untrusted bytes are
// refused by name: sizes, padding bits, non-finite parameters, and every
// CSR defect (row pointers, out-of-range and duplicate coordinates, even
// for a zero value, non-finite values).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "submoe/codec/spqr.h"
#include "submoe/core/bf16.h"

namespace submoe::spqr {
namespace {

TEST(SpqrFormat, StreamsRoundTripAtEveryWidth) {
  std::mt19937 rng(2);
  for (uint32_t bits : {2u, 3u, 4u}) {
    std::vector<uint8_t> codes(208), packed(row_code_bytes(208, bits));
    for (auto& c : codes) c = static_cast<uint8_t>(rng() % (1u << bits));
    pack_row(codes, bits, packed.data());
    for (uint32_t c = 0; c < codes.size(); ++c) ASSERT_EQ(code_at(packed.data(), c, bits), codes[c]) << bits << " " << c;
  }
  for (size_t n : {1u, 3u, 4u, 5u, 77u}) {
    std::vector<uint8_t> e(n), packed((n * 6 + 7) / 8);
    for (auto& v : e) v = static_cast<uint8_t>(rng() % 64);
    pack_stat_entries(e, packed.data());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(stat_entry(packed.data(), i), e[i]) << n << " " << i;
    if ((n * 6) % 8 != 0) {
      EXPECT_EQ(packed.back() >> ((n * 6) % 8), 0) << "padding bits are 0";
    }
  }
}

TEST(SpqrFormat, MinMaxGrids) {
  const float v[] = {-0.3f, 0.1f, 0.7f, 0.2f};
  const AffineGrid g = fit_minmax(v, 7);
  EXPECT_NEAR(g.value(g.code(-0.3f)), -0.3f, 1e-6);
  EXPECT_NEAR(g.value(g.code(0.7f)), 0.7f, 1e-6);
  EXPECT_EQ(g.code(-5.0f), 0u);
  EXPECT_EQ(g.code(5.0f), 7u);
  EXPECT_EQ(g.code(std::numeric_limits<float>::quiet_NaN()), 0u);
  const float same[] = {0.5f, 0.5f};
  const AffineGrid c = fit_minmax(same, 3);
  EXPECT_GT(c.scale, 0.0f);
  EXPECT_NEAR(c.value(c.code(0.5f)), 0.5f, 1e-6) << "a constant input stays exact";
  const float zeros[] = {0.0f, 0.0f};
  EXPECT_GT(fit_minmax(zeros, 3).scale, 0.0f);
  // A narrow range far from 0: the fp16 zero would overflow; the grid widens to 0.
  const float narrow[] = {100.0f, 100.001f};
  const AffineGrid h = fit_minmax_f16(narrow, 7);
  EXPECT_TRUE(std::isfinite(h.zero) && std::isfinite(h.scale));
  EXPECT_EQ(h.scale, f16_bits_to_float(float_to_f16_bits(h.scale))) << "parameters are fp16 values";
  EXPECT_NEAR(h.value(h.code(100.0f)), 100.0f, 0.1);
}

// A valid 20 x 32 3-bit matrix's fields, as bytes.
struct Bytes {
  std::vector<uint8_t> codes, stats, params, row_ptr, col, value;
  SpqrFields fields() const { return {codes, stats, params, row_ptr, col, value}; }
};
template <typename T>
std::vector<uint8_t> raw(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}
Bytes valid() {
  Bytes b;
  b.codes.assign(20 * 12, 0x5A);
  b.stats.assign(stat_code_bytes(20, 32), 0x11);
  b.stats.back() = 0x01;  // 40 entries x 6 bits = 240 bits: no padding; keep some value
  b.params = raw(std::vector<uint16_t>(2 * 2 * 4, float_to_f16_bits(0.5f)));
  b.row_ptr = raw(std::vector<int32_t>{0, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3});
  b.col = raw(std::vector<uint16_t>{5, 0, 31});
  b.value = raw(std::vector<uint16_t>{float_to_f16_bits(1.0f), 0, float_to_f16_bits(-2.0f)});
  return b;
}

std::string error_of(const Bytes& b, uint32_t rows = 20) {
  auto m = from_fields(rows, 32, 3, b.fields());
  return m.is_ok() ? "" : m.status().message();
}

TEST(SpqrFormat, UntrustedBytesAreValidatedByName) {
  ASSERT_EQ(error_of(valid()), "");
  auto m = from_fields(20, 32, 3, valid().fields());
  const auto w = decode(*m);
  EXPECT_FLOAT_EQ(w[5] - dequantize(group_stats(*m, 0, 0), code_at(m->codes.data(), 5, 3)), 1.0f)
      << "the exception is added (correction semantics)";
  auto expect = [](const Bytes& b, const std::string& want, uint32_t rows = 20) {
    const std::string e = error_of(b, rows);
    EXPECT_NE(e.find(want), std::string::npos) << "got '" << e << "', want '" << want << "'";
  };
  Bytes b = valid();
  b.codes.pop_back();
  expect(b, "code, ");
  b = valid();
  b.params.resize(b.params.size() - 2);
  expect(b, "stat-parameter bytes");
  b = valid();
  const uint16_t nan = 0x7E00;
  std::memcpy(b.params.data() + 2 * 12, &nan, 2);  // block 1, group 1, entry 0
  expect(b, "scale step of row block 16+, column group 1 is not finite");
  // 19 rows: 38 entries, 228 bits: the last byte has 4 padding bits.
  b = valid();
  b.codes.resize(19 * 12);
  b.stats.assign(stat_code_bytes(19, 32), 0);
  b.stats.back() = 0x10;
  b.row_ptr.resize(4 * 20);
  expect(b, "unused bits", 19);
  b = valid();
  b.col = raw(std::vector<uint16_t>{5, 31, 31});
  expect(b, "duplicate coordinate");
  b = valid();
  b.col = raw(std::vector<uint16_t>{5, 0, 32});
  expect(b, "exception at column 32 of 32");
  b = valid();
  b.col = raw(std::vector<uint16_t>{5, 4, 3});
  expect(b, "not strictly increasing");
  b = valid();
  b.col = raw(std::vector<uint16_t>{0, 5, 31});
  b.row_ptr = raw(std::vector<int32_t>{0, 2, 1, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3});
  expect(b, "row_ptr decreases or overruns at row 1");
  b = valid();
  b.row_ptr[0] = 1;
  expect(b, "row_ptr runs from 1");
  b = valid();
  b.value = raw(std::vector<uint16_t>{float_to_f16_bits(1.0f), 0x7C00, 0});
  expect(b, "row 2's exception at column 0 is not finite");
  b = valid();
  b.value.pop_back();
  expect(b, "exception arrays");
  EXPECT_FALSE(from_fields(20, 40, 3, valid().fields()).is_ok());
  EXPECT_FALSE(from_fields(20, 32, 5, valid().fields()).is_ok());
}

}  // namespace
}  // namespace submoe::spqr
