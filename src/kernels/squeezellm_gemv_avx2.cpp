// AVX2 SqueezeLLM rows. 4-bit: as the nf4 AVX2 rows, each code looked up in
// both halves of the row's 16-entry table (vpermps) and bit 3 choosing one
// (blendv), x de-interleaved. 3-bit: each 12-byte group unpacked in scalar code
// to 32 bytes, then one vpermps per 8 columns into the 8-entry table. 4 FMAs
// per 32 weights a token, tokens 4 at a time, then the row's exceptions.
#include <immintrin.h>

#include <cstring>

#include "avx2_reduce.h"
#include "squeezellm_gemv_internal.h"
#include "token_groups.h"

namespace submoe::kernels::detail {
namespace {

inline __m256 lookup16(__m256i idx, __m256 low, __m256 high) {
  const __m256 pick_high = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28));
  return _mm256_blendv_ps(_mm256_permutevar8x32_ps(low, idx), _mm256_permutevar8x32_ps(high, idx), pick_high);
}

// The 32 codes of a 3-bit group, one byte each, in column order.
inline void unpack3(const uint8_t* g, uint8_t* out) {
  uint64_t lo;
  uint32_t hi;
  std::memcpy(&lo, g, 8);
  std::memcpy(&hi, g + 8, 4);
  for (int j = 0; j < 21; ++j) out[j] = static_cast<uint8_t>((lo >> (3 * j)) & 7);
  out[21] = static_cast<uint8_t>(((lo >> 63) | (uint64_t{hi} << 1)) & 7);
  for (int j = 22; j < 32; ++j) out[j] = static_cast<uint8_t>((hi >> (3 * j - 64)) & 7);
}

template <int kTokens>
void row_tokens(const SqueezeGemmArgs& a, uint32_t r, uint32_t t0) {
  const uint32_t cols = a.w.cols, chunks = cols / 32;
  const uint8_t* codes = a.w.codes + r * squeezellm::row_code_bytes(cols, a.w.bits);
  alignas(32) float table16[16];
  squeezellm_row_table(a.w, r, table16);
  const __m256 low = _mm256_load_ps(table16), high = _mm256_load_ps(table16 + 8);
  __m256 acc[kTokens][4];
  for (int t = 0; t < kTokens; ++t)
    for (int i = 0; i < 4; ++i) acc[t][i] = _mm256_setzero_ps();
  const bool four = a.w.bits == 4;
  const float* xbase = four ? a.x_split : a.x;
  const size_t xstride = four ? cols : a.x_stride;
  alignas(32) uint8_t unpacked[32];
  for (uint32_t k = 0; k < chunks; ++k) {
    __m256 w[4];
    if (four) {
      const __m256i l0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + k * 16)));
      const __m256i l1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + k * 16 + 8)));
      w[0] = lookup16(_mm256_srli_epi32(l0, 4), low, high);  // even columns 0..14
      w[1] = lookup16(_mm256_srli_epi32(l1, 4), low, high);  // even columns 16..30
      w[2] = lookup16(l0, low, high);                        // odd columns 1..15
      w[3] = lookup16(l1, low, high);                        // odd columns 17..31
    } else {
      unpack3(codes + size_t{k} * 12, unpacked);
      for (int q = 0; q < 4; ++q)
        w[q] = _mm256_permutevar8x32_ps(
            low, _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(unpacked + 8 * q))));
    }
    for (int t = 0; t < kTokens; ++t) {
      const float* x = xbase + (t0 + static_cast<uint32_t>(t)) * xstride + size_t{k} * 32;
      for (int q = 0; q < 4; ++q) acc[t][q] = _mm256_fmadd_ps(w[q], _mm256_loadu_ps(x + 8 * q), acc[t][q]);
    }
  }
  for (int t = 0; t < kTokens; ++t)
    a.y[(t0 + static_cast<uint32_t>(t)) * a.y_stride + r] =
        hsum(_mm256_add_ps(_mm256_add_ps(acc[t][0], acc[t][1]), _mm256_add_ps(acc[t][2], acc[t][3])));
}

}  // namespace

void squeezellm_rows_avx2(const SqueezeGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  for_rows_and_token_groups(
      row_begin, row_end, a.batch, [&](uint32_t r, uint32_t t) { row_tokens<4>(a, r, t); },
      [&](uint32_t r, uint32_t t) { row_tokens<1>(a, r, t); });
  for (uint32_t r = row_begin; r < row_end; ++r)
    squeezellm_row_exceptions(a, r, finite_half_to_float(a.w.lut[size_t{r} << a.w.bits]));
}

}  // namespace submoe::kernels::detail
