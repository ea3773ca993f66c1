// The CUDA kernels on a real GPU: equal bit for bit to the host emulator (which
// replays their lane logic) and within the float bound of the float64 oracle
// built from the codec's reference decoder. Skipped, with the reason, when no
// device is usable.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda_test_support.h"
#include "submoe/codec/ternary_dict.h"
#include "submoe/kernels/cuda/cuda_device.h"
#include "submoe/kernels/cuda/ternary_dict_cuda.h"
#include "submoe/kernels/cuda/ternary_dict_emulator.h"
#include "submoe/kernels/cuda/ternary_dict_lane.h"

namespace submoe::kernels::cuda {
namespace {

using testing::edge_shapes;
using testing::issue_p0s;
using testing::make_activations;
using testing::make_matrix;
using testing::Shape;
using testing::shape_name;
using testing::TestMatrix;
using ternary::DictKind;

class CudaDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (device_count() == 0) GTEST_SKIP() << "CUDA device tests skipped: " << no_device_reason();
    static bool printed = false;
    if (!printed) {
      auto info = current_device_info();
      ASSERT_TRUE(info.is_ok()) << info.status().to_string();
      std::printf("[ device   ] %s\n", describe(info.value()).c_str());
      printed = true;
    }
  }

  static const DeviceTernaryDictionary& device_dictionary(DictKind kind) {
    static DeviceTernaryDictionary qmoe = upload_or_die(testing::qmoe_dictionary());
    static DeviceTernaryDictionary tunstall = upload_or_die(testing::tunstall_dictionary());
    return kind == DictKind::kQmoe ? qmoe : tunstall;
  }

  static DeviceTernaryDictionary upload_or_die(const ternary::TernaryDictionary& d) {
    auto r = DeviceTernaryDictionary::upload(d.entries());
    if (!r.is_ok()) throw std::runtime_error(r.status().to_string());
    return std::move(r).value();
  }
};

template <typename T>
DeviceBuffer to_device(const std::vector<T>& host) {
  auto buf = DeviceBuffer::allocate(host.size() * sizeof(T));
  if (!buf.is_ok()) throw std::runtime_error(buf.status().to_string());
  const Status s = copy_to_device(buf->data(), host.data(), host.size() * sizeof(T));
  if (!s.is_ok()) throw std::runtime_error(s.to_string());
  return std::move(buf).value();
}

// Runs the kernel with `options` and checks it against the emulator (bit for
// bit) and the oracle; f32 and bf16 activations.
void check_kernel(const TestMatrix& m, const DeviceTernaryMatrix& dm, uint32_t batch, const LaunchOptions& options,
                  uint64_t seed, const std::string& context, Stream stream = nullptr) {
  const auto xf = make_activations(batch, m.cols, seed);
  const auto xb = testing::to_bf16(xf);
  const auto xb_float = testing::from_bf16(xb);
  for (Activation act : {Activation::kF32, Activation::kBf16}) {
    const std::string ctx = context + " batch " + std::to_string(batch) + " tile " +
                            std::to_string(options.tile_cols) + " warps " + std::to_string(options.warps_per_block) +
                            (act == Activation::kF32 ? " f32" : " bf16");
    auto plan = plan_ternary_dict_gemm(m.rows, m.cols, batch, act, options);
    ASSERT_TRUE(plan.is_ok()) << ctx << ": " << plan.status().to_string();
    const size_t ny = static_cast<size_t>(batch) * m.rows;
    // Sentinel-filled output: every element must be written.
    std::vector<float> y(ny, 12345.0f);
    DeviceBuffer dy = to_device(y);
    DeviceBuffer dx = act == Activation::kF32 ? to_device(xf) : to_device(xb);
    Status s = act == Activation::kF32
                   ? gemm_f32_ternary_dict_cuda(dm, dx.as<const float>(), dy.as<float>(), plan.value(), stream)
                   : gemm_bf16_ternary_dict_cuda(dm, dx.as<const bf16_t>(), dy.as<float>(), plan.value(), stream);
    ASSERT_TRUE(s.is_ok()) << ctx << ": " << s.to_string();
    ASSERT_TRUE(synchronize(stream).is_ok()) << ctx;
    ASSERT_TRUE(copy_to_host(y.data(), dy.data(), ny * sizeof(float)).is_ok()) << ctx;

    std::vector<float> emulated(ny);
    Status e = act == Activation::kF32
                   ? emulate_gemm_f32_ternary_dict_cuda(m.packed.view(), xf, batch, emulated, plan->tile_cols)
                   : emulate_gemm_bf16_ternary_dict_cuda(m.packed.view(), xb, batch, emulated, plan->tile_cols);
    ASSERT_TRUE(e.is_ok()) << ctx << ": " << e.to_string();
    ASSERT_EQ(testing::count_bit_mismatches(y, emulated, m.rows, ctx + " vs emulator"), 0);
    const auto oracle =
        testing::float64_oracle(m, act == Activation::kF32 ? xf : xb_float, batch, plan->num_tiles);
    ASSERT_EQ(testing::count_oracle_violations(oracle, y, m.rows, ctx + " vs float64"), 0);
  }
}

DeviceTernaryMatrix upload_matrix(const TestMatrix& m, const DeviceTernaryDictionary& d) {
  auto r = DeviceTernaryMatrix::upload(m.packed.view(), d);
  if (!r.is_ok()) throw std::runtime_error(r.status().to_string());
  return std::move(r).value();
}

TEST_F(CudaDevice, EdgeShapesAllP0sBothCodes) {
  uint64_t seed = 1;
  for (DictKind kind : {DictKind::kQmoe, DictKind::kTunstall}) {
    for (double p0 : issue_p0s()) {
      for (Shape shape : edge_shapes()) {
        const auto m = make_matrix(shape, p0, kind, seed++);
        const auto dm = upload_matrix(m, device_dictionary(kind));
        const std::string ctx = std::string(ternary::dict_kind_name(kind)) + " p0=" + std::to_string(p0) + " " +
                                shape_name(shape);
        for (uint32_t batch : {1u, 2u, 3u, 8u}) {
          check_kernel(m, dm, batch, {}, seed++, ctx);
          if (HasFatalFailure()) return;
        }
        // Small tiles (rows resume in later tiles) and few warps (warps loop over rows).
        check_kernel(m, dm, 1, LaunchOptions{32, 1}, seed++, ctx);
        check_kernel(m, dm, 5, LaunchOptions{64, 3}, seed++, ctx);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_F(CudaDevice, EveryBatchSize) {
  const auto m = make_matrix({77, 515}, 0.885, DictKind::kTunstall, 31);
  const auto dm = upload_matrix(m, device_dictionary(DictKind::kTunstall));
  for (uint32_t batch = 1; batch <= cuda_lane::kMaxBatch; ++batch) {
    check_kernel(m, dm, batch, {}, 1000 + batch, "77x515");
    if (HasFatalFailure()) return;
  }
  check_kernel(m, dm, 64, LaunchOptions{96, 16}, 7, "77x515");
  check_kernel(m, dm, 33, LaunchOptions{32, 2}, 8, "77x515");
}

TEST_F(CudaDevice, BenchmarkShapes) {
  uint64_t seed = 50;
  for (Shape shape : {Shape{2080, 6144}, Shape{6144, 2080}, Shape{4096, 14336}}) {
    const auto m = make_matrix(shape, 0.885, DictKind::kQmoe, seed++);
    const auto dm = upload_matrix(m, device_dictionary(DictKind::kQmoe));
    for (uint32_t batch : {1u, 8u}) {
      check_kernel(m, dm, batch, {}, seed++, shape_name(shape));
      if (HasFatalFailure()) return;
    }
  }
}

// More rows than resident warps (each warp loops over rows) with several tiles.
TEST_F(CudaDevice, ManyRowsPerBlockAcrossTiles) {
  const auto m = make_matrix({40000, 100}, 0.9, DictKind::kQmoe, 77);
  const auto dm = upload_matrix(m, device_dictionary(DictKind::kQmoe));
  auto plan = plan_ternary_dict_gemm(m.rows, m.cols, 2, Activation::kF32, LaunchOptions{32, 2});
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  EXPECT_GT(plan->rows_per_block, plan->warps_per_block);
  EXPECT_GT(plan->num_tiles, 1u);
  check_kernel(m, dm, 2, LaunchOptions{32, 2}, 78, "40000x100");
}

TEST_F(CudaDevice, RunsOnAStreamAndRepeatsExactly) {
  auto stream = OwnedStream::create();
  ASSERT_TRUE(stream.is_ok()) << stream.status().to_string();
  const auto m = make_matrix({300, 1000}, 0.885, DictKind::kQmoe, 9);
  const auto dm = upload_matrix(m, device_dictionary(DictKind::kQmoe));
  check_kernel(m, dm, 4, {}, 10, "stream", stream->get());
  const auto x = make_activations(1, m.cols, 11);
  DeviceBuffer dx = to_device(x);
  std::vector<float> a(m.rows), b(m.rows);
  DeviceBuffer dy = to_device(a);
  ASSERT_TRUE(gemv_f32_ternary_dict_cuda(dm, dx.as<const float>(), dy.as<float>(), stream->get()).is_ok());
  ASSERT_TRUE(copy_to_host(a.data(), dy.data(), a.size() * sizeof(float), stream->get()).is_ok());
  ASSERT_TRUE(gemv_f32_ternary_dict_cuda(dm, dx.as<const float>(), dy.as<float>(), stream->get()).is_ok());
  ASSERT_TRUE(copy_to_host(b.data(), dy.data(), b.size() * sizeof(float), stream->get()).is_ok());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

TEST_F(CudaDevice, InvalidLaunchesReturnErrors) {
  const auto m = make_matrix({50, 70}, 0.885, DictKind::kQmoe, 12);
  const auto dm = upload_matrix(m, device_dictionary(DictKind::kQmoe));
  DeviceBuffer dx = to_device(std::vector<float>(70 * 2));
  DeviceBuffer dy = to_device(std::vector<float>(50 * 2));
  auto plan = plan_ternary_dict_gemm(50, 70, 2, Activation::kF32);
  ASSERT_TRUE(plan.is_ok());
  auto other = plan_ternary_dict_gemm(51, 70, 2, Activation::kF32);
  ASSERT_TRUE(other.is_ok());
  EXPECT_EQ(gemm_f32_ternary_dict_cuda(dm, dx.as<const float>(), dy.as<float>(), other.value()).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(gemm_bf16_ternary_dict_cuda(dm, dx.as<const bf16_t>(), dy.as<float>(), plan.value()).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(gemm_f32_ternary_dict_cuda(dm, nullptr, dy.as<float>(), plan.value()).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(gemm_f32_ternary_dict_cuda(dm, dx.as<const float>(), nullptr, plan.value()).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(gemm_f32_ternary_dict_cuda(dm, dx.as<const float>(), 0, dy.as<float>()).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(gemm_f32_ternary_dict_cuda(dm, dx.as<const float>(), 65, dy.as<float>()).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(gemv_f32_ternary_dict_cuda(dm, dx.as<const float>(), dy.as<float>(), nullptr, LaunchOptions{40, 0}).code(),
            ErrorCode::kInvalidArgument);
  // A tile that needs more shared memory than a block may have.
  EXPECT_FALSE(gemm_f32_ternary_dict_cuda(dm, dx.as<const float>(), 64, dy.as<float>(), nullptr,
                                          LaunchOptions{32 * 1024, 0})
                   .is_ok());
  DeviceTernaryMatrix never_uploaded;
  EXPECT_FALSE(gemv_f32_ternary_dict_cuda(never_uploaded, dx.as<const float>(), dy.as<float>()).is_ok());
  // The kernel still works afterwards.
  EXPECT_TRUE(gemm_f32_ternary_dict_cuda(dm, dx.as<const float>(), dy.as<float>(), plan.value()).is_ok());
  EXPECT_TRUE(synchronize().is_ok());
}

TEST_F(CudaDevice, UploadRejectsBadMatricesAndForeignDictionaries) {
  const auto m = make_matrix({20, 90}, 0.885, DictKind::kQmoe, 13);
  // Coded with the qmoe table, offered with the tunstall one.
  EXPECT_EQ(DeviceTernaryMatrix::upload(m.packed.view(), device_dictionary(DictKind::kTunstall)).status().code(),
            ErrorCode::kInvalidArgument);
  std::vector<int32_t> offsets(m.packed.row_offsets().begin(), m.packed.row_offsets().end());
  offsets[5] = offsets[6] + 1;
  auto v = m.packed.view();
  v.row_offsets = offsets.data();
  EXPECT_FALSE(DeviceTernaryMatrix::upload(v, device_dictionary(DictKind::kQmoe)).is_ok());
  std::vector<ternary::DictEntry> broken(m.packed.dict(), m.packed.dict() + ternary::kDictEntries);
  broken[3].word[1] ^= 0x1u;  // word 1 no longer repeats L
  EXPECT_FALSE(DeviceTernaryDictionary::upload(broken.data()).is_ok());
  DeviceTernaryDictionary not_uploaded;
  EXPECT_FALSE(DeviceTernaryMatrix::upload(m.packed.view(), not_uploaded).is_ok());
}

TEST_F(CudaDevice, EmptyMatrices) {
  for (Shape shape : {Shape{0, 10}, Shape{10, 0}}) {
    auto packed = ternary::encode_ternary({}, shape.rows, shape.cols,
                                          std::vector<ternary::RowScales>(shape.rows), testing::qmoe_dictionary());
    if (!packed.is_ok()) {
      GTEST_SKIP() << "the codec does not encode " << shape_name(shape) << ": " << packed.status().to_string();
    }
    auto dm = DeviceTernaryMatrix::upload(packed->view(), device_dictionary(DictKind::kQmoe));
    ASSERT_TRUE(dm.is_ok()) << dm.status().to_string();
    std::vector<float> y(shape.rows, 5.0f);
    DeviceBuffer dy = to_device(y);
    DeviceBuffer dx = to_device(std::vector<float>(std::max<uint32_t>(shape.cols, 1)));
    ASSERT_TRUE(gemv_f32_ternary_dict_cuda(dm.value(), dx.as<const float>(), dy.as<float>()).is_ok());
    ASSERT_TRUE(copy_to_host(y.data(), dy.data(), y.size() * sizeof(float)).is_ok());
    for (float v : y) EXPECT_EQ(v, 0.0f) << shape_name(shape);
  }
}

}  // namespace
}  // namespace submoe::kernels::cuda
