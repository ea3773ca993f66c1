// Nonzero-slot small-batch kernel, shared by the AVX2 and AVX-512 translation
// units (each compiles it with its own ISA flags). Everything here has internal
// linkage on purpose: the two copies must never be merged by the linker, or an
// AVX-512 instantiation could end up on the AVX2 path.
//
// Formulation (docs/perf-notes.md, "batch"): activations are transposed into the
// doubled layout, so every nonzero weight costs one vector add of B tokens. Each
// entry's slot record lists its w_max and w_min offsets, padded to slot_count
// with a slot that reads the zero row; the per-codeword work is fixed (no data-
// dependent branch) and the codeword is decoded once for all tokens.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "kernels/ternary_gemv_internal.h"

namespace submoe::kernels::detail {
namespace {  // NOLINT: internal linkage per ISA translation unit, see above

struct VecF32x4 {
  using T = __m128;
  static constexpr int kWidth = 4;
  static T zero() { return _mm_setzero_ps(); }
  static T load(const float* p) { return _mm_loadu_ps(p); }
  static T add(T a, T b) { return _mm_add_ps(a, b); }
  static void store(float* p, T v) { _mm_storeu_ps(p, v); }
};

struct VecF32x8 {
  using T = __m256;
  static constexpr int kWidth = 8;
  static T zero() { return _mm256_setzero_ps(); }
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static T add(T a, T b) { return _mm256_add_ps(a, b); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
};

// Per-row state of the slot kernel: NV vectors of w_max sums and of w_min sums,
// the current column's row pointer, the row's codeword cursor.
template <class V, int NV>
struct SlotRow {
  typename V::T acc[2][NV];
  const float* xp;
  const uint16_t* code;
};

// Sum of the slot vectors of one sign for vector v: a balanced tree, so the
// row's accumulator sees one add per codeword (its add latency, not the slot
// count, bounds the chain).
template <class V, int NV, int K>
inline __attribute__((always_inline)) typename V::T slot_sum(const float* xp, const uint8_t* rec, int v) {
  constexpr size_t kStride = static_cast<size_t>(NV) * V::kWidth;
  auto at = [&](int i) { return V::load(xp + rec[i] * kStride + v * V::kWidth); };
  if constexpr (K == 1) {
    return at(0);
  } else if constexpr (K == 2) {
    return V::add(at(0), at(1));
  } else if constexpr (K == 3) {
    return V::add(V::add(at(0), at(1)), at(2));
  } else {
    static_assert(K == 4);
    return V::add(V::add(at(0), at(1)), V::add(at(2), at(3)));
  }
}

template <class V, int NV, int K>
inline __attribute__((always_inline)) void slot_step(SlotRow<V, NV>& s, uint32_t code, const uint8_t* slots,
                                                     uint32_t kslots, const uint8_t* lengths) {
  constexpr size_t kStride = static_cast<size_t>(NV) * V::kWidth;  // floats per layout row
  if constexpr (K > 0) {
    const uint8_t* rec = slots + static_cast<size_t>(code) * 2 * K;
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      s.acc[0][v] = V::add(s.acc[0][v], slot_sum<V, NV, K>(s.xp, rec, v));
      s.acc[1][v] = V::add(s.acc[1][v], slot_sum<V, NV, K>(s.xp, rec + K, v));
    }
  } else {
    // Generic slot count (dictionaries for low p0): a plain loop.
    const uint8_t* rec = slots + static_cast<size_t>(code) * 2 * kslots;
    for (uint32_t sign = 0; sign < 2; ++sign) {
      for (uint32_t i = 0; i < kslots; ++i) {
        const float* p = s.xp + rec[sign * kslots + i] * kStride;
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) s.acc[sign][v] = V::add(s.acc[sign][v], V::load(p + v * V::kWidth));
      }
    }
  }
  s.xp += static_cast<size_t>(lengths[code]) * 2 * kStride;
}

template <class V, int NV>
inline void slot_finish(const SlotRow<V, NV>& s, const TernaryGemmArgs& a, uint32_t r) {
  alignas(64) float sums[2][NV * V::kWidth];
  for (int v = 0; v < NV; ++v) {
    V::store(sums[0] + v * V::kWidth, s.acc[0][v]);
    V::store(sums[1] + v * V::kWidth, s.acc[1][v]);
  }
  const ternary::RowScales sc = a.w.scales[r];
  for (uint32_t t = 0; t < a.batch; ++t) a.y[t * a.y_stride + r] = combine_row(sums[0][t], sums[1][t], sc);
}

// Rows [row_begin, row_end) in groups of R interleaved rows (independent chains
// for the out-of-order core), the common codeword count first, then each row's
// remainder on its own.
template <class V, int NV, int K, int R>
void slots_gemm_rows(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  const ternary::PackedTernaryView& w = a.w;
  const uint8_t* slots = a.table->slots.data();
  const uint8_t* lengths = a.table->lengths.data();
  const uint32_t kslots = a.table->slot_count;
  auto run_row = [&](SlotRow<V, NV> s, const uint16_t* end, uint32_t r) {
    for (; s.code < end; ++s.code) slot_step<V, NV, K>(s, *s.code, slots, kslots, lengths);
    slot_finish<V, NV>(s, a, r);
  };
  uint32_t r = row_begin;
  for (; r + R <= row_end; r += R) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      SlotRow<V, NV> s[R];
      int32_t n = INT32_MAX;
      ((s[I].xp = a.xs, s[I].code = w.codes + w.row_offsets[r + I],
        n = std::min(n, w.row_offsets[r + I + 1] - w.row_offsets[r + I])),
       ...);
      for (int v = 0; v < NV; ++v) {
        ((s[I].acc[0][v] = V::zero(), s[I].acc[1][v] = V::zero()), ...);
      }
      for (int32_t j = 0; j < n; ++j) {
        (slot_step<V, NV, K>(s[I], s[I].code[j], slots, kslots, lengths), ...);
      }
      ((s[I].code += n), ...);
      (run_row(s[I], w.codes + w.row_offsets[r + I + 1], r + static_cast<uint32_t>(I)), ...);
    }(std::make_index_sequence<R>{});
  }
  for (; r < row_end; ++r) {
    SlotRow<V, NV> s;
    s.xp = a.xs;
    s.code = w.codes + w.row_offsets[r];
    for (int v = 0; v < NV; ++v) s.acc[0][v] = s.acc[1][v] = V::zero();
    run_row(s, w.codes + w.row_offsets[r + 1], r);
  }
}

// Picks the instantiation for the table's slot count: 1..4 unrolled (every
// dictionary with p0 >= 0.8 here), anything larger through the generic loop.
template <class V, int NV, int R>
void slots_gemm_dispatch(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  switch (a.table->slot_count) {
    case 1:
      return slots_gemm_rows<V, NV, 1, R>(a, row_begin, row_end);
    case 2:
      return slots_gemm_rows<V, NV, 2, R>(a, row_begin, row_end);
    case 3:
      return slots_gemm_rows<V, NV, 3, R>(a, row_begin, row_end);
    case 4:
      return slots_gemm_rows<V, NV, 4, R>(a, row_begin, row_end);
    default:
      return slots_gemm_rows<V, NV, 0, R>(a, row_begin, row_end);
  }
}

}  // namespace
}  // namespace submoe::kernels::detail
