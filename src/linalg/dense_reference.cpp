// float64 reference paths: short textbook loops, the oracle for the BLAS paths.
#include <cmath>
#include <string>
#include <vector>

#include "submoe/linalg/dense.h"

namespace submoe::linalg {

void accumulate_gram_f64(size_t rows, size_t n, const float* x, size_t ldx, double alpha, double* h) {
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * ldx;
    for (size_t i = 0; i < n; ++i) {
      const double xi = alpha * xr[i];
      for (size_t j = 0; j < n; ++j) h[i * n + j] += xi * xr[j];
    }
  }
}

Status cholesky_upper_f64(double* a, size_t n) {
  // A = U^T U, row by row of U.
  for (size_t i = 0; i < n; ++i) {
    double d = a[i * n + i];
    for (size_t k = 0; k < i; ++k) d -= a[k * n + i] * a[k * n + i];
    if (!(d > 0.0) || !std::isfinite(d)) {
      return numerical_error("cholesky (f64): not positive definite at row " + std::to_string(i));
    }
    const double u = std::sqrt(d);
    a[i * n + i] = u;
    for (size_t j = i + 1; j < n; ++j) {
      double s = a[i * n + j];
      for (size_t k = 0; k < i; ++k) s -= a[k * n + i] * a[k * n + j];
      a[i * n + j] = s / u;
    }
    for (size_t j = 0; j < i; ++j) a[i * n + j] = 0.0;
  }
  return Status::ok();
}

Status inverse_cholesky_upper_f64(double* a, size_t n) {
  std::vector<double> u(a, a + n * n);
  SUBMOE_RETURN_IF_ERROR(cholesky_upper_f64(u.data(), n));
  // Inverse of upper-triangular U by back substitution: U * V = I.
  std::vector<double> v(n * n, 0.0);
  for (size_t c = 0; c < n; ++c) {
    for (size_t ii = c + 1; ii-- > 0;) {
      double s = (ii == c) ? 1.0 : 0.0;
      for (size_t k = ii + 1; k <= c; ++k) s -= u[ii * n + k] * v[k * n + c];
      v[ii * n + c] = s / u[ii * n + ii];
    }
  }
  // A^{-1} = V V^T
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (size_t k = std::max(i, j); k < n; ++k) s += v[i * n + k] * v[j * n + k];
      a[i * n + j] = s;
    }
  return cholesky_upper_f64(a, n);
}

}  // namespace submoe::linalg
