// The scalar E8P rows: each code decoded by the codec's own definition
// (e8p::quarters), the reference the vector rows are tested against.
#include <cstdint>

#include "e8p_gemv_internal.h"

namespace submoe::kernels::detail {
namespace {

// Stage k's quarters (stage 1, or E8P stage 2) or halves (1-bit stage 2) of
// lane `lane` of a chunk.
inline void stage_values(const uint8_t* chunk, uint32_t stage, e8p::Stage2 s2, uint32_t lane, int8_t out[e8p::kDim]) {
  const uint8_t* base = chunk + 2 * kE8pChunkCodes * stage;
  if (stage == 1 && s2 == e8p::Stage2::kOneBit) {
    const auto& p = e8p::one_bit_halves()[base[lane]];
    for (uint32_t c = 0; c < e8p::kDim; ++c) out[c] = p[c];
    return;
  }
  e8p::quarters(static_cast<uint16_t>((uint32_t{base[lane]} << 8) | base[kE8pChunkCodes + lane]), out);
}

template <typename X, typename Acc>
void sums_of_row(const E8pPanels& w, uint32_t r, const X* x, Acc* s1, Acc* s2) {
  const uint8_t* row = w.row(r);
  const uint32_t stages = w.stage2 == e8p::Stage2::kNone ? 1 : 2;
  Acc acc[2] = {0, 0};
  for (uint32_t j = 0; j < w.chunks; ++j) {
    const uint8_t* chunk = row + size_t{j} * w.chunk_bytes;
    const X* xj = x + size_t{j} * kE8pChunkCols;
    for (uint32_t lane = 0; lane < kE8pChunkCodes; ++lane)
      for (uint32_t s = 0; s < stages; ++s) {
        int8_t q[e8p::kDim];
        stage_values(chunk, s, w.stage2, lane, q);
        for (uint32_t c = 0; c < e8p::kDim; ++c)
          acc[s] += static_cast<Acc>(q[c]) * static_cast<Acc>(xj[c * kE8pChunkCodes + lane]);
      }
  }
  *s1 = acc[0];
  *s2 = acc[1];
}

}  // namespace

void e8p_rows_scalar(const E8pArgs& a, uint32_t row_begin, uint32_t row_end) {
  const E8pPanels& w = *a.w;
  const float m2 = e8p_stage2_multiplier(w.stage2);
  for (uint32_t t = 0; t < a.batch; ++t)
    for (uint32_t r = row_begin; r < row_end; ++r) {
      float s1, s2;
      sums_of_row(w, r, a.x + size_t{t} * w.padded_cols(), &s1, &s2);
      a.y[t * a.y_stride + r] = e8p_combine(w.scales.data()[r], s1, s2, m2);
    }
}

void e8p_rows_i8_scalar(const E8pArgs& a, uint32_t row_begin, uint32_t row_end) {
  const E8pPanels& w = *a.w;
  const float m2 = e8p_stage2_multiplier(w.stage2);
  for (uint32_t t = 0; t < a.batch; ++t)
    for (uint32_t r = row_begin; r < row_end; ++r) {
      int32_t s1, s2;
      sums_of_row(w, r, a.xq + size_t{t} * w.padded_cols(), &s1, &s2);
      a.y[t * a.y_stride + r] = e8p_combine(w.scales.data()[r] * a.xq_scales[t], static_cast<float>(s1),
                                            static_cast<float>(s2), m2);
    }
}

}  // namespace submoe::kernels::detail
