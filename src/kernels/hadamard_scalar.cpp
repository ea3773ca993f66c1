// Scalar Hadamard kernels: the readable definition of the operation order
// (hadamard.h) that the AVX2 and AVX-512 versions reproduce bit for bit.
#include "kernels/hadamard_internal.h"

namespace submoe::kernels::detail {
namespace {

template <typename T>
void fwht(T* x, uint32_t p) {
  for (uint32_t h = 1; h < p; h <<= 1) {
    for (uint32_t i = 0; i < p; i += 2 * h) {
      for (uint32_t j = i; j < i + h; ++j) {
        const T a = x[j];
        const T b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
    }
  }
}

// Each output is a sequential sum over c = 0..m-1, starting from a[r][0] * x_0.
template <typename T>
void dense(const float* a, uint32_t m, size_t inner, T* slab) {
  T col[kMaxDenseHadamardOrder];
  for (size_t j = 0; j < inner; ++j) {
    for (uint32_t c = 0; c < m; ++c) col[c] = slab[c * inner + j];
    for (uint32_t r = 0; r < m; ++r) {
      const float* row = a + static_cast<size_t>(r) * m;
      T acc = static_cast<T>(row[0]) * col[0];
      for (uint32_t c = 1; c < m; ++c) acc += static_cast<T>(row[c]) * col[c];
      slab[r * inner + j] = acc;
    }
  }
}

}  // namespace

void fwht_f32_scalar(float* x, uint32_t p) { fwht(x, p); }
void fwht_f64_scalar(double* x, uint32_t p) { fwht(x, p); }

void dense_pm1_f32_scalar(const float* a, const float* /*a_t*/, uint32_t m, size_t inner, float* slab) {
  dense(a, m, inner, slab);
}
void dense_pm1_f64_scalar(const float* a, uint32_t m, size_t inner, double* slab) { dense(a, m, inner, slab); }

void mul_f32_scalar(float* x, const float* v, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] *= v[i];
}

void scale_f32_scalar(float* x, float s, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] *= s;
}

}  // namespace submoe::kernels::detail
