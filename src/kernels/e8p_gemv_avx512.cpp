// The AVX-512 E8P rows (VBMI + VNNI): 64 codes decoded at once per coordinate.
// A chunk's abs bytes index 256-byte per-coordinate tables through two
// vpermi2b (entries 0..127 and 128..255) and a blend on the index's top bit;
// the sign byte's parity comes from a nibble table (vpshufb), and coordinate
// c's sign is bit kE8pNibbleOfCoordinate[c] of the parity-fixed sign byte
// (vptestmb). Each plane is offset + q: q in quarters (E8P) or halves (1-bit).
//   int8, one token:  planes with offset 16 (u = q + 16 in [1, 31]) straight
//                     into vpdpbusd against the planar activations;
//   otherwise:        the row's planes decoded once into a buffer, then swept
//                     for the tokens 4 at a time (int8: vpdpbusd; f32: the q
//                     widened to floats once per 16 and FMA'd for each token).
// GCC 12: see ternary_gemv_avx512.cpp about -Wmaybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "e8p_gemv_internal.h"
#include "submoe/core/aligned_buffer.h"

namespace submoe::kernels::detail {
namespace {

constexpr uint32_t kD = e8p::kDim;

inline __m512i lookup256(const int8_t* table, __m512i idx, __mmask64 upper) {
  const __m512i lo = _mm512_permutex2var_epi8(_mm512_load_si512(table), idx, _mm512_load_si512(table + 64));
  const __m512i hi = _mm512_permutex2var_epi8(_mm512_load_si512(table + 128), idx, _mm512_load_si512(table + 192));
  return _mm512_mask_blend_epi8(upper, lo, hi);
}

// Stage planes of one chunk: out[c] = offset + q (64 lanes = 64 codes).
inline void decode_e8p_stage(const uint8_t* base, int8_t offset, __m512i out[kD]) {
  const E8pTables& t = e8p_tables();
  alignas(16) static constexpr int8_t kParity[16] = {0, 1, 1, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0};
  const __m512i parity_table = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(kParity)));
  const __m512i nibble = _mm512_set1_epi8(0x0f);
  const __m512i a = _mm512_load_si512(base);
  const __m512i s = _mm512_load_si512(base + kE8pChunkCodes);
  const __m512i p = _mm512_xor_si512(_mm512_shuffle_epi8(parity_table, _mm512_and_si512(s, nibble)),
                                     _mm512_shuffle_epi8(parity_table, _mm512_and_si512(_mm512_srli_epi16(s, 4), nibble)));
  const __m512i signs = _mm512_xor_si512(s, p);
  // offset + 1 for an even sign byte, offset - 1 for an odd one (the +-1/4 shift).
  const __m512i shift = _mm512_sub_epi8(_mm512_set1_epi8(static_cast<int8_t>(offset + 1)), _mm512_add_epi8(p, p));
  const __mmask64 upper = _mm512_movepi8_mask(a);
  for (uint32_t c = 0; c < kD; ++c) {
    const __m512i v = lookup256(t.abs[c], a, upper);
    const __mmask64 negative =
        _mm512_test_epi8_mask(signs, _mm512_set1_epi8(static_cast<int8_t>(1u << e8p::kE8pNibbleOfCoordinate[c])));
    out[c] = _mm512_mask_sub_epi8(_mm512_add_epi8(shift, v), negative, shift, v);
  }
}

inline void decode_one_bit_stage(const uint8_t* base, int8_t offset, __m512i out[kD]) {
  const E8pTables& t = e8p_tables();
  const __m512i idx = _mm512_load_si512(base);
  const __mmask64 upper = _mm512_movepi8_mask(idx);
  const __m512i off = _mm512_set1_epi8(offset);
  for (uint32_t c = 0; c < kD; ++c) out[c] = _mm512_add_epi8(off, lookup256(t.one_bit[c], idx, upper));
}

inline void decode_stage(const E8pPanels& w, const uint8_t* chunk, uint32_t stage, int8_t offset, __m512i out[kD]) {
  const uint8_t* base = chunk + 2 * kE8pChunkCodes * stage;
  if (stage == 1 && w.stage2 == e8p::Stage2::kOneBit) {
    decode_one_bit_stage(base, offset, out);
  } else {
    decode_e8p_stage(base, offset, out);
  }
}

inline uint32_t stage_count(const E8pPanels& w) { return w.stage2 == e8p::Stage2::kNone ? 1 : 2; }

// Row r's planes, stage-major: buffer + (stage * chunks + j) * 512 + c * 64.
void decode_row(const E8pPanels& w, uint32_t r, int8_t offset, int8_t* buffer) {
  const uint8_t* row = w.row(r);
  const uint32_t stages = stage_count(w);
  for (uint32_t s = 0; s < stages; ++s)
    for (uint32_t j = 0; j < w.chunks; ++j) {
      __m512i planes[kD];
      decode_stage(w, row + size_t{j} * w.chunk_bytes, s, offset, planes);
      int8_t* to = buffer + (size_t{s} * w.chunks + j) * kE8pChunkCols;
      for (uint32_t c = 0; c < kD; ++c) _mm512_store_si512(to + c * kE8pChunkCodes, planes[c]);
    }
}

int8_t* row_buffer(const E8pPanels& w) {
  thread_local AlignedBuffer<int8_t> buffer;
  const size_t need = size_t{stage_count(w)} * w.padded_cols();
  if (buffer.size() < need) buffer = AlignedBuffer<int8_t>(need);
  return buffer.data();
}

// int8 sweep of a decoded row (u = q + 16) for NT tokens starting at t0.
template <uint32_t NT>
void sweep_i8(const E8pArgs& a, const int8_t* buffer, uint32_t r, uint32_t t0, float m2) {
  const E8pPanels& w = *a.w;
  const uint32_t pc = w.padded_cols(), stages = stage_count(w);
  int32_t sums[2][NT] = {};
  for (uint32_t s = 0; s < stages; ++s) {
    __m512i acc[NT];
    for (uint32_t t = 0; t < NT; ++t) acc[t] = _mm512_setzero_si512();
    const int8_t* u = buffer + size_t{s} * pc;
    for (uint32_t i = 0; i < pc; i += kE8pChunkCodes) {
      const __m512i v = _mm512_load_si512(u + i);
      for (uint32_t t = 0; t < NT; ++t)
        acc[t] = _mm512_dpbusd_epi32(acc[t], v, _mm512_load_si512(a.xq + size_t{t0 + t} * pc + i));
    }
    for (uint32_t t = 0; t < NT; ++t) sums[s][t] = _mm512_reduce_add_epi32(acc[t]) - 16 * a.xq_sums[t0 + t];
  }
  for (uint32_t t = 0; t < NT; ++t)
    a.y[(t0 + t) * a.y_stride + r] = e8p_combine(w.scales.data()[r] * a.xq_scales[t0 + t],
                                                 static_cast<float>(sums[0][t]), static_cast<float>(sums[1][t]), m2);
}

// q = u - 16 as bf16 (exact), indexed by u in [0, 32): one vpermw table.
inline __m512i bf16_of_u_table() {
  struct Table {
    alignas(64) uint16_t v[32];
    Table() {
      for (int i = 0; i < 32; ++i) {
        const float f = static_cast<float>(i - 16);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        v[i] = static_cast<uint16_t>(bits >> 16);  // small integers: exact, no rounding
      }
    }
  };
  static const Table t;
  return _mm512_load_si512(t.v);
}

// The 64 weights of a plane of u bytes as two vectors of 32 bf16.
inline void plane_to_bf16(__m512i u, __m512i table, __m512i* lo32, __m512i* hi32) {
  *lo32 = _mm512_permutexvar_epi16(_mm512_cvtepu8_epi16(_mm512_castsi512_si256(u)), table);
  *hi32 = _mm512_permutexvar_epi16(_mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(u, 1)), table);
}

inline __m512 dot_bf16(__m512 acc, __m512i w, const uint16_t* x) {
  return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh>(w), reinterpret_cast<__m512bh>(_mm512_load_si512(x)));
}

// f32 sweep of a decoded row (bf16 q words) for NT tokens starting at t0: x = hi + lo.
template <uint32_t NT>
void sweep_f32(const E8pArgs& a, const uint16_t* words, uint32_t r, uint32_t t0, float m2) {
  const E8pPanels& w = *a.w;
  const uint32_t pc = w.padded_cols(), stages = stage_count(w);
  float sums[2][NT] = {};
  for (uint32_t s = 0; s < stages; ++s) {
    __m512 acc[NT][2];
    for (uint32_t t = 0; t < NT; ++t) acc[t][0] = acc[t][1] = _mm512_setzero_ps();
    const uint16_t* q = words + size_t{s} * pc;
    for (uint32_t i = 0; i < pc; i += 32) {
      const __m512i v = _mm512_load_si512(q + i);
      for (uint32_t t = 0; t < NT; ++t) {
        acc[t][0] = dot_bf16(acc[t][0], v, a.x_hi + size_t{t0 + t} * pc + i);
        acc[t][1] = dot_bf16(acc[t][1], v, a.x_lo + size_t{t0 + t} * pc + i);
      }
    }
    for (uint32_t t = 0; t < NT; ++t) sums[s][t] = _mm512_reduce_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]));
  }
  for (uint32_t t = 0; t < NT; ++t)
    a.y[(t0 + t) * a.y_stride + r] = e8p_combine(w.scales.data()[r], sums[0][t], sums[1][t], m2);
}

// Row r's weights as bf16 words, stage-major like decode_row.
void decode_row_bf16(const E8pPanels& w, uint32_t r, uint16_t* words) {
  const uint8_t* row = w.row(r);
  const __m512i table = bf16_of_u_table();
  for (uint32_t s = 0; s < stage_count(w); ++s)
    for (uint32_t j = 0; j < w.chunks; ++j) {
      __m512i planes[kD];
      decode_stage(w, row + size_t{j} * w.chunk_bytes, s, 16, planes);
      uint16_t* to = words + (size_t{s} * w.chunks + j) * kE8pChunkCols;
      for (uint32_t c = 0; c < kD; ++c) {
        __m512i lo, hi;
        plane_to_bf16(planes[c], table, &lo, &hi);
        _mm512_store_si512(to + c * kE8pChunkCodes, lo);
        _mm512_store_si512(to + c * kE8pChunkCodes + 32, hi);
      }
    }
}

uint16_t* row_words(const E8pPanels& w) {
  thread_local AlignedBuffer<uint16_t> buffer;
  const size_t need = size_t{stage_count(w)} * w.padded_cols();
  if (buffer.size() < need) buffer = AlignedBuffer<uint16_t>(need);
  return buffer.data();
}

template <typename Sweep4, typename Sweep1>
void rows_by_buffer(const E8pArgs& a, uint32_t row_begin, uint32_t row_end, Sweep4 sweep4, Sweep1 sweep1) {
  const E8pPanels& w = *a.w;
  const float m2 = e8p_stage2_multiplier(w.stage2);
  int8_t* buffer = row_buffer(w);
  for (uint32_t r = row_begin; r < row_end; ++r) {
    decode_row(w, r, 16, buffer);
    uint32_t t = 0;
    for (; t + 4 <= a.batch; t += 4) sweep4(a, buffer, r, t, m2);
    for (; t < a.batch; ++t) sweep1(a, buffer, r, t, m2);
  }
}

}  // namespace

void e8p_rows_avx512(const E8pArgs& a, uint32_t row_begin, uint32_t row_end) {
  const E8pPanels& w = *a.w;
  const float m2 = e8p_stage2_multiplier(w.stage2);
  if (a.batch > 1) {
    uint16_t* words = row_words(w);
    for (uint32_t r = row_begin; r < row_end; ++r) {
      decode_row_bf16(w, r, words);
      uint32_t t = 0;
      for (; t + 4 <= a.batch; t += 4) sweep_f32<4>(a, words, r, t, m2);
      for (; t < a.batch; ++t) sweep_f32<1>(a, words, r, t, m2);
    }
    return;
  }
  const uint32_t stages = stage_count(w);
  const __m512i table = bf16_of_u_table();
  for (uint32_t r = row_begin; r < row_end; ++r) {
    const uint8_t* row = w.row(r);
    __m512 acc[2][2] = {{_mm512_setzero_ps(), _mm512_setzero_ps()}, {_mm512_setzero_ps(), _mm512_setzero_ps()}};
    for (uint32_t j = 0; j < w.chunks; ++j) {
      const uint8_t* chunk = row + size_t{j} * w.chunk_bytes;
      const size_t base = size_t{j} * kE8pChunkCols;
      for (uint32_t s = 0; s < stages; ++s) {
        __m512i u[kD];
        decode_stage(w, chunk, s, 16, u);
        for (uint32_t c = 0; c < kD; ++c) {
          __m512i lo, hi;
          plane_to_bf16(u[c], table, &lo, &hi);
          const size_t i = base + c * kE8pChunkCodes;
          acc[s][0] = dot_bf16(dot_bf16(acc[s][0], lo, a.x_hi + i), lo, a.x_lo + i);
          acc[s][1] = dot_bf16(dot_bf16(acc[s][1], hi, a.x_hi + i + 32), hi, a.x_lo + i + 32);
        }
      }
    }
    const float s1 = _mm512_reduce_add_ps(_mm512_add_ps(acc[0][0], acc[0][1]));
    const float s2 = stages > 1 ? _mm512_reduce_add_ps(_mm512_add_ps(acc[1][0], acc[1][1])) : 0.0f;
    a.y[r] = e8p_combine(w.scales.data()[r], s1, s2, m2);
  }
}

void e8p_rows_i8_avx512(const E8pArgs& a, uint32_t row_begin, uint32_t row_end) {
  if (a.batch > 1) {
    rows_by_buffer(a, row_begin, row_end, &sweep_i8<4>, &sweep_i8<1>);
    return;
  }
  const E8pPanels& w = *a.w;
  const float m2 = e8p_stage2_multiplier(w.stage2);
  const uint32_t stages = stage_count(w);
  const float xs = a.xq_scales[0];
  const int32_t correction = 16 * a.xq_sums[0];
  for (uint32_t r = row_begin; r < row_end; ++r) {
    const uint8_t* row = w.row(r);
    __m512i acc[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
    for (uint32_t j = 0; j < w.chunks; ++j) {
      const uint8_t* chunk = row + size_t{j} * w.chunk_bytes;
      const int8_t* x = a.xq + size_t{j} * kE8pChunkCols;
      for (uint32_t s = 0; s < stages; ++s) {
        __m512i u[kD];
        decode_stage(w, chunk, s, 16, u);
        for (uint32_t c = 0; c < kD; ++c)
          acc[s] = _mm512_dpbusd_epi32(acc[s], u[c], _mm512_load_si512(x + c * kE8pChunkCodes));
      }
    }
    const int32_t s1 = _mm512_reduce_add_epi32(acc[0]) - correction;
    const int32_t s2 = stages > 1 ? _mm512_reduce_add_epi32(acc[1]) - correction : 0;
    a.y[r] = e8p_combine(w.scales.data()[r] * xs, static_cast<float>(s1), static_cast<float>(s2), m2);
  }
}

}  // namespace submoe::kernels::detail
