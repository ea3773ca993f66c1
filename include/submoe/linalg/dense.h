// BLAS/LAPACK wrappers used by the compression pipeline (Hessians, Cholesky),
// with float64 reference implementations for tests. Matrices are row-major.
#pragma once

#include <cstddef>
#include <span>

#include "submoe/core/status.h"

namespace submoe::linalg {

// C[m x n] = alpha * op(A) * op(B) + beta * C, row-major, op = transpose when
// the flag is set. A is m x k (or k x m when transposed), B is k x n (or n x k).
void gemm_f32(bool transpose_a, bool transpose_b, size_t m, size_t n, size_t k, float alpha,
              const float* a, size_t lda, const float* b, size_t ldb, float beta, float* c, size_t ldc);

// H[n x n] += alpha * X^T X for X with `rows` rows of n columns (row stride ldx).
// Only a symmetric result is guaranteed (both triangles are written).
void accumulate_gram_f32(size_t rows, size_t n, const float* x, size_t ldx, float alpha, float* h);
// float64 reference of the same.
void accumulate_gram_f64(size_t rows, size_t n, const float* x, size_t ldx, double alpha, double* h);

// In-place Cholesky factorization A = U^T U of a symmetric positive definite
// n x n matrix (row-major); on success the upper triangle holds U and the strict
// lower triangle is zeroed. Failure (not positive definite, NaN) is detected from
// the factorization itself and returned as a numerical error; A is then undefined.
Status cholesky_upper_f32(float* a, size_t n);
Status cholesky_upper_f64(double* a, size_t n);

// Replaces the SPD matrix A by the upper Cholesky factor of its inverse:
// A^{-1} = U^T U, U upper triangular. This is the factor GPTQ consumes.
Status inverse_cholesky_upper_f32(float* a, size_t n);
Status inverse_cholesky_upper_f64(double* a, size_t n);

}  // namespace submoe::linalg

namespace submoe::linalg {
// Threads OpenBLAS may use inside one call. Callers that already run BLAS calls
// from several threads of their own set 1 to avoid oversubscription.
void set_blas_threads(int threads);
int blas_threads();
}  // namespace submoe::linalg
