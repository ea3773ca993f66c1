// AVX-512 dense kernels: tiles of 4 rows x up to 4 tokens (one row at a time for
// a single token), 16 columns per step, masked loads for the column tail. bf16
// weights are widened with a zero-extend and a 16-bit shift (exact). Streaming
// from DRAM, one core is far below its FMA limit: the loop is shaped for few
// instructions per loaded byte, and each row stream gets a software prefetch
// (docs/perf-notes.md).
// GCC 12: see ternary_gemv_avx512.cpp about -Wmaybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <type_traits>
#include <utility>

#include "kernels/dense_gemv_internal.h"

namespace submoe::kernels::detail {
namespace {

// Software prefetch distance per row stream: into L1 for the 4-row tiles, into
// L2 for a single token's row-by-row stream. Measured cold (2080x6144, 1 thread,
// bf16, 4-row tiles into L1 on a Xeon): none 2130 us, 512 B 1950, 1 KiB 1850,
// 2 KiB 2100, 4 KiB 2020. On the Zen 4 host, the synth bf16 decode (1 thread):
// 1 KiB into L1 16 tok/s (four rows) and 27 (row by row), row by row into L2
// 35, none 33: L1's few outstanding misses fill up (docs/perf-notes.md).
constexpr uint32_t kPrefetchBytes = 1024;

template <typename W>
__m512 load_w(const W* p);
template <>
__m512 load_w<float>(const float* p) {
  return _mm512_loadu_ps(p);
}
template <>
__m512 load_w<bf16_t>(const bf16_t* p) {
  const __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}

template <typename W>
__m512 load_w_masked(const W* p, __mmask16 m);
template <>
__m512 load_w_masked<float>(const float* p, __mmask16 m) {
  return _mm512_maskz_loadu_ps(m, p);
}
template <>
__m512 load_w_masked<bf16_t>(const bf16_t* p, __mmask16 m) {
  const __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}

// A single token reads bf16 rows one at a time: one weight stream, which the
// hardware prefetchers follow, instead of four interleaved ones (f32 weights,
// measured 11% slower that way in 4 KiB pages, keep the 4-row tiles). On the 2-vCPU
// Zen 4 host the synth Qwen3-MoE's bf16 decode went from 15.5 to 35 tok/s (1
// thread) this way with the L2 prefetch below. Every (row, token) result is the
// same sequence of operations in either tiling, so the output does not depend
// on the batch. Batches of two or more keep the 4-row tiles: they are
// compute-bound, and a 4-row tile loads each token's x once for four rows.
constexpr uint32_t kRowByRowMaxBatch = 1;

template <typename W, int RT, int TT>
void dense_tile(const DenseGemmArgs& a, uint32_t r, uint32_t t0) {
  const W* w = static_cast<const W*>(a.w.data) + static_cast<size_t>(r) * a.w.stride;
  const uint32_t cols = a.w.cols;
  const uint32_t main = cols / 16 * 16;
  __m512 acc[RT][TT];
  for (int i = 0; i < RT; ++i) {
    for (int j = 0; j < TT; ++j) acc[i][j] = _mm512_setzero_ps();
  }
  auto step = [&](uint32_t c, auto load_x, auto load_row) {
    __m512 xv[TT];
    for (int j = 0; j < TT; ++j) xv[j] = load_x(a.x + (t0 + j) * a.x_stride + c);
    for (int i = 0; i < RT; ++i) {
      const __m512 wv = load_row(w + i * a.w.stride + c);
      for (int j = 0; j < TT; ++j) acc[i][j] = _mm512_fmadd_ps(wv, xv[j], acc[i][j]);
    }
  };
  uint32_t c = 0;
  constexpr uint32_t kAhead = kPrefetchBytes / sizeof(W);
  if (RT == 1 && a.prefetch_next_row) {
    // In 4 KiB pages: the next row, a page or more ahead, so its page walks
    // and first misses overlap this row's stream (2080x6144 bf16, 1 thread:
    // 1030-1130 us against 1950-3700 with the in-row prefetch).
    for (; c < main; c += 16) {
      if (c % (64 / sizeof(W)) == 0) _mm_prefetch(reinterpret_cast<const char*>(w + a.w.stride + c), _MM_HINT_T1);
      step(c, [](const float* p) { return _mm512_loadu_ps(p); }, [](const W* p) { return load_w<W>(p); });
    }
  }
  for (; c + kAhead < main; c += 16) {
    if (c % (64 / sizeof(W)) == 0) {
      for (int i = 0; i < RT; ++i) {
        // One row at a time into L2, four rows (the tuned original) into L1.
        _mm_prefetch(reinterpret_cast<const char*>(w + i * a.w.stride + c + kAhead), RT == 1 ? _MM_HINT_T1 : _MM_HINT_T0);
      }
    }
    step(c, [](const float* p) { return _mm512_loadu_ps(p); }, [](const W* p) { return load_w<W>(p); });
  }
  for (; c < main; c += 16) {
    step(c, [](const float* p) { return _mm512_loadu_ps(p); }, [](const W* p) { return load_w<W>(p); });
  }
  if (main < cols) {
    const __mmask16 m = static_cast<__mmask16>((1u << (cols - main)) - 1);
    step(main, [m](const float* p) { return _mm512_maskz_loadu_ps(m, p); },
         [m](const W* p) { return load_w_masked<W>(p, m); });
  }
  for (int i = 0; i < RT; ++i) {
    for (int j = 0; j < TT; ++j) a.y[(t0 + j) * a.y_stride + r + i] = _mm512_reduce_add_ps(acc[i][j]);
  }
}

template <typename W, int RT>
void dense_tokens(const DenseGemmArgs& a, uint32_t r) {
  uint32_t t = 0;
  for (; t + 4 <= a.batch; t += 4) dense_tile<W, RT, 4>(a, r, t);
  switch (a.batch - t) {
    case 3:
      return dense_tile<W, RT, 3>(a, r, t);
    case 2:
      return dense_tile<W, RT, 2>(a, r, t);
    case 1:
      return dense_tile<W, RT, 1>(a, r, t);
    default:
      return;
  }
}

template <typename W>
void dense_rows(const DenseGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  uint32_t r = row_begin;
  if (a.batch > kRowByRowMaxBatch || std::is_same_v<W, float>) {
    for (; r + 4 <= row_end; r += 4) dense_tokens<W, 4>(a, r);
  }
  for (; r < row_end; ++r) dense_tokens<W, 1>(a, r);
}

}  // namespace

void gemv_f32_dense_avx512(const DenseGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  dense_rows<float>(a, row_begin, row_end);
}
void gemv_bf16_dense_avx512(const DenseGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  dense_rows<bf16_t>(a, row_begin, row_end);
}

}  // namespace submoe::kernels::detail
