#include "submoe/model/linear_op.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "submoe/core/aligned_buffer.h"
#include "submoe/core/bf16.h"
#include "submoe/core/thread_pool.h"

namespace submoe::model {
namespace {

// float64 reference of out = in · Wᵀ and the bound |sum| of |w x| for the error scale.
void reference(const std::vector<double>& w, size_t rows, size_t cols, const std::vector<float>& in, size_t n,
               std::vector<double>* out, std::vector<double>* mag) {
  out->assign(n * rows, 0.0);
  mag->assign(n * rows, 0.0);
  for (size_t t = 0; t < n; ++t)
    for (size_t r = 0; r < rows; ++r)
      for (size_t c = 0; c < cols; ++c) {
        (*out)[t * rows + r] += w[r * cols + c] * in[t * cols + c];
        (*mag)[t * rows + r] += std::abs(w[r * cols + c] * in[t * cols + c]);
      }
}

void check_against_reference(DenseDType dtype, size_t rows, size_t cols, size_t n, ThreadPool* pool, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::vector<double> w64(rows * cols);
  AlignedBuffer<float> wf(rows * cols);
  AlignedBuffer<bf16_t> wb(rows * cols);
  for (size_t i = 0; i < rows * cols; ++i) {
    const float v = nd(rng);
    wb[i] = float_to_bf16(v);
    wf[i] = dtype == DenseDType::kBF16 ? bf16_to_float(wb[i]) : v;
    w64[i] = wf[i];
  }
  std::vector<float> in(n * cols);
  for (float& v : in) v = nd(rng);
  auto op = make_dense_linear(dtype == DenseDType::kF32 ? static_cast<const void*>(wf.data()) : wb.data(), dtype,
                              rows, cols);
  ASSERT_EQ(op->out_features(), rows);
  ASSERT_EQ(op->in_features(), cols);
  std::vector<float> out(n * rows, NAN);
  op->forward(in.data(), n, out.data(), pool);
  std::vector<double> ref, mag;
  reference(w64, rows, cols, in, n, &ref, &mag);
  // f32 accumulation over `cols` terms: |err| <= cols * eps * sum|w x| (a loose
  // worst case; typical error is far smaller).
  for (size_t i = 0; i < out.size(); ++i)
    ASSERT_NEAR(out[i], ref[i], static_cast<double>(cols) * 1.2e-7 * mag[i] + 1e-30)
        << op->describe() << " n=" << n << " i=" << i;
}

TEST(DenseLinearOp, MatchesFloat64ReferenceOverShapesBatchesAndThreads) {
  ThreadPool pool2(2), pool3(3);
  uint32_t seed = 10;
  for (DenseDType dt : {DenseDType::kF32, DenseDType::kBF16})
    for (auto [rows, cols] : {std::pair<size_t, size_t>{1, 1}, {3, 5}, {17, 33}, {64, 64}, {130, 257}, {513, 96}})
      for (size_t n : {1u, 2u, 3u, 4u, 5u, 16u, 37u, 64u, 65u, 130u})
        for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2, &pool3})
          check_against_reference(dt, rows, cols, n, pool, seed++);
}

TEST(DenseLinearOp, LargeEnoughToSplitAcrossThreads) {
  ThreadPool pool(3);
  check_against_reference(DenseDType::kBF16, 1024, 384, 1, &pool, 1);
  check_against_reference(DenseDType::kBF16, 1000, 384, 9, &pool, 2);
  check_against_reference(DenseDType::kF32, 777, 512, 6, &pool, 3);
}

io::TensorView view(std::string name, io::DType dt, std::vector<int64_t> shape, const uint8_t* data, size_t nbytes) {
  io::TensorView v;
  v.name = std::move(name);
  v.dtype = dt;
  v.shape = std::move(shape);
  v.data = data;
  v.nbytes = nbytes;
  return v;
}

TEST(DenseLinearOp, FromTensorViewHandlesMisalignedAndF16Data) {
  const size_t rows = 5, cols = 7;
  std::mt19937 rng(6);
  std::normal_distribution<float> nd;
  std::vector<float> w(rows * cols), x(cols);
  for (float& v : w) v = nd(rng);
  for (float& v : x) v = nd(rng);
  // bf16 bytes at an odd address: the op must copy, not read misaligned.
  std::vector<uint8_t> raw(rows * cols * 2 + 1);
  std::vector<double> want(rows, 0.0);
  for (size_t i = 0; i < rows * cols; ++i) {
    const bf16_t b = float_to_bf16(w[i]);
    std::memcpy(&raw[1 + 2 * i], &b, 2);
    want[i / cols] += static_cast<double>(bf16_to_float(b)) * x[i % cols];
  }
  auto op = make_dense_linear(view("w_bf16", io::DType::kBF16, {5, 7}, raw.data() + 1, rows * cols * 2));
  ASSERT_TRUE(op.is_ok()) << op.status().to_string();
  std::vector<float> y(rows);
  (*op)->forward(x.data(), 1, y.data(), nullptr);
  for (size_t r = 0; r < rows; ++r) EXPECT_NEAR(y[r], want[r], 1e-5);

  std::vector<uint16_t> f16(rows * cols);
  std::vector<double> want16(rows, 0.0);
  for (size_t i = 0; i < rows * cols; ++i) {
    f16[i] = float_to_f16_bits(w[i]);
    want16[i / cols] += static_cast<double>(f16_bits_to_float(f16[i])) * x[i % cols];
  }
  auto op16 = make_dense_linear(
      view("w_f16", io::DType::kF16, {5, 7}, reinterpret_cast<const uint8_t*>(f16.data()), rows * cols * 2));
  ASSERT_TRUE(op16.is_ok()) << op16.status().to_string();
  (*op16)->forward(x.data(), 1, y.data(), nullptr);
  for (size_t r = 0; r < rows; ++r) EXPECT_NEAR(y[r], want16[r], 1e-5);
}

TEST(DenseLinearOp, HugePageCopiesComputeExactlyAsInPlace) {
  // 1 MiB and up are copied (bf16 [512, 1024] and f32 [300, 1000]), smaller stay
  // in place; every result is bit-identical to the in-place op's, and the copy
  // no longer reads the source (overwritten after the op was built).
  std::mt19937 rng(11);
  std::normal_distribution<float> nd;
  struct Case {
    io::DType dtype;
    size_t rows, cols;
  };
  for (const Case& c : {Case{io::DType::kBF16, 512, 1024}, Case{io::DType::kF32, 300, 1000},
                        Case{io::DType::kBF16, 64, 100}}) {
    const size_t elem = c.dtype == io::DType::kBF16 ? 2 : 4, bytes = c.rows * c.cols * elem;
    AlignedBuffer<uint8_t> raw(bytes);
    for (size_t i = 0; i < c.rows * c.cols; ++i) {
      const float v = nd(rng);
      if (c.dtype == io::DType::kBF16) {
        const bf16_t b = float_to_bf16(v);
        std::memcpy(raw.data() + 2 * i, &b, 2);
      } else {
        std::memcpy(raw.data() + 4 * i, &v, 4);
      }
    }
    const io::TensorView t = view("w", c.dtype, {static_cast<int64_t>(c.rows), static_cast<int64_t>(c.cols)},
                                  raw.data(), bytes);
    auto in_place = make_dense_linear(t, DenseStorage::kInPlace);
    auto copied = make_dense_linear(t, DenseStorage::kHugePageCopy);
    ASSERT_TRUE(in_place.is_ok() && copied.is_ok());
    std::vector<float> x(3 * c.cols), want(3 * c.rows), got(3 * c.rows);
    for (float& v : x) v = nd(rng);
    ThreadPool pool(2);
    (*in_place)->forward(x.data(), 3, want.data(), &pool);
    std::vector<uint8_t> saved(raw.data(), raw.data() + bytes);
    if (bytes >= (size_t{1} << 20)) std::memset(raw.data(), 0x7f, bytes);  // the copy must not look
    (*copied)->forward(x.data(), 3, got.data(), &pool);
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << c.rows << "x" << c.cols << " at " << i;
    EXPECT_EQ((*copied)->describe(), (*in_place)->describe());
    EXPECT_EQ((*copied)->weight_bytes(), (*in_place)->weight_bytes());
  }
}

TEST(DenseLinearOp, RejectsWrongRankAndDtypeNamingTheTensor) {
  std::vector<uint8_t> raw(64);
  auto a = make_dense_linear(view("blk.w", io::DType::kF32, {16}, raw.data(), 64));
  ASSERT_FALSE(a.is_ok());
  EXPECT_NE(a.status().message().find("blk.w"), std::string::npos);
  auto b = make_dense_linear(view("blk.q", io::DType::kI32, {4, 4}, raw.data(), 64));
  ASSERT_FALSE(b.is_ok());
  EXPECT_NE(b.status().message().find("blk.q"), std::string::npos);
}

}  // namespace
}  // namespace submoe::model
