// The E8P CUDA kernels' lane logic, replayed on the host (e8p_emulator.h),
// against the codec: every code pair's 8 weights bit-equal to
// e8p::reconstruct at 2, 3 and 4 bits; the emulated product within the float
// bound of a float64 product over e8p::decode_matrix for odd shapes (rows not
// a multiple of the 8 warps of a block, rows shorter and longer than one
// 32-code lane sweep) and batches 1..9 and 64; bad arguments refused; without
// a usable device the upload and the launch say "unsupported".
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "submoe/codec/e8p.h"
#include "submoe/core/bf16.h"
#include "submoe/kernels/cuda/cuda_device.h"
#include "submoe/kernels/cuda/e8p_cuda.h"
#include "submoe/kernels/cuda/e8p_emulator.h"
#include "submoe/kernels/cuda/e8p_lane.h"

namespace submoe::kernels::cuda {
namespace {

e8p::E8pMatrix random_matrix(uint32_t rows, uint32_t cols, uint32_t bits, std::mt19937& rng) {
  e8p::E8pMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.bits = bits;
  const size_t n = size_t{rows} * cols / e8p::kDim;
  for (size_t i = 0; i < n; ++i) m.codes.push_back(static_cast<uint16_t>(rng()));
  if (bits > 2)
    for (size_t i = 0; i < n; ++i) m.residual.push_back(static_cast<uint16_t>(bits == 3 ? rng() % 256 : rng()));
  std::normal_distribution<float> g;
  for (uint32_t r = 0; r < rows; ++r) m.scales.push_back(float_to_f16_bits(r % 5 == 2 ? 0.0f : 0.05f * g(rng)));
  return m;
}

std::vector<int8_t> one_bit_table() {
  std::vector<int8_t> t;
  for (const auto& row : e8p::one_bit_halves())
    for (int8_t v : row) t.push_back(v);
  return t;
}

TEST(CudaE8pLane, WeightsAreTheCodecsReconstructionBitForBit) {
  const std::vector<int8_t> one_bit = one_bit_table();
  std::mt19937 rng(1);
  for (uint32_t bits : {2u, 3u, 4u}) {
    const e8p::Stage2 s = e8p::stage2_of_bits(bits);
    for (uint32_t n = 0; n < 20000; ++n) {
      const uint32_t c1 = n < 65536 && bits == 2 ? n : rng() & 0xffffu;
      const uint32_t c2 = bits == 3 ? rng() % 256 : rng() & 0xffffu;
      float want[8], got[8];
      e8p::reconstruct(s, static_cast<uint16_t>(c1), static_cast<uint16_t>(c2), want);
      e8p_lane::weights(e8p::packed_abs_table().data(), one_bit.data(), static_cast<uint32_t>(s), e8p::rho_of(s), c1,
                        c2, got);
      for (uint32_t i = 0; i < 8; ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
            << bits << " bits, codes " << c1 << " " << c2 << " coordinate " << i;
    }
  }
}

TEST(CudaE8pEmulator, MatchesAFloat64ProductOverTheReferenceDecoder) {
  std::mt19937 rng(2);
  for (uint32_t bits : {2u, 3u, 4u})
    for (auto [rows, cols] : {std::pair{1u, 8u}, std::pair{9u, 24u}, std::pair{13u, 264u}, std::pair{17u, 520u}})
      for (uint32_t batch : {1u, 2u, 3u, 5u, 9u, 64u}) {
        if (batch == 64 && cols > 264) continue;  // keep the test light under sanitizers
        const e8p::E8pMatrix m = random_matrix(rows, cols, bits, rng);
        std::normal_distribution<float> g;
        std::vector<float> x(size_t{batch} * cols);
        for (float& v : x) v = g(rng);
        auto y = emulate_gemm_e8p_cuda(m, x, batch);
        ASSERT_TRUE(y.is_ok()) << y.status().to_string();
        const std::vector<float> w = e8p::decode_matrix(m);
        for (uint32_t t = 0; t < batch; ++t)
          for (uint32_t r = 0; r < rows; ++r) {
            double want = 0, mag = 0;
            for (uint32_t c = 0; c < cols; ++c) {
              const double v = double{w[size_t{r} * cols + c]} * x[size_t{t} * cols + c];
              want += v;
              mag += std::fabs(v);
            }
            // f32 sums of cols terms (fma chains, then a 32-way tree) and the
            // scale applied last: a few ulps of the magnitude.
            EXPECT_NEAR((*y)[size_t{t} * rows + r], want, 4e-6 * mag * std::log2(cols + 2.0) + 1e-30)
                << bits << " bits, " << rows << "x" << cols << " batch " << batch << " token " << t << " row " << r;
          }
      }
}

TEST(CudaE8pEmulator, RefusesBadArguments) {
  std::mt19937 rng(3);
  const e8p::E8pMatrix m = random_matrix(4, 16, 3, rng);
  const std::vector<float> x(16 * 2, 1.0f);
  EXPECT_FALSE(emulate_gemm_e8p_cuda(m, x, 0).is_ok());
  EXPECT_FALSE(emulate_gemm_e8p_cuda(m, x, 65).is_ok());
  EXPECT_FALSE(emulate_gemm_e8p_cuda(m, x, 3).is_ok());  // x holds 2 tokens
  e8p::E8pMatrix bad = m;
  bad.residual.clear();
  EXPECT_FALSE(emulate_gemm_e8p_cuda(bad, x, 2).is_ok());
  bad = m;
  bad.bits = 5;
  EXPECT_FALSE(emulate_gemm_e8p_cuda(bad, x, 2).is_ok());
}

TEST(CudaE8pEmulator, WithoutADeviceUploadAndLaunchSayUnsupported) {
  if (device_count() > 0) GTEST_SKIP() << "a device is present: cuda_e8p_device_test runs the kernels";
  std::mt19937 rng(4);
  auto d = DeviceE8pMatrix::upload(random_matrix(4, 16, 2, rng));
  ASSERT_FALSE(d.is_ok());
  EXPECT_EQ(d.status().code(), ErrorCode::kUnsupported) << d.status().to_string();
  float x = 0, y = 0;
  const Status st = gemm_e8p_cuda(DeviceE8pMatrix{}, &x, 1, &y);
  EXPECT_FALSE(st.is_ok());  // nothing uploaded (and no device)
  EXPECT_FALSE(gemm_e8p_cuda(DeviceE8pMatrix{}, &x, 0, &y).is_ok());
}

}  // namespace
}  // namespace submoe::kernels::cuda
