// AVX-512 ternary kernels. Design and measurements: docs/perf-notes.md.
//
// gemv perm (batch 1, tables with <= 4 w_max and <= 4 w_min per entry): per
// codeword one qword broadcast of the entry's permute record, one variable shift
// to put each slot's offset into its own lane, two loads of the 28-float x window
// (the second zero-masked to 12 lanes, which gives the zero lane unused slots
// select), one two-source permute that gathers the <= 8 selected activations, one
// add. No mask-register writes per codeword (kmov throughput is 1/cycle here and
// the masked-add formulation needs four), no data-dependent branch. Eight rows are
// interleaved so the independent chains keep the ports busy.
//
// gemv masks (any table): four mask-register writes (GCC loads the 16-bit masks
// into GPRs and moves them; kmovw from memory measured the same, 1 per cycle) and
// four masked adds per codeword; ~6.6 cycles per codeword with four rows.
//
// gemm (B >= 2): the shared nonzero-slot kernel (ternary_slots_impl.h) with
// 128/256/512-bit vectors depending on the batch.
//
// GCC 12's AVX-512 intrinsics build "undefined" vectors by self-initialization
// (_mm512_undefined_*), which -O3 reports as maybe-uninitialized at every use
// (GCC bug 105593, fixed in GCC 13). The values are never read.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <utility>

#include "kernels/ternary_gemv_internal.h"
#include "kernels/ternary_slots_impl.h"

namespace submoe::kernels::detail {
namespace {

// ---- permute kernel --------------------------------------------------------

struct PermRow {
  __m512 acc;  // lanes 0-3: w_max slots, 4-7: w_min slots, 8-15: ignored
  const float* xp;
  const uint16_t* code;
};

struct PermConsts {
  __m512i shifts;   // lane l: 8 * (l / 2) for l < 8; lanes 8-15 shift everything out
  __mmask16 window_hi;  // the x window's second half holds weights 16..27
};

inline __attribute__((always_inline)) void perm_step(PermRow& s, uint32_t code, const uint64_t* perm,
                                                     const PermConsts& k) {
  const __m512i rec = _mm512_set1_epi64(static_cast<long long>(perm[code]));
  const uint64_t lo = static_cast<uint64_t>(_mm_cvtsi128_si64(_mm512_castsi512_si128(rec)));
  const __m512i idx = _mm512_srlv_epi32(rec, k.shifts);
  const __m512 a = _mm512_loadu_ps(s.xp);
  const __m512 b = _mm512_maskz_loadu_ps(k.window_hi, s.xp + 16);
  s.acc = _mm512_add_ps(s.acc, _mm512_permutex2var_ps(a, idx, b));
  // Entry length from bits 5-7 of record bytes 0 and 1 (ternary_kernel_table.h).
  s.xp += _pext_u64(lo, 0xE0E0u);
}

inline void perm_finish(const PermRow& s, const TernaryGemmArgs& a, uint32_t r) {
  alignas(64) float t[16];
  _mm512_store_ps(t, s.acc);
  a.y[r] = combine_row((t[0] + t[1]) + (t[2] + t[3]), (t[4] + t[5]) + (t[6] + t[7]), a.w.scales[r]);
}

template <int R>
void perm_rows(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  const ternary::PackedTernaryView& w = a.w;
  const uint64_t* perm = a.table->perm.data();
  PermConsts k;
  k.shifts = _mm512_setr_epi32(0, 0, 8, 8, 16, 16, 24, 24, 32, 32, 32, 32, 32, 32, 32, 32);
  k.window_hi = 0x0FFF;
  auto run_row = [&](PermRow s, const uint16_t* end, uint32_t r) {
    for (; s.code < end; ++s.code) perm_step(s, *s.code, perm, k);
    perm_finish(s, a, r);
  };
  uint32_t r = row_begin;
  for (; r + R <= row_end; r += R) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      PermRow s[R];
      int32_t n = INT32_MAX;
      ((s[I].acc = _mm512_setzero_ps(), s[I].xp = a.xs, s[I].code = w.codes + w.row_offsets[r + I],
        n = std::min(n, w.row_offsets[r + I + 1] - w.row_offsets[r + I])),
       ...);
      // The next row group's codewords follow this group's in memory; one line of
      // them is prefetched per step so they are close when that group starts
      // (cold 2080x6144: min 957 -> 912 us; T1 and T0 alike, NTA slower: 1030).
      const char* next = reinterpret_cast<const char*>(w.codes + w.row_offsets[std::min(r + 2 * R, row_end)]);
      const char* ahead = reinterpret_cast<const char*>(w.codes + w.row_offsets[r + R]);
      for (int32_t j = 0; j < n; ++j) {
        if (ahead < next) {
          _mm_prefetch(ahead, _MM_HINT_T1);
          ahead += 64;
        }
        (perm_step(s[I], s[I].code[j], perm, k), ...);
      }
      ((s[I].code += n), ...);
      (run_row(s[I], w.codes + w.row_offsets[r + I + 1], r + static_cast<uint32_t>(I)), ...);
    }(std::make_index_sequence<R>{});
  }
  for (; r < row_end; ++r) run_row(PermRow{_mm512_setzero_ps(), a.xs, w.codes + w.row_offsets[r]},
                                   w.codes + w.row_offsets[r + 1], r);
}

// ---- masked-add kernel -----------------------------------------------------

struct MaskRow {
  __m512 plus_lo, plus_hi, minus_lo, minus_hi;
  const float* xp;
  const uint16_t* code;
};

inline __attribute__((always_inline)) void mask_step(MaskRow& s, uint32_t code, const TernaryMaskRecord* masks,
                                                     const uint8_t* lengths) {
  const TernaryMaskRecord m = masks[code];
  const __m512 a = _mm512_loadu_ps(s.xp);
  const __m512 b = _mm512_loadu_ps(s.xp + 16);
  s.plus_lo = _mm512_mask_add_ps(s.plus_lo, m.plus_lo, s.plus_lo, a);
  s.plus_hi = _mm512_mask_add_ps(s.plus_hi, m.plus_hi, s.plus_hi, b);
  s.minus_lo = _mm512_mask_add_ps(s.minus_lo, m.minus_lo, s.minus_lo, a);
  s.minus_hi = _mm512_mask_add_ps(s.minus_hi, m.minus_hi, s.minus_hi, b);
  s.xp += lengths[code];
}

inline void mask_finish(const MaskRow& s, const TernaryGemmArgs& a, uint32_t r) {
  const float plus = _mm512_reduce_add_ps(_mm512_add_ps(s.plus_lo, s.plus_hi));
  const float minus = _mm512_reduce_add_ps(_mm512_add_ps(s.minus_lo, s.minus_hi));
  a.y[r] = combine_row(plus, minus, a.w.scales[r]);
}

template <int R>
void mask_rows(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  const ternary::PackedTernaryView& w = a.w;
  const TernaryMaskRecord* masks = a.table->masks.data();
  const uint8_t* lengths = a.table->lengths.data();
  auto fresh = [&](uint32_t r) {
    const __m512 z = _mm512_setzero_ps();
    return MaskRow{z, z, z, z, a.xs, w.codes + w.row_offsets[r]};
  };
  auto run_row = [&](MaskRow s, const uint16_t* end, uint32_t r) {
    for (; s.code < end; ++s.code) mask_step(s, *s.code, masks, lengths);
    mask_finish(s, a, r);
  };
  uint32_t r = row_begin;
  for (; r + R <= row_end; r += R) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      MaskRow s[R] = {fresh(r + static_cast<uint32_t>(I))...};
      int32_t n = INT32_MAX;
      ((n = std::min(n, w.row_offsets[r + I + 1] - w.row_offsets[r + I])), ...);
      for (int32_t j = 0; j < n; ++j) (mask_step(s[I], s[I].code[j], masks, lengths), ...);
      ((s[I].code += n), ...);
      (run_row(s[I], w.codes + w.row_offsets[r + I + 1], r + static_cast<uint32_t>(I)), ...);
    }(std::make_index_sequence<R>{});
  }
  for (; r < row_end; ++r) run_row(fresh(r), w.codes + w.row_offsets[r + 1], r);
}

struct VecF32x16 {
  using T = __m512;
  static constexpr int kWidth = 16;
  static T zero() { return _mm512_setzero_ps(); }
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static T add(T a, T b) { return _mm512_add_ps(a, b); }
  static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
};

}  // namespace

void gemv_f32_ternary_dict_perm_avx512(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  perm_rows<8>(a, row_begin, row_end);
}

void gemv_f32_ternary_dict_masks_avx512(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  mask_rows<4>(a, row_begin, row_end);
}

void gemm_f32_ternary_dict_slots_avx512(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  switch (a.batch_stride) {
    case 4:
      return slots_gemm_dispatch<VecF32x4, 1, 4>(a, row_begin, row_end);
    case 8:
      return slots_gemm_dispatch<VecF32x8, 1, 4>(a, row_begin, row_end);
    case 16:
      return slots_gemm_dispatch<VecF32x16, 1, 4>(a, row_begin, row_end);
    case 32:
      return slots_gemm_dispatch<VecF32x16, 2, 2>(a, row_begin, row_end);
    case 48:
      return slots_gemm_dispatch<VecF32x16, 3, 2>(a, row_begin, row_end);
    default:
      return slots_gemm_dispatch<VecF32x16, 4, 2>(a, row_begin, row_end);
  }
}

}  // namespace submoe::kernels::detail
