// float32 paths: OpenBLAS (cblas) and LAPACK (Fortran ABI).
#include <cblas.h>

#include <cmath>
#include <string>
#include <vector>

#include "submoe/linalg/dense.h"

extern "C" {
// LAPACK, Fortran calling convention (hidden string lengths last).
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t uplo_len);
void spotri_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t uplo_len);
}

namespace submoe::linalg {

void gemm_f32(bool transpose_a, bool transpose_b, size_t m, size_t n, size_t k, float alpha,
              const float* a, size_t lda, const float* b, size_t ldb, float beta, float* c, size_t ldc) {
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

void accumulate_gram_f32(size_t rows, size_t n, const float* x, size_t ldx, float alpha, float* h) {
  if (rows == 0 || n == 0) return;
  // syrk writes the upper triangle (row-major); mirror it to keep H symmetric.
  cblas_ssyrk(CblasRowMajor, CblasUpper, CblasTrans, static_cast<int>(n), static_cast<int>(rows), alpha, x,
              static_cast<int>(ldx), 1.0f, h, static_cast<int>(n));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < i; ++j) h[i * n + j] = h[j * n + i];
}

namespace {

// Row-major A is column-major A^T; for a symmetric matrix LAPACK's "L" on the
// column-major view is the "U" of the row-major one.
Status lapack_factor(float* a, size_t n, const char* what) {
  const int nn = static_cast<int>(n);
  int info = 0;
  spotrf_("L", &nn, a, &nn, &info, 1);
  if (info > 0) {
    return numerical_error(std::string(what) + ": matrix not positive definite (leading minor " +
                           std::to_string(info) + " of " + std::to_string(n) + ")");
  }
  if (info < 0) return internal_error(std::string(what) + ": spotrf argument " + std::to_string(-info));
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i * n + i])) return numerical_error(std::string(what) + ": non-finite pivot");
    for (size_t j = 0; j < i; ++j) a[i * n + j] = 0.0f;
  }
  return Status::ok();
}

}  // namespace

Status cholesky_upper_f32(float* a, size_t n) { return lapack_factor(a, n, "cholesky"); }

Status inverse_cholesky_upper_f32(float* a, size_t n) {
  SUBMOE_RETURN_IF_ERROR(lapack_factor(a, n, "cholesky of H"));
  const int nn = static_cast<int>(n);
  int info = 0;
  spotri_("L", &nn, a, &nn, &info, 1);  // inverse into the row-major upper triangle
  if (info > 0) return numerical_error("inverse of H: singular factor");
  if (info < 0) return internal_error("spotri argument " + std::to_string(-info));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < i; ++j) a[i * n + j] = a[j * n + i];
  return lapack_factor(a, n, "cholesky of H^-1");
}

}  // namespace submoe::linalg

namespace submoe::linalg {
void set_blas_threads(int threads) { openblas_set_num_threads(threads < 1 ? 1 : threads); }
int blas_threads() { return openblas_get_num_threads(); }
}  // namespace submoe::linalg
