// The per-ISA MXFP4 row kernels (kernels/mxfp4_gemv.h).
#pragma once

#include "submoe/kernels/mxfp4_gemv.h"

namespace submoe::kernels::detail {

void mxfp4_rows_scalar(const Mxfp4GemmArgs& a, uint32_t row_begin, uint32_t row_end);
void mxfp4_rows_avx2(const Mxfp4GemmArgs& a, uint32_t row_begin, uint32_t row_end);

// Twice each FP4 value, an integer in [-12, 12] (decoding stays exact in int8),
// and half of each E8M0 scale, so that value = kFp4Twice[code] * kE8m0Half[s].
extern const int8_t kFp4Twice[16];
const float* e8m0_half_table();

}  // namespace submoe::kernels::detail
