// AVX2 int kernels. A run of 8 codes at a column that is a multiple of 8 is
// `bits` whole bytes: one broadcast, one variable shift and a mask put the 8
// codes in 8 lanes, and fma(code, scale, -scale*zero) gives the reference
// decoder's weights exactly. The decoded vector then meets every token:
//   - B = 1..4 (kRows): per-token accumulators in registers, several rows at
//     once for independent FMA chains and shared activation loads;
//   - B > 4 (kTransposed): each weight is broadcast from the decoded vector and
//     multiplied into B/8 vectors of token values; R rows at a time share each
//     activation load, which otherwise streams cols * B floats from L2 per row
//     (measured: one row at a time ran B = 16 at 1/4 the speed of B = 4).
#include <immintrin.h>

#include <algorithm>

#include "kernels/avx2_reduce.h"
#include "kernels/int_gemv_internal.h"

namespace submoe::kernels::detail {
namespace {

template <int BITS>
inline __m256 expand8(uint32_t u, __m256 scale, __m256 neg_scale_zero) {
  const __m256i shifts = _mm256_setr_epi32(0, BITS, 2 * BITS, 3 * BITS, 4 * BITS, 5 * BITS, 6 * BITS, 7 * BITS);
  const __m256i mask = _mm256_set1_epi32((1 << BITS) - 1);
  const __m256i codes = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(u)), shifts), mask);
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(codes), scale, neg_scale_zero);
}

struct GroupScale {
  __m256 scale, neg_scale_zero;
};
inline GroupScale group_scale(const intn::PackedIntView& w, uint32_t r, uint32_t g, uint32_t groups) {
  const size_t gi = static_cast<size_t>(r) * groups + g;
  const float s = _cvtsh_ss(w.scales[gi]);
  return {_mm256_set1_ps(s), _mm256_set1_ps(-(s * static_cast<float>(w.zeros[gi])))};
}

// Calls step(c, load) for every run of 8 columns of group g: `load` reads the
// run's code bytes from a row pointer (whole runs with fixed-width loads; the
// last run of a row may end early, see load_code_bytes).
template <int BITS, typename Step>
inline void for_each_run(const intn::PackedIntView& w, uint32_t g, const Step& step) {
  const ColumnRange cr = group_columns(w, g);
  // Runs starting below this column have all BITS bytes inside the row.
  const uint32_t full_end = static_cast<uint32_t>(std::min<size_t>(w.row_bytes / BITS * 8, w.cols));
  uint32_t c = cr.begin;
  for (; c < std::min(cr.end, full_end); c += 8)
    step(c, [c](const uint8_t* row) { return static_cast<uint32_t>(load_run<BITS>(row + c / 8 * BITS)); });
  for (; c < cr.end; c += 8) {
    const size_t at = static_cast<size_t>(c) / 8 * BITS;
    const size_t n = std::min<size_t>(BITS, w.row_bytes - at);
    step(c, [at, n](const uint8_t* row) { return static_cast<uint32_t>(load_code_bytes(row + at, n)); });
  }
}

// kRows: R rows x NT tokens of accumulators.
template <int BITS, int NT, int R>
inline void rows_tile(const IntGemmArgs& a, uint32_t r0) {
  const intn::PackedIntView& w = a.w;
  const uint32_t groups = w.groups();
  __m256 acc[R][NT];
  for (int i = 0; i < R; ++i)
    for (int t = 0; t < NT; ++t) acc[i][t] = _mm256_setzero_ps();
  const uint8_t* rows[R];
  for (int i = 0; i < R; ++i) rows[i] = w.row(r0 + static_cast<uint32_t>(i));
  for (uint32_t g = 0; g < groups; ++g) {
    GroupScale gs[R];
    for (int i = 0; i < R; ++i) gs[i] = group_scale(w, r0 + static_cast<uint32_t>(i), g, groups);
    for_each_run<BITS>(w, g, [&](uint32_t c, const auto& load) {
      __m256 xv[NT];
      for (int t = 0; t < NT; ++t) xv[t] = _mm256_load_ps(a.xs + static_cast<size_t>(t) * a.x_stride + c);
      for (int i = 0; i < R; ++i) {
        const __m256 wv = expand8<BITS>(load(rows[i]), gs[i].scale, gs[i].neg_scale_zero);
        for (int t = 0; t < NT; ++t) acc[i][t] = _mm256_fmadd_ps(wv, xv[t], acc[i][t]);
      }
    });
  }
  for (int i = 0; i < R; ++i)
    for (int t = 0; t < NT; ++t)
      a.y[static_cast<size_t>(t) * a.y_stride + r0 + static_cast<uint32_t>(i)] = hsum(acc[i][t]);
}

template <int BITS, int NT>
void rows_kernel(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  constexpr int R = NT == 1 ? 4 : NT == 2 ? 2 : 1;
  uint32_t r = row_begin;
  for (; r + R <= row_end; r += R) rows_tile<BITS, NT, R>(a, r);
  for (; r < row_end; ++r) rows_tile<BITS, NT, 1>(a, r);
}

// kTransposed: R rows x V vectors of 8 tokens.
template <int BITS, int V, int R>
inline void wide_tile(const IntGemmArgs& a, uint32_t r0) {
  const intn::PackedIntView& w = a.w;
  const uint32_t groups = w.groups();
  const size_t S = a.batch_stride;
  __m256 acc[R][V];
  for (int i = 0; i < R; ++i)
    for (int v = 0; v < V; ++v) acc[i][v] = _mm256_setzero_ps();
  const uint8_t* rows[R];
  for (int i = 0; i < R; ++i) rows[i] = w.row(r0 + static_cast<uint32_t>(i));
  for (uint32_t g = 0; g < groups; ++g) {
    GroupScale gs[R];
    for (int i = 0; i < R; ++i) gs[i] = group_scale(w, r0 + static_cast<uint32_t>(i), g, groups);
    for_each_run<BITS>(w, g, [&](uint32_t c, const auto& load) {
      alignas(32) float wv[R][8];
      for (int i = 0; i < R; ++i)
        _mm256_store_ps(wv[i], expand8<BITS>(load(rows[i]), gs[i].scale, gs[i].neg_scale_zero));
      const float* xp = a.xs + static_cast<size_t>(c) * S;
      for (int j = 0; j < 8; ++j, xp += S) {
        if constexpr (R == 1) {
          const __m256 wb = _mm256_broadcast_ss(&wv[0][j]);
          for (int v = 0; v < V; ++v) acc[0][v] = _mm256_fmadd_ps(wb, _mm256_load_ps(xp + 8 * v), acc[0][v]);
        } else {
          __m256 xv[V];
          for (int v = 0; v < V; ++v) xv[v] = _mm256_load_ps(xp + 8 * v);
          for (int i = 0; i < R; ++i) {
            const __m256 wb = _mm256_broadcast_ss(&wv[i][j]);
            for (int v = 0; v < V; ++v) acc[i][v] = _mm256_fmadd_ps(wb, xv[v], acc[i][v]);
          }
        }
      }
    });
  }
  for (int i = 0; i < R; ++i) {
    alignas(32) float out[8 * V];
    for (int v = 0; v < V; ++v) _mm256_store_ps(out + 8 * v, acc[i][v]);
    for (uint32_t t = 0; t < a.batch; ++t) a.y[static_cast<size_t>(t) * a.y_stride + r0 + static_cast<uint32_t>(i)] = out[t];
  }
}

template <int BITS, int V>
void wide_kernel(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  // R * V accumulators plus V activation vectors fit the 16 ymm registers.
  constexpr int R = V >= 6 ? 1 : 8 / V;
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

void gemv_f32_int_packed_avx2(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  rows_by_bits<1>(a, row_begin, row_end);
}

void gemm_f32_int_packed_small_avx2(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  switch (a.batch) {
    case 1: return rows_by_bits<1>(a, row_begin, row_end);
    case 2: return rows_by_bits<2>(a, row_begin, row_end);
    case 3: return rows_by_bits<3>(a, row_begin, row_end);
    default: return rows_by_bits<4>(a, row_begin, row_end);
  }
}

void gemm_f32_int_packed_wide_avx2(const IntGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  switch (a.batch_stride / 8) {
    case 1: return wide_by_bits<1>(a, row_begin, row_end);
    case 2: return wide_by_bits<2>(a, row_begin, row_end);
    case 4: return wide_by_bits<4>(a, row_begin, row_end);
    case 6: return wide_by_bits<6>(a, row_begin, row_end);
    default: return wide_by_bits<8>(a, row_begin, row_end);
  }
}

}  // namespace submoe::kernels::detail
