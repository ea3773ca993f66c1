// AVX2 residual-VQ kernels. Batch 1: int8 tables in 16-byte slices, looked up
// 32 codes (16 rows x 2 blocks, one 128-bit lane per block) per vpshufb with
// the telescoping slices of kernels/rvq_gemv.h; tile sums in int16 lanes.
// Slabs of 2..8 tokens: each subvector decoded once into registers and
// multiplied into every token of the slab.
#include <immintrin.h>

#include "kernels/avx2_reduce.h"
#include "kernels/rvq_gemv_internal.h"

namespace submoe::kernels::detail {
namespace {

struct VecF32x8 {
  using T = __m256;
  static constexpr int kWidth = 8;
  static T zero() { return _mm256_setzero_ps(); }
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static T add(T a, T b) { return _mm256_add_ps(a, b); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static T absmax(T m, T v) { return _mm256_max_ps(m, _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v)); }
};

// q = round-to-nearest-even(entry * inv) for one block (cvtps rounds with the
// default MXCSR mode, as std::nearbyint does in the scalar reference).
void quantize_i8_block_avx2(const float* t, float inv, int8_t* q) {
  const __m256 vi = _mm256_set1_ps(inv);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (uint32_t c = 0; c < kRvqEntries; c += 32) {
    const __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_load_ps(t + c), vi));
    const __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_load_ps(t + c + 8), vi));
    const __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_load_ps(t + c + 16), vi));
    const __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_load_ps(t + c + 24), vi));
    const __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
    _mm256_store_si256(reinterpret_cast<__m256i*>(q + c), _mm256_permutevar8x32_epi32(b, order));
  }
}

// Block i's 16 slices E_h (rvq_gemv.h) into its half of pair i / 2.
void store_slices(const int8_t* q, int8_t* pair, uint32_t half) {
  for (uint32_t h = 0; h < 16; ++h) {
    __m128i e = _mm_load_si128(reinterpret_cast<const __m128i*>(q + 16 * h));
    if (h != 7 && h != 15) e = _mm_xor_si128(e, _mm_load_si128(reinterpret_cast<const __m128i*>(q + 16 * h + 16)));
    _mm_store_si128(reinterpret_cast<__m128i*>(pair + h * kRvqPairBytes + half * 16), e);
  }
}

// Index constants of slice h: 112 - 16 (h mod 8).
struct SliceIndex {
  __m256i c[8];
  SliceIndex() {
    for (int k = 0; k < 8; ++k) c[k] = _mm256_set1_epi8(static_cast<char>(112 - 16 * k));
  }
};

// The int8 entries of 32 codes (x: two 16-row lanes) of one pair, for NP
// panels at once (each slice load serves all of them).
template <int NP>
inline void lookup_pair(const int8_t* pair, const __m256i* x, const SliceIndex& si, __m256i* out) {
  const __m256i k80 = _mm256_set1_epi8(static_cast<char>(0x80));
  __m256i hi[NP];
  for (int p = 0; p < NP; ++p) {
    hi[p] = _mm256_xor_si256(x[p], k80);
    out[p] = _mm256_setzero_si256();
  }
  for (int h = 0; h < 16; ++h) {
    const __m256i slice = _mm256_load_si256(reinterpret_cast<const __m256i*>(pair + h * kRvqPairBytes));
    const __m256i c = si.c[h & 7];
    for (int p = 0; p < NP; ++p) {
      const __m256i idx = _mm256_adds_epu8(h < 8 ? x[p] : hi[p], c);
      out[p] = _mm256_xor_si256(out[p], _mm256_shuffle_epi8(slice, idx));
    }
  }
}

// Adds the tiles [t0, t1) of NP panels' rows to their f32 partial sums
// (part): per tile, the int8 entries of its pairs summed in int16 lanes, then
// part = fma(s_t, Q, part) per row (the scalar reference's operation and order).
template <int NP>
inline void span_sums(const RvqGemmArgs& a, uint32_t sp, uint32_t p, uint32_t t0, uint32_t t1,
                      const SliceIndex& si) {
  const uint32_t span_j0 = sp * kRvqSpanGroups * a.w.stages / 2;  // the span's first pair
  const uint8_t* codes[NP];
  float* part[NP];  // rows 0-15 of each panel (kept in memory: the lookups need every register)
  for (int k = 0; k < NP; ++k) {
    codes[k] = a.w.span_panel(sp, p + k) - size_t{span_j0} * kRvqPairBytes;  // indexed by global pair
    part[k] = a.part + size_t{p + k} * kRvqPanelRows;
  }
  for (uint32_t t = t0; t < t1; ++t) {
    const uint32_t j0 = i8_tile_begin(a.w, t) / 2, j1 = (i8_tile_end(a.w, t) + 1) / 2;
    __m256i lo[NP], hi[NP];
    for (int k = 0; k < NP; ++k) lo[k] = hi[k] = _mm256_setzero_si256();
    for (uint32_t j = j0; j < j1; ++j) {
      __m256i x[NP], v[NP];
      for (int k = 0; k < NP; ++k)
        x[k] = _mm256_load_si256(reinterpret_cast<const __m256i*>(codes[k] + size_t{j} * kRvqPairBytes));
      lookup_pair<NP>(a.qtable + size_t{j} * 16 * kRvqPairBytes, x, si, v);
      for (int k = 0; k < NP; ++k) {  // sign-extend to int16: rows 0-7 and 8-15, one lane per block
        lo[k] = _mm256_add_epi16(lo[k], _mm256_srai_epi16(_mm256_unpacklo_epi8(v[k], v[k]), 8));
        hi[k] = _mm256_add_epi16(hi[k], _mm256_srai_epi16(_mm256_unpackhi_epi8(v[k], v[k]), 8));
      }
    }
    const __m256 st = _mm256_set1_ps(a.tile_scale[t]);
    for (int k = 0; k < NP; ++k) {
      const __m256i q0 = _mm256_add_epi32(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(lo[k])),
                                          _mm256_cvtepi16_epi32(_mm256_extracti128_si256(lo[k], 1)));
      const __m256i q1 = _mm256_add_epi32(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(hi[k])),
                                          _mm256_cvtepi16_epi32(_mm256_extracti128_si256(hi[k], 1)));
      _mm256_storeu_ps(part[k], _mm256_fmadd_ps(st, _mm256_cvtepi32_ps(q0), _mm256_loadu_ps(part[k])));
      _mm256_storeu_ps(part[k] + 8, _mm256_fmadd_ps(st, _mm256_cvtepi32_ps(q1), _mm256_loadu_ps(part[k] + 8)));
    }
  }
}

}  // namespace

void rvq_build_i8_avx2(const RvqGemmArgs& a, uint32_t span_begin, uint32_t span_end) {
  const uint32_t n = a.w.blocks();
  alignas(32) int8_t q[kRvqEntries];
  build_i8_spans<VecF32x8>(a, span_begin, span_end, [&](uint32_t i, const float* t, float inv) {
    if (inv >= 0.0f) quantize_i8_block_avx2(t, inv, q);
    else std::fill(q, q + kRvqEntries, int8_t{0});
    store_slices(q, a.qtable + size_t{i / 2} * 16 * kRvqPairBytes, i % 2);
    if (i + 1 == n && n % 2 == 1) {  // the padding block of the last pair reads zeros
      std::fill(q, q + kRvqEntries, int8_t{0});
      store_slices(q, a.qtable + size_t{n / 2} * 16 * kRvqPairBytes, 1);
    }
  });
}

void rvq_rows_i8_avx2(const RvqGemmArgs& a, uint32_t panel_begin, uint32_t panel_end) {
  const SliceIndex si;
  const uint32_t tiles = rvq_i8_tiles(a.w.cols);
  constexpr uint32_t kTilesPerSpan = kRvqI8SpanGroups / kRvqI8TileGroups;
  std::fill(a.part + size_t{panel_begin} * kRvqPanelRows, a.part + size_t{panel_end} * kRvqPanelRows, 0.0f);
  // Spans outside: a span's slices stay in L1 while every panel reads them.
  for (uint32_t t0 = 0; t0 < tiles; t0 += kTilesPerSpan) {
    const uint32_t t1 = std::min(tiles, t0 + kTilesPerSpan);
    uint32_t p = panel_begin;
    const uint32_t sp = t0 / kTilesPerSpan;
    for (; p + 2 <= panel_end; p += 2) span_sums<2>(a, sp, p, t0, t1, si);
    if (p < panel_end) span_sums<1>(a, sp, p, t0, t1, si);
  }
  write_i8_rows(a, panel_begin, panel_end);
}

namespace {

// Rows [r0, r1) of a slab of T tokens: each 16-weight subvector decoded once
// (the sum of its S codebook rows, ascending s, as the reference decoder
// adds them) and multiplied into all T tokens with 2 FMAs each. Column tiles
// of kDecodeTileGroups groups: the tile's activations are first copied into
// xt[g][t][16] (token rows of a power-of-two width would otherwise share L1
// sets and evict each other); the rows' sums live in part[r][t] between tiles.
constexpr uint32_t kDecodeTileGroups = kRvqSpanGroups;  // one span of the panel layout

template <int T>
void decode_rows(const RvqGemmArgs& a, uint32_t r0, uint32_t r1) {
  const uint32_t G = a.w.groups(), S = a.w.stages;
  alignas(64) float xt[kDecodeTileGroups][T][kRvqDim];
  for (uint32_t g0 = 0; g0 < G; g0 += kDecodeTileGroups) {
    const uint32_t g1 = std::min(G, g0 + kDecodeTileGroups);
    for (uint32_t g = g0; g < g1; ++g)
      for (int t = 0; t < T; ++t)
        std::memcpy(xt[g - g0][t], a.xs + t * a.x_stride + size_t{g} * kRvqDim, sizeof(float) * kRvqDim);
    const uint32_t sp = g0 / kRvqSpanGroups;
    for (uint32_t r = r0; r < r1; ++r) {
      const SpanRow codes = span_row(a.w, sp, r);
      __m256 acc[T];
      for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
      for (uint32_t g = g0; g < g1; ++g) {
        const uint32_t i0 = (g - g0) * S;  // the span's local block
        const float* e = a.w.codebooks + size_t{codes[i0]} * kRvqDim;
        __m256 lo = _mm256_loadu_ps(e), hi = _mm256_loadu_ps(e + 8);
        for (uint32_t st = 1; st < S; ++st) {
          e = a.w.codebook(st) + size_t{codes[i0 + st]} * kRvqDim;
          lo = _mm256_add_ps(lo, _mm256_loadu_ps(e));
          hi = _mm256_add_ps(hi, _mm256_loadu_ps(e + 8));
        }
        const float* x = xt[g - g0][0];
        for (int t = 0; t < T; ++t) {
          acc[t] = _mm256_fmadd_ps(lo, _mm256_load_ps(x + t * kRvqDim), acc[t]);
          acc[t] = _mm256_fmadd_ps(hi, _mm256_load_ps(x + t * kRvqDim + 8), acc[t]);
        }
      }
      float* pr = a.part + size_t{r} * kRvqDecodeSlab;
      for (int t = 0; t < T; ++t) pr[t] = (g0 == 0 ? 0.0f : pr[t]) + hsum(acc[t]);
      if (g1 == G) {
        const float scale = f16_bits_to_float(a.w.scales[r]);
        for (int t = 0; t < T; ++t) a.y[t * a.y_stride + r] = scale * pr[t];
      }
    }
  }
}

}  // namespace

void rvq_rows_decode_avx2(const RvqGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  switch (a.tokens) {
    case 1: return decode_rows<1>(a, row_begin, row_end);
    case 2: return decode_rows<2>(a, row_begin, row_end);
    case 3: return decode_rows<3>(a, row_begin, row_end);
    case 4: return decode_rows<4>(a, row_begin, row_end);
    case 5: return decode_rows<5>(a, row_begin, row_end);
    case 6: return decode_rows<6>(a, row_begin, row_end);
    case 7: return decode_rows<7>(a, row_begin, row_end);
    default: return decode_rows<8>(a, row_begin, row_end);
  }
}

}  // namespace submoe::kernels::detail
