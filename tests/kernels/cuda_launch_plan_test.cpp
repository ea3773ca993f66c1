// Launch planning of the CUDA ternary dictionary kernels, against a model of an
// H200 (no GPU needed), and the build-without-CUDA behaviour.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "submoe/kernels/cuda/cuda_device.h"
#include "submoe/kernels/cuda/ternary_dict_cuda.h"
#include "submoe/kernels/cuda/ternary_dict_lane.h"

namespace submoe::kernels::cuda {
namespace {

// H200 / H100 SXM: 132 SMs, 227 KiB dynamic shared memory per block, 228 KiB
// per SM (1 KiB of it reserved per resident block), 2048 threads per SM.
const DeviceLimits kH200{132, 227 * 1024};

Result<int> h200_occupancy(uint32_t, Activation, uint32_t threads, size_t smem) {
  const size_t by_threads = 2048 / threads;
  const size_t by_smem = (228 * 1024) / (smem + 1024);
  return static_cast<int>(std::min<size_t>({by_threads, by_smem, 32}));
}

LaunchPlan plan_or_die(uint32_t rows, uint32_t cols, uint32_t batch, const LaunchOptions& options = {}) {
  auto p = plan_ternary_dict_gemm_for(kH200, h200_occupancy, rows, cols, batch, Activation::kF32, options);
  EXPECT_TRUE(p.is_ok()) << p.status().to_string();
  return p.is_ok() ? p.value() : LaunchPlan{};
}

TEST(CudaLaunchPlan, IssueShapesKeepXInOneTileAtBatchOne) {
  for (auto [rows, cols] : {std::pair{2080u, 6144u}, {6144u, 2080u}, {4096u, 14336u}}) {
    const LaunchPlan p = plan_or_die(rows, cols, 1);
    EXPECT_EQ(p.num_tiles, 1u) << rows << "x" << cols;
    EXPECT_GE(p.tile_cols, cols);
    EXPECT_EQ(p.warps_per_block, 16u);
    EXPECT_LE(p.grid_blocks, 132u * 32u);
    EXPECT_TRUE(check_launch_plan(p, rows, cols, Activation::kF32).is_ok());
  }
}

TEST(CudaLaunchPlan, WideBatchesAreTiledWithinTheBudget) {
  const LaunchPlan p = plan_or_die(4096, 14336, 8);
  EXPECT_EQ(p.batch_slots, 8u);
  EXPECT_GT(p.num_tiles, 1u);
  EXPECT_LE(sizeof(float) * 8 * cuda_lane::tile_smem_cols(p.tile_cols), kAutoTileBudgetBytes);
  EXPECT_EQ(p.tile_cols % 32, 0u);
  EXPECT_LE(p.rows_per_block, kMaxStateRows);
  EXPECT_TRUE(check_launch_plan(p, 4096, 14336, Activation::kF32).is_ok());
}

TEST(CudaLaunchPlan, RandomShapesGiveConsistentPlans) {
  std::mt19937 rng(11);
  for (int i = 0; i < 2000; ++i) {
    const uint32_t rows = rng() % 3 == 0 ? rng() % 40 : rng() % 300000;
    const uint32_t cols = rng() % 3 == 0 ? rng() % 70 : rng() % 100000;
    const uint32_t batch = 1 + rng() % 64;
    LaunchOptions options;
    // Forced tiles up to ~150 KiB of x, which always fit next to the other tables.
    const uint32_t slots = cuda_lane::batch_slots_for(batch);
    const uint32_t max_tiles32 = (150u * 1024 / (4 * slots) - 32) / 32;
    if (rng() % 3 == 0) options.tile_cols = 32 * (1 + rng() % max_tiles32);
    if (rng() % 3 == 0) options.warps_per_block = 1 + rng() % 16;
    auto p = plan_ternary_dict_gemm_for(kH200, h200_occupancy, rows, cols, batch, Activation::kBf16, options);
    ASSERT_TRUE(p.is_ok()) << rows << "x" << cols << " batch " << batch << ": " << p.status().to_string();
    const Status check = check_launch_plan(p.value(), rows, cols, Activation::kBf16);
    ASSERT_TRUE(check.is_ok()) << rows << "x" << cols << " batch " << batch << ": " << check.to_string();
    ASSERT_LE(p->smem_bytes, kH200.smem_per_block_optin);
    ASSERT_GE(p->tile_cols, 32u);
    if (options.tile_cols != 0) {
      ASSERT_EQ(p->tile_cols, options.tile_cols);
    }
    if (rows > 0) {
      ASSERT_GE(static_cast<uint64_t>(p->grid_blocks) * p->rows_per_block, rows);
    }
  }
}

TEST(CudaLaunchPlan, RejectsInvalidRequests) {
  auto plan = [](uint32_t batch, LaunchOptions o) {
    return plan_ternary_dict_gemm_for(kH200, h200_occupancy, 100, 100, batch, Activation::kF32, o).status().code();
  };
  EXPECT_EQ(plan(0, {}), ErrorCode::kInvalidArgument);
  EXPECT_EQ(plan(65, {}), ErrorCode::kInvalidArgument);
  EXPECT_EQ(plan(1, LaunchOptions{33, 0}), ErrorCode::kInvalidArgument);
  EXPECT_EQ(plan(1, LaunchOptions{0, 17}), ErrorCode::kInvalidArgument);
  // A forced tile larger than the device's shared memory.
  EXPECT_EQ(plan(64, LaunchOptions{32 * 1024, 0}), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(plan_ternary_dict_gemm_for(DeviceLimits{0, 1 << 20}, h200_occupancy, 10, 10, 1, Activation::kF32)
                   .is_ok());
  // An SM too small for even one block.
  auto none = [](uint32_t, Activation, uint32_t, size_t) -> Result<int> { return 0; };
  EXPECT_FALSE(plan_ternary_dict_gemm_for(kH200, none, 10, 10, 1, Activation::kF32).is_ok());
}

TEST(CudaLaunchPlan, CheckRejectsTamperedPlans) {
  const LaunchPlan good = plan_or_die(1000, 5000, 4, LaunchOptions{256, 4});
  ASSERT_TRUE(check_launch_plan(good, 1000, 5000, Activation::kF32).is_ok());
  EXPECT_FALSE(check_launch_plan(good, 1001, 5000, Activation::kF32).is_ok());
  EXPECT_FALSE(check_launch_plan(good, 1000, 4999, Activation::kF32).is_ok());
  EXPECT_FALSE(check_launch_plan(good, 1000, 5000, Activation::kBf16).is_ok());
  auto tampered = [&](auto edit) {
    LaunchPlan p = good;
    edit(p);
    return check_launch_plan(p, 1000, 5000, Activation::kF32).is_ok();
  };
  EXPECT_FALSE(tampered([](LaunchPlan& p) { p.grid_blocks -= 1; }));
  EXPECT_FALSE(tampered([](LaunchPlan& p) { p.grid_blocks += 5; }));
  EXPECT_FALSE(tampered([](LaunchPlan& p) { p.batch = 5; }));
  EXPECT_FALSE(tampered([](LaunchPlan& p) { p.batch_slots = 8; }));
  EXPECT_FALSE(tampered([](LaunchPlan& p) { p.tile_cols = 512; }));
  EXPECT_FALSE(tampered([](LaunchPlan& p) { p.num_tiles -= 1; }));
  EXPECT_FALSE(tampered([](LaunchPlan& p) { p.smem_bytes += 4; }));
  EXPECT_FALSE(tampered([](LaunchPlan& p) { p.warps_per_block = 0; }));
}

TEST(CudaLaunchPlan, WithoutCudaEverythingIsUnsupported) {
  if (cuda_compiled()) GTEST_SKIP() << "CUDA is compiled into this build";
  EXPECT_EQ(device_count(), 0);
  EXPECT_FALSE(no_device_reason().empty());
  EXPECT_EQ(plan_ternary_dict_gemm(10, 10, 1, Activation::kF32).status().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(DeviceBuffer::allocate(16).status().code(), ErrorCode::kUnsupported);
  std::vector<ternary::DictEntry> dict(ternary::kDictEntries);
  EXPECT_EQ(DeviceTernaryDictionary::upload(dict.data()).status().code(), ErrorCode::kUnsupported);
  DeviceTernaryMatrix empty;
  float y = 0;
  EXPECT_EQ(gemv_f32_ternary_dict_cuda(empty, nullptr, &y).code(), ErrorCode::kUnsupported);
}

TEST(CudaLaunchPlan, WithCudaButNoDeviceCallsFailCleanly) {
  if (!cuda_compiled()) GTEST_SKIP() << "this build has no CUDA";
  if (device_count() > 0) GTEST_SKIP() << "a device is present (device tests cover it)";
  EXPECT_FALSE(no_device_reason().empty());
  EXPECT_FALSE(plan_ternary_dict_gemm(10, 10, 1, Activation::kF32).is_ok());
  EXPECT_FALSE(DeviceBuffer::allocate(16).is_ok());
  EXPECT_FALSE(current_device_info().is_ok());
}

}  // namespace
}  // namespace submoe::kernels::cuda
