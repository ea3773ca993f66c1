// Every ternary fast path (each ISA this CPU runs, batch 1 and small batches,
// f32 and bf16 activations, exact or quantized to int8, 1..3 threads) against
// the codec's reference decoder times x in float64, held to the float summation
// bound of kernel_test_support.h.
#include "submoe/kernels/ternary_gemv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>

#include "kernel_test_support.h"
#include "submoe/core/thread_pool.h"

namespace submoe::kernels {
namespace {

using ternary::DictKind;
using testing::RowKind;

struct Case {
  DictKind kind;
  double p0;
  uint32_t rows;
  uint32_t cols;
};

std::string case_name(const Case& c) {
  return std::string(ternary::dict_kind_name(c.kind)) + " p0=" + std::to_string(c.p0) + " " +
         std::to_string(c.rows) + "x" + std::to_string(c.cols);
}

// ActivationQuant::kInt8 written out from its definition in ternary_gemv.h,
// independently of the driver: per token m = max |x|, q = nearest-even(x *
// (127 / m)), activation (m / 127) q. Replaces x[t * stride + c] in place and
// returns the scales.
std::vector<float> quantize_int8_reference(std::vector<float>& x, uint32_t batch, uint32_t cols, size_t stride) {
  std::vector<float> scales(batch, 0.0f);
  for (uint32_t t = 0; t < batch; ++t) {
    float* xt = x.data() + t * stride;
    float m = 0.0f;
    for (uint32_t c = 0; c < cols; ++c) m = std::max(m, std::fabs(xt[c]));
    const float inv = m > 0.0f ? 127.0f / m : 0.0f;
    scales[t] = m / 127.0f;
    for (uint32_t c = 0; c < cols; ++c) {
      const float q = std::nearbyint(xt[c] * inv);
      EXPECT_LE(std::fabs(q), 127.0f);
      xt[c] = scales[t] * q;
    }
  }
  return scales;
}

// Runs one kernel table on one matrix for the given batch / threads / dtype /
// quantization and checks every output against the oracle (on the activations
// the kernel is defined to multiply: bf16-rounded, and s q for kInt8). Returns
// the number of checked values.
size_t check_kernels(const TernaryGemvKernels& k, const testing::DictFixture& fx, const testing::TestMatrix& m,
                     uint32_t batch, ThreadPool* pool, ActivationType type, uint64_t seed, const std::string& what,
                     ActivationQuant quant = ActivationQuant::kExact) {
  const ternary::PackedTernaryView w = m.packed.view();
  const size_t x_stride = w.cols + (seed % 3);  // strides > cols too
  std::vector<float> x = testing::random_activations(batch, w.cols, x_stride, seed);
  std::vector<bf16_t> xb;
  ActivationsView xv = ActivationsView::f32(x.data(), batch, x_stride);
  if (type == ActivationType::kBF16) {
    xb.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      xb[i] = float_to_bf16(x[i]);
      x[i] = bf16_to_float(xb[i]);  // the oracle sees exactly what the kernel sees
    }
    xv = ActivationsView::bf16(xb.data(), batch, x_stride);
  }
  if (quant == ActivationQuant::kInt8) quantize_int8_reference(x, batch, w.cols, x_stride);
  const size_t y_stride = w.rows + 1;
  std::vector<float> y(batch * y_stride, -7.0f);
  std::vector<float> ws(ternary_gemm_workspace_floats(w.cols, batch) + 3);
  // An offset workspace start: the driver must align it itself.
  Status st = gemm_ternary_dict(k, fx.table, w, xv, OutputView{y.data(), y_stride}, std::span<float>(ws).subspan(1),
                                pool, quant);
  EXPECT_TRUE(st.is_ok()) << what << ": " << st.to_string();
  size_t checked = 0;
  for (uint32_t t = 0; t < batch; ++t) {
    for (uint32_t r = 0; r < w.rows; ++r) {
      const testing::OracleRow o = testing::oracle(m.dense, w.cols, r, x.data() + t * x_stride);
      const double got = y[t * y_stride + r];
      const double bound = testing::summation_bound(o.nonzeros, o.sum_abs);
      if (!(std::fabs(got - o.y) <= bound)) {
        ADD_FAILURE() << what << " " << ternary_kernel_name(k, fx.table, batch, type, quant) << ": row " << r
                      << " token " << t
                      << " got " << got << " want " << o.y << " (bound " << bound << ", " << o.nonzeros
                      << " nonzeros)";
        return checked;
      }
      ++checked;
    }
    // Padding between rows of the output is untouched.
    if (w.rows > 0) {
      EXPECT_EQ(y[t * y_stride + w.rows], -7.0f) << what;
    }
  }
  return checked;
}

// Batch 1 on 53-row matrices of widths around the 28-weight window and the
// 32-column padding (special rows included), 1..3 threads, each activation
// type in `types`, seeds counted up from `seed`.
void check_batch1_widths(const TernaryGemvKernels& k, const testing::DictFixture& fx,
                         std::initializer_list<ActivationType> types, ActivationQuant quant, uint64_t seed,
                         const std::string& what) {
  ThreadPool pool2(2), pool3(3);
  const std::vector<RowKind> special = {RowKind::kAllZero, RowKind::kAllNonzero, RowKind::kAllMax, RowKind::kAllMin};
  for (uint32_t cols : {1u, 27u, 28u, 29u, 31u, 32u, 33u, 63u, 500u, 2081u}) {
    const testing::TestMatrix m = testing::make_test_matrix(fx, 53, cols, 0.885, seed++, special);
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2, &pool3}) {
      for (ActivationType type : types) {
        check_kernels(k, fx, m, 1, pool, type, seed++, what + " cols " + std::to_string(cols), quant);
      }
    }
  }
}

TEST(TernaryGemv, EveryIsaMatchesReferenceDecoderAcrossP0AndShapes) {
  const std::vector<Case> cases = {
      {DictKind::kQmoe, 0.885, 37, 613},   {DictKind::kQmoe, 0.885, 19, 1},    {DictKind::kQmoe, 0.885, 1, 777},
      {DictKind::kQmoe, 0.5, 21, 257},     {DictKind::kQmoe, 0.8, 29, 129},    {DictKind::kQmoe, 0.95, 17, 1001},
      {DictKind::kQmoe, 1.0, 9, 300},      {DictKind::kTunstall, 0.885, 33, 455}, {DictKind::kTunstall, 0.5, 13, 99},
      {DictKind::kTunstall, 0.8, 11, 31},  {DictKind::kQmoe, 0.885, 70, 28},   {DictKind::kQmoe, 0.885, 41, 27},
      {DictKind::kQmoe, 0.885, 12, 29},    {DictKind::kQmoe, 0.885, 9, 33},
  };
  ThreadPool pool3(3);
  size_t checked = 0;
  uint64_t seed = 1;
  for (const Case& c : cases) {
    const testing::DictFixture& fx = testing::dict_fixture(c.kind, c.p0);
    const std::vector<RowKind> special = {RowKind::kAllZero, RowKind::kAllNonzero, RowKind::kAllMax,
                                          RowKind::kAllMin};
    const testing::TestMatrix m = testing::make_test_matrix(fx, c.rows, c.cols, c.p0, seed++, special);
    for (Isa isa : testing::supported_isas()) {
      const TernaryGemvKernels& k = ternary_gemv_kernels(isa);
      for (uint32_t batch : {1u, 2u, 5u, 8u, 13u}) {
        for (ActivationType type : {ActivationType::kF32, ActivationType::kBF16}) {
          for (ActivationQuant quant : {ActivationQuant::kExact, ActivationQuant::kInt8}) {
            ThreadPool* pool = (batch + seed) % 2 ? &pool3 : nullptr;
            checked += check_kernels(k, fx, m, batch, pool, type, seed++,
                                     case_name(c) + " " + isa_name(isa) + " batch " + std::to_string(batch) + " " +
                                         activation_type_name(type) + " " + activation_quant_name(quant),
                                     quant);
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 10000u);
  std::printf("checked %zu outputs\n", checked);
}

TEST(TernaryGemv, AllBatchSizesAndThreadCounts) {
  const testing::DictFixture& fx = testing::dict_fixture(DictKind::kQmoe, 0.885);
  // Enough rows that three threads each get several interleaved row groups plus
  // a remainder.
  const testing::TestMatrix m = testing::make_test_matrix(fx, 203, 161, 0.885, 99);
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int t = 1; t <= 3; ++t) pools.push_back(std::make_unique<ThreadPool>(t));
  uint64_t seed = 1000;
  for (Isa isa : testing::supported_isas()) {
    const TernaryGemvKernels& k = ternary_gemv_kernels(isa);
    for (uint32_t batch = 1; batch <= kMaxKernelBatch; batch += (batch < 20 ? 1 : 7)) {
      ThreadPool* pool = pools[seed % 3].get();
      check_kernels(k, fx, m, batch, pool, ActivationType::kF32, seed++,
                    std::string(isa_name(isa)) + " batch " + std::to_string(batch));
    }
    check_kernels(k, fx, m, kMaxKernelBatch, pools[2].get(), ActivationType::kBF16, seed++,
                  std::string(isa_name(isa)) + " batch 64");
  }
}

TEST(TernaryGemv, PermAndMaskPathsAgreeWithEachOther) {
  // The same matrix through the AVX-512 permute kernel and the masked-add kernel
  // (forced by a table copy without permute records): both within the bound.
  if (!cpu_features().avx512) GTEST_SKIP() << "CPU without AVX-512: permute and mask kernels not runnable here";
  const testing::DictFixture& fx = testing::dict_fixture(DictKind::kQmoe, 0.885);
  ASSERT_TRUE(fx.table.has_perm);
  const testing::TestMatrix m = testing::make_test_matrix(fx, 45, 700, 0.885, 5);
  TernaryGemvKernels masks_only = ternary_gemv_kernels(Isa::kAvx512);
  masks_only.gemv_perm = nullptr;
  EXPECT_STREQ(ternary_kernel_name(masks_only, fx.table, 1), "gemv_f32_ternary_dict_masks_avx512");
  EXPECT_STREQ(ternary_kernel_name(ternary_gemv_kernels(Isa::kAvx512), fx.table, 1),
               "gemv_f32_ternary_dict_perm_avx512");
  check_kernels(masks_only, fx, m, 1, nullptr, ActivationType::kF32, 17, "masks");
  check_kernels(ternary_gemv_kernels(Isa::kAvx512), fx, m, 1, nullptr, ActivationType::kF32, 17, "perm");
}

TEST(TernaryGemv, Bf16ActivationsTakeTheBf16PermuteKernelOnVbmi) {
  // Batch-1 bf16 activations run the word-permute kernel where the CPU has VBMI
  // (and fall back to widening + the f32 kernel elsewhere); rows of odd widths,
  // windows running past the last column, all-zero and all-nonzero rows, 1..3
  // threads, each held to the bound against the oracle on the same bf16 inputs.
  if (!cpu_features().avx512) GTEST_SKIP() << "CPU without AVX-512";
  const testing::DictFixture& fx = testing::dict_fixture(DictKind::kQmoe, 0.885);
  const TernaryGemvKernels& k = ternary_gemv_kernels(Isa::kAvx512);
  const char* want = cpu_features().avx512_vbmi ? "gemv_bf16_ternary_dict_perm_avx512"
                                                : "gemv_f32_ternary_dict_perm_avx512";
  EXPECT_STREQ(ternary_kernel_name(k, fx.table, 1, ActivationType::kBF16), want);
  EXPECT_STREQ(ternary_kernel_name(k, fx.table, 1, ActivationType::kF32), "gemv_f32_ternary_dict_perm_avx512");
  EXPECT_STREQ(ternary_kernel_name(k, fx.table, 2, ActivationType::kBF16), "gemm_f32_ternary_dict_slots_avx512");
  check_batch1_widths(k, fx, {ActivationType::kBF16}, ActivationQuant::kExact, 300, "bf16");
}

TEST(TernaryGemv, Int8ActivationsTakeTheInt8PermuteKernelOnVbmiVnni) {
  // Batch-1 kInt8 runs the byte-permute + VNNI kernel where the CPU has both
  // (elsewhere the quantized values take the f32 kernels); odd widths, windows
  // past the last column, special rows, 1..3 threads, f32 and bf16 inputs, held
  // to the bound against the oracle on s q.
  if (!cpu_features().avx512) GTEST_SKIP() << "CPU without AVX-512";
  const testing::DictFixture& fx = testing::dict_fixture(DictKind::kQmoe, 0.885);
  const TernaryGemvKernels& k = ternary_gemv_kernels(Isa::kAvx512);
  const bool has_i8 = cpu_features().avx512_vbmi && cpu_features().avx512_vnni;
  const char* want = has_i8 ? "gemv_i8_ternary_dict_perm_avx512" : "gemv_f32_ternary_dict_perm_avx512";
  EXPECT_STREQ(ternary_kernel_name(k, fx.table, 1, ActivationType::kF32, ActivationQuant::kInt8), want);
  EXPECT_STREQ(ternary_kernel_name(k, fx.table, 1, ActivationType::kBF16, ActivationQuant::kInt8), want);
  EXPECT_STREQ(ternary_kernel_name(k, fx.table, 3, ActivationType::kF32, ActivationQuant::kInt8),
               "gemm_f32_ternary_dict_slots_avx512");
  check_batch1_widths(k, fx, {ActivationType::kF32, ActivationType::kBF16}, ActivationQuant::kInt8, 700, "int8");
}

TEST(TernaryGemv, Int8QuantizationFollowsItsDefinition) {
  // quantize_activations_int8 against the definition, bit for bit: ties at
  // +-k.5 steps (round to even), the maximum on either sign, zeros, tiny values,
  // and bf16 inputs.
  const float m = 3.0f;
  std::vector<float> x = {m, -m, 0.0f, -0.0f, 1e-30f, -1e-30f};
  const float step = m / 127.0f;
  for (int k = -127; k <= 127; ++k) {
    x.push_back(static_cast<float>(k) * step);
    x.push_back((static_cast<float>(k) + 0.5f) * step);
    x.push_back(std::nextafter((static_cast<float>(k) + 0.5f) * step, 0.0f));
  }
  std::vector<float> bounded;
  for (float v : x) {
    if (std::fabs(v) <= m) bounded.push_back(v);
  }
  const uint32_t n = static_cast<uint32_t>(bounded.size());
  std::vector<int8_t> q(n);
  const float s = quantize_activations_int8(ActivationsView::f32(bounded.data(), 1, n), 0, n, q.data());
  EXPECT_EQ(s, m / 127.0f);
  const float inv = 127.0f / m;
  for (uint32_t c = 0; c < n; ++c) {
    ASSERT_EQ(q[c], static_cast<int8_t>(std::nearbyint(bounded[c] * inv))) << "x = " << bounded[c];
  }
  // Token 1 of a bf16 batch (the stride is honoured).
  std::vector<bf16_t> xb(2 * n, float_to_bf16(100.0f));
  for (uint32_t c = 0; c < n; ++c) xb[n + c] = float_to_bf16(bounded[c]);
  const float sb = quantize_activations_int8(ActivationsView::bf16(xb.data(), 2, n), 1, n, q.data());
  float mb = 0.0f;
  for (uint32_t c = 0; c < n; ++c) mb = std::max(mb, std::fabs(bf16_to_float(xb[n + c])));
  EXPECT_EQ(sb, mb / 127.0f);
  for (uint32_t c = 0; c < n; ++c) {
    ASSERT_EQ(q[c], static_cast<int8_t>(std::nearbyint(bf16_to_float(xb[n + c]) * (127.0f / mb))));
  }
  // All zeros: scale 0, codes 0.
  std::vector<float> zeros(40, 0.0f);
  EXPECT_EQ(quantize_activations_int8(ActivationsView::f32(zeros.data(), 1, 40), 0, 40, q.data()), 0.0f);
  for (uint32_t c = 0; c < 40; ++c) EXPECT_EQ(q[c], 0);
}

TEST(TernaryGemv, FastInt8QuantizersMatchTheDefinitionBitForBit) {
  // Every table's quantize_i8 against quantize_activations_int8: the tie and
  // boundary values above, random vectors of every length 1..70 (vector tails),
  // a NaN (defined as -127), an infinity (scale NaN, codes 0) and all zeros.
  std::mt19937_64 rng(9);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<std::vector<float>> inputs;
  for (uint32_t n = 1; n <= 70; ++n) {
    std::vector<float> x(n);
    for (float& v : x) v = std::ldexp(nd(rng), static_cast<int>(rng() % 9) - 4);
    inputs.push_back(x);
  }
  std::vector<float> ties;
  for (int k = -127; k <= 127; ++k) ties.push_back((static_cast<float>(k) + 0.5f) * (2.0f / 127.0f));
  ties.push_back(2.0f);
  inputs.push_back(ties);
  std::vector<float> with_nan = inputs[40];
  with_nan[17] = std::numeric_limits<float>::quiet_NaN();
  inputs.push_back(with_nan);
  for (uint32_t pos = 0; pos < 40; ++pos) {  // a NaN at every position of full vectors and of the tail
    std::vector<float> x = inputs[39];
    x[pos] = std::numeric_limits<float>::quiet_NaN();
    inputs.push_back(x);
    std::vector<float> mostly_nan(40, std::numeric_limits<float>::quiet_NaN());
    mostly_nan[pos] = -1.5f;
    inputs.push_back(mostly_nan);
  }
  std::vector<float> with_inf = inputs[30];
  with_inf[3] = -std::numeric_limits<float>::infinity();
  inputs.push_back(with_inf);
  inputs.push_back(std::vector<float>(33, 0.0f));
  size_t checked = 0;
  for (Isa isa : testing::supported_isas()) {
    const TernaryGemvKernels& k = ternary_gemv_kernels(isa);
    if (k.quantize_i8 == nullptr) continue;
    for (const std::vector<float>& x : inputs) {
      const auto n = static_cast<uint32_t>(x.size());
      std::vector<int8_t> want(n + 1, 55), got(n + 1, 55);
      const float s_want = quantize_activations_int8(ActivationsView::f32(x.data(), 1, n), 0, n, want.data());
      const float s_got = k.quantize_i8(x.data(), n, got.data());
      if (std::isnan(s_want)) {
        EXPECT_TRUE(std::isnan(s_got)) << isa_name(isa) << " n " << n;
      } else {
        EXPECT_EQ(s_got, s_want) << isa_name(isa) << " n " << n;
      }
      EXPECT_EQ(got, want) << isa_name(isa) << " n " << n;  // including the untouched byte past n
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "no ISA table with a fast int8 quantizer on this CPU";
}

TEST(TernaryGemv, Int8ErrorAgainstExactActivationsWithinDocumentedBound) {
  // |y_r - (W x)_r| <= (s / 2) (|w_max| n_max + |w_min| n_min) + float rounding,
  // for the exact x; and the bound is not vacuous (the error is nonzero and a
  // good part of it on some row).
  const testing::DictFixture& fx = testing::dict_fixture(DictKind::kQmoe, 0.885);
  const testing::TestMatrix m = testing::make_test_matrix(fx, 64, 999, 0.885, 41);
  const ternary::PackedTernaryView w = m.packed.view();
  std::mt19937_64 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(w.cols);
  for (float& v : x) v = nd(rng);
  float mx = 0.0f;
  for (float v : x) mx = std::max(mx, std::fabs(v));
  const double s = mx / 127.0f;
  for (Isa isa : testing::supported_isas()) {
    const TernaryGemvKernels& k = ternary_gemv_kernels(isa);
    std::vector<float> y(w.rows);
    std::vector<float> ws(ternary_gemm_workspace_floats(w.cols, 1));
    ASSERT_TRUE(gemm_ternary_dict(k, fx.table, w, ActivationsView::f32(x.data(), 1, w.cols), OutputView{y.data(), 0},
                                  ws, nullptr, ActivationQuant::kInt8)
                    .is_ok());
    double worst_fraction = 0;
    for (uint32_t r = 0; r < w.rows; ++r) {
      const testing::OracleRow o = testing::oracle(m.dense, w.cols, r, x.data());
      double sum_abs_w = 0;
      for (uint32_t c = 0; c < w.cols; ++c) sum_abs_w += std::fabs(m.dense[static_cast<size_t>(r) * w.cols + c]);
      const double bound = s / 2 * sum_abs_w + testing::summation_bound(o.nonzeros, o.sum_abs + s * sum_abs_w);
      const double err = std::fabs(y[r] - o.y);
      EXPECT_LE(err, bound) << isa_name(isa) << " row " << r;
      if (sum_abs_w > 0) worst_fraction = std::max(worst_fraction, err / (s / 2 * sum_abs_w));
    }
    EXPECT_GT(worst_fraction, 0.05) << isa_name(isa) << ": the int8 path did not quantize";
  }
}

TEST(TernaryGemv, LowP0DictionaryUsesGenericSlotsAndMaskKernel) {
  const testing::DictFixture& fx = testing::dict_fixture(DictKind::kQmoe, 0.5);
  EXPECT_GT(fx.table.slot_count, kPermSlotsPerSign);  // exercises the generic slot loop
  EXPECT_FALSE(fx.table.has_perm);
  EXPECT_STREQ(ternary_kernel_name(ternary_gemv_kernels(Isa::kAvx512), fx.table, 1),
               "gemv_f32_ternary_dict_masks_avx512");
}

TEST(TernaryGemv, BoundDetectsAOneWeightError) {
  // The tolerance is only worth something if a real defect exceeds it: dropping
  // a single nonzero weight of a typical row must violate the bound.
  const testing::DictFixture& fx = testing::dict_fixture(DictKind::kQmoe, 0.885);
  const testing::TestMatrix m = testing::make_test_matrix(fx, 40, 2080, 0.885, 8);
  const std::vector<float> x = testing::random_activations(1, 2080, 2080, 9);
  size_t detected = 0, rows = 0;
  for (uint32_t r = 0; r < 40; ++r) {
    const testing::OracleRow o = testing::oracle(m.dense, 2080, r, x.data());
    if (o.nonzeros == 0) continue;
    ++rows;
    // The median term: terms below the bound are invisible by construction,
    // typical ones must not be.
    std::vector<double> terms;
    for (uint32_t c = 0; c < 2080; ++c) {
      const double t = std::fabs(static_cast<double>(m.dense[r * 2080 + c]) * x[c]);
      if (t > 0) terms.push_back(t);
    }
    std::nth_element(terms.begin(), terms.begin() + terms.size() / 2, terms.end());
    if (terms[terms.size() / 2] > testing::summation_bound(o.nonzeros, o.sum_abs)) ++detected;
  }
  EXPECT_EQ(detected, rows);
}

TEST(TernaryGemv, RejectsBadArguments) {
  const testing::DictFixture& fx = testing::dict_fixture(DictKind::kQmoe, 0.885);
  const testing::TestMatrix m = testing::make_test_matrix(fx, 10, 50, 0.885, 3);
  const ternary::PackedTernaryView w = m.packed.view();
  const TernaryGemvKernels& k = best_ternary_gemv_kernels();
  std::vector<float> x(64 * 50, 1.0f), y(64 * 10);
  std::vector<float> ws(ternary_gemm_workspace_floats(50, 64));
  const OutputView out{y.data(), 10};
  auto run = [&](const ternary::PackedTernaryView& v, const ActivationsView& xv, std::span<float> wsp) {
    return gemm_ternary_dict(k, fx.table, v, xv, out, wsp, nullptr);
  };
  EXPECT_TRUE(run(w, ActivationsView::f32(x.data(), 1, 50), ws).is_ok());
  EXPECT_EQ(run(w, ActivationsView::f32(x.data(), 0, 50), ws).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(run(w, ActivationsView::f32(x.data(), 65, 50), ws).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(run(w, ActivationsView::f32(x.data(), 2, 49), ws).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(run(w, ActivationsView::f32(nullptr, 1, 50), ws).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(run(w, ActivationsView::f32(x.data(), 8, 50), std::span<float>(ws).first(ternary_gemm_workspace_floats(50, 8) - 1)).code(),
            ErrorCode::kInvalidArgument);
  ternary::PackedTernaryView other_dict = w;
  const testing::DictFixture& fx2 = testing::dict_fixture(DictKind::kQmoe, 0.8);
  other_dict.dict = fx2.dict.entries();
  EXPECT_EQ(run(other_dict, ActivationsView::f32(x.data(), 1, 50), ws).code(), ErrorCode::kInvalidArgument);
  std::vector<int32_t> offsets(w.row_offsets, w.row_offsets + w.rows + 1);
  std::swap(offsets[3], offsets[4]);
  ternary::PackedTernaryView bad_offsets = w;
  bad_offsets.row_offsets = offsets.data();
  if (offsets[3] != offsets[4]) {
    EXPECT_EQ(run(bad_offsets, ActivationsView::f32(x.data(), 1, 50), ws).code(), ErrorCode::kInvalidArgument);
  }
  offsets.assign(w.row_offsets, w.row_offsets + w.rows + 1);
  offsets.back() -= 1;  // truncated code stream
  EXPECT_EQ(run(bad_offsets, ActivationsView::f32(x.data(), 1, 50), ws).code(), ErrorCode::kInvalidArgument);
  TernaryKernelTable empty;
  EXPECT_EQ(gemm_ternary_dict(k, empty, w, ActivationsView::f32(x.data(), 1, 50), out, ws, nullptr).code(),
            ErrorCode::kInvalidArgument);
}

TEST(TernaryGemv, ZeroColumnsGiveZeros) {
  const testing::DictFixture& fx = testing::dict_fixture(DictKind::kQmoe, 0.885);
  std::vector<int32_t> offsets(4, 0);
  std::vector<ternary::RowScales> scales(3, {float_to_bf16(-1.0f), float_to_bf16(1.0f)});
  ternary::PackedTernaryView w;
  w.rows = 3;
  w.cols = 0;
  w.row_offsets = offsets.data();
  w.scales = scales.data();
  w.dict = fx.dict.entries();
  std::vector<float> y(6, 5.0f), ws(ternary_gemm_workspace_floats(0, 2));
  float dummy = 0;
  for (Isa isa : testing::supported_isas()) {
    ASSERT_TRUE(gemm_ternary_dict(ternary_gemv_kernels(isa), fx.table, w, ActivationsView::f32(&dummy, 2, 0),
                                  OutputView{y.data(), 3}, ws, nullptr)
                    .is_ok());
    for (float v : y) EXPECT_EQ(v, 0.0f);
  }
}

}  // namespace
}  // namespace submoe::kernels
