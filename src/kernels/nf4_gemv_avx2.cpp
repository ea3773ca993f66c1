// AVX2 NF4 rows: 8 code bytes at a time widened to dword lanes; vpermps reads
// an index's low 3 bits, so each lookup takes both halves of the 16-entry
// float table and the nibble's bit 3, shifted into the sign bit, picks one
// (blendv). The lanes shifted right by 4 give the even columns (high nibbles),
// the lanes themselves the odd ones; x arrives de-interleaved to match. The
// table is scaled by the block's absmax once per block, so each token takes 4
// FMAs per 32 weights; tokens go 4 at a time.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "avx2_reduce.h"
#include "nf4_gemv_internal.h"
#include "token_groups.h"

namespace submoe::kernels::detail {
namespace {

struct Chunk {
  __m256 even0, even1, odd0, odd1;  // columns 0,2,..,14 / 16,..,30 / 1,..,15 / 17,..,31
};

// Table values of the low nibbles of `lanes` (bit 3 moved to the sign by `shift`).
template <int kSignShift>
inline __m256 lookup(__m256i idx, __m256 low, __m256 high) {
  const __m256 pick_high = _mm256_castsi256_ps(_mm256_slli_epi32(idx, kSignShift));
  return _mm256_blendv_ps(_mm256_permutevar8x32_ps(low, idx), _mm256_permutevar8x32_ps(high, idx), pick_high);
}

inline Chunk decode_chunk(const uint8_t* bytes, __m256 low, __m256 high) {
  const __m256i l0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes)));
  const __m256i l1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes + 8)));
  // High nibble: bits 4..7; after >> 4 its bit 3 is bit 3 again (sign shift 28).
  return {lookup<28>(_mm256_srli_epi32(l0, 4), low, high), lookup<28>(_mm256_srli_epi32(l1, 4), low, high),
          lookup<28>(l0, low, high), lookup<28>(l1, low, high)};
}

template <int kTokens>
void row_tokens(const Nf4GemmArgs& a, uint32_t r, uint32_t t0) {
  const uint32_t cols = a.w.cols, blocks = cols / a.w.block, per_block = a.w.block / 32;
  const uint8_t* codes = a.w.codes + size_t{r} * (cols / 2);
  const float* s = nf4_block_absmax(a.w, r);
  const __m256 nf4_low = _mm256_loadu_ps(nf4::kNf4), nf4_high = _mm256_loadu_ps(nf4::kNf4 + 8);
  // Four independent accumulators per token (one FMA chain would bound a
  // token by the FMA latency).
  __m256 acc[kTokens][4];
  for (int t = 0; t < kTokens; ++t)
    for (int i = 0; i < 4; ++i) acc[t][i] = _mm256_setzero_ps();
  for (uint32_t b = 0, k = 0; b < blocks; ++b) {
    // The block's weight values NF4[q] x absmax (the reference decoder's floats).
    const __m256 scale = _mm256_set1_ps(s[b]);
    const __m256 low = _mm256_mul_ps(nf4_low, scale), high = _mm256_mul_ps(nf4_high, scale);
    for (uint32_t end = k + per_block; k < end; ++k) {
      const Chunk w = decode_chunk(codes + k * 16, low, high);
      for (int t = 0; t < kTokens; ++t) {
        const float* x = a.x + (t0 + static_cast<uint32_t>(t)) * a.x_stride + size_t{k} * 32;
        acc[t][0] = _mm256_fmadd_ps(w.even0, _mm256_loadu_ps(x), acc[t][0]);
        acc[t][1] = _mm256_fmadd_ps(w.even1, _mm256_loadu_ps(x + 8), acc[t][1]);
        acc[t][2] = _mm256_fmadd_ps(w.odd0, _mm256_loadu_ps(x + 16), acc[t][2]);
        acc[t][3] = _mm256_fmadd_ps(w.odd1, _mm256_loadu_ps(x + 24), acc[t][3]);
      }
    }
  }
  for (int t = 0; t < kTokens; ++t)
    a.y[(t0 + static_cast<uint32_t>(t)) * a.y_stride + r] =
        hsum(_mm256_add_ps(_mm256_add_ps(acc[t][0], acc[t][1]), _mm256_add_ps(acc[t][2], acc[t][3])));
}

// The int8 product (Nf4I8Rows) without VNNI: a unit's 64 code bytes go as two
// halves of 32; each nibble indexes the signed kNf4I8 with vpshufb, and
// vpmaddubsw multiplies |w| by the activation with w's sign (pairs at most
// 2 x 127 x 127, no saturation), widened to int32 per half of each side.
template <int kTokens>
void row_tokens_i8(const Nf4I8Rows& a, uint32_t r, uint32_t t0) {
  const uint32_t cols = a.w.cols, block = a.w.block;
  const uint8_t* codes = a.w.codes + size_t{r} * (cols / 2);
  const float* s = nf4_block_absmax(a.w, r);
  const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kNf4I8)));
  const __m256i nibble = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  // Lane i covers columns 8i..8i+7 of its 64-column half: block 8i / span past the half's first.
  const int span = static_cast<int>(std::min(block, 64u));
  __m256i lane_block;
  {
    alignas(32) int32_t idx[8];
    for (int i = 0; i < 8; ++i) idx[i] = 8 * i / span;
    lane_block = _mm256_load_si256(reinterpret_cast<const __m256i*>(idx));
  }
  const size_t xl_stride = size_t{a.units} * kNf4I8Unit;
  const size_t row_bytes = cols / 2;
  __m256 acc[kTokens][2];
  for (int t = 0; t < kTokens; ++t) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
  for (uint32_t u = 0; u < a.units; ++u) {
    alignas(32) uint8_t tail[64];
    const uint8_t* p = codes + size_t{u} * 64;
    if (size_t{u} * 64 + 64 > row_bytes) {  // the row's last 32, 64 or 96 columns, zeros past them
      std::memset(tail, 0, sizeof tail);
      std::memcpy(tail, p, row_bytes - size_t{u} * 64);
      p = tail;
    }
    for (int h = 0; h < 2; ++h) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * h));
      const __m256i wl = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, nibble));
      const __m256i wh = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
      const __m256i al = _mm256_abs_epi8(wl), ah = _mm256_abs_epi8(wh);
      const size_t first = (size_t{u} * kNf4I8Unit + 64 * static_cast<size_t>(h)) / block;
      const __m256 scale = _mm256_permutevar8x32_ps(_mm256_loadu_ps(s + first), lane_block);
      for (int t = 0; t < kTokens; ++t) {
        const int8_t* x = a.xl + (t0 + static_cast<uint32_t>(t)) * xl_stride + size_t{u} * kNf4I8Unit + 32 * h;
        const __m256i xo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
        const __m256i xe = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 64));
        const __m256i sum =
            _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(al, _mm256_sign_epi8(xo, wl)), ones),
                             _mm256_madd_epi16(_mm256_maddubs_epi16(ah, _mm256_sign_epi8(xe, wh)), ones));
        acc[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), scale, acc[t][h]);
      }
    }
  }
  for (int t = 0; t < kTokens; ++t) {
    const uint32_t tok = t0 + static_cast<uint32_t>(t);
    a.y[tok * a.y_stride + r] = hsum(_mm256_add_ps(acc[t][0], acc[t][1])) * (a.x_scales[tok] / 127.0f);
  }
}

}  // namespace

void nf4_rows_i8_avx2(const Nf4I8Rows& a, uint32_t row_begin, uint32_t row_end) {
  for_rows_and_token_groups(
      row_begin, row_end, a.batch, [&](uint32_t r, uint32_t t) { row_tokens_i8<4>(a, r, t); },
      [&](uint32_t r, uint32_t t) { row_tokens_i8<1>(a, r, t); });
}

void nf4_rows_avx2(const Nf4GemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  for_rows_and_token_groups(
      row_begin, row_end, a.batch, [&](uint32_t r, uint32_t t) { row_tokens<4>(a, r, t); },
      [&](uint32_t r, uint32_t t) { row_tokens<1>(a, r, t); });
}

}  // namespace submoe::kernels::detail
