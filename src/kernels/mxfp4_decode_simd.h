// The MXFP4 block decode the AVX2 and AVX-512 rows share (include only from
// translation units compiled with AVX2 or more): a block's 16 code bytes
// split into nibbles, looked up as twice their values in int8 (pshufb on
// mxfp4::kFp4Twice) and put back in column order; and the split of a row's
// tokens into groups of 4 (one decoded block reused from registers) and single
// ones.
#pragma once

#include <immintrin.h>

#include "mxfp4_gemv_internal.h"

namespace submoe::kernels::detail {

// Twice the block's 32 weights as int8: columns 0..15 in *first, 16..31 in *second.
inline void decode_twice_codes(const uint8_t* bytes, __m128i* first, __m128i* second) {
  const __m128i lut = _mm_loadu_si128(reinterpret_cast<const __m128i*>(mxfp4::kFp4Twice));
  const __m128i nibble = _mm_set1_epi8(0x0F);
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
  const __m128i lo = _mm_shuffle_epi8(lut, _mm_and_si128(b, nibble));
  const __m128i hi = _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(b, 4), nibble));
  *first = _mm_unpacklo_epi8(lo, hi);
  *second = _mm_unpackhi_epi8(lo, hi);
}

// Rows [row_begin, row_end), each over its tokens 4 at a time, then singly:
// row_tokens<4>(r, t) and row_tokens<1>(r, t).
template <typename Group4, typename Group1>
inline void for_rows_and_token_groups(uint32_t row_begin, uint32_t row_end, uint32_t batch, Group4 four, Group1 one) {
  for (uint32_t r = row_begin; r < row_end; ++r) {
    uint32_t t = 0;
    for (; t + 4 <= batch; t += 4) four(r, t);
    for (; t < batch; ++t) one(r, t);
  }
}

}  // namespace submoe::kernels::detail
