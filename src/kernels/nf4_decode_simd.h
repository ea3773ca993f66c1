// The NF4 code split the AVX2 and AVX-512 rows share (include only from
// translation units compiled with AVX2 or more): 16 code bytes (32 columns)
// split into nibbles and put back in column order, the first column of each
// byte being its high nibble.
#pragma once

#include <immintrin.h>

#include "nf4_gemv_internal.h"
#include "token_groups.h"

namespace submoe::kernels::detail {

// The codes of 32 columns as bytes: columns 0..15 in *first, 16..31 in *second.
inline void split_nf4_codes(const uint8_t* bytes, __m128i* first, __m128i* second) {
  const __m128i nibble = _mm_set1_epi8(0x0F);
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), nibble);
  const __m128i lo = _mm_and_si128(b, nibble);
  *first = _mm_unpacklo_epi8(hi, lo);
  *second = _mm_unpackhi_epi8(hi, lo);
}

}  // namespace submoe::kernels::detail
