// Declarations of the per-ISA Hadamard kernels (one translation unit per ISA).
// Not a public header: callers use submoe/kernels/hadamard.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "submoe/kernels/hadamard.h"

namespace submoe::kernels::detail {

// Scalar: the definition every fast path reproduces bit for bit.
void fwht_f32_scalar(float* x, uint32_t p);
void dense_pm1_f32_scalar(const float* a, const float* a_t, uint32_t m, size_t inner, float* slab);
void mul_f32_scalar(float* x, const float* v, size_t n);
void scale_f32_scalar(float* x, float s, size_t n);
// Float64 versions of the same loops (the reference transform).
void fwht_f64_scalar(double* x, uint32_t p);
void dense_pm1_f64_scalar(const float* a, uint32_t m, size_t inner, double* slab);

// AVX2: 8 lanes; stages h = 1, 2, 4 inside a register, larger ones three at a
// time across 8 registers. Dense factors: 16, 8 or 4 lanes along the inner
// index (4 rows per column load), single leftover lanes 8 rows per register.
void fwht_f32_avx2(float* x, uint32_t p);
void dense_pm1_f32_avx2(const float* a, const float* a_t, uint32_t m, size_t inner, float* slab);
void mul_f32_avx2(float* x, const float* v, size_t n);
void scale_f32_avx2(float* x, float s, size_t n);

// AVX-512: the same with 16 lanes (h = 1..8 inside a register; dense factors
// 32, 16, 8 or 4 lanes).
void fwht_f32_avx512(float* x, uint32_t p);
void dense_pm1_f32_avx512(const float* a, const float* a_t, uint32_t m, size_t inner, float* slab);
void mul_f32_avx512(float* x, const float* v, size_t n);
void scale_f32_avx512(float* x, float s, size_t n);

}  // namespace submoe::kernels::detail
