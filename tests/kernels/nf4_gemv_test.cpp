// The NF4 kernels (kernels/nf4_gemv.h) on every ISA this CPU runs, against a
// float64 product over weights decoded here from the definition (first column
// in the high nibble; absmax as fp32, fp16 or dq8 = dynamic[q] * absmax2 +
// offset): every code, the three scale storages, block sizes 32..256, batches
// 1..9 and 64, odd row counts, strided inputs and outputs, a thread pool.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernel_test_support.h"
#include "submoe/core/bf16.h"
#include "submoe/core/thread_pool.h"
#include "submoe/kernels/nf4_gemv.h"

namespace submoe::kernels {
namespace {

nf4::Nf4Matrix random_matrix(uint32_t rows, uint32_t cols, uint32_t block, nf4::Nf4Scales scales, std::mt19937& rng) {
  nf4::Nf4Matrix m;
  m.rows = rows;
  m.cols = cols;
  m.block = block;
  m.scales = scales;
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> amax(0.01f, 3.0f);
  m.codes.resize(size_t{rows} * cols / 2);
  for (auto& b : m.codes) b = static_cast<uint8_t>(byte(rng));
  const size_t nb = m.blocks();
  switch (scales) {
    case nf4::Nf4Scales::kF32:
      for (size_t b = 0; b < nb; ++b) m.absmax_f32.push_back(b % 7 == 3 ? 0.0f : amax(rng));
      break;
    case nf4::Nf4Scales::kF16:
      // Subnormal halves too (below 2^-14), and the largest finite one.
      for (size_t b = 0; b < nb; ++b)
        m.absmax_f16.push_back(b % 5 == 2 ? static_cast<uint16_t>(1 + b % 1023) : b % 11 == 4 ? 0x7BFF : float_to_f16_bits(amax(rng)));
      break;
    case nf4::Nf4Scales::kDq8:
      for (size_t b = 0; b < nb; ++b) m.absmax_codes.push_back(static_cast<uint8_t>(byte(rng)));
      for (size_t g = 0; g < nf4::dq8_groups(nb); ++g) m.absmax2.push_back(amax(rng));
      m.offset = 1.5f;
      break;
  }
  return m;
}

// W[r][c] from the definition, in float64 except for the stored float32 steps
// of the absmax (dq8: the product and the sum are float32, as the format says).
double weight(const nf4::Nf4Matrix& m, uint32_t r, uint32_t c) {
  const size_t i = size_t{r} * m.cols + c;
  const uint8_t byte = m.codes[i / 2];
  const int code = c % 2 == 0 ? byte >> 4 : byte & 15;
  const size_t b = i / m.block;
  double a = 0;
  switch (m.scales) {
    case nf4::Nf4Scales::kF32: a = m.absmax_f32[b]; break;
    case nf4::Nf4Scales::kF16: a = f16_bits_to_float(m.absmax_f16[b]); break;
    case nf4::Nf4Scales::kDq8: {
      const float p = nf4::kDynamic8[m.absmax_codes[b]] * m.absmax2[b / 256];
      a = p + m.offset;
      break;
    }
  }
  return double{nf4::kNf4[code]} * a;
}

TEST(Nf4Gemv, EveryIsaMatchesAFloat64ProductOnEveryShape) {
  std::mt19937 rng(41);
  ThreadPool pool(2);
  for (Isa isa : testing::supported_isas()) {
    const Nf4GemvKernels& k = nf4_gemv_kernels(isa);
    for (auto scales : {nf4::Nf4Scales::kF32, nf4::Nf4Scales::kF16, nf4::Nf4Scales::kDq8}) {
      for (auto [rows, cols, block] : {std::tuple{1u, 32u, 32u}, {3u, 64u, 64u}, {17u, 192u, 64u}, {9u, 256u, 128u},
                                       {129u, 512u, 256u}, {70u, 2880u, 64u}}) {
        for (uint32_t batch : {1u, 2u, 3u, 4u, 5u, 8u, 9u, 64u}) {
          if (size_t{rows} * cols * batch > (size_t{1} << 22)) continue;
          SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::string(nf4::scales_name(scales)) + " " +
                       std::to_string(rows) + "x" + std::to_string(cols) + " block " + std::to_string(block) +
                       " batch " + std::to_string(batch));
          const nf4::Nf4Matrix m = random_matrix(rows, cols, block, scales, rng);
          const size_t xs = cols + 5, ys = rows + 3;  // strided rows of tokens
          std::vector<float> x(xs * batch), y(ys * batch, -7.0f);
          std::normal_distribution<float> n01;
          for (float& v : x) v = n01(rng);
          ASSERT_TRUE(gemm_nf4(k, {Nf4View::of(m), x.data(), xs, batch, y.data(), ys}, rows > 64 ? &pool : nullptr).is_ok());
          for (uint32_t t = 0; t < batch; ++t)
            for (uint32_t r = 0; r < rows; ++r) {
              double want = 0, mag = 0;
              for (uint32_t c = 0; c < cols; ++c) {
                want += weight(m, r, c) * x[t * xs + c];
                mag += std::abs(weight(m, r, c) * x[t * xs + c]);
              }
              ASSERT_NEAR(y[t * ys + r], want, 2e-6 * mag * std::sqrt(double(cols)) + 1e-30) << "row " << r << " token " << t;
            }
          for (uint32_t t = 0; t + 1 < batch; ++t)  // the padding between output rows is untouched
            for (size_t i = rows; i < ys; ++i) ASSERT_EQ(y[t * ys + i], -7.0f);
        }
      }
    }
  }
}

TEST(Nf4Gemv, DoubleQuantizedAbsmaxesAreTheReferenceDecodersBitForBit) {
  // x = e_c reads W[:, c] through the kernel exactly (one nonzero product);
  // columns in the first and second 16-block chunk and the tail of a row's 45
  // blocks, on rows whose chunks straddle an absmax2 group of 256 blocks.
  std::mt19937 rng(44);
  const nf4::Nf4Matrix m = random_matrix(70, 2880, 64, nf4::Nf4Scales::kDq8, rng);
  const std::vector<float> w = nf4::decode(m);
  for (Isa isa : testing::supported_isas())
    for (uint32_t c : {0u, 64u * 16 + 5, 64u * 44 + 63}) {
      std::vector<float> x(2880, 0.0f), y(70);
      x[c] = 1.0f;
      ASSERT_TRUE(gemm_nf4(nf4_gemv_kernels(isa), {Nf4View::of(m), x.data(), 2880, 1, y.data(), 70}, nullptr).is_ok());
      for (uint32_t r = 0; r < 70; ++r) ASSERT_EQ(y[r], w[size_t{r} * 2880 + c]) << isa_name(isa) << " " << r << " " << c;
    }
}

TEST(Nf4Gemv, EachCodeDecodesToItsTableValue) {
  // One row per code: all 32 columns hold it, x = e_c picks column c, so every
  // ISA's lookup (both nibbles, both table halves) is seen exactly.
  for (Isa isa : testing::supported_isas()) {
    nf4::Nf4Matrix m;
    m.rows = 16;
    m.cols = 32;
    m.block = 32;
    m.scales = nf4::Nf4Scales::kF32;
    for (int code = 0; code < 16; ++code)
      for (int j = 0; j < 16; ++j) m.codes.push_back(static_cast<uint8_t>(code * 17));
    m.absmax_f32.assign(16, 1.0f);
    for (uint32_t c = 0; c < 32; ++c) {
      std::vector<float> x(32, 0.0f), y(16);
      x[c] = 1.0f;
      ASSERT_TRUE(gemm_nf4(nf4_gemv_kernels(isa), {Nf4View::of(m), x.data(), 32, 1, y.data(), 16}, nullptr).is_ok());
      for (int code = 0; code < 16; ++code) EXPECT_EQ(y[code], nf4::kNf4[code]) << isa_name(isa) << " column " << c;
    }
  }
}

TEST(Nf4Gemv, BadArgumentsAreRefused) {
  std::mt19937 rng(1);
  const nf4::Nf4Matrix m = random_matrix(2, 64, 64, nf4::Nf4Scales::kDq8, rng);
  std::vector<float> x(128), y(4);
  const Nf4GemvKernels& k = best_nf4_gemv_kernels();
  Nf4View v = Nf4View::of(m);
  EXPECT_TRUE(gemm_nf4(k, {v, x.data(), 64, 1, y.data(), 2}, nullptr).is_ok());
  EXPECT_FALSE(gemm_nf4(k, {v, x.data(), 64, 0, y.data(), 2}, nullptr).is_ok());
  EXPECT_FALSE(gemm_nf4(k, {v, x.data(), 32, 2, y.data(), 2}, nullptr).is_ok());
  Nf4View bad = v;
  bad.cols = 48;
  EXPECT_FALSE(gemm_nf4(k, {bad, x.data(), 48, 1, y.data(), 2}, nullptr).is_ok());
  bad = v;
  bad.block = 48;
  EXPECT_FALSE(gemm_nf4(k, {bad, x.data(), 64, 1, y.data(), 2}, nullptr).is_ok());
  bad = v;
  bad.absmax2 = nullptr;
  EXPECT_FALSE(gemm_nf4(k, {bad, x.data(), 64, 1, y.data(), 2}, nullptr).is_ok());
}

TEST(Nf4GemvI8, TheInt8TableIsNf4RoundedTo127ths) {
  for (int q = 0; q < 16; ++q) EXPECT_EQ(kNf4I8[q], std::lround(127.0 * nf4::kNf4[q])) << q;
}

// Random int8 activations with their scales (one token in 9 all zero).
struct I8Tokens {
  std::vector<int8_t> q;
  std::vector<float> s;
};
I8Tokens random_tokens(uint32_t batch, size_t stride, std::mt19937& rng) {
  I8Tokens x;
  std::uniform_int_distribution<int> v(-127, 127);
  x.q.resize(stride * batch);
  for (auto& b : x.q) b = static_cast<int8_t>(v(rng));
  for (uint32_t t = 0; t < batch; ++t) {
    x.s.push_back(0.001f + 0.01f * static_cast<float>(t % 5));
    if (t % 9 == 7) std::fill(x.q.begin() + t * stride, x.q.begin() + (t + 1) * stride, int8_t{0});
  }
  return x;
}

// The int8 definition in float64: each block's integer sum, weighted by the
// block's absmax (the format's float32 value), times s_t / 127; and the sum of
// the terms' magnitudes for the bound.
std::pair<double, double> i8_oracle(const nf4::Nf4Matrix& m, const int8_t* q, float s, uint32_t r) {
  double want = 0, mag = 0;
  for (uint32_t b = 0; b < m.cols / m.block; ++b) {
    int64_t sum = 0, abs_sum = 0;  // kernels split a block's sum over lanes: the bound takes every product's size
    for (uint32_t c = b * m.block; c < (b + 1) * m.block; ++c) {
      const uint8_t byte = m.codes[(size_t{r} * m.cols + c) / 2];
      const int64_t p = int64_t{kNf4I8[c % 2 == 0 ? byte >> 4 : byte & 15]} * q[c];
      sum += p;
      abs_sum += p < 0 ? -p : p;
    }
    const double a = -weight(m, r, b * m.block);  // the block's absmax: its first column holds code 0 (-1)
    want += a * static_cast<double>(sum);
    mag += std::abs(a) * static_cast<double>(abs_sum);
  }
  return {want * s / 127.0, mag * s / 127.0};
}

TEST(Nf4GemvI8, EveryIsaMatchesTheInt8DefinitionOnEveryShape) {
  // cols 32, 96, 2880: units of 128 columns with 32, 96 and 64 columns left over.
  std::mt19937 rng(45);
  ThreadPool pool(2);
  for (Isa isa : testing::supported_isas()) {
    const Nf4GemvKernels& k = nf4_gemv_kernels(isa);
    for (auto scales : {nf4::Nf4Scales::kF32, nf4::Nf4Scales::kF16, nf4::Nf4Scales::kDq8}) {
      for (auto [rows, cols, block] : {std::tuple{1u, 32u, 32u}, {3u, 64u, 64u}, {5u, 96u, 32u}, {17u, 192u, 64u},
                                       {9u, 256u, 128u}, {129u, 512u, 256u}, {6u, 1024u, 1024u}, {70u, 2880u, 64u}}) {
        for (uint32_t batch : {1u, 2u, 3u, 4u, 5u, 8u, 9u, 64u}) {
          if (size_t{rows} * cols * batch > (size_t{1} << 22)) continue;
          SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::string(nf4::scales_name(scales)) + " " +
                       std::to_string(rows) + "x" + std::to_string(cols) + " block " + std::to_string(block) +
                       " batch " + std::to_string(batch));
          // The weight helper reads column 0 of a block for its absmax: make its code 0 (-1).
          nf4::Nf4Matrix m = random_matrix(rows, cols, block, scales, rng);
          for (uint32_t r = 0; r < rows; ++r)
            for (uint32_t b = 0; b < cols / block; ++b) m.codes[(size_t{r} * cols + b * block) / 2] &= 0x0F;
          const size_t xs = cols + 5, ys = rows + 3;
          const I8Tokens x = random_tokens(batch, xs, rng);
          std::vector<float> y(ys * batch, -7.0f);
          ASSERT_TRUE(gemm_nf4_i8(k, {Nf4View::of(m), x.q.data(), xs, x.s.data(), batch, y.data(), ys},
                                  rows > 64 ? &pool : nullptr)
                          .is_ok());
          for (uint32_t t = 0; t < batch; ++t)
            for (uint32_t r = 0; r < rows; ++r) {
              const auto [want, mag] = i8_oracle(m, x.q.data() + t * xs, x.s[t], r);
              // Float sums of cols / block exact integers times absmax, and two products.
              ASSERT_NEAR(y[t * ys + r], want, 1.2e-7 * (cols / block + 4) * mag + 1e-30) << "row " << r << " token " << t;
            }
          for (uint32_t t = 0; t + 1 < batch; ++t)
            for (size_t i = rows; i < ys; ++i) ASSERT_EQ(y[t * ys + i], -7.0f);
        }
      }
    }
  }
}

TEST(Nf4GemvI8, TheProductStaysWithinTheDerivedBoundOfTheExactOne) {
  // Against the exact product of the float weights and float activations:
  // |dy| <= sum_c |w_c| s/2 (activation rounding) + |x_c| absmax / 254 (table
  // rounding), plus float summation.
  std::mt19937 rng(46);
  const uint32_t rows = 40, cols = 2880, block = 64;
  nf4::Nf4Matrix m = random_matrix(rows, cols, block, nf4::Nf4Scales::kDq8, rng);
  for (uint32_t r = 0; r < rows; ++r)  // each block's first column holds code 0 (-absmax)
    for (uint32_t b = 0; b < cols / block; ++b) m.codes[(size_t{r} * cols + b * block) / 2] &= 0x0F;
  std::normal_distribution<float> n01;
  std::vector<float> x(cols);
  for (float& v : x) v = n01(rng);
  x[17] = 9.0f;  // an outlier sets the scale
  std::vector<int8_t> q(cols);
  const float s = quantize_activations_int8(ActivationsView::f32(x.data(), 1, cols), 0, cols, q.data());
  for (Isa isa : testing::supported_isas()) {
    std::vector<float> y(rows);
    ASSERT_TRUE(gemm_nf4_i8(nf4_gemv_kernels(isa), {Nf4View::of(m), q.data(), cols, &s, 1, y.data(), rows}, nullptr).is_ok());
    double worst = 0;
    for (uint32_t r = 0; r < rows; ++r) {
      double want = 0, bound = 0;
      for (uint32_t c = 0; c < cols; ++c) {
        const double w = weight(m, r, c), absmax = std::abs(weight(m, r, c - c % block));
        want += w * x[c];
        bound += std::abs(w) * s / 2 + std::abs(x[c]) * absmax / 254.0 + 1e-6 * std::abs(w * x[c]);
      }
      ASSERT_LE(std::abs(y[r] - want), bound) << isa_name(isa) << " row " << r;
      worst = std::max(worst, std::abs(y[r] - want) / bound);
    }
    EXPECT_GT(worst, 0.0);  // the rounding is there: the path is the int8 one
  }
}

TEST(Nf4GemvI8, EachCodeDecodesToItsInt8TableValue) {
  // One row per code (all its columns hold it); q = 127 e_c with s = 1/127
  // picks column c: y = kNf4I8[code] * absmax / 127, exactly.
  for (Isa isa : testing::supported_isas()) {
    nf4::Nf4Matrix m;
    m.rows = 16;
    m.cols = 160;  // a full unit of 128 and a tail of 32
    m.block = 32;
    m.scales = nf4::Nf4Scales::kF32;
    for (int code = 0; code < 16; ++code)
      for (int j = 0; j < 80; ++j) m.codes.push_back(static_cast<uint8_t>(code * 17));
    for (int code = 0; code < 16; ++code)
      for (int b = 0; b < 5; ++b) m.absmax_f32.push_back(static_cast<float>(1 + b));
    const float s = 1.0f / 127.0f;
    for (uint32_t c = 0; c < 160; ++c) {
      std::vector<int8_t> q(160, 0);
      q[c] = 127;
      std::vector<float> y(16);
      ASSERT_TRUE(gemm_nf4_i8(nf4_gemv_kernels(isa), {Nf4View::of(m), q.data(), 160, &s, 1, y.data(), 16}, nullptr).is_ok());
      for (int code = 0; code < 16; ++code)
        EXPECT_FLOAT_EQ(y[code], static_cast<float>(kNf4I8[code]) * static_cast<float>(1 + c / 32) / 127.0f)
            << isa_name(isa) << " column " << c << " code " << code;
    }
  }
}

TEST(Nf4GemvI8, NonFiniteScalesGiveNaNAndBadArgumentsAreRefused) {
  std::mt19937 rng(2);
  const nf4::Nf4Matrix m = random_matrix(2, 64, 64, nf4::Nf4Scales::kDq8, rng);
  std::vector<int8_t> q(128, 3);
  std::vector<float> y(4);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (Isa isa : testing::supported_isas()) {
    ASSERT_TRUE(gemm_nf4_i8(nf4_gemv_kernels(isa), {Nf4View::of(m), q.data(), 64, &nan, 1, y.data(), 2}, nullptr).is_ok());
    EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1])) << isa_name(isa);
  }
  const Nf4GemvKernels& k = best_nf4_gemv_kernels();
  const Nf4View v = Nf4View::of(m);
  const float s = 1.0f;
  EXPECT_FALSE(gemm_nf4_i8(k, {v, q.data(), 64, &s, 0, y.data(), 2}, nullptr).is_ok());
  EXPECT_FALSE(gemm_nf4_i8(k, {v, q.data(), 32, &s, 2, y.data(), 2}, nullptr).is_ok());
  EXPECT_FALSE(gemm_nf4_i8(k, {v, q.data(), 64, nullptr, 1, y.data(), 2}, nullptr).is_ok());
  EXPECT_FALSE(gemm_nf4_i8(k, {v, nullptr, 64, &s, 1, y.data(), 2}, nullptr).is_ok());
  Nf4View bad = v;
  bad.block = 48;
  EXPECT_FALSE(gemm_nf4_i8(k, {bad, q.data(), 64, &s, 1, y.data(), 2}, nullptr).is_ok());
}

}  // namespace
}  // namespace submoe::kernels
