// The per-ISA MXFP4 row kernels (kernels/mxfp4_gemv.h).
#pragma once

#include "submoe/kernels/mxfp4_gemv.h"

namespace submoe::kernels::detail {

void mxfp4_rows_scalar(const Mxfp4GemmArgs& a, uint32_t row_begin, uint32_t row_end);
void mxfp4_rows_avx2(const Mxfp4GemmArgs& a, uint32_t row_begin, uint32_t row_end);
void mxfp4_rows_avx512(const Mxfp4GemmArgs& a, uint32_t row_begin, uint32_t row_end);
void mxfp4_rows_i8_scalar(const Mxfp4I8Args& a, uint32_t row_begin, uint32_t row_end);
void mxfp4_rows_i8_avx2(const Mxfp4I8Args& a, uint32_t row_begin, uint32_t row_end);

// Half of each E8M0 scale, so that value = mxfp4::kFp4Twice[code] * half[s]
// (twice each FP4 value is an integer: decoding stays exact in int8).
const float* e8m0_half_table();

}  // namespace submoe::kernels::detail
