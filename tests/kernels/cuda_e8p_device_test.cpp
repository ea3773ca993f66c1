// The E8P CUDA kernels on a real GPU: equal bit for bit to the host emulator
// (which replays their lane logic, cuda_e8p_emulator_test) at 2, 3 and 4
// bits, odd shapes, batches 1..64; bad launches refused. Skipped, with the
// reason, when no device is usable.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "submoe/codec/e8p.h"
#include "submoe/core/bf16.h"
#include "submoe/kernels/cuda/cuda_device.h"
#include "submoe/kernels/cuda/e8p_cuda.h"
#include "submoe/kernels/cuda/e8p_emulator.h"

namespace submoe::kernels::cuda {
namespace {

class CudaE8pDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (device_count() == 0) GTEST_SKIP() << "CUDA device tests skipped: " << no_device_reason();
  }
};

TEST_F(CudaE8pDevice, EqualsTheEmulatorBitForBit) {
  std::mt19937 rng(5);
  std::normal_distribution<float> g;
  for (uint32_t bits : {2u, 3u, 4u})
    for (auto [rows, cols] : {std::pair{1u, 8u}, std::pair{13u, 264u}, std::pair{67u, 1032u}, std::pair{2080u, 6144u}})
      for (uint32_t batch : {1u, 3u, 8u, 64u}) {
        e8p::E8pMatrix m;
        m.rows = rows;
        m.cols = cols;
        m.bits = bits;
        const size_t n = size_t{rows} * cols / 8;
        for (size_t i = 0; i < n; ++i) m.codes.push_back(static_cast<uint16_t>(rng()));
        if (bits > 2)
          for (size_t i = 0; i < n; ++i) m.residual.push_back(static_cast<uint16_t>(bits == 3 ? rng() % 256 : rng()));
        for (uint32_t r = 0; r < rows; ++r) m.scales.push_back(float_to_f16_bits(0.05f * g(rng)));
        std::vector<float> x(size_t{batch} * cols);
        for (float& v : x) v = g(rng);
        auto want = emulate_gemm_e8p_cuda(m, x, batch);
        ASSERT_TRUE(want.is_ok());
        auto d = DeviceE8pMatrix::upload(m);
        ASSERT_TRUE(d.is_ok()) << d.status().to_string();
        auto dx = DeviceBuffer::allocate(x.size() * sizeof(float));
        auto dy = DeviceBuffer::allocate(want->size() * sizeof(float));
        ASSERT_TRUE(dx.is_ok() && dy.is_ok());
        ASSERT_TRUE(copy_to_device(dx->data(), x.data(), dx->bytes()).is_ok());
        const Status st = gemm_e8p_cuda(*d, dx->as<const float>(), batch, dy->as<float>());
        ASSERT_TRUE(st.is_ok()) << st.to_string();
        std::vector<float> y(want->size());
        ASSERT_TRUE(copy_to_host(y.data(), dy->data(), dy->bytes()).is_ok());
        ASSERT_EQ(std::memcmp(y.data(), want->data(), y.size() * sizeof(float)), 0)
            << bits << " bits, " << rows << "x" << cols << " batch " << batch;
      }
}

TEST_F(CudaE8pDevice, BadLaunchesAreRefused) {
  e8p::E8pMatrix m;
  m.rows = 2;
  m.cols = 8;
  m.bits = 2;
  m.codes = {1, 2};
  m.scales = {float_to_f16_bits(1.0f), float_to_f16_bits(1.0f)};
  auto d = DeviceE8pMatrix::upload(m);
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  auto buf = DeviceBuffer::allocate(64 * 8 * sizeof(float));
  ASSERT_TRUE(buf.is_ok());
  EXPECT_FALSE(gemm_e8p_cuda(*d, buf->as<const float>(), 0, buf->as<float>()).is_ok());
  EXPECT_FALSE(gemm_e8p_cuda(*d, buf->as<const float>(), 65, buf->as<float>()).is_ok());
  EXPECT_FALSE(gemm_e8p_cuda(*d, nullptr, 1, buf->as<float>()).is_ok());
  m.codes.pop_back();
  EXPECT_FALSE(DeviceE8pMatrix::upload(m).is_ok());
}

}  // namespace
}  // namespace submoe::kernels::cuda
