// Randomized Hadamard transform: constructions (Sylvester, Paley I/II,
// Kronecker products), the cheapest plan per width, the sign generator, the
// per-ISA table and the driver (forward / transpose / float64 reference /
// compression-time rotations of weights and Hessians).
#include "submoe/kernels/hadamard.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>

#include "kernels/hadamard_internal.h"
#include "row_dispatch.h"

namespace submoe::kernels {

namespace {

const HadamardKernels kScalar = {Isa::kScalar, "hadamard_f32_scalar", "fwht_f32_scalar", detail::fwht_f32_scalar,
                                 "dense_pm1_f32_scalar", detail::dense_pm1_f32_scalar, detail::mul_f32_scalar,
                                 detail::scale_f32_scalar};
const HadamardKernels kAvx2 = {Isa::kAvx2, "hadamard_f32_avx2", "fwht_f32_avx2", detail::fwht_f32_avx2,
                               "dense_pm1_f32_avx2", detail::dense_pm1_f32_avx2, detail::mul_f32_avx2,
                               detail::scale_f32_avx2};
const HadamardKernels kAvx512 = {Isa::kAvx512, "hadamard_f32_avx512", "fwht_f32_avx512", detail::fwht_f32_avx512,
                                 "dense_pm1_f32_avx512", detail::dense_pm1_f32_avx512, detail::mul_f32_avx512,
                                 detail::scale_f32_avx512};

bool is_pow2(uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }

bool is_prime(uint32_t q) {
  if (q < 2) return false;
  for (uint32_t d = 2; d * d <= q; ++d)
    if (q % d == 0) return false;
  return true;
}

// The cheapest exact construction of order b (b = P * m1 * m2), or false.
bool exact_plan(uint32_t b, HadamardPlan* out) {
  bool found = false;
  double best = 0;
  for (uint32_t p = 1; b % p == 0; p <<= 1) {
    const uint32_t r = b / p;
    const double log2p = std::log2(static_cast<double>(p));
    auto consider = [&](uint32_t num, const HadamardFactor* f) {
      double cost = log2p;
      for (uint32_t k = 0; k < num; ++k) cost += f[k].order;
      // Ties: fewer dense factors, then a larger power-of-two part.
      if (!found || cost < best || (cost == best && num < out->num_dense)) {
        found = true;
        best = cost;
        out->block = b;
        out->pow2 = p;
        out->num_dense = num;
        out->dense = {};
        for (uint32_t k = 0; k < num; ++k) out->dense[k] = f[k];
      }
    };
    if (r == 1) {
      consider(0, nullptr);
      continue;
    }
    HadamardFactor f[2];
    if (paley_factor(r, &f[0])) consider(1, f);
    for (uint32_t m1 = 12; m1 * m1 <= r; m1 += 4) {
      if (r % m1 != 0) continue;
      if (paley_factor(m1, &f[0]) && paley_factor(r / m1, &f[1])) consider(2, f);
    }
    if (p > b / 2) break;
  }
  return found;
}

int chi(const std::vector<int8_t>& squares, uint32_t q, int64_t v) {
  const uint32_t r = static_cast<uint32_t>(((v % q) + q) % q);
  if (r == 0) return 0;
  return squares[r] ? 1 : -1;
}

// Conference matrix C of order q + 1: C = [[0, 1^T], [e 1, Q]] with Q[i][j] =
// chi(i - j) and e = -1 (q = 3 mod 4, C antisymmetric) or +1 (q = 1 mod 4, C symmetric).
std::vector<int> conference(uint32_t q) {
  std::vector<int8_t> squares(q, 0);
  for (uint64_t x = 1; x < q; ++x) squares[(x * x) % q] = 1;
  const uint32_t n = q + 1;
  const int e = q % 4 == 3 ? -1 : 1;
  std::vector<int> c(static_cast<size_t>(n) * n, 0);
  for (uint32_t j = 1; j < n; ++j) {
    c[j] = 1;
    c[static_cast<size_t>(j) * n] = e;
  }
  for (uint32_t i = 1; i < n; ++i)
    for (uint32_t j = 1; j < n; ++j)
      c[static_cast<size_t>(i) * n + j] = chi(squares, q, static_cast<int64_t>(i) - static_cast<int64_t>(j));
  return c;
}

void check_dims(const RandomizedHadamard& t, uint32_t n, const char* what, Status* st) {
  if (st->is_ok() && t.n() != n)
    *st = invalid_argument(std::string(what) + ": transform of width " + std::to_string(t.n()) + " for dimension " +
                           std::to_string(n));
}

}  // namespace

const char* rotation_kind_name(RotationKind kind) {
  switch (kind) {
    case RotationKind::kExact:
      return "exact";
    case RotationKind::kBlockDiagonal:
      return "block-diagonal";
    case RotationKind::kIdentity:
      return "identity";
  }
  return "?";
}

uint32_t HadamardPlan::log2_pow2() const {
  uint32_t a = 0;
  while ((1u << a) < pow2) ++a;
  return a;
}

double HadamardPlan::cost() const {
  if (kind == RotationKind::kIdentity) return 0;
  double c = log2_pow2();
  for (uint32_t k = 0; k < num_dense; ++k) c += dense[k].order;
  return c;
}

std::string HadamardPlan::describe() const {
  std::string s = std::string(rotation_kind_name(kind)) + " " + std::to_string(n);
  if (kind == RotationKind::kIdentity) return s + ": no rotation (b = 1)";
  if (kind == RotationKind::kBlockDiagonal)
    s += " = " + std::to_string(n / block) + " blocks of " + std::to_string(block) + ", block";
  s += " = ";
  bool first = true;
  if (pow2 > 1 || num_dense == 0) {
    s += std::to_string(pow2);
    first = false;
  }
  for (uint32_t k = 0; k < num_dense; ++k) {
    if (!first) s += " x ";
    first = false;
    s += std::to_string(dense[k].order) + (dense[k].kind == HadamardFactorKind::kPaleyI ? " (Paley I q=" : " (Paley II q=") +
         std::to_string(dense[k].q) + ")";
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, ", cost %g", cost());
  return s + buf;
}

bool paley_factor(uint32_t m, HadamardFactor* out) {
  if (m < 4 || m > kMaxDenseHadamardOrder || m % 4 != 0 || is_pow2(m)) return false;
  if (is_prime(m - 1) && (m - 1) % 4 == 3) {
    *out = {HadamardFactorKind::kPaleyI, m, m - 1};
    return true;
  }
  const uint32_t q = m / 2 - 1;
  if (is_prime(q) && q % 4 == 1) {
    *out = {HadamardFactorKind::kPaleyII, m, q};
    return true;
  }
  return false;
}

Result<HadamardPlan> plan_hadamard(uint32_t n) {
  if (n == 0 || n > kMaxHadamardWidth)
    return invalid_argument("plan_hadamard: width " + std::to_string(n) + " outside 1.." +
                            std::to_string(kMaxHadamardWidth));
  HadamardPlan plan;
  plan.n = n;
  if (n > 1 && exact_plan(n, &plan)) {
    plan.kind = RotationKind::kExact;
    return plan;
  }
  // The largest constructible proper divisor (b = 1: identity).
  std::vector<uint32_t> divisors;
  for (uint32_t d = 1; static_cast<uint64_t>(d) * d <= n; ++d) {
    if (n % d != 0) continue;
    divisors.push_back(d);
    divisors.push_back(n / d);
  }
  std::sort(divisors.begin(), divisors.end(), std::greater<>());
  for (uint32_t b : divisors) {
    if (b == n || b == 1) continue;
    if (exact_plan(b, &plan)) {
      plan.kind = RotationKind::kBlockDiagonal;
      return plan;
    }
  }
  plan = HadamardPlan{};
  plan.n = n;
  return plan;
}

std::vector<int8_t> hadamard_factor_matrix(const HadamardFactor& f) {
  const uint32_t m = f.order;
  std::vector<int8_t> h(static_cast<size_t>(m) * m);
  if (f.kind == HadamardFactorKind::kSylvester) {
    // H[i][j] = (-1)^popcount(i & j).
    for (uint32_t i = 0; i < m; ++i)
      for (uint32_t j = 0; j < m; ++j) h[static_cast<size_t>(i) * m + j] = __builtin_popcount(i & j) % 2 ? -1 : 1;
    return h;
  }
  const uint32_t c_n = f.q + 1;
  const std::vector<int> c = conference(f.q);
  if (f.kind == HadamardFactorKind::kPaleyI) {
    for (uint32_t i = 0; i < m; ++i)
      for (uint32_t j = 0; j < m; ++j)
        h[static_cast<size_t>(i) * m + j] = static_cast<int8_t>(c[static_cast<size_t>(i) * c_n + j] + (i == j ? 1 : 0));
    return h;
  }
  // Paley II: 0 -> [[1, -1], [-1, -1]], +-1 -> +-[[1, 1], [1, -1]].
  for (uint32_t i = 0; i < c_n; ++i) {
    for (uint32_t j = 0; j < c_n; ++j) {
      const int v = c[static_cast<size_t>(i) * c_n + j];
      const int blk[2][2] = {{v == 0 ? 1 : v, v == 0 ? -1 : v}, {v == 0 ? -1 : v, v == 0 ? -1 : -v}};
      for (uint32_t a = 0; a < 2; ++a)
        for (uint32_t b = 0; b < 2; ++b) h[static_cast<size_t>(2 * i + a) * m + 2 * j + b] = static_cast<int8_t>(blk[a][b]);
    }
  }
  return h;
}

Result<std::vector<int8_t>> hadamard_block_matrix(const HadamardPlan& plan) {
  const uint32_t b = plan.block;
  if (b == 0 || b > 4096) return invalid_argument("hadamard_block_matrix: block " + std::to_string(b) + " outside 1..4096");
  // Kronecker product, innermost factor (the Sylvester part) last.
  std::vector<int8_t> h = hadamard_factor_matrix({HadamardFactorKind::kSylvester, plan.pow2, 0});
  uint32_t cur = plan.pow2;
  for (uint32_t k = plan.num_dense; k-- > 0;) {
    const std::vector<int8_t> f = hadamard_factor_matrix(plan.dense[k]);
    const uint32_t m = plan.dense[k].order;
    const uint32_t next = m * cur;
    std::vector<int8_t> out(static_cast<size_t>(next) * next);
    for (uint32_t i1 = 0; i1 < m; ++i1)
      for (uint32_t j1 = 0; j1 < m; ++j1)
        for (uint32_t i0 = 0; i0 < cur; ++i0)
          for (uint32_t j0 = 0; j0 < cur; ++j0)
            out[static_cast<size_t>(i1 * cur + i0) * next + j1 * cur + j0] =
                static_cast<int8_t>(f[static_cast<size_t>(i1) * m + j1] * h[static_cast<size_t>(i0) * cur + j0]);
    h = std::move(out);
    cur = next;
  }
  return h;
}

uint64_t splitmix64_next(uint64_t* state) {
  *state += 0x9E3779B97F4A7C15ull;
  uint64_t z = *state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::vector<float> hadamard_signs(uint64_t seed, uint32_t n) {
  std::vector<float> d(n);
  uint64_t state = seed;
  for (uint32_t j = 0; j < n; ++j) d[j] = (splitmix64_next(&state) >> 63) ? -1.0f : 1.0f;
  return d;
}

const HadamardKernels& hadamard_kernels(Isa isa) { return detail::table_for_isa(isa, kScalar, kAvx2, kAvx512); }

const HadamardKernels& best_hadamard_kernels() {
  static const HadamardKernels& best = hadamard_kernels(best_isa());
  return best;
}

Result<RandomizedHadamard> RandomizedHadamard::create(uint32_t n, uint64_t seed, const HadamardKernels& kernels) {
  SUBMOE_ASSIGN_OR_RETURN(HadamardPlan plan, plan_hadamard(n));
  RandomizedHadamard t;
  t.plan_ = plan;
  t.seed_ = seed;
  t.kernels_ = &kernels;
  t.scale_ = static_cast<float>(1.0 / std::sqrt(static_cast<double>(plan.block)));
  t.signs_ = hadamard_signs(seed, n);
  t.signs_scaled_.resize(n);
  for (uint32_t i = 0; i < n; ++i) t.signs_scaled_[i] = t.signs_[i] * t.scale_;
  for (uint32_t k = 0; k < plan.num_dense; ++k) {
    const uint32_t m = plan.dense[k].order;
    const std::vector<int8_t> h = hadamard_factor_matrix(plan.dense[k]);
    std::vector<float>& f = t.dense_[k];
    f.resize(2 * static_cast<size_t>(m) * m);
    for (uint32_t r = 0; r < m; ++r)
      for (uint32_t c = 0; c < m; ++c) {
        const float v = h[static_cast<size_t>(r) * m + c];
        f[static_cast<size_t>(r) * m + c] = v;
        f[static_cast<size_t>(m) * m + static_cast<size_t>(c) * m + r] = v;
      }
  }
  return t;
}

Status RandomizedHadamard::forward(float* x, size_t count, size_t stride) const {
  return apply(Dir::kForward, x, count, stride);
}
Status RandomizedHadamard::transpose(float* x, size_t count, size_t stride) const {
  return apply(Dir::kTranspose, x, count, stride);
}

Status RandomizedHadamard::apply(Dir dir, float* x, size_t count, size_t stride) const {
  const HadamardKernels& k = *kernels_;
  if (k.fwht == nullptr || k.dense == nullptr || k.mul == nullptr || k.scale == nullptr)
    return invalid_argument("hadamard: empty kernel table");
  if (count == 0) return Status::ok();
  if (x == nullptr) return invalid_argument("hadamard: null vectors");
  const size_t n = plan_.n;
  if (count > 1 && stride < n)
    return invalid_argument("hadamard: stride " + std::to_string(stride) + " < width " + std::to_string(n));
  if (plan_.kind == RotationKind::kIdentity) return Status::ok();
  const uint32_t b = plan_.block;
  const uint32_t p = plan_.pow2;
  for (size_t v = 0; v < count; ++v) {
    float* xv = x + v * stride;
    if (dir == Dir::kForward) k.mul(xv, signs_.data(), n);
    for (size_t blk = 0; blk < n; blk += b) {
      float* xb = xv + blk;
      if (p > 1)
        for (uint32_t i = 0; i < b; i += p) k.fwht(xb + i, p);
      size_t inner = p;
      for (uint32_t f = plan_.num_dense; f-- > 0;) {
        const uint32_t m = plan_.dense[f].order;
        const float* h = dense_[f].data();
        const float* ht = h + static_cast<size_t>(m) * m;
        const float* a = dir == Dir::kForward ? h : ht;
        const float* a_t = dir == Dir::kForward ? ht : h;
        const size_t slab = inner * m;
        for (size_t o = 0; o < b; o += slab) k.dense(a, a_t, m, inner, xb + o);
        inner = slab;
      }
    }
    if (dir == Dir::kForward) {
      k.scale(xv, scale_, n);
    } else {
      k.mul(xv, signs_scaled_.data(), n);
    }
  }
  return Status::ok();
}

void RandomizedHadamard::forward_reference(double* x) const { apply_reference(Dir::kForward, x); }
void RandomizedHadamard::transpose_reference(double* x) const { apply_reference(Dir::kTranspose, x); }

void RandomizedHadamard::apply_reference(Dir dir, double* x) const {
  if (plan_.kind == RotationKind::kIdentity) return;
  const uint32_t n = plan_.n;
  const uint32_t b = plan_.block;
  const uint32_t p = plan_.pow2;
  const double s = 1.0 / std::sqrt(static_cast<double>(b));
  if (dir == Dir::kForward)
    for (uint32_t i = 0; i < n; ++i) x[i] *= signs_[i];
  for (uint32_t blk = 0; blk < n; blk += b) {
    double* xb = x + blk;
    if (p > 1)
      for (uint32_t i = 0; i < b; i += p) detail::fwht_f64_scalar(xb + i, p);
    size_t inner = p;
    for (uint32_t f = plan_.num_dense; f-- > 0;) {
      const uint32_t m = plan_.dense[f].order;
      const float* a = dense_[f].data() + (dir == Dir::kForward ? 0 : static_cast<size_t>(m) * m);
      const size_t slab = inner * m;
      for (size_t o = 0; o < b; o += slab) detail::dense_pm1_f64_scalar(a, m, inner, xb + o);
      inner = slab;
    }
  }
  for (uint32_t i = 0; i < n; ++i) x[i] *= dir == Dir::kForward ? s : s * signs_[i];
}

Status rotate_matrix(const RandomizedHadamard& t_out, const RandomizedHadamard& t_in, std::span<double> w,
                     uint32_t rows, uint32_t cols) {
  Status st;
  check_dims(t_out, rows, "rotate_matrix rows", &st);
  check_dims(t_in, cols, "rotate_matrix cols", &st);
  SUBMOE_RETURN_IF_ERROR(st);
  if (w.size() != static_cast<size_t>(rows) * cols)
    return invalid_argument("rotate_matrix: " + std::to_string(w.size()) + " values for " + std::to_string(rows) +
                            " x " + std::to_string(cols));
  // W T_in^T: each row r becomes T_in w_r. Then T_out (.): each column.
  for (uint32_t r = 0; r < rows; ++r) t_in.forward_reference(w.data() + static_cast<size_t>(r) * cols);
  std::vector<double> col(rows);
  for (uint32_t c = 0; c < cols; ++c) {
    for (uint32_t r = 0; r < rows; ++r) col[r] = w[static_cast<size_t>(r) * cols + c];
    t_out.forward_reference(col.data());
    for (uint32_t r = 0; r < rows; ++r) w[static_cast<size_t>(r) * cols + c] = col[r];
  }
  return Status::ok();
}

Status rotate_matrix(const RandomizedHadamard& t_out, const RandomizedHadamard& t_in, std::span<float> w,
                     uint32_t rows, uint32_t cols) {
  if (w.size() != static_cast<size_t>(rows) * cols)
    return invalid_argument("rotate_matrix: " + std::to_string(w.size()) + " values for " + std::to_string(rows) +
                            " x " + std::to_string(cols));
  std::vector<double> wd(w.begin(), w.end());
  SUBMOE_RETURN_IF_ERROR(rotate_matrix(t_out, t_in, std::span<double>(wd), rows, cols));
  for (size_t i = 0; i < wd.size(); ++i) w[i] = static_cast<float>(wd[i]);
  return Status::ok();
}

Status rotate_hessian(const RandomizedHadamard& t, std::span<double> h, uint32_t n) {
  Status st;
  check_dims(t, n, "rotate_hessian", &st);
  SUBMOE_RETURN_IF_ERROR(st);
  // T H T^T is rotate_matrix with T on both sides.
  return rotate_matrix(t, t, h, n, n).with_context("rotate_hessian");
}

}  // namespace submoe::kernels
