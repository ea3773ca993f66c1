// AVX-512 int kernels: the AVX2 scheme (int_gemv_avx2.cpp) with runs of 16
// codes, 2 * bits bytes. The two 8-code halves are broadcast as one qword
// (dword 0 the first half, dword 1 the second) and spread with one vpermd, so
// lanes 0-7 see the first half and lanes 8-15 the second; one variable shift
// and a mask finish the expansion.
#include <immintrin.h>

// GCC 12: see ternary_gemv_avx512.cpp about -Wmaybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <algorithm>

#include "kernels/int_gemv_internal.h"

namespace submoe::kernels::detail {
namespace {

template <int BITS>
inline __m512 expand16(uint64_t u, __m512 scale, __m512 neg_scale_zero) {
  constexpr int kHalfBits = 8 * BITS;
  const uint64_t lo = u & ((uint64_t{1} << kHalfBits) - 1);
  const uint64_t halves = lo | ((u >> kHalfBits) << 32);
  const __m512i spread = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  const __m512i shifts = _mm512_setr_epi32(0, BITS, 2 * BITS, 3 * BITS, 4 * BITS, 5 * BITS, 6 * BITS, 7 * BITS, 0,
                                           BITS, 2 * BITS, 3 * BITS, 4 * BITS, 5 * BITS, 6 * BITS, 7 * BITS);
  const __m512i v = _mm512_permutexvar_epi32(spread, _mm512_set1_epi64(static_cast<long long>(halves)));
  const __m512i codes = _mm512_and_si512(_mm512_srlv_epi32(v, shifts), _mm512_set1_epi32((1 << BITS) - 1));
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(codes), scale, neg_scale_zero);
}

struct GroupScale {
  __m512 scale, neg_scale_zero;
};
inline GroupScale group_scale(const intn::PackedIntView& w, uint32_t r, uint32_t g, uint32_t groups) {
  const size_t gi = static_cast<size_t>(r) * groups + g;
  const float s = _cvtsh_ss(w.scales[gi]);
  return {_mm512_set1_ps(s), _mm512_set1_ps(-(s * static_cast<float>(w.zeros[gi])))};
}

// Calls step(c, load) for every run of 16 columns of group g (see the AVX2 file).
template <int BITS, typename Step>
inline void for_each_run(const intn::PackedIntView& w, uint32_t g, const Step& step) {
  const ColumnRange cr = group_columns(w, g);
  const uint32_t full_end = static_cast<uint32_t>(std::min<size_t>(w.row_bytes / (2 * BITS) * 16, w.cols));
  uint32_t c = cr.begin;
  for (; c < std::min(cr.end, full_end); c += 16)
    step(c, [c](const uint8_t* row) { return load_run<2 * BITS>(row + c / 16 * (2 * BITS)); });
  for (; c < cr.end; c += 16) {
    const size_t at = static_cast<size_t>(c) / 16 * (2 * BITS);
    const size_t n = std::min<size_t>(2 * BITS, w.row_bytes - at);
    step(c, [at, n](const uint8_t* row) { return load_code_bytes(row + at, n); });
  }
}

template <int BITS, int NT, int R>
inline void rows_tile(const IntGemmArgs& a, uint32_t r0) {
  const intn::PackedIntView& w = a.w;
  const uint32_t groups = w.groups();
  __m512 acc[R][NT];
  for (int i = 0; i < R; ++i)
    for (int t = 0; t < NT; ++t) acc[i][t] = _mm512_setzero_ps();
  const uint8_t* rows[R];
  for (int i = 0; i < R; ++i) rows[i] = w.row(r0 + static_cast<uint32_t>(i));
  for (uint32_t g = 0; g < groups; ++g) {
    GroupScale gs[R];
    for (int i = 0; i < R; ++i) gs[i] = group_scale(w, r0 + static_cast<uint32_t>(i), g, groups);
    for_each_run<BITS>(w, g, [&](uint32_t c, const auto& load) {
      __m512 xv[NT];
      for (int t = 0; t < NT; ++t) xv[t] = _mm512_load_ps(a.xs + static_cast<size_t>(t) * a.x_stride + c);
      for (int i = 0; i < R; ++i) {
        const __m512 wv = expand16<BITS>(load(rows[i]), gs[i].scale, gs[i].neg_scale_zero);
        for (int t = 0; t < NT; ++t) acc[i][t] = _mm512_fmadd_ps(wv, xv[t], acc[i][t]);
      }
    });
  }
  for (int i = 0; i < R; ++i)
    for (int t = 0; t < NT; ++t)
      a.y[static_cast<size_t>(t) * a.y_stride + r0 + static_cast<uint32_t>(i)] = _mm512_reduce_add_ps(acc[i][t]);
}

template <int BITS, int NT>
void rows_kernel(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  constexpr int R = NT == 1 ? 4 : 2;
  uint32_t r = row_begin;
  for (; r + R <= row_end; r += R) rows_tile<BITS, NT, R>(a, r);
  for (; r < row_end; ++r) rows_tile<BITS, NT, 1>(a, r);
}

// kTransposed: R rows x V vectors of 16 tokens, R rows sharing each activation load.
template <int BITS, int V, int R>
inline void wide_tile(const IntGemmArgs& a, uint32_t r0) {
  const intn::PackedIntView& w = a.w;
  const uint32_t groups = w.groups();
  const size_t S = a.batch_stride;
  __m512 acc[R][V];
  for (int i = 0; i < R; ++i)
    for (int v = 0; v < V; ++v) acc[i][v] = _mm512_setzero_ps();
  const uint8_t* rows[R];
  for (int i = 0; i < R; ++i) rows[i] = w.row(r0 + static_cast<uint32_t>(i));
  for (uint32_t g = 0; g < groups; ++g) {
    GroupScale gs[R];
    for (int i = 0; i < R; ++i) gs[i] = group_scale(w, r0 + static_cast<uint32_t>(i), g, groups);
    for_each_run<BITS>(w, g, [&](uint32_t c, const auto& load) {
      alignas(64) float wv[R][16];
      for (int i = 0; i < R; ++i)
        _mm512_store_ps(wv[i], expand16<BITS>(load(rows[i]), gs[i].scale, gs[i].neg_scale_zero));
      const float* xp = a.xs + static_cast<size_t>(c) * S;
      for (int j = 0; j < 16; ++j, xp += S) {
        __m512 xv[V];
        for (int v = 0; v < V; ++v) xv[v] = _mm512_load_ps(xp + 16 * v);
        for (int i = 0; i < R; ++i) {
          const __m512 wb = _mm512_set1_ps(wv[i][j]);
          for (int v = 0; v < V; ++v) acc[i][v] = _mm512_fmadd_ps(wb, xv[v], acc[i][v]);
        }
      }
    });
  }
  for (int i = 0; i < R; ++i) {
    alignas(64) float out[16 * V];
    for (int v = 0; v < V; ++v) _mm512_store_ps(out + 16 * v, acc[i][v]);
    for (uint32_t t = 0; t < a.batch; ++t) a.y[static_cast<size_t>(t) * a.y_stride + r0 + static_cast<uint32_t>(i)] = out[t];
  }
}

template <int BITS, int V>
void wide_kernel(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  // R * V accumulators plus V activation vectors fit the 32 zmm registers.
  constexpr int R = V <= 2 ? 8 : 4;
  uint32_t r = row_begin;
  for (; r + R <= row_end; r += R) wide_tile<BITS, V, R>(a, r);
  for (; r < row_end; ++r) wide_tile<BITS, V, 1>(a, r);
}

template <int NT>
void rows_by_bits(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  switch (a.w.bits) {
    case 2: return rows_kernel<2, NT>(a, row_begin, row_end);
    case 3: return rows_kernel<3, NT>(a, row_begin, row_end);
    default: return rows_kernel<4, NT>(a, row_begin, row_end);
  }
}

template <int V>
void wide_by_bits(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  switch (a.w.bits) {
    case 2: return wide_kernel<2, V>(a, row_begin, row_end);
    case 3: return wide_kernel<3, V>(a, row_begin, row_end);
    default: return wide_kernel<4, V>(a, row_begin, row_end);
  }
}

}  // namespace

void gemv_f32_int_packed_avx512(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  rows_by_bits<1>(a, row_begin, row_end);
}

void gemm_f32_int_packed_small_avx512(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  switch (a.batch) {
    case 1: return rows_by_bits<1>(a, row_begin, row_end);
    case 2: return rows_by_bits<2>(a, row_begin, row_end);
    case 3: return rows_by_bits<3>(a, row_begin, row_end);
    default: return rows_by_bits<4>(a, row_begin, row_end);
  }
}

void gemm_f32_int_packed_wide_avx512(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  switch (a.batch_stride / 16) {
    // 8 tokens fill one 256-bit vector: the AVX2 kernel (this unit is built
    // with AVX2 as well) wastes nothing there.
    case 0: return gemm_f32_int_packed_wide_avx2(a, row_begin, row_end);
    case 1: return wide_by_bits<1>(a, row_begin, row_end);
    case 2: return wide_by_bits<2>(a, row_begin, row_end);
    case 3: return wide_by_bits<3>(a, row_begin, row_end);
    default: return wide_by_bits<4>(a, row_begin, row_end);
  }
}

}  // namespace submoe::kernels::detail
