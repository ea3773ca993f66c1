// AVX2 Hadamard kernels, bit-identical to hadamard_scalar.cpp: every butterfly
// computes the same a + b and a - b of the same stage inputs (only the loop
// order differs, which a stage's results do not depend on), and every dense
// output is the same sequential sum; fma(+-1, x, acc) rounds acc +- x once, as
// the scalar add does.
#include <immintrin.h>

#include "kernels/hadamard_internal.h"

namespace submoe::kernels::detail {
namespace {

inline void bfly(__m256& a, __m256& b) {
  const __m256 s = _mm256_add_ps(a, b);
  b = _mm256_sub_ps(a, b);
  a = s;
}

// Stages h = 1, 2, 4 inside one register: lane i pairs with lane i ^ h; the
// lower lane of a pair gets a + b, the upper one a - b (= partner - self).
inline __m256 stages_in_register(__m256 v) {
  __m256 s = _mm256_permute_ps(v, 0xB1);
  v = _mm256_blend_ps(_mm256_add_ps(v, s), _mm256_sub_ps(s, v), 0xAA);
  s = _mm256_permute_ps(v, 0x4E);
  v = _mm256_blend_ps(_mm256_add_ps(v, s), _mm256_sub_ps(s, v), 0xCC);
  s = _mm256_permute2f128_ps(v, v, 0x01);
  v = _mm256_blend_ps(_mm256_add_ps(v, s), _mm256_sub_ps(s, v), 0xF0);
  return v;
}

// Three stages (h, 2h, 4h) on v[k] = element offset k * h.
inline void radix8(__m256 (&v)[8]) {
  bfly(v[0], v[1]); bfly(v[2], v[3]); bfly(v[4], v[5]); bfly(v[6], v[7]);
  bfly(v[0], v[2]); bfly(v[1], v[3]); bfly(v[4], v[6]); bfly(v[5], v[7]);
  bfly(v[0], v[4]); bfly(v[1], v[5]); bfly(v[2], v[6]); bfly(v[3], v[7]);
}

// Stages h .. h * 2^(stages-1), stages = 1..3, for every block of p.
void across_registers(float* x, uint32_t p, uint32_t h, int stages) {
  const uint32_t span = h << stages;
  for (uint32_t base = 0; base < p; base += span) {
    for (uint32_t j = 0; j < h; j += 8) {
      float* q = x + base + j;
      if (stages == 3) {
        __m256 v[8];
        for (int k = 0; k < 8; ++k) v[k] = _mm256_loadu_ps(q + k * h);
        radix8(v);
        for (int k = 0; k < 8; ++k) _mm256_storeu_ps(q + k * h, v[k]);
      } else if (stages == 2) {
        __m256 v0 = _mm256_loadu_ps(q), v1 = _mm256_loadu_ps(q + h);
        __m256 v2 = _mm256_loadu_ps(q + 2 * h), v3 = _mm256_loadu_ps(q + 3 * h);
        bfly(v0, v1); bfly(v2, v3);
        bfly(v0, v2); bfly(v1, v3);
        _mm256_storeu_ps(q, v0); _mm256_storeu_ps(q + h, v1);
        _mm256_storeu_ps(q + 2 * h, v2); _mm256_storeu_ps(q + 3 * h, v3);
      } else {
        __m256 v0 = _mm256_loadu_ps(q), v1 = _mm256_loadu_ps(q + h);
        bfly(v0, v1);
        _mm256_storeu_ps(q, v0); _mm256_storeu_ps(q + h, v1);
      }
    }
  }
}

struct V8 {
  using T = __m256;
  static constexpr size_t kLanes = 8;
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static T set1(float v) { return _mm256_set1_ps(v); }
  static T mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static T fmadd(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
};

struct V4 {
  using T = __m128;
  static constexpr size_t kLanes = 4;
  static T load(const float* p) { return _mm_loadu_ps(p); }
  static void store(float* p, T v) { _mm_storeu_ps(p, v); }
  static T set1(float v) { return _mm_set1_ps(v); }
  static T mul(T a, T b) { return _mm_mul_ps(a, b); }
  static T fmadd(T a, T b, T c) { return _mm_fmadd_ps(a, b, c); }
};

// kChunks * V::kLanes lanes of the inner index starting at slab: the columns
// are copied to buf (outputs overwrite them), then 4 rows at a time share each
// column load; each lane is the sequential sum of the definition.
template <class V, int kChunks>
inline void dense_lanes(const float* a, uint32_t m, size_t inner, float* slab, float* buf) {
  constexpr size_t kW = V::kLanes * kChunks;
  for (uint32_t c = 0; c < m; ++c)
    for (int k = 0; k < kChunks; ++k) V::store(buf + kW * c + V::kLanes * k, V::load(slab + c * inner + V::kLanes * k));
  uint32_t r = 0;
  for (; r + 4 <= m; r += 4) {
    const float* ar = a + static_cast<size_t>(r) * m;
    typename V::T acc[4][kChunks];
    for (int k = 0; k < kChunks; ++k) {
      const typename V::T x0 = V::load(buf + V::kLanes * k);
      for (int i = 0; i < 4; ++i) acc[i][k] = V::mul(V::set1(ar[i * m]), x0);
    }
    for (uint32_t c = 1; c < m; ++c) {
      typename V::T xc[kChunks];
      for (int k = 0; k < kChunks; ++k) xc[k] = V::load(buf + kW * c + V::kLanes * k);
      for (int i = 0; i < 4; ++i) {
        const typename V::T h = V::set1(ar[i * m + c]);
        for (int k = 0; k < kChunks; ++k) acc[i][k] = V::fmadd(h, xc[k], acc[i][k]);
      }
    }
    for (int i = 0; i < 4; ++i)
      for (int k = 0; k < kChunks; ++k) V::store(slab + (r + i) * inner + V::kLanes * k, acc[i][k]);
  }
  for (; r < m; ++r) {
    const float* ar = a + static_cast<size_t>(r) * m;
    for (int k = 0; k < kChunks; ++k) {
      typename V::T acc = V::mul(V::set1(ar[0]), V::load(buf + V::kLanes * k));
      for (uint32_t c = 1; c < m; ++c) acc = V::fmadd(V::set1(ar[c]), V::load(buf + kW * c + V::kLanes * k), acc);
      V::store(slab + r * inner + V::kLanes * k, acc);
    }
  }
}

}  // namespace

void fwht_f32_avx2(float* x, uint32_t p) {
  if (p < 8) {
    fwht_f32_scalar(x, p);
    return;
  }
  uint32_t h = 8;
  if (p >= 64) {
    // Stages 1..32 on each run of 64 floats in registers.
    for (uint32_t base = 0; base < p; base += 64) {
      __m256 v[8];
      for (int k = 0; k < 8; ++k) v[k] = stages_in_register(_mm256_loadu_ps(x + base + 8 * k));
      radix8(v);
      for (int k = 0; k < 8; ++k) _mm256_storeu_ps(x + base + 8 * k, v[k]);
    }
    h = 64;
  } else {
    for (uint32_t i = 0; i < p; i += 8) _mm256_storeu_ps(x + i, stages_in_register(_mm256_loadu_ps(x + i)));
  }
  while (h < p) {
    int left = 0;
    while ((h << left) < p) ++left;
    const int stages = left >= 3 ? 3 : left;
    across_registers(x, p, h, stages);
    h <<= stages;
  }
}

void dense_pm1_f32_avx2(const float* a, const float* a_t, uint32_t m, size_t inner, float* slab) {
  alignas(32) float buf[kMaxDenseHadamardOrder * 16];
  size_t j0 = 0;
  // Lanes along the inner index: 16, then 8, then 4 at a time.
  for (; j0 + 16 <= inner; j0 += 16) dense_lanes<V8, 2>(a, m, inner, slab + j0, buf);
  for (; j0 + 8 <= inner; j0 += 8) dense_lanes<V8, 1>(a, m, inner, slab + j0, buf);
  for (; j0 + 4 <= inner; j0 += 4) dense_lanes<V4, 1>(a, m, inner, slab + j0, buf);
  // Remaining lanes one at a time, 8 rows per register (column c of a is row c of a_t).
  for (; j0 < inner; ++j0) {
    float* col = buf;
    float* out = buf + kMaxDenseHadamardOrder;
    for (uint32_t c = 0; c < m; ++c) col[c] = slab[c * inner + j0];
    uint32_t r = 0;
    for (; r + 8 <= m; r += 8) {
      __m256 acc = _mm256_mul_ps(_mm256_loadu_ps(a_t + r), _mm256_set1_ps(col[0]));
      for (uint32_t c = 1; c < m; ++c)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(a_t + static_cast<size_t>(c) * m + r), _mm256_set1_ps(col[c]), acc);
      _mm256_storeu_ps(out + r, acc);
    }
    for (; r < m; ++r) {
      const float* ar = a + static_cast<size_t>(r) * m;
      float acc = ar[0] * col[0];
      for (uint32_t c = 1; c < m; ++c) acc += ar[c] * col[c];
      out[r] = acc;
    }
    for (uint32_t q = 0; q < m; ++q) slab[q * inner + j0] = out[q];
  }
}

void mul_f32_avx2(float* x, const float* v, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(v + i)));
  for (; i < n; ++i) x[i] *= v[i];
}

void scale_f32_avx2(float* x, float s, size_t n) {
  const __m256 vs = _mm256_set1_ps(s);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vs));
  for (; i < n; ++i) x[i] *= s;
}

}  // namespace submoe::kernels::detail
