// Every residual-VQ LUT kernel (each ISA this CPU runs; batch 1 and the slab
// kernels; f32 and bf16 activations; 1..3 threads) against a float64 evaluation
// of the formula of codec/rvq_format.h, held to rvq_error_bound() (slabs) or
// rvq_i8_error_bound() (batch 1; both derived in kernels/rvq_gemv.h). Batch 1
// must also equal, bit for bit, the int8-table computation the header
// specifies, written out here a second time (tile scales, rounding, sums in
// order). The oracles are written here on purpose: they depend on nothing but
// the layout and the header's specification.
#include "submoe/kernels/rvq_gemv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_support.h"
#include "submoe/core/bf16.h"
#include "submoe/core/thread_pool.h"
#include "submoe/kernels/rvq_panels.h"

namespace submoe::kernels {
namespace {

using rvq::kRvqCodebookFloats;
using rvq::kRvqDim;
using rvq::kRvqEntries;

enum class Data {
  kRandom,        // normal codebooks, scales over many binades
  kLargeScales,   // scales near the f16 maximum, codebook entries up to ~1e4
  kCancellation,  // stage s+1's chosen entries nearly cancel stage s's
};

struct RvqTestMatrix {
  uint32_t rows = 0, cols = 0, stages = 0;
  std::vector<uint8_t> codes;
  std::vector<uint16_t> scales;
  std::vector<float> codebooks;
  rvq::RvqView view() const {
    return {rows, cols, stages, codes.data(), scales.data(), codebooks.data()};
  }
};

// The kernels' execution layout of m (owns the repacked codes; scales and
// codebooks stay in m).
RvqPanels panels_of(const RvqTestMatrix& m) {
  Result<RvqPanels> p = RvqPanels::pack(m.view());
  EXPECT_TRUE(p.is_ok()) << p.status().to_string();
  return p.is_ok() ? std::move(p).value() : RvqPanels{};
}

RvqTestMatrix make_rvq_matrix(uint32_t rows, uint32_t cols, uint32_t stages, Data data, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  RvqTestMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.stages = stages;
  m.codebooks.resize(size_t{stages} * kRvqCodebookFloats);
  for (uint32_t s = 0; s < stages; ++s) {
    float* cb = m.codebooks.data() + size_t{s} * kRvqCodebookFloats;
    for (size_t i = 0; i < kRvqCodebookFloats; ++i) {
      const float v = nd(rng);
      switch (data) {
        case Data::kRandom: cb[i] = std::ldexp(v, -static_cast<int>(s)); break;
        case Data::kLargeScales: cb[i] = std::ldexp(v, static_cast<int>(rng() % 14)); break;
        case Data::kCancellation:
          // Odd stages: the negated even stage plus a residual 2^-12 its size.
          cb[i] = s % 2 == 0 ? std::ldexp(v, 6) : -cb[i - kRvqCodebookFloats] + std::ldexp(v, -6);
          break;
      }
    }
  }
  const uint32_t groups = rvq::rvq_groups(cols);
  m.codes.resize(size_t{rows} * groups * stages);
  for (uint32_t r = 0; r < rows; ++r) {
    const uint64_t kind = rng() % 6;  // a few rows all 0 or all 255
    for (uint32_t g = 0; g < groups; ++g) {
      uint8_t prev = 0;
      for (uint32_t s = 0; s < stages; ++s) {
        uint8_t c = kind == 0 ? 0 : kind == 1 ? 255 : static_cast<uint8_t>(rng());
        if (data == Data::kCancellation && s % 2 == 1) c = prev;  // pick the cancelling entry
        prev = c;
        m.codes[(size_t{r} * groups + g) * stages + s] = c;
      }
    }
  }
  m.scales.resize(rows);
  for (uint32_t r = 0; r < rows; ++r) {
    const float raw = data == Data::kLargeScales
                          ? 65504.0f * (0.5f + 0.5f * static_cast<float>(rng() % 1024) / 1024.0f)
                          : std::ldexp(static_cast<float>(rng() % 1024 + 1) / 1024.0f, static_cast<int>(rng() % 20) - 12);
    m.scales[r] = float_to_f16_bits(raw);
  }
  return m;
}

struct Oracle {
  double y = 0;
  double sum_abs = 0;  // A of the bound (times |scale|)
  double scale = 0;
};

// y = scale * sum_g sum_s sum_j codebook[s][code][j] * x[g*16+j] in float64
// (each product of two floats is exact in double).
Oracle oracle(const RvqTestMatrix& m, uint32_t r, const float* x) {
  const rvq::RvqView w = m.view();
  const uint8_t* codes = w.row_codes(r);
  Oracle o;
  for (uint32_t g = 0; g < w.groups(); ++g) {
    for (uint32_t s = 0; s < w.stages; ++s) {
      const float* e = w.codebook(s) + size_t{codes[g * w.stages + s]} * kRvqDim;
      for (uint32_t j = 0; j < kRvqDim; ++j) {
        const double p = static_cast<double>(e[j]) * x[g * kRvqDim + j];
        o.y += p;
        o.sum_abs += std::fabs(p);
      }
    }
  }
  o.scale = f16_bits_to_float(w.scales[r]);
  o.y *= o.scale;
  o.sum_abs *= std::fabs(o.scale);
  return o;
}

// The batch-1 int8-table computation of kernels/rvq_gemv.h for one token:
// every row's result, and sum_t n_t s_t (an upper bound of it from float64
// entries) for rvq_i8_error_bound.
struct I8Oracle {
  std::vector<float> y;
  double tile_steps = 0;
  double rounding_variance = 0;  // sum_t n_t s_t^2 / 12: a row's error variance if roundings were uniform and independent
  uint64_t tiles = 0;
};
I8Oracle i8_oracle(const RvqTestMatrix& m, const float* x) {
  const rvq::RvqView w = m.view();
  const uint32_t S = w.stages, n = w.groups() * S, per_tile = kRvqI8TileGroups * S;
  const uint32_t tiles = (n + per_tile - 1) / per_tile;
  std::vector<float> t(size_t{n} * kRvqEntries);
  std::vector<int8_t> q(t.size());
  std::vector<float> tile_scale(tiles);
  I8Oracle o;
  o.tiles = tiles;
  const double g16 = 16 * std::ldexp(1.0, -24) / (1 - 16 * std::ldexp(1.0, -24));
  for (uint32_t k = 0; k < tiles; ++k) {
    const uint32_t b0 = k * per_tile, b1 = std::min(n, b0 + per_tile);
    float mx = 0;
    double mx64 = 0, a_max = 0;
    for (uint32_t i = b0; i < b1; ++i) {
      const uint32_t g = i / S, s = i % S;
      for (uint32_t c = 0; c < kRvqEntries; ++c) {
        const float* e = w.codebook(s) + size_t{c} * kRvqDim;
        float acc = 0;
        double exact = 0, a = 0;
        for (uint32_t j = 0; j < kRvqDim; ++j) {
          acc = std::fma(x[g * kRvqDim + j], e[j], acc);
          exact += static_cast<double>(e[j]) * x[g * kRvqDim + j];
          a += std::fabs(static_cast<double>(e[j]) * x[g * kRvqDim + j]);
        }
        t[size_t{i} * kRvqEntries + c] = acc;
        mx = std::max(mx, std::fabs(acc));
        mx64 = std::max(mx64, std::fabs(exact));
        a_max = std::max(a_max, a);
      }
    }
    tile_scale[k] = mx > 0 ? mx / 127.0f : 0.0f;
    const float inv = mx > 0 ? 127.0f / mx : 0.0f;
    for (size_t e = size_t{b0} * kRvqEntries; e < size_t{b1} * kRvqEntries; ++e)
      q[e] = static_cast<int8_t>(std::clamp(std::nearbyint(t[e] * inv), -127.0f, 127.0f));
    o.tile_steps += (b1 - b0) * (mx64 + g16 * a_max) / 127.0 * (1 + std::ldexp(1.0, -20));
    o.rounding_variance += (b1 - b0) * static_cast<double>(tile_scale[k]) * tile_scale[k] / 12.0;
  }
  o.y.resize(w.rows);
  for (uint32_t r = 0; r < w.rows; ++r) {
    float acc = 0;
    for (uint32_t k = 0; k < tiles; ++k) {
      int32_t sum = 0;
      for (uint32_t i = k * per_tile; i < std::min(n, (k + 1) * per_tile); ++i)
        sum += q[size_t{i} * kRvqEntries + w.row_codes(r)[i]];
      acc = std::fma(tile_scale[k], static_cast<float>(sum), acc);
    }
    o.y[r] = f16_bits_to_float(w.scales[r]) * acc;
  }
  return o;
}

// The bound the kernel of this batch is held to, for one output.
double bound_for(uint32_t batch, const rvq::RvqView& w, const Oracle& o, const I8Oracle& i8) {
  if (batch > 1) return rvq_error_bound(w.groups(), w.stages, o.sum_abs, 1.0);  // scale in sum_abs
  const double s = std::fabs(o.scale);
  return rvq_i8_error_bound(i8.tiles, o.sum_abs / s, i8.tile_steps, s);
}

// Runs gemm_rvq and checks every output; returns the outputs (token-major, rows
// per token) or an empty vector after a failure.
std::vector<float> run_and_check(const RvqGemvKernels& k, const RvqTestMatrix& m, uint32_t batch, ThreadPool* pool,
                                 ActivationType type, uint64_t seed, const std::string& what, size_t* checked) {
  const rvq::RvqView w = m.view();
  const size_t x_stride = w.cols + (seed % 3);
  std::vector<float> x = testing::random_activations(batch, w.cols, x_stride, seed);
  std::vector<bf16_t> xb;
  ActivationsView xv = ActivationsView::f32(x.data(), batch, x_stride);
  if (type == ActivationType::kBF16) {
    xb.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      xb[i] = float_to_bf16(x[i]);
      x[i] = bf16_to_float(xb[i]);
    }
    xv = ActivationsView::bf16(xb.data(), batch, x_stride);
  }
  const size_t y_stride = w.rows + 1;
  std::vector<float> y(batch * y_stride, -7.0f);
  std::vector<float> ws(rvq_gemm_workspace_floats(k, w.rows, w.cols, w.stages, batch) + 5);
  const RvqPanels panels = panels_of(m);
  const Status st =
      gemm_rvq(k, panels.view(), xv, OutputView{y.data(), y_stride}, std::span<float>(ws).subspan(3), pool);
  EXPECT_TRUE(st.is_ok()) << what << ": " << st.to_string();
  for (uint32_t t = 0; t < batch; ++t) {
    const I8Oracle i8 = batch == 1 ? i8_oracle(m, x.data()) : I8Oracle{};
    for (uint32_t r = 0; r < w.rows; ++r) {
      const Oracle o = oracle(m, r, x.data() + t * x_stride);
      const double got = y[t * y_stride + r];
      const double bound = bound_for(batch, w, o, i8);
      if (!(std::fabs(got - o.y) <= bound)) {
        ADD_FAILURE() << what << " " << rvq_kernel_name(k, batch) << ": row " << r << " token " << t << " got " << got
                      << " want " << o.y << " (bound " << bound << ")";
        return {};
      }
      if (batch == 1 && !(y[r] == i8.y[r])) {
        ADD_FAILURE() << what << " " << rvq_kernel_name(k, batch) << ": row " << r << " got " << y[r]
                      << ", the int8-table specification gives " << i8.y[r];
        return {};
      }
      ++*checked;
    }
    EXPECT_EQ(y[t * y_stride + w.rows], -7.0f) << what << ": wrote past the rows";
  }
  return y;
}

TEST(RvqPanelsTest, PackKeepsEveryCodeAndPadsWithZero) {
  // 48 columns: one span of 3 groups; 1040: 65 groups = spans of 32, 32 and 1.
  for (const auto& [cols, stages] : std::vector<std::pair<uint32_t, uint32_t>>{
           {48, 1}, {48, 3}, {48, 4}, {1040, 1}, {1040, 3}, {1040, 4}}) {
    for (uint32_t rows : {1u, 16u, 17u, 40u}) {
      const RvqTestMatrix m = make_rvq_matrix(rows, cols, stages, Data::kRandom, 40 + rows + stages + cols);
      const RvqPanels p = panels_of(m);
      const RvqPanelView v = p.view();
      const rvq::RvqView w = m.view();
      ASSERT_EQ(p.bytes(), rvq_panel_bytes(rows, cols, stages));
      ASSERT_EQ(v.blocks(), cols / 16 * stages);
      size_t pairs = 0;
      for (uint32_t sp = 0; sp < v.spans(); ++sp) pairs += v.span_pairs(sp);
      ASSERT_EQ(pairs, v.pairs());
      ASSERT_EQ(p.bytes(), size_t{rvq_panels(rows)} * pairs * kRvqPairBytes);
      for (uint32_t r = 0; r < rows; ++r) {
        for (uint32_t i = 0; i < v.blocks(); ++i) ASSERT_EQ(v.code(r, i), w.row_codes(r)[i]) << r << " " << i;
      }
      // Padding rows and the padding block (3 * S blocks: odd for odd S) hold 0.
      for (uint32_t r = rows; r < rvq_panels(rows) * kRvqPanelRows; ++r) {
        for (uint32_t i = 0; i < v.blocks(); ++i) EXPECT_EQ(v.code(r, i), 0) << r << " " << i;
      }
      if (v.blocks() % 2 == 1) {
        for (uint32_t r = 0; r < rows; ++r) EXPECT_EQ(v.code(r, v.blocks()), 0);
      }
      EXPECT_EQ(v.scales, w.scales);
      EXPECT_EQ(v.codebooks, w.codebooks);
    }
  }
  rvq::RvqView bad{4, 40, 2, nullptr, nullptr, nullptr};
  EXPECT_FALSE(RvqPanels::pack(bad).is_ok());
}

TEST(RvqGemv, EveryIsaMatchesOracleAcrossStagesShapesBatchesAndThreads) {
  const std::vector<uint32_t> batches = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 33, 64};
  const uint32_t col_choices[] = {16, 32, 48, 160};
  const uint32_t row_choices[] = {1, 7, 37, 20};
  ThreadPool pools[3] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
  size_t checked = 0;
  uint64_t seed = 1;
  for (uint32_t b : batches) {
    for (uint32_t stages = 1; stages <= rvq::kRvqMaxStages; ++stages) {
      const uint32_t cols = col_choices[(b + stages) % 4];
      const uint32_t rows = row_choices[(3 * b + stages) % 4];
      const RvqTestMatrix m = make_rvq_matrix(rows, cols, stages, Data::kRandom, seed++);
      for (Isa isa : testing::supported_isas()) {
        const std::string what = std::string(isa_name(isa)) + " " + std::to_string(rows) + "x" +
                                 std::to_string(cols) + " S=" + std::to_string(stages) + " B=" + std::to_string(b);
        ThreadPool* pool = &pools[(b + stages) % 3];
        const ActivationType type = (b + stages) % 4 == 0 ? ActivationType::kBF16 : ActivationType::kF32;
        if (run_and_check(rvq_gemv_kernels(isa), m, b, pool, type, seed, what, &checked).empty()) return;
      }
    }
  }
  EXPECT_GT(checked, 10000u);
}

TEST(RvqGemv, WideMatricesSpanManyTilesAndThreadsGiveIdenticalResults) {
  // 2080 columns: 130 groups, up to 1040 table blocks, many column tiles of the
  // row pass for every token pad; rows split over 1..3 threads must not change
  // a single bit (each row's sum does not depend on the thread).
  ThreadPool pools[3] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
  size_t checked = 0;
  uint64_t seed = 500;
  for (uint32_t stages : {2u, 4u, 8u}) {
    const RvqTestMatrix m = make_rvq_matrix(67, 2080, stages, Data::kRandom, seed++);
    for (Isa isa : testing::supported_isas()) {
      for (uint32_t b : {1u, 8u, 13u}) {
        if (isa == Isa::kScalar && b > 1 && stages > 2) continue;  // keeps ASan runs short
        std::vector<float> first;
        for (int th = 0; th < 3; ++th) {
          const std::string what = std::string(isa_name(isa)) + " S=" + std::to_string(stages) + " B=" +
                                   std::to_string(b) + " threads=" + std::to_string(th + 1);
          std::vector<float> y = run_and_check(rvq_gemv_kernels(isa), m, b, &pools[th], ActivationType::kF32, seed,
                                               what, &checked);
          ASSERT_FALSE(y.empty());
          if (th == 0) first = y;
          else EXPECT_EQ(y, first) << what;
        }
      }
    }
  }
  EXPECT_GT(checked, 1000u);
}

TEST(RvqGemv, AdversarialLargeScalesAndCancellationStayInsideTheBound) {
  ThreadPool pool(2);
  size_t checked = 0;
  uint64_t seed = 900;
  for (Data data : {Data::kLargeScales, Data::kCancellation}) {
    for (uint32_t stages : {2u, 5u, 8u}) {
      for (uint32_t cols : {16u, 48u, 1040u}) {
        const RvqTestMatrix m = make_rvq_matrix(19, cols, stages, data, seed++);
        for (Isa isa : testing::supported_isas()) {
          for (uint32_t b : {1u, 3u, 8u, 16u}) {
            const std::string what = std::string(isa_name(isa)) + " data=" + std::to_string(static_cast<int>(data)) +
                                     " S=" + std::to_string(stages) + " cols=" + std::to_string(cols);
            ASSERT_FALSE(run_and_check(rvq_gemv_kernels(isa), m, b, &pool, ActivationType::kF32, seed, what, &checked)
                             .empty());
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000u);
}

TEST(RvqGemv, SlabBoundIsTightEnoughToCatchADroppedStage) {
  // The f32 bound is a few 1e-5 of A at n ~ 500 entries per row: an ordinary
  // result's error budget, not a vacuous one. A slab kernel that dropped the
  // last stage would be caught on (nearly) every output, even when that stage
  // is the smallest (stage s's entries are 2^-s the size of stage 0's).
  const uint32_t stages = 4, cols = 2080, rows = 40, batch = 2;
  const RvqTestMatrix m = make_rvq_matrix(rows, cols, stages, Data::kRandom, 77);
  RvqTestMatrix dropped = m;
  dropped.stages = stages - 1;
  dropped.codes.clear();
  for (size_t i = 0; i < m.codes.size(); ++i)
    if (i % stages != stages - 1) dropped.codes.push_back(m.codes[i]);
  const uint32_t groups = m.view().groups();
  EXPECT_LT(rvq_error_bound(groups, stages, 1.0, 1.0), 2e-4);
  EXPECT_GT(rvq_error_bound(groups, stages, 1.0, 1.0), 2e-5);
  const std::vector<float> x = testing::random_activations(batch, cols, cols, 5);
  const RvqPanels pm = panels_of(m), pd = panels_of(dropped);
  for (Isa isa : testing::supported_isas()) {
    const RvqGemvKernels& k = rvq_gemv_kernels(isa);
    std::vector<float> y(batch * rows), yok(batch * rows);
    std::vector<float> ws(rvq_gemm_workspace_floats(k, rows, cols, stages, batch));
    const ActivationsView xv = ActivationsView::f32(x.data(), batch, cols);
    ASSERT_TRUE(gemm_rvq(k, pd.view(), xv, OutputView{y.data(), rows}, ws, nullptr).is_ok());
    ASSERT_TRUE(gemm_rvq(k, pm.view(), xv, OutputView{yok.data(), rows}, ws, nullptr).is_ok());
    uint32_t caught = 0;
    double worst_ratio = 0;  // honest kernel: largest |error| / bound
    for (uint32_t t = 0; t < batch; ++t) {
      for (uint32_t r = 0; r < rows; ++r) {
        const Oracle o = oracle(m, r, x.data() + t * cols);
        const double bound = rvq_error_bound(groups, stages, o.sum_abs, 1.0);
        if (std::fabs(y[t * rows + r] - o.y) > bound) ++caught;
        worst_ratio = std::max(worst_ratio, std::fabs(yok[t * rows + r] - o.y) / bound);
      }
    }
    EXPECT_GE(caught, batch * rows - 2) << isa_name(isa);
    EXPECT_LE(worst_ratio, 1.0) << isa_name(isa);
    // The bound is worst-case; real errors sit well below it but not absurdly so.
    EXPECT_GT(worst_ratio, 1e-4) << isa_name(isa);
  }
}

TEST(RvqGemv, Int8TableErrorsAddUpLikeARandomWalkNotTheWorstCase) {
  // Batch 1 rounds every table entry to a step s_t of its tile; the bound
  // charges n_t s_t / 2 per tile, a row really sees a sum of n independent
  // roundings, variance sum_t n_t s_t^2 / 12. Measured over 64 rows (the rows'
  // errors divided by their scales), the mean squared error is that variance
  // within sampling noise, and every error sits far inside the bound.
  const uint32_t stages = 4, cols = 2080, rows = 64;
  const RvqTestMatrix m = make_rvq_matrix(rows, cols, stages, Data::kRandom, 78);
  const std::vector<float> x = testing::random_activations(1, cols, cols, 6);
  const RvqPanels pm = panels_of(m);
  const I8Oracle i8 = i8_oracle(m, x.data());
  for (Isa isa : testing::supported_isas()) {
    const RvqGemvKernels& k = rvq_gemv_kernels(isa);
    std::vector<float> y(rows);
    std::vector<float> ws(rvq_gemm_workspace_floats(k, rows, cols, stages, 1));
    ASSERT_TRUE(gemm_rvq(k, pm.view(), ActivationsView::f32(x.data(), 1, cols), OutputView{y.data(), rows}, ws,
                         nullptr)
                    .is_ok());
    double err2 = 0, worst_ratio = 0;
    for (uint32_t r = 0; r < rows; ++r) {
      const Oracle o = oracle(m, r, x.data());
      const double e = (y[r] - o.y) / o.scale;
      err2 += e * e;
      worst_ratio = std::max(worst_ratio, std::fabs(y[r] - o.y) / bound_for(1, m.view(), o, i8));
    }
    const double ratio = err2 / rows / i8.rounding_variance;
    EXPECT_GT(ratio, 0.5) << isa_name(isa);
    EXPECT_LT(ratio, 1.6) << isa_name(isa);
    EXPECT_LT(worst_ratio, 0.2) << isa_name(isa);
  }
}

TEST(RvqGemv, NonFiniteActivationsGiveNaNNotAFiniteWrongNumber) {
  const RvqTestMatrix m = make_rvq_matrix(20, 1040, 3, Data::kRandom, 79);
  const RvqPanels pm = panels_of(m);
  std::vector<float> x = testing::random_activations(1, 1040, 1040, 7);
  x[700] = std::numeric_limits<float>::infinity();  // tile 1 of 3
  for (Isa isa : testing::supported_isas()) {
    const RvqGemvKernels& k = rvq_gemv_kernels(isa);
    std::vector<float> y(20);
    std::vector<float> ws(rvq_gemm_workspace_floats(k, 20, 1040, 3, 1));
    ASSERT_TRUE(gemm_rvq(k, pm.view(), ActivationsView::f32(x.data(), 1, 1040), OutputView{y.data(), 20}, ws,
                         nullptr)
                    .is_ok());
    for (uint32_t r = 0; r < 20; ++r) EXPECT_TRUE(std::isnan(y[r])) << isa_name(isa) << " row " << r;
  }
}

TEST(RvqGemv, CallerTransposedCodebooksGiveTheSameBits) {
  // RvqLinearOp hands the kernels codebooks transposed once per codec; the
  // result must equal the call's own transposition bit for bit.
  const RvqTestMatrix m = make_rvq_matrix(37, 1040, 3, Data::kRandom, 81);
  std::vector<float> cbt(m.codebooks.size());
  transpose_rvq_codebooks(m.codebooks.data(), m.stages, cbt.data());
  Result<RvqPanels> with_t = RvqPanels::pack(m.view(), cbt.data());
  ASSERT_TRUE(with_t.is_ok());
  EXPECT_EQ(with_t->view().codebooks_t, cbt.data());
  const RvqPanels without = panels_of(m);
  const std::vector<float> x = testing::random_activations(1, 1040, 1040, 9);
  for (Isa isa : testing::supported_isas()) {
    const RvqGemvKernels& k = rvq_gemv_kernels(isa);
    std::vector<float> ws(rvq_gemm_workspace_floats(k, 37, 1040, 3, 1)), y0(37), y1(37);
    const ActivationsView xv = ActivationsView::f32(x.data(), 1, 1040);
    ASSERT_TRUE(gemm_rvq(k, without.view(), xv, OutputView{y0.data(), 37}, ws, nullptr).is_ok());
    std::fill(ws.begin(), ws.end(), std::nanf(""));  // nothing may come from a previous call's workspace
    ASSERT_TRUE(gemm_rvq(k, with_t->view(), xv, OutputView{y1.data(), 37}, ws, nullptr).is_ok());
    EXPECT_EQ(y0, y1) << isa_name(isa);
  }
}

TEST(RvqGemv, RejectsBadArguments) {
  const RvqTestMatrix m = make_rvq_matrix(4, 32, 2, Data::kRandom, 3);
  const RvqPanels pm = panels_of(m);
  const RvqGemvKernels& k = best_rvq_gemv_kernels();
  std::vector<float> x(64 * 32), y(64 * 4);
  std::vector<float> ws(rvq_gemm_workspace_floats(k, 4, 32, 2, 64));
  const ActivationsView xv = ActivationsView::f32(x.data(), 1, 32);
  const OutputView yv{y.data(), 4};
  EXPECT_TRUE(gemm_rvq(k, pm.view(), xv, yv, ws, nullptr).is_ok());
  RvqPanelView w = pm.view();
  w.cols = 24;
  EXPECT_EQ(gemm_rvq(k, w, xv, yv, ws, nullptr).code(), ErrorCode::kInvalidArgument);
  w = pm.view();
  w.stages = 0;
  EXPECT_EQ(gemm_rvq(k, w, xv, yv, ws, nullptr).code(), ErrorCode::kInvalidArgument);
  w.stages = rvq::kRvqMaxStages + 1;
  EXPECT_EQ(gemm_rvq(k, w, xv, yv, ws, nullptr).code(), ErrorCode::kInvalidArgument);
  w = pm.view();
  w.codebooks = nullptr;
  EXPECT_EQ(gemm_rvq(k, w, xv, yv, ws, nullptr).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(gemm_rvq(k, pm.view(), ActivationsView::f32(x.data(), 0, 32), yv, ws, nullptr).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(gemm_rvq(k, pm.view(), ActivationsView::f32(x.data(), 65, 32), yv, ws, nullptr).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(gemm_rvq(k, pm.view(), ActivationsView::f32(x.data(), 2, 16), yv, ws, nullptr).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(gemm_rvq(k, pm.view(), ActivationsView::f32(x.data(), 2, 32), OutputView{y.data(), 3}, ws, nullptr).code(),
            ErrorCode::kInvalidArgument);
  const size_t need = rvq_gemm_workspace_floats(k, 4, 32, 2, 1);
  EXPECT_EQ(gemm_rvq(k, pm.view(), xv, yv, std::span<float>(ws).first(need - 1), nullptr).code(),
            ErrorCode::kInvalidArgument);
  w = pm.view();
  w.panels = nullptr;
  EXPECT_EQ(gemm_rvq(k, w, xv, yv, ws, nullptr).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rvq_kernel_name(k, 1), std::string(k.gemv_name));
  EXPECT_EQ(rvq_kernel_name(k, 2), std::string(k.gemm_name));
}

}  // namespace
}  // namespace submoe::kernels
