// Randomized Hadamard transform: constructions (H H^T = n I exactly), plans and
// costs per width, the sign generator, the float64 reference against the
// explicit Kronecker matrix, float32 against the reference within a bound
// derived from the operation order, round trips, the activation-side identity
// W x = T_o^T (W' (T_i x)), the Hessian rotation, every ISA bit-identical to
// scalar, fallbacks and bad arguments.
#include "submoe/kernels/hadamard.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_support.h"

namespace submoe::kernels {
namespace {

using testing::supported_isas;

// The widths the supported and next architectures need.
const std::vector<uint32_t> kRequiredWidths = {12,   20,   28,   36,   44,   16,   64,    128,   256,
                                               512,  768,  1024, 1408, 1536, 2048, 2080,  2880,  4096,
                                               6144, 7168, 14336, 18432};
// Widths without an exact construction, and trivial ones.
const std::vector<uint32_t> kFallbackWidths = {1, 3, 6, 100, 2082};

std::vector<uint32_t> all_widths() {
  std::vector<uint32_t> w = kRequiredWidths;
  w.insert(w.end(), kFallbackWidths.begin(), kFallbackWidths.end());
  return w;
}

RandomizedHadamard make(uint32_t n, uint64_t seed, Isa isa = Isa::kScalar) {
  auto t = RandomizedHadamard::create(n, seed, hadamard_kernels(isa));
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return std::move(t).value();
}

std::vector<float> random_floats(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = g(rng);
  return v;
}

double norm(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

// H H^T == m I exactly and every entry is +-1.
void expect_orthogonal(const std::vector<int8_t>& h, uint32_t m, const std::string& what) {
  ASSERT_EQ(h.size(), static_cast<size_t>(m) * m) << what;
  for (int8_t v : h) ASSERT_TRUE(v == 1 || v == -1) << what;
  for (uint32_t i = 0; i < m; ++i) {
    for (uint32_t j = 0; j < m; ++j) {
      int64_t dot = 0;
      for (uint32_t k = 0; k < m; ++k) dot += h[static_cast<size_t>(i) * m + k] * h[static_cast<size_t>(j) * m + k];
      ASSERT_EQ(dot, i == j ? static_cast<int64_t>(m) : 0) << what << " rows " << i << ", " << j;
    }
  }
}

// Relative 2-norm error bound of the float32 transform against exact
// arithmetic: each butterfly stage rounds every element once (relative u; the
// normalized stages are orthogonal, so stage errors add in norm); a dense
// factor's sequential m-term sum errs by at most gamma_{m-1} sum_c |x_c| per
// output, i.e. (m - 1) u sqrt(m) relative in norm; the final multiply by s and
// the rounding of s itself add 2u. The factor 1.05 covers second-order terms.
double float_bound(const HadamardPlan& plan) {
  if (plan.kind == RotationKind::kIdentity) return 0;
  const double u = std::ldexp(1.0, -24);
  double k = plan.log2_pow2() + 2.0;
  for (uint32_t f = 0; f < plan.num_dense; ++f) {
    const double m = plan.dense[f].order;
    k += (m - 1) * std::sqrt(m);
  }
  return 1.05 * k * u;
}

TEST(HadamardConstruction, EveryPaleyOrderAndSylvesterIsOrthogonalExactly) {
  int checked = 0;
  for (uint32_t m = 4; m <= kMaxDenseHadamardOrder; m += 4) {
    HadamardFactor f;
    if (!paley_factor(m, &f)) continue;
    EXPECT_EQ(f.order, m);
    EXPECT_EQ(f.kind == HadamardFactorKind::kPaleyI ? f.q + 1 : 2 * (f.q + 1), m);
    expect_orthogonal(hadamard_factor_matrix(f), m, "Paley order " + std::to_string(m));
    ++checked;
  }
  EXPECT_GE(checked, 30);
  // Orders needed by the required widths (12 = Paley I 11, 20 = I 19, 28 = II 13,
  // 36 = II 17, 44 = I 43, 104 = I 103) all exist.
  for (uint32_t m : {12u, 20u, 24u, 28u, 36u, 44u, 60u, 72u, 104u, 180u}) {
    HadamardFactor f;
    EXPECT_TRUE(paley_factor(m, &f)) << m;
  }
  HadamardFactor f;
  EXPECT_FALSE(paley_factor(52, &f));   // q = 51 and 25 are not prime
  EXPECT_FALSE(paley_factor(64, &f));   // powers of two are Sylvester's
  EXPECT_FALSE(paley_factor(30, &f));   // not a multiple of 4
  for (uint32_t p = 1; p <= 256; p *= 2)
    expect_orthogonal(hadamard_factor_matrix({HadamardFactorKind::kSylvester, p, 0}), p, "Sylvester " + std::to_string(p));
}

TEST(HadamardConstruction, PaleyMatricesAreNotSymmetric) {
  HadamardFactor f;
  ASSERT_TRUE(paley_factor(12, &f));
  const std::vector<int8_t> h = hadamard_factor_matrix(f);
  bool symmetric = true;
  for (uint32_t i = 0; i < 12; ++i)
    for (uint32_t j = 0; j < 12; ++j) symmetric = symmetric && h[i * 12 + j] == h[j * 12 + i];
  EXPECT_FALSE(symmetric);
}

TEST(HadamardConstruction, EveryRequiredBlockMatrixIsOrthogonal) {
  // Every factor of every required plan exactly; the whole Kronecker block
  // exactly (all pairs of rows) up to 256, and for larger blocks up to 4096 as
  // the exact integer identity H^T (H x) = b x on random integer vectors.
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> small(-3, 3);
  for (uint32_t n : kRequiredWidths) {
    auto plan = plan_hadamard(n);
    ASSERT_TRUE(plan.is_ok());
    ASSERT_EQ(plan->kind, RotationKind::kExact) << n;
    for (uint32_t k = 0; k < plan->num_dense; ++k)
      expect_orthogonal(hadamard_factor_matrix(plan->dense[k]), plan->dense[k].order, plan->describe());
    const uint32_t b = plan->block;
    if (b > 4096) continue;
    auto h = hadamard_block_matrix(*plan);
    ASSERT_TRUE(h.is_ok());
    if (b <= 256) {
      expect_orthogonal(*h, b, plan->describe());
      continue;
    }
    for (int8_t v : *h) ASSERT_TRUE(v == 1 || v == -1);
    std::vector<int64_t> x(b), hx(b, 0), hthx(b, 0);
    for (auto& v : x) v = small(rng);
    for (uint32_t i = 0; i < b; ++i)
      for (uint32_t j = 0; j < b; ++j) hx[i] += (*h)[static_cast<size_t>(i) * b + j] * x[j];
    for (uint32_t i = 0; i < b; ++i)
      for (uint32_t j = 0; j < b; ++j) hthx[j] += (*h)[static_cast<size_t>(i) * b + j] * hx[i];
    for (uint32_t i = 0; i < b; ++i) ASSERT_EQ(hthx[i], static_cast<int64_t>(b) * x[i]) << plan->describe();
  }
}

struct ExpectedPlan {
  uint32_t n;
  RotationKind kind;
  uint32_t block, pow2;
  std::vector<uint32_t> dense;
  double cost;
};

TEST(HadamardPlan, CheapestConstructionPerWidth) {
  const std::vector<ExpectedPlan> expected = {
      {16, RotationKind::kExact, 16, 16, {}, 4},
      {64, RotationKind::kExact, 64, 64, {}, 6},
      {128, RotationKind::kExact, 128, 128, {}, 7},
      {256, RotationKind::kExact, 256, 256, {}, 8},
      {512, RotationKind::kExact, 512, 512, {}, 9},
      {768, RotationKind::kExact, 768, 64, {12}, 18},
      {1024, RotationKind::kExact, 1024, 1024, {}, 10},
      {1408, RotationKind::kExact, 1408, 32, {44}, 49},
      {1536, RotationKind::kExact, 1536, 128, {12}, 19},
      {2048, RotationKind::kExact, 2048, 2048, {}, 11},
      {2080, RotationKind::kExact, 2080, 1, {20, 104}, 124},
      {2880, RotationKind::kExact, 2880, 4, {20, 36}, 58},
      {4096, RotationKind::kExact, 4096, 4096, {}, 12},
      {6144, RotationKind::kExact, 6144, 512, {12}, 21},
      {7168, RotationKind::kExact, 7168, 256, {28}, 36},
      {14336, RotationKind::kExact, 14336, 512, {28}, 37},
      {18432, RotationKind::kExact, 18432, 128, {12, 12}, 31},
      {12, RotationKind::kExact, 12, 1, {12}, 12},
      {20, RotationKind::kExact, 20, 1, {20}, 20},
      {28, RotationKind::kExact, 28, 1, {28}, 28},
      {36, RotationKind::kExact, 36, 1, {36}, 36},
      {44, RotationKind::kExact, 44, 1, {44}, 44},
      {56, RotationKind::kExact, 56, 2, {28}, 29},
      {1u << 24, RotationKind::kExact, 1u << 24, 1u << 24, {}, 24},
      // Fallbacks: the largest constructible divisor.
      {2082, RotationKind::kBlockDiagonal, 2, 2, {}, 1},
      {100, RotationKind::kBlockDiagonal, 20, 1, {20}, 20},
      {6, RotationKind::kBlockDiagonal, 2, 2, {}, 1},
      {1, RotationKind::kIdentity, 1, 1, {}, 0},
      {3, RotationKind::kIdentity, 1, 1, {}, 0},
      {1001, RotationKind::kIdentity, 1, 1, {}, 0},
  };
  for (const ExpectedPlan& e : expected) {
    auto plan = plan_hadamard(e.n);
    ASSERT_TRUE(plan.is_ok()) << e.n;
    const std::string what = plan->describe();
    EXPECT_EQ(plan->n, e.n) << what;
    EXPECT_EQ(plan->kind, e.kind) << what;
    EXPECT_EQ(plan->block, e.block) << what;
    EXPECT_EQ(plan->pow2, e.pow2) << what;
    ASSERT_EQ(plan->num_dense, e.dense.size()) << what;
    uint32_t prod = plan->pow2;
    for (uint32_t k = 0; k < plan->num_dense; ++k) {
      EXPECT_EQ(plan->dense[k].order, e.dense[k]) << what;
      prod *= plan->dense[k].order;
    }
    if (plan->kind != RotationKind::kIdentity) {
      EXPECT_EQ(prod, plan->block) << what;
    }
    EXPECT_EQ(plan->n % plan->block, 0u) << what;
    EXPECT_DOUBLE_EQ(plan->cost(), e.cost) << what;
  }
  EXPECT_EQ(plan_hadamard(2880)->describe(), "exact 2880 = 4 x 20 (Paley I q=19) x 36 (Paley II q=17), cost 58");
  EXPECT_EQ(plan_hadamard(100)->describe(), "block-diagonal 100 = 5 blocks of 20, block = 20 (Paley I q=19), cost 20");
  EXPECT_EQ(plan_hadamard(3)->describe(), "identity 3: no rotation (b = 1)");
}

TEST(HadamardPlan, RejectsZeroAndAbsurdWidths) {
  EXPECT_EQ(plan_hadamard(0).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(plan_hadamard(kMaxHadamardWidth + 1).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(RandomizedHadamard::create(0, 1).status().code(), ErrorCode::kInvalidArgument);
}

TEST(HadamardSigns, Splitmix64StreamAndBit63) {
  uint64_t state = 0;
  EXPECT_EQ(splitmix64_next(&state), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(splitmix64_next(&state), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(splitmix64_next(&state), 0x06C45D188009454Full);
  const std::vector<float> d = hadamard_signs(0, 3);
  EXPECT_EQ(d, (std::vector<float>{-1.0f, 1.0f, 1.0f}));
  // Roughly balanced, and a different seed gives different signs.
  const std::vector<float> a = hadamard_signs(12345, 4096);
  const std::vector<float> b = hadamard_signs(12346, 4096);
  int neg = 0, diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    neg += a[i] < 0;
    diff += a[i] != b[i];
  }
  EXPECT_NEAR(neg, 2048, 200);
  EXPECT_NEAR(diff, 2048, 200);
  EXPECT_EQ(make(64, 12345).signs()[5], a[5]);
}

// The float64 reference equals s * H_block * D (blocks along the vector) built
// from the explicit Kronecker matrix, forward and transpose.
TEST(HadamardReference, MatchesExplicitMatrix) {
  for (uint32_t n : {12u, 16u, 20u, 28u, 36u, 44u, 56u, 64u, 100u, 768u, 1408u, 2880u, 6u, 3u}) {
    const RandomizedHadamard t = make(n, 99 + n);
    const HadamardPlan& plan = t.plan();
    const uint32_t b = plan.block;
    auto hb = hadamard_block_matrix(plan);
    ASSERT_TRUE(hb.is_ok());
    const double s = 1.0 / std::sqrt(static_cast<double>(b));
    const std::vector<float> xf = random_floats(n, n);
    std::vector<double> x(xf.begin(), xf.end());
    std::vector<double> fwd(n, 0.0), tr(n, 0.0);
    for (uint32_t blk = 0; blk < n; blk += b) {
      for (uint32_t i = 0; i < b; ++i) {
        for (uint32_t j = 0; j < b; ++j) {
          const double hij = (*hb)[static_cast<size_t>(i) * b + j];
          const double hji = (*hb)[static_cast<size_t>(j) * b + i];
          fwd[blk + i] += s * hij * t.signs()[blk + j] * x[blk + j];
          tr[blk + i] += s * t.signs()[blk + i] * hji * x[blk + j];
        }
      }
    }
    if (plan.kind == RotationKind::kIdentity) fwd = tr = x;
    std::vector<double> y = x, z = x;
    t.forward_reference(y.data());
    t.transpose_reference(z.data());
    for (uint32_t i = 0; i < n; ++i) {
      ASSERT_NEAR(y[i], fwd[i], 1e-12 * (1 + std::fabs(fwd[i]))) << plan.describe() << " i=" << i;
      ASSERT_NEAR(z[i], tr[i], 1e-12 * (1 + std::fabs(tr[i]))) << plan.describe() << " i=" << i;
    }
  }
}

// Float32 forward and transpose within float_bound of the float64 reference;
// transpose(forward(x)) = x within the bounds of both, and exactly to float64
// tolerance in the reference; norms are preserved.
TEST(HadamardTransform, RoundTripsAndFloatBoundOnEveryWidth) {
  for (uint32_t n : all_widths()) {
    const RandomizedHadamard t = make(n, 1000 + n);
    const std::string what = t.plan().describe();
    const size_t count = n >= 4096 ? 1 : 3;
    std::vector<float> x = random_floats(count * n, n);
    const std::vector<float> x0 = x;
    ASSERT_TRUE(t.forward(x.data(), count, n).is_ok());
    const double eps = float_bound(t.plan());
    for (size_t v = 0; v < count; ++v) {
      std::vector<double> ref(x0.begin() + static_cast<std::ptrdiff_t>(v * n),
                              x0.begin() + static_cast<std::ptrdiff_t>((v + 1) * n));
      const double nx = norm(ref);
      t.forward_reference(ref.data());
      EXPECT_NEAR(norm(ref), nx, 1e-12 * nx) << what;
      std::vector<double> err(n);
      for (uint32_t i = 0; i < n; ++i) err[i] = x[v * n + i] - ref[i];
      EXPECT_LE(norm(err), eps * nx) << what;
      // Float64 round trip.
      t.transpose_reference(ref.data());
      for (uint32_t i = 0; i < n; ++i) err[i] = ref[i] - x0[v * n + i];
      EXPECT_LE(norm(err), 1e-13 * nx) << what;
    }
    ASSERT_TRUE(t.transpose(x.data(), count, n).is_ok());
    std::vector<double> err(x.size());
    std::vector<double> xd(x0.begin(), x0.end());
    for (size_t i = 0; i < x.size(); ++i) err[i] = x[i] - x0[i];
    EXPECT_LE(norm(err), 2 * eps * norm(xd) * 1.01 + 1e-30) << what;
    if (t.plan().kind == RotationKind::kIdentity) {
      EXPECT_EQ(x, x0) << what;
    }
  }
}

// y = W x equals T_o^T (W' (T_i x)) with W' = T_o W T_i^T from rotate_matrix
// (float storage), the transforms in float32: the error is at most
// (eps_i + eps_o + u) ||W||_F ||x|| (the rounding of W' to float is u ||W||_F;
// the products are accumulated in float64).
TEST(HadamardTransform, ActivationSideIdentityOnEveryWidth) {
  const double u = std::ldexp(1.0, -24);
  for (uint32_t n : all_widths()) {
    for (int shape = 0; shape < 2; ++shape) {
      const uint32_t rows = shape == 0 ? 8 : n;
      const uint32_t cols = shape == 0 ? n : 8;
      const RandomizedHadamard t_out = make(rows, 11 + rows);
      const RandomizedHadamard t_in = make(cols, 29 + cols);
      const std::string what = std::to_string(rows) + " x " + std::to_string(cols) + ": " + t_in.plan().describe() +
                               " / " + t_out.plan().describe();
      std::vector<float> w = random_floats(static_cast<size_t>(rows) * cols, n + static_cast<uint64_t>(shape));
      std::vector<float> x = random_floats(cols, 3 * n + 1);
      std::vector<double> y(rows, 0.0);
      double wf = 0, nx = 0;
      for (uint32_t r = 0; r < rows; ++r)
        for (uint32_t c = 0; c < cols; ++c) {
          const double wv = w[static_cast<size_t>(r) * cols + c];
          y[r] += wv * x[c];
          wf += wv * wv;
        }
      for (float v : x) nx += static_cast<double>(v) * v;
      wf = std::sqrt(wf);
      nx = std::sqrt(nx);
      std::vector<float> wr = w;
      ASSERT_TRUE(rotate_matrix(t_out, t_in, std::span<float>(wr), rows, cols).is_ok()) << what;
      ASSERT_TRUE(t_in.forward(x.data(), 1, cols).is_ok());
      std::vector<float> z(rows);
      for (uint32_t r = 0; r < rows; ++r) {
        double acc = 0;
        for (uint32_t c = 0; c < cols; ++c) acc += static_cast<double>(wr[static_cast<size_t>(r) * cols + c]) * x[c];
        z[r] = static_cast<float>(acc);
      }
      ASSERT_TRUE(t_out.transpose(z.data(), 1, rows).is_ok());
      std::vector<double> err(rows);
      for (uint32_t r = 0; r < rows; ++r) err[r] = z[r] - y[r];
      // + u: z rounded to float after the float64 dot products.
      const double bound = 1.02 * (float_bound(t_in.plan()) + float_bound(t_out.plan()) + 2 * u) * wf * nx;
      EXPECT_LE(norm(err), bound) << what;
    }
  }
}

// H' = T H T^T: x'^T H' x' = x^T H x for x' = T x, H' symmetric, and equal to the
// explicit product for small widths.
TEST(HadamardTransform, HessianRotation) {
  for (uint32_t n : {12u, 20u, 28u, 36u, 44u, 64u, 100u, 128u, 768u, 3u}) {
    const RandomizedHadamard t = make(n, 5 * n);
    const std::string what = t.plan().describe();
    // H = A^T A + I for a random 16 x n matrix A (symmetric positive definite).
    constexpr uint32_t kRowsA = 16;
    const std::vector<float> a = random_floats(static_cast<size_t>(kRowsA) * n, n);
    std::vector<double> h(static_cast<size_t>(n) * n, 0.0);
    for (uint32_t i = 0; i < n; ++i) h[static_cast<size_t>(i) * n + i] = 1.0;
    for (uint32_t k = 0; k < kRowsA; ++k)
      for (uint32_t i = 0; i < n; ++i)
        for (uint32_t j = 0; j < n; ++j)
          h[static_cast<size_t>(i) * n + j] += static_cast<double>(a[static_cast<size_t>(k) * n + i]) * a[static_cast<size_t>(k) * n + j];
    std::vector<double> hr = h;
    ASSERT_TRUE(rotate_hessian(t, std::span<double>(hr), n).is_ok());
    double scale = 0;
    for (double v : h) scale = std::max(scale, std::fabs(v));
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t j = 0; j < i; ++j)
        ASSERT_NEAR(hr[static_cast<size_t>(i) * n + j], hr[static_cast<size_t>(j) * n + i], 1e-12 * scale) << what;
    const std::vector<float> xf = random_floats(n, 77 + n);
    std::vector<double> x(xf.begin(), xf.end()), xr = x;
    t.forward_reference(xr.data());
    auto quad = [n](const std::vector<double>& m, const std::vector<double>& v) {
      double s = 0;
      for (uint32_t i = 0; i < n; ++i)
        for (uint32_t j = 0; j < n; ++j) s += v[i] * m[static_cast<size_t>(i) * n + j] * v[j];
      return s;
    };
    const double q = quad(h, x);
    EXPECT_NEAR(quad(hr, xr), q, 1e-10 * std::fabs(q)) << what;
    if (n <= 128) {
      // Explicit T H T^T, columns of T from the reference applied to basis vectors.
      std::vector<double> tm(static_cast<size_t>(n) * n);
      for (uint32_t j = 0; j < n; ++j) {
        std::vector<double> e(n, 0.0);
        e[j] = 1;
        t.forward_reference(e.data());
        for (uint32_t i = 0; i < n; ++i) tm[static_cast<size_t>(i) * n + j] = e[i];
      }
      // M = T H, then M T^T.
      std::vector<double> m(static_cast<size_t>(n) * n, 0.0);
      for (uint32_t i = 0; i < n; ++i)
        for (uint32_t k = 0; k < n; ++k)
          for (uint32_t j = 0; j < n; ++j)
            m[static_cast<size_t>(i) * n + j] += tm[static_cast<size_t>(i) * n + k] * h[static_cast<size_t>(k) * n + j];
      for (uint32_t i = 0; i < n; ++i)
        for (uint32_t j = 0; j < n; ++j) {
          double s = 0;
          for (uint32_t k = 0; k < n; ++k) s += m[static_cast<size_t>(i) * n + k] * tm[static_cast<size_t>(j) * n + k];
          ASSERT_NEAR(hr[static_cast<size_t>(i) * n + j], s, 1e-11 * scale) << what;
        }
    }
  }
}

// Every ISA reproduces the scalar float32 result bit for bit, forward and
// transpose, on odd counts and strides (padding between vectors untouched).
TEST(HadamardIsa, EveryIsaBitIdenticalToScalar) {
  int isas = 0;
  for (Isa isa : supported_isas()) {
    if (isa == Isa::kScalar) continue;
    ++isas;
    for (uint32_t n : all_widths()) {
      RandomizedHadamard t = make(n, 31 * n + 1);
      const size_t count = n >= 4096 ? 2 : 5;
      const size_t stride = n + 3;
      const std::vector<float> x0 = random_floats(count * stride, n + 5);
      for (int dir = 0; dir < 2; ++dir) {
        std::vector<float> ref = x0, got = x0;
        t.set_kernels(hadamard_kernels(Isa::kScalar));
        ASSERT_TRUE((dir == 0 ? t.forward(ref.data(), count, stride) : t.transpose(ref.data(), count, stride)).is_ok());
        t.set_kernels(hadamard_kernels(isa));
        ASSERT_TRUE((dir == 0 ? t.forward(got.data(), count, stride) : t.transpose(got.data(), count, stride)).is_ok());
        ASSERT_EQ(std::memcmp(ref.data(), got.data(), ref.size() * sizeof(float)), 0)
            << isa_name(isa) << " " << (dir == 0 ? "forward " : "transpose ") << t.plan().describe();
        for (size_t v = 0; v + 1 < count; ++v)
          for (size_t i = n; i < stride; ++i) ASSERT_EQ(got[v * stride + i], x0[v * stride + i]);
      }
    }
  }
  if (isas == 0) GTEST_SKIP() << "no SIMD ISA on this CPU";
}

// The kernels directly: the butterflies on every power of two up to 2^12 and
// the dense factor on every inner width 1..72 (every mix of 32-, 16-, 8- and
// 4-lane chunks and single-lane tails).
TEST(HadamardIsa, KernelsBitIdenticalOnAllShapes) {
  const HadamardKernels& s = hadamard_kernels(Isa::kScalar);
  for (Isa isa : supported_isas()) {
    if (isa == Isa::kScalar) continue;
    const HadamardKernels& k = hadamard_kernels(isa);
    for (uint32_t p = 1; p <= 4096; p *= 2) {
      std::vector<float> a = random_floats(p, p), b = a;
      s.fwht(a.data(), p);
      k.fwht(b.data(), p);
      ASSERT_EQ(std::memcmp(a.data(), b.data(), p * sizeof(float)), 0) << k.fwht_name << " p=" << p;
    }
    for (uint32_t m : {12u, 20u, 28u, 44u, 104u}) {
      HadamardFactor f;
      ASSERT_TRUE(paley_factor(m, &f));
      const std::vector<int8_t> h8 = hadamard_factor_matrix(f);
      std::vector<float> h(h8.begin(), h8.end()), ht(h.size());
      for (uint32_t r = 0; r < m; ++r)
        for (uint32_t c = 0; c < m; ++c) ht[c * m + r] = h[r * m + c];
      for (size_t inner = 1; inner <= 72; ++inner) {
        std::vector<float> a = random_floats(m * inner, m * 100 + inner), b = a;
        s.dense(h.data(), ht.data(), m, inner, a.data());
        k.dense(h.data(), ht.data(), m, inner, b.data());
        ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
            << k.dense_name << " m=" << m << " inner=" << inner;
      }
    }
  }
}

TEST(HadamardTransform, RejectsBadArguments) {
  const RandomizedHadamard t = make(64, 1);
  std::vector<float> x(128);
  EXPECT_EQ(t.forward(x.data(), 2, 63).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(t.transpose(nullptr, 1, 64).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(t.forward(nullptr, 0, 0).is_ok());
  EXPECT_TRUE(t.forward(x.data(), 1, 0).is_ok());
  std::vector<double> w(64 * 12);
  const RandomizedHadamard t12 = make(12, 2);
  EXPECT_EQ(rotate_matrix(t, t12, std::span<double>(w), 64, 12).code(), ErrorCode::kOk);
  EXPECT_EQ(rotate_matrix(t12, t, std::span<double>(w), 64, 12).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rotate_matrix(t, t12, std::span<double>(w.data(), 10), 64, 12).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rotate_hessian(t12, std::span<double>(w), 64).code(), ErrorCode::kInvalidArgument);
  EXPECT_STREQ(best_hadamard_kernels().name, hadamard_kernels(best_isa()).name);
  EXPECT_STREQ(hadamard_kernels(Isa::kAvx2).fwht_name, "fwht_f32_avx2");
}

}  // namespace
}  // namespace submoe::kernels
