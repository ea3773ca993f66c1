// Per-ISA dense kernels (one translation unit per ISA). Callers use
// submoe/kernels/dense_gemv.h.
#pragma once

#include "submoe/kernels/dense_gemv.h"

namespace submoe::kernels::detail {

void gemv_f32_dense_scalar(const DenseGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void gemv_bf16_dense_scalar(const DenseGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void gemv_f32_dense_avx2(const DenseGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void gemv_bf16_dense_avx2(const DenseGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void gemv_f32_dense_avx512(const DenseGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void gemv_bf16_dense_avx512(const DenseGemmArgs& a, uint32_t row_begin, uint32_t row_end);
// dense_bf16dot_avx512.cpp: CPUs with AVX512-BF16 only.
void round_bf16_avx512(const float* x, uint32_t cols, uint16_t* out, size_t padded);
void gemv_bf16x_dense_avx512bf16(const DenseGemmArgs& a, uint32_t row_begin, uint32_t row_end);

}  // namespace submoe::kernels::detail
