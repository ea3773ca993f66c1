// AVX2 ternary kernels. Without mask registers and two-source permutes the
// nonzero-slot formulation is the cheapest: batch 1 adds the <= slot_count
// w_max and w_min activations of each codeword with scalar loads (the doubled
// layout turns unused slots into reads of zeros), batches use the shared slot
// kernel with 128/256-bit vectors. Measurements: docs/perf-notes.md.
#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <utility>

#include "kernels/ternary_gemv_internal.h"
#include "kernels/ternary_slots_impl.h"

namespace submoe::kernels::detail {
namespace {

struct ScalarSlotRow {
  float acc[2][2];  // [sign][even/odd slot]: two chains per sign halve the add latency
  const float* xp;
  const uint16_t* code;
};

template <int K>
inline __attribute__((always_inline)) void scalar_slot_step(ScalarSlotRow& s, uint32_t code, const uint8_t* slots,
                                                            uint32_t kslots, const uint8_t* lengths) {
  const uint32_t k = K > 0 ? static_cast<uint32_t>(K) : kslots;
  const uint8_t* rec = slots + static_cast<size_t>(code) * 2 * k;
  for (uint32_t sign = 0; sign < 2; ++sign) {
#pragma GCC unroll 4
    for (uint32_t i = 0; i < k; ++i) s.acc[sign][i & 1] += s.xp[rec[sign * k + i]];
  }
  s.xp += 2 * static_cast<size_t>(lengths[code]);
}

template <int K, int R>
void scalar_slot_rows(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  const ternary::PackedTernaryView& w = a.w;
  const uint8_t* slots = a.table->slots.data();
  const uint8_t* lengths = a.table->lengths.data();
  const uint32_t kslots = a.table->slot_count;
  auto fresh = [&](uint32_t r) { return ScalarSlotRow{{{0, 0}, {0, 0}}, a.xs, w.codes + w.row_offsets[r]}; };
  auto run_row = [&](ScalarSlotRow s, const uint16_t* end, uint32_t r) {
    for (; s.code < end; ++s.code) scalar_slot_step<K>(s, *s.code, slots, kslots, lengths);
    a.y[r] = combine_row(s.acc[0][0] + s.acc[0][1], s.acc[1][0] + s.acc[1][1], w.scales[r]);
  };
  uint32_t r = row_begin;
  for (; r + R <= row_end; r += R) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      ScalarSlotRow s[R] = {fresh(r + static_cast<uint32_t>(I))...};
      int32_t n = INT32_MAX;
      ((n = std::min(n, w.row_offsets[r + I + 1] - w.row_offsets[r + I])), ...);
      for (int32_t j = 0; j < n; ++j) (scalar_slot_step<K>(s[I], s[I].code[j], slots, kslots, lengths), ...);
      ((s[I].code += n), ...);
      (run_row(s[I], w.codes + w.row_offsets[r + I + 1], r + static_cast<uint32_t>(I)), ...);
    }(std::make_index_sequence<R>{});
  }
  for (; r < row_end; ++r) run_row(fresh(r), w.codes + w.row_offsets[r + 1], r);
}

}  // namespace

void gemv_f32_ternary_dict_slots_avx2(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  switch (a.table->slot_count) {
    case 1:
      return scalar_slot_rows<1, 4>(a, row_begin, row_end);
    case 2:
      return scalar_slot_rows<2, 4>(a, row_begin, row_end);
    case 3:
      return scalar_slot_rows<3, 4>(a, row_begin, row_end);
    case 4:
      return scalar_slot_rows<4, 4>(a, row_begin, row_end);
    default:
      return scalar_slot_rows<0, 4>(a, row_begin, row_end);
  }
}

void gemm_f32_ternary_dict_slots_avx2(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  switch (a.batch_stride) {
    case 4:
      return slots_gemm_dispatch<VecF32x4, 1, 4>(a, row_begin, row_end);
    case 8:
      return slots_gemm_dispatch<VecF32x8, 1, 4>(a, row_begin, row_end);
    case 16:
      return slots_gemm_dispatch<VecF32x8, 2, 2>(a, row_begin, row_end);
    case 32:
      return slots_gemm_dispatch<VecF32x8, 4, 1>(a, row_begin, row_end);
    case 48:
      return slots_gemm_dispatch<VecF32x8, 6, 1>(a, row_begin, row_end);
    default:
      return slots_gemm_dispatch<VecF32x8, 8, 1>(a, row_begin, row_end);
  }
}

}  // namespace submoe::kernels::detail
