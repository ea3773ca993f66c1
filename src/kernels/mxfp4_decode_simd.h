// The MXFP4 block decode the AVX2 and AVX-512 rows share (include only from
// translation units compiled with AVX2 or more): a block's 16 code bytes
// split into nibbles, looked up as twice their values in int8 (pshufb on
// mxfp4::kFp4Twice) and put back in column order (the split of a row's tokens
// into groups of 4 and single ones is token_groups.h).
#pragma once

#include <immintrin.h>

#include "mxfp4_gemv_internal.h"
#include "token_groups.h"

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

}  // namespace submoe::kernels::detail
