// The NF4 codec (codec/nf4.h) against bitsandbytes itself
// (tests/fixtures/nf4/bnb_goldens.json, written by tools/make_nf4_goldens.py
// with bitsandbytes 0.50.2): the two tables bit for bit; bitsandbytes'
// quantize_4bit codes and absmaxes reproduced byte for byte by submoe's RTN;
// submoe's reference decoder giving bitsandbytes' dequantize_4bit floats bit
// for bit on bitsandbytes' own bytes, with and without double quantization;
// submoe's double quantization close to bitsandbytes'. Then the format's
// rules (all-zero blocks, fp16 saturation) and the validation of untrusted
// bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "codec_test_util.h"
#include "submoe/codec/nf4.h"

namespace submoe::nf4 {
namespace {

std::vector<uint8_t> from_hex(const std::string& h) {
  std::vector<uint8_t> out(h.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(std::stoi(h.substr(2 * i, 2), nullptr, 16));
  return out;
}

std::vector<float> f32_of_hex(const std::string& h) {
  const std::vector<uint8_t> b = from_hex(h);
  std::vector<float> out(b.size() / 4);
  std::memcpy(out.data(), b.data(), b.size());
  return out;
}

const nlohmann::json& goldens() {
  static const nlohmann::json j = [] {
    const auto bytes = testing::read_file_bytes(testing::fixture_path("nf4/bnb_goldens.json"));
    return nlohmann::json::parse(bytes.begin(), bytes.end());
  }();
  return j;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

// bitsandbytes' RTN: the absmax of each block and each value's code.
Nf4Matrix rtn(const std::vector<float>& w, uint32_t rows, uint32_t cols, uint32_t block, Nf4Scales scales,
              std::vector<float>* absmax_out = nullptr) {
  Nf4Matrix m;
  m.rows = rows;
  m.cols = cols;
  m.block = block;
  m.scales = scales;
  std::vector<uint8_t> codes(w.size());
  std::vector<float> absmax(m.blocks());
  for (size_t b = 0; b < absmax.size(); ++b) {
    absmax[b] = block_absmax(std::span<const float>(w).subspan(b * block, block), scales);
    for (size_t i = b * block; i < (b + 1) * block; ++i) codes[i] = quantize_value(w[i], absmax[b]);
  }
  m.codes = pack_codes(codes);
  if (scales == Nf4Scales::kF32) m.absmax_f32 = absmax;
  if (scales == Nf4Scales::kDq8) double_quantize(absmax, &m);
  if (absmax_out) *absmax_out = absmax;
  return m;
}

TEST(Nf4Codec, TablesAreBitsandbytesBitForBit) {
  const std::vector<float> table = f32_of_hex(goldens()["nf4_table_f32_hex"]);
  ASSERT_EQ(table.size(), 16u);
  for (int i = 0; i < 16; ++i) EXPECT_TRUE(same_bits(kNf4[i], table[i])) << i;
  EXPECT_EQ(kNf4[kZeroCode], 0.0f);
  const std::vector<float> map = f32_of_hex(goldens()["dynamic_map_f32_hex"]);
  ASSERT_EQ(map.size(), 256u);
  for (int i = 0; i < 256; ++i) EXPECT_TRUE(same_bits(kDynamic8[i], map[i])) << i;
}

TEST(Nf4Codec, DynamicMapFollowsItsFormula) {
  // Independently of bitsandbytes, in float64: for i = 0..6 the 2^i midpoints
  // of linspace(0.1, 1, 2^i + 1), times +-10^(i - 6), plus 0 and 1.
  std::vector<double> want{0.0, 1.0};
  for (int i = 0; i < 7; ++i) {
    const int n = (1 << i) + 1;
    for (int k = 0; k + 1 < n; ++k) {
      const double lo = 0.1 + 0.9 * k / (n - 1), hi = 0.1 + 0.9 * (k + 1) / (n - 1);
      const double v = std::pow(10.0, i - 6) * (lo + hi) / 2;
      want.push_back(v);
      want.push_back(-v);
    }
  }
  std::sort(want.begin(), want.end());
  ASSERT_EQ(want.size(), 256u);
  for (int i = 0; i < 256; ++i) EXPECT_NEAR(kDynamic8[i], want[i], 1e-6 * std::abs(want[i])) << i;
  for (int i = 0; i + 1 < 256; ++i) EXPECT_LT(kDynamic8[i], kDynamic8[i + 1]) << "sorted, no duplicates";
}

TEST(Nf4Codec, RtnReproducesBitsandbytesQuantize4bitByteForByte) {
  for (const auto& c : goldens()["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const uint32_t rows = c["rows"], cols = c["cols"], block = c["block"];
    const std::vector<float> w = f32_of_hex(c["weights_f32_hex"]);
    const Nf4Matrix m = rtn(w, rows, cols, block, Nf4Scales::kF32);
    EXPECT_EQ(m.codes, from_hex(c["codes_hex"]));
    const std::vector<float> absmax = f32_of_hex(c["absmax_f32_hex"]);
    ASSERT_EQ(m.absmax_f32.size(), absmax.size());
    for (size_t b = 0; b < absmax.size(); ++b) EXPECT_TRUE(same_bits(m.absmax_f32[b], absmax[b])) << b;
    const std::vector<float> got = decode(m), want = f32_of_hex(c["decoded_f32_hex"]);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(same_bits(got[i], want[i])) << i << ": " << got[i] << " vs " << want[i];
  }
}

TEST(Nf4Codec, DecoderGivesBitsandbytesDequantizeOnItsDoubleQuantizedBytes) {
  for (const auto& c : goldens()["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const uint32_t rows = c["rows"], cols = c["cols"], block = c["block"];
    const auto codes = from_hex(c["codes_hex"]), qabs = from_hex(c["dq_absmax_codes_hex"]);
    const auto a2 = from_hex(c["dq_absmax2_f32_hex"]), off = from_hex(c["dq_offset_f32_hex"]);
    auto m = from_fields(rows, cols, block, Nf4Scales::kDq8, {codes, qabs, a2, off});
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    const std::vector<float> got = decode(*m), want = f32_of_hex(c["dq_decoded_f32_hex"]);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(same_bits(got[i], want[i])) << i << ": " << got[i] << " vs " << want[i];
  }
}

TEST(Nf4Codec, DoubleQuantizationMatchesQlorasState) {
  // The offset is a mean (bitsandbytes sums in float32, submoe in float64):
  // equal to a few ulps; absmax2 and the 8-bit codes then follow from it.
  size_t blocks = 0, same_codes = 0;
  for (const auto& c : goldens()["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const uint32_t rows = c["rows"], cols = c["cols"], block = c["block"];
    std::vector<float> absmax;
    const Nf4Matrix m = rtn(f32_of_hex(c["weights_f32_hex"]), rows, cols, block, Nf4Scales::kDq8, &absmax);
    const float offset = f32_of_hex(c["dq_offset_f32_hex"])[0];
    EXPECT_NEAR(m.offset, offset, 4e-7 * std::abs(offset));
    const std::vector<float> a2 = f32_of_hex(c["dq_absmax2_f32_hex"]);
    ASSERT_EQ(m.absmax2.size(), a2.size());
    for (size_t g = 0; g < a2.size(); ++g) EXPECT_NEAR(m.absmax2[g], a2[g], 1e-6 * a2[g]) << g;
    const auto q = from_hex(c["dq_absmax_codes_hex"]);
    ASSERT_EQ(m.absmax_codes.size(), q.size());
    for (size_t b = 0; b < q.size(); ++b) {
      same_codes += m.absmax_codes[b] == q[b];
      EXPECT_LE(std::abs(int{m.absmax_codes[b]} - int{q[b]}), 1) << b;
      // The decoded absmax stays within the dynamic map's resolution.
      EXPECT_NEAR(m.absmax(b), absmax[b], 0.05 * m.absmax2[b / kDq8Group] + 1e-12) << b;
    }
    blocks += q.size();
  }
  EXPECT_GE(same_codes, blocks * 98 / 100) << same_codes << " of " << blocks;
  EXPECT_GT(blocks, 300u);
}

TEST(Nf4Codec, AllZeroBlocksAndSaturatingHalfScales) {
  const std::vector<float> zeros(64, 0.0f);
  EXPECT_EQ(block_absmax(zeros, Nf4Scales::kF32), 0.0f);
  EXPECT_EQ(quantize_value(0.0f, 0.0f), kZeroCode);
  EXPECT_EQ(quantize_value(-0.0f, 0.0f), kZeroCode);
  std::vector<float> big(64, 1.0f);
  big[5] = -1e6f;
  const float a = block_absmax(big, Nf4Scales::kF16);
  EXPECT_EQ(a, 65504.0f) << "saturates at the largest finite half, never inf";
  EXPECT_EQ(quantize_value(-1e6f, a), 0) << "clamped to -1";
  EXPECT_EQ(block_absmax(big, Nf4Scales::kF32), 1e6f);
  // Ties go to the lower code: the midpoint between codes 8 and 9.
  const float mid = (kNf4[8] + kNf4[9]) / 2.0f;
  EXPECT_EQ(quantize_value(mid, 1.0f), 8);
  EXPECT_EQ(quantize_value(std::nextafter(mid, 1.0f), 1.0f), 9);
  // A zero block under dq8 decodes to exact zeros whatever its stored absmax.
  std::vector<float> w(2 * 64, 0.0f);
  for (int i = 0; i < 64; ++i) w[i] = 0.01f * static_cast<float>(i - 30);
  Nf4Matrix m;
  m.rows = 2;
  m.cols = 64;
  m.scales = Nf4Scales::kDq8;
  std::vector<uint8_t> codes(w.size());
  std::vector<float> absmax = {block_absmax(std::span<const float>(w).first(64), Nf4Scales::kDq8), 0.0f};
  for (size_t i = 0; i < w.size(); ++i) codes[i] = quantize_value(w[i], absmax[i / 64]);
  m.codes = pack_codes(codes);
  double_quantize(absmax, &m);
  const std::vector<float> d = decode(m);
  for (int i = 64; i < 128; ++i) EXPECT_EQ(d[i], 0.0f);
}

TEST(Nf4Codec, UntrustedBytesAreRefusedByName) {
  const uint32_t rows = 2, cols = 128, block = 64;
  std::vector<uint8_t> codes(rows * cols / 2, 0x7F);
  std::vector<float> absmax(4, 1.0f);
  auto bytes = [](const std::vector<float>& v) {
    return std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), reinterpret_cast<const uint8_t*>(v.data()) + 4 * v.size());
  };
  auto f32 = bytes(absmax);
  EXPECT_TRUE(from_fields(rows, cols, block, Nf4Scales::kF32, {codes, f32, {}, {}}).is_ok());
  for (float bad : {NAN, INFINITY, -1.0f}) {
    std::vector<float> a = absmax;
    a[3] = bad;
    auto b = bytes(a);
    const Status st = from_fields(rows, cols, block, Nf4Scales::kF32, {codes, b, {}, {}}).status();
    EXPECT_EQ(st.code(), ErrorCode::kCorruptData);
    EXPECT_NE(st.message().find("row 1, block 1"), std::string::npos) << st.message();
  }
  EXPECT_EQ(from_fields(rows, cols, block, Nf4Scales::kF32, {std::span(codes).first(10), f32, {}, {}}).status().code(),
            ErrorCode::kCorruptData);
  EXPECT_FALSE(from_fields(rows, 96, block, Nf4Scales::kF32, {codes, f32, {}, {}}).is_ok()) << "96 is not whole blocks";
  EXPECT_FALSE(from_fields(rows, cols, 48, Nf4Scales::kF32, {codes, f32, {}, {}}).is_ok()) << "48 is no block size";
  std::vector<uint16_t> half(4, 0x7C00);  // +inf
  std::vector<uint8_t> hb(reinterpret_cast<uint8_t*>(half.data()), reinterpret_cast<uint8_t*>(half.data()) + 8);
  EXPECT_EQ(from_fields(rows, cols, block, Nf4Scales::kF16, {codes, hb, {}, {}}).status().code(), ErrorCode::kCorruptData);
  std::vector<uint8_t> q(4, 200);
  auto a2 = bytes({0.5f}), off = bytes({0.1f});
  EXPECT_TRUE(from_fields(rows, cols, block, Nf4Scales::kDq8, {codes, q, a2, off}).is_ok());
  EXPECT_FALSE(from_fields(rows, cols, block, Nf4Scales::kDq8, {codes, q, bytes({0.5f, 1.0f}), off}).is_ok());
  EXPECT_FALSE(from_fields(rows, cols, block, Nf4Scales::kDq8, {codes, q, bytes({NAN}), off}).is_ok());
  EXPECT_FALSE(from_fields(rows, cols, block, Nf4Scales::kDq8, {codes, q, a2, bytes({INFINITY})}).is_ok());
  EXPECT_FALSE(from_fields(rows, cols, block, Nf4Scales::kDq8, {codes, q, a2, {}}).is_ok());
}

}  // namespace
}  // namespace submoe::nf4
