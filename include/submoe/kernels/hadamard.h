// Randomized Hadamard transform (incoherence processing, docs/rotation.md).
//
// For a width n the transform is
//
//   T_n = (1/sqrt(b)) * blockdiag(H_b, ..., H_b) * D_n,      b | n,
//
// with D_n = diag(d_0..d_{n-1}) random signs and H_b a b x b matrix of +-1 with
// H_b H_b^T = b I. b = n when n has an exact construction (kExact); otherwise b
// is the largest constructible order dividing n (kBlockDiagonal), and b = 1
// means no rotation at all: T = I, signs not applied either (kIdentity).
// T is orthogonal, so a weight matrix W [o x i] is stored as W' = T_o W T_i^T and
// y = W x = T_o^T (W' (T_i x)): inference transforms activations, never weights.
// Hessians of the inputs rotate as H' = T_i H T_i^T.
//
// H_b = H_{m1} (x) H_{m2} (x) H_P (Kronecker, at most two dense factors), with
// P = 2^a the Sylvester part and m1, m2 Paley orders (not powers of two):
//   Paley I:  order q + 1,     q prime, q = 3 mod 4;
//   Paley II: order 2 (q + 1), q prime, q = 1 mod 4.
// Element index inside a block: i = (i1 * m2 + i2) * P + i0. Paley matrices are
// not symmetric, so forward (H) and transpose (H^T) are kept apart everywhere.
//
// Signs (exactly specified so any reader can regenerate them): a splitmix64
// stream whose state starts at `seed`; output j (j = 0, 1, ...) is
//   state += 0x9E3779B97F4A7C15; z = state;
//   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
//   z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
//   z ^= z >> 31;
// and d_j = -1 when bit 63 of z is 1, else +1.
//
// Float32 operation order (every ISA gives bit-identical results, tested):
//   forward:   x_i *= d_i; per block: FWHT on each run of P (stages h = 1, 2, 4,
//              ..., P/2: x_j, x_{j+h} <- x_j + x_{j+h}, x_j - x_{j+h}); dense
//              factor m2 then m1, each output y_r = sum over c = 0..m-1 in that
//              order of h_rc * x_c (h_rc = +-1, so any FMA is exact); x_i *= s.
//   transpose: the same with H^T for the dense factors, then x_i *= (d_i * s).
// s = float(1 / sqrt(b)).
//
// Kernels allocate nothing: scratch is a fixed stack buffer (dense orders are
// at most kMaxDenseHadamardOrder). The ISA table is chosen once
// (best_hadamard_kernels()) and stored in the transform.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "submoe/core/cpu_features.h"
#include "submoe/core/status.h"

namespace submoe::kernels {

inline constexpr uint32_t kMaxHadamardWidth = 1u << 24;
// Dense factors larger than this are not used (their m multiply-adds per
// element would cost more than a block-diagonal fallback, and their m x m
// tables would not fit in L1/L2).
inline constexpr uint32_t kMaxDenseHadamardOrder = 256;
inline constexpr uint32_t kMaxDenseHadamardFactors = 2;

enum class HadamardFactorKind : uint8_t { kSylvester = 0, kPaleyI = 1, kPaleyII = 2 };

struct HadamardFactor {
  HadamardFactorKind kind = HadamardFactorKind::kSylvester;
  uint32_t order = 1;
  uint32_t q = 0;  // the prime of a Paley factor; 0 for Sylvester
};

enum class RotationKind : uint8_t {
  kExact = 0,          // b = n
  kBlockDiagonal = 1,  // 1 < b < n
  kIdentity = 2,       // b = 1: no rotation
};
const char* rotation_kind_name(RotationKind kind);

struct HadamardPlan {
  uint32_t n = 0;
  RotationKind kind = RotationKind::kIdentity;
  uint32_t block = 1;      // b
  uint32_t pow2 = 1;       // P = 2^a
  uint32_t num_dense = 0;  // 0..2
  std::array<HadamardFactor, kMaxDenseHadamardFactors> dense{};  // [0] outermost (m1), orders ascending

  uint32_t log2_pow2() const;
  // Multiply-adds per element of one transform: log2(P) + m1 + m2.
  double cost() const;
  // e.g. "exact 2880 = 4 x 20 (Paley I q=19) x 36 (Paley II q=17), cost 58".
  std::string describe() const;
};

// The cheapest construction for n (ties: fewer dense factors), or the
// block-diagonal fallback. kInvalidArgument for n = 0 or n > kMaxHadamardWidth.
Result<HadamardPlan> plan_hadamard(uint32_t n);

// Whether an order m (not a power of two, m <= kMaxDenseHadamardOrder) has a
// Paley construction; fills *out (Paley I preferred).
bool paley_factor(uint32_t m, HadamardFactor* out);

// The factor's m x m matrix of +-1, row-major (Sylvester: H_{2k} = [[H, H], [H, -H]]).
std::vector<int8_t> hadamard_factor_matrix(const HadamardFactor& f);
// The block matrix H_b = H_{m1} (x) H_{m2} (x) H_P, b x b row-major; kInvalidArgument
// when b > 4096 (tests and documentation only).
Result<std::vector<int8_t>> hadamard_block_matrix(const HadamardPlan& plan);

// splitmix64 as specified above: advances *state and returns the output.
uint64_t splitmix64_next(uint64_t* state);
// d_0..d_{n-1} as +-1.0f.
std::vector<float> hadamard_signs(uint64_t seed, uint32_t n);

// One ISA's kernels. Every function is the same arithmetic as the scalar one.
struct HadamardKernels {
  Isa isa = Isa::kScalar;
  const char* name = nullptr;
  // In-place unnormalized Walsh-Hadamard transform of p = 2^a contiguous floats.
  const char* fwht_name = nullptr;
  void (*fwht)(float* x, uint32_t p) = nullptr;
  // slab[r * inner + j] <- sum_c a[r * m + c] * slab[c * inner + j] for r < m,
  // j < inner; a is +-1 (row-major m x m), a_t its transpose; m <= kMaxDenseHadamardOrder.
  const char* dense_name = nullptr;
  void (*dense)(const float* a, const float* a_t, uint32_t m, size_t inner, float* slab) = nullptr;
  // x[i] *= v[i] for i < n.
  void (*mul)(float* x, const float* v, size_t n) = nullptr;
  // x[i] *= s for i < n.
  void (*scale)(float* x, float s, size_t n) = nullptr;
};

// The table of one ISA; the caller must make sure the CPU supports it.
const HadamardKernels& hadamard_kernels(Isa isa);
// hadamard_kernels(best_isa()), decided once.
const HadamardKernels& best_hadamard_kernels();

// Plan + seed + signs + the dense factor tables (H and H^T as +-1 floats).
class RandomizedHadamard {
 public:
  static Result<RandomizedHadamard> create(uint32_t n, uint64_t seed,
                                           const HadamardKernels& kernels = best_hadamard_kernels());

  uint32_t n() const { return plan_.n; }
  uint64_t seed() const { return seed_; }
  const HadamardPlan& plan() const { return plan_; }
  std::span<const float> signs() const { return signs_; }
  float scale() const { return scale_; }
  const HadamardKernels& kernels() const { return *kernels_; }
  // Same transform, other ISA (tests and benchmarks).
  void set_kernels(const HadamardKernels& kernels) { kernels_ = &kernels; }

  // x <- T x (forward) or x <- T^T x (transpose) for `count` vectors of n floats,
  // vector k at x + k * stride (stride >= n when count > 1).
  Status forward(float* x, size_t count, size_t stride) const;
  Status transpose(float* x, size_t count, size_t stride) const;

  // Float64 scalar versions on one vector of n doubles (the test oracle and
  // the compression-time path).
  void forward_reference(double* x) const;
  void transpose_reference(double* x) const;

 private:
  enum class Dir { kForward, kTranspose };
  Status apply(Dir dir, float* x, size_t count, size_t stride) const;
  void apply_reference(Dir dir, double* x) const;

  HadamardPlan plan_;
  uint64_t seed_ = 0;
  float scale_ = 1.0f;
  std::vector<float> signs_;         // d_i
  std::vector<float> signs_scaled_;  // d_i * s
  // Dense factor k: m*m floats of H_k, then m*m of H_k^T.
  std::array<std::vector<float>, kMaxDenseHadamardFactors> dense_;
  const HadamardKernels* kernels_ = nullptr;
};

// W' = T_out W T_in^T in place; w row-major rows x cols (rows = t_out.n(),
// cols = t_in.n()), float64 accumulation, O(rows cols (log + m)) via the fast
// transform. The float overload rounds the result to float once.
Status rotate_matrix(const RandomizedHadamard& t_out, const RandomizedHadamard& t_in, std::span<double> w,
                     uint32_t rows, uint32_t cols);
Status rotate_matrix(const RandomizedHadamard& t_out, const RandomizedHadamard& t_in, std::span<float> w,
                     uint32_t rows, uint32_t cols);
// H' = T H T^T in place for an n x n matrix (n = t.n()), row-major.
Status rotate_hessian(const RandomizedHadamard& t, std::span<double> h, uint32_t n);

}  // namespace submoe::kernels
