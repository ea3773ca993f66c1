// The AVX2 E8P rows, activations in column order: 4 codes (32 weights) at a
// time, each code's 8 coordinate bytes one 64-bit load from the entry-major
// tables; the 4 sign bytes' parities by a scalar xor fold, each code's sign
// byte spread over its 8 bytes (vpshufb) and tested against the coordinate's
// bit (kE8pNibbleOfCoordinate); u = offset + q.
//   int8, one token: vpmaddubsw (u in [1, 31] x int8) + vpmaddwd into int32;
//   otherwise:       the row decoded once into a buffer, then swept for each
//                    token (int8 as above; f32: bytes widened to floats, FMA).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "e8p_gemv_internal.h"
#include "submoe/core/aligned_buffer.h"

namespace submoe::kernels::detail {
namespace {

inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Byte b of the 4 bytes of v spread over bytes 8b..8b+7.
inline __m256i spread4(uint32_t v) {
  const __m256i ctrl = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                        2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  return _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(v)), ctrl);
}

// 32 bytes offset + q of codes 4g..4g+3 of a chunk's stage.
inline __m256i decode4(const E8pPanels& w, const uint8_t* chunk, uint32_t stage, uint32_t g, int8_t offset) {
  const E8pTables& t = e8p_tables();
  const uint8_t* base = chunk + 2 * kE8pChunkCodes * stage;
  const uint8_t* idx = base + 4 * g;
  if (stage == 1 && w.stage2 == e8p::Stage2::kOneBit) {
    const __m256i v = _mm256_setr_epi64x(static_cast<int64_t>(t.one_bit_rows[idx[0]]),
                                         static_cast<int64_t>(t.one_bit_rows[idx[1]]),
                                         static_cast<int64_t>(t.one_bit_rows[idx[2]]),
                                         static_cast<int64_t>(t.one_bit_rows[idx[3]]));
    return _mm256_add_epi8(v, _mm256_set1_epi8(offset));
  }
  const __m256i v = _mm256_setr_epi64x(
      static_cast<int64_t>(t.abs_rows[idx[0]]), static_cast<int64_t>(t.abs_rows[idx[1]]),
      static_cast<int64_t>(t.abs_rows[idx[2]]), static_cast<int64_t>(t.abs_rows[idx[3]]));
  const uint32_t s = load_u32(base + kE8pChunkCodes + 4 * g);
  uint32_t f = s ^ (s >> 4);
  f ^= f >> 2;
  f ^= f >> 1;
  const uint32_t p = f & 0x01010101u;  // per byte: popcount parity
  const __m256i signs = spread4(s ^ p);
  // Coordinate c of a code tests bit kE8pNibbleOfCoordinate[c] = [0,4,1,5,2,6,3,7][c].
  const __m256i bit = _mm256_set1_epi64x(0x8008400420021001ll);
  const __m256i negative = _mm256_cmpeq_epi8(_mm256_and_si256(signs, bit), bit);
  const __m256i signed_v = _mm256_sub_epi8(_mm256_xor_si256(v, negative), negative);
  const __m256i pp = spread4(p);
  const __m256i shift = _mm256_sub_epi8(_mm256_set1_epi8(static_cast<int8_t>(offset + 1)), _mm256_add_epi8(pp, pp));
  return _mm256_add_epi8(signed_v, shift);
}

inline uint32_t stage_count(const E8pPanels& w) { return w.stage2 == e8p::Stage2::kNone ? 1 : 2; }

inline int32_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

inline float hsum_ps(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// int32 sums of u x for 32 bytes each.
inline __m256i dot_u8_i8(__m256i acc, __m256i u, __m256i x) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1)));
}

inline __m256 fma_bytes(__m256 acc, const int8_t* q, const float* x) {
  for (uint32_t h = 0; h < 4; ++h) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + 8 * h));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)), _mm256_loadu_ps(x + 8 * h), acc);
  }
  return acc;
}

// Row r's bytes offset + q, column order per stage: buffer + s * padded_cols.
void decode_row(const E8pPanels& w, uint32_t r, int8_t offset, int8_t* buffer) {
  const uint8_t* row = w.row(r);
  const uint32_t pc = w.padded_cols();
  for (uint32_t s = 0; s < stage_count(w); ++s)
    for (uint32_t j = 0; j < w.chunks; ++j)
      for (uint32_t g = 0; g < kE8pChunkCodes / 4; ++g)
        _mm256_store_si256(reinterpret_cast<__m256i*>(buffer + size_t{s} * pc + size_t{j} * kE8pChunkCols + 32 * g),
                           decode4(w, row + size_t{j} * w.chunk_bytes, s, g, offset));
}

int8_t* row_buffer(const E8pPanels& w) {
  thread_local AlignedBuffer<int8_t> buffer;
  const size_t need = size_t{stage_count(w)} * w.padded_cols();
  if (buffer.size() < need) buffer = AlignedBuffer<int8_t>(need);
  return buffer.data();
}

}  // namespace

void e8p_rows_i8_avx2(const E8pArgs& a, uint32_t row_begin, uint32_t row_end) {
  const E8pPanels& w = *a.w;
  const float m2 = e8p_stage2_multiplier(w.stage2);
  const uint32_t stages = stage_count(w), pc = w.padded_cols();
  int8_t* buffer = a.batch > 1 ? row_buffer(w) : nullptr;
  for (uint32_t r = row_begin; r < row_end; ++r) {
    if (buffer != nullptr) decode_row(w, r, 16, buffer);
    for (uint32_t t = 0; t < a.batch; ++t) {
      const int8_t* x = a.xq + size_t{t} * pc;
      int32_t sums[2] = {0, 0};
      for (uint32_t s = 0; s < stages; ++s) {
        __m256i acc = _mm256_setzero_si256();
        for (uint32_t j = 0; j < w.chunks; ++j)
          for (uint32_t g = 0; g < kE8pChunkCodes / 4; ++g) {
            const size_t col = size_t{j} * kE8pChunkCols + 32 * g;
            const __m256i u = buffer != nullptr
                                  ? _mm256_load_si256(reinterpret_cast<const __m256i*>(buffer + size_t{s} * pc + col))
                                  : decode4(w, w.row(r) + size_t{j} * w.chunk_bytes, s, g, 16);
            acc = dot_u8_i8(acc, u, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + col)));
          }
        sums[s] = hsum_epi32(acc) - 16 * a.xq_sums[t];
      }
      a.y[t * a.y_stride + r] = e8p_combine(w.scales.data()[r] * a.xq_scales[t], static_cast<float>(sums[0]),
                                            static_cast<float>(sums[1]), m2);
    }
  }
}

void e8p_rows_avx2(const E8pArgs& a, uint32_t row_begin, uint32_t row_end) {
  const E8pPanels& w = *a.w;
  const float m2 = e8p_stage2_multiplier(w.stage2);
  const uint32_t stages = stage_count(w), pc = w.padded_cols();
  int8_t* buffer = row_buffer(w);
  for (uint32_t r = row_begin; r < row_end; ++r) {
    decode_row(w, r, 0, buffer);
    for (uint32_t t = 0; t < a.batch; ++t) {
      const float* x = a.x + size_t{t} * pc;
      float sums[2] = {0, 0};
      for (uint32_t s = 0; s < stages; ++s) {
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        const int8_t* q = buffer + size_t{s} * pc;
        for (uint32_t i = 0; i < pc; i += 64) {
          acc0 = fma_bytes(acc0, q + i, x + i);
          acc1 = fma_bytes(acc1, q + i + 32, x + i + 32);
        }
        sums[s] = hsum_ps(_mm256_add_ps(acc0, acc1));
      }
      a.y[t * a.y_stride + r] = e8p_combine(w.scales.data()[r], sums[0], sums[1], m2);
    }
  }
}

}  // namespace submoe::kernels::detail
