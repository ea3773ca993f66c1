// Declarations of the per-ISA ternary kernels (one translation unit per ISA) and
// helpers they share. Not a public header: callers use submoe/kernels/ternary_gemv.h.
#pragma once

#include <cstdint>
#include <limits>

#include "kernels/int8_activations.h"
#include "submoe/kernels/ternary_gemv.h"

namespace submoe::kernels::detail {

// Columns of zero activations after cols in every prepared layout: a row's last
// codeword may cover up to 27 weights past cols, and vector loads of a 28-weight
// window read up to 31 floats past the codeword's first column.
inline constexpr uint32_t kPadCols = 32;

// The AVX-512 batch-1 kernels let a row that ends before the others of its
// lockstep group take up to kLockstepTail more steps over the codewords that
// follow it in memory; its window is then past its last column, so those steps
// must read zeros: the batch-1 layouts carry this many zero columns.
inline constexpr uint32_t kLockstepTail = 48;
inline constexpr uint32_t kTailPadCols = kPadCols + 28 * (kLockstepTail + 1);

// Rows per block the driver hands to a thread: a multiple of every kernel's row
// interleave (6, 5 and 4 at batch 1, 4 and 2 for small batches), so no block
// ends in a partial lockstep group and a row is computed the same way for any
// thread count.
inline constexpr uint32_t kRowBlock = 60;

// Scalar: a straight port of the GPU logic (per codeword, 28 lanes each extract
// their 2-bit symbol from the dictionary entry and multiply-accumulate the row's
// level), and a batch kernel that decodes each codeword once for all tokens.
void gemv_f32_ternary_dict_scalar(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void gemm_f32_ternary_dict_scalar(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end);

// AVX2: nonzero-slot kernels over the doubled layout.
void gemv_f32_ternary_dict_slots_avx2(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void gemm_f32_ternary_dict_slots_avx2(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end);

// AVX-512: permute kernels (tables with has_perm; the bf16-activation one also
// needs VBMI, the int8-activation one VBMI and VNNI), masked-add kernel (any
// table), nonzero-slot batch kernel.
void gemv_f32_ternary_dict_perm_avx512(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void gemv_bf16_ternary_dict_perm_avx512(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void gemv_i8_ternary_dict_perm_avx512(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void gemv_f32_ternary_dict_masks_avx512(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end);
void gemm_f32_ternary_dict_slots_avx512(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end);

// y for one row and token from the two sums (same expression in every kernel).
inline float combine_row(float sum_max, float sum_min, ternary::RowScales s) {
  return bf16_to_float(s.w_max) * sum_max + bf16_to_float(s.w_min) * sum_min;
}

}  // namespace submoe::kernels::detail
