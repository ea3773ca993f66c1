// Scalar ternary kernels. gemv is a direct port of the GPU kernel's per-lane
// logic (QMOE_NOTES.md "Kernel"): for each codeword, "lanes" 0..27 take their
// 2-bit symbol from word lane / 14 of the dictionary entry at shift
// 4 + 2 * (lane % 14), look up {0, w_min, w_max, 0} and multiply-accumulate; the
// column then advances by the entry length. It is the slow, obviously faithful
// baseline the SIMD paths are measured against.
#include <algorithm>

#include "kernels/ternary_gemv_internal.h"

namespace submoe::kernels::detail {

using ternary::DictEntry;

void gemv_f32_ternary_dict_scalar(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  const ternary::PackedTernaryView& w = a.w;
  const uint8_t* lengths = a.table->lengths.data();
  for (uint32_t r = row_begin; r < row_end; ++r) {
    const float level[4] = {0.0f, bf16_to_float(w.scales[r].w_min), bf16_to_float(w.scales[r].w_max), 0.0f};
    float lane_acc[ternary::kMaxWeightsPerEntry] = {};
    const float* x = a.xs;
    for (int32_t i = w.row_offsets[r]; i < w.row_offsets[r + 1]; ++i) {
      const uint32_t code = w.codes[i];
      const DictEntry& e = w.dict[code];
      for (uint32_t lane = 0; lane < ternary::kMaxWeightsPerEntry; ++lane) {
        const uint32_t word = e.word[lane / ternary::kSlotsPerWord];
        const uint32_t sym = (word >> (4 + 2 * (lane % ternary::kSlotsPerWord))) & 3u;
        lane_acc[lane] += level[sym] * x[lane];
      }
      x += lengths[code];
    }
    float sum = 0.0f;
    for (float v : lane_acc) sum += v;
    a.y[r] = sum;
  }
}

void gemm_f32_ternary_dict_scalar(const TernaryGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  const ternary::PackedTernaryView& w = a.w;
  const uint32_t B = a.batch;
  const size_t bs = a.batch_stride;
  const uint8_t* lengths = a.table->lengths.data();
  const uint64_t* sign_masks = a.table->sign_masks.data();
  float acc[2][kMaxKernelBatch];
  for (uint32_t r = row_begin; r < row_end; ++r) {
    std::fill(&acc[0][0], &acc[0][0] + 2 * kMaxKernelBatch, 0.0f);
    size_t col = 0;
    for (int32_t i = w.row_offsets[r]; i < w.row_offsets[r + 1]; ++i) {
      const uint32_t code = w.codes[i];
      // Decode once: walk the set bits of the entry's sign masks, then apply each
      // nonzero weight to every token.
      for (uint32_t sign = 0; sign < 2; ++sign) {
        for (uint32_t bits = static_cast<uint32_t>(sign_masks[code] >> (32 * sign)); bits != 0; bits &= bits - 1) {
          const float* xr = a.xs + 2 * (col + static_cast<uint32_t>(__builtin_ctz(bits))) * bs;
          for (uint32_t t = 0; t < B; ++t) acc[sign][t] += xr[t];
        }
      }
      col += lengths[code];
    }
    for (uint32_t t = 0; t < B; ++t) a.y[t * a.y_stride + r] = combine_row(acc[0][t], acc[1][t], w.scales[r]);
  }
}

}  // namespace submoe::kernels::detail
