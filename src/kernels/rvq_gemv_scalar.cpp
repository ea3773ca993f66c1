// Scalar residual-VQ LUT kernels: the shared loops of rvq_gemv_internal.h with
// one float per "vector"; the readable reference of the fast paths. Batch 1
// keeps its int8 tables plain ([block][code]) and sums each row's entries one
// by one; the AVX2 kernel must match it bit for bit.
#include "kernels/rvq_gemv_internal.h"

namespace submoe::kernels::detail {

void rvq_build_i8_scalar(const RvqGemmArgs& a, uint32_t span_begin, uint32_t span_end) {
  build_i8_spans<VecF32x1Fma>(a, span_begin, span_end, [&](uint32_t i, const float* t, float inv) {
    int8_t* q = a.qtable + size_t{i} * kRvqEntries;
    if (inv >= 0.0f) quantize_i8_block(t, inv, q);
    else std::fill(q, q + kRvqEntries, int8_t{0});
  });
}

void rvq_rows_i8_scalar(const RvqGemmArgs& a, uint32_t panel_begin, uint32_t panel_end) {
  const uint32_t tiles = rvq_i8_tiles(a.w.cols);
  for (uint32_t p = panel_begin; p < panel_end; ++p) {
    float* part = a.part + size_t{p} * kRvqPanelRows;
    std::fill(part, part + kRvqPanelRows, 0.0f);
    for (uint32_t t = 0; t < tiles; ++t) {
      int32_t q[kRvqPanelRows] = {};
      for (uint32_t rr = 0; rr < kRvqPanelRows; ++rr) {
        const uint32_t r = p * kRvqPanelRows + rr;
        if (r >= a.w.rows) break;
        const PanelRow codes = panel_row(a.w, r);
        for (uint32_t i = i8_tile_begin(a.w, t); i < i8_tile_end(a.w, t); ++i)
          q[rr] += a.qtable[size_t{i} * kRvqEntries + codes[i]];
      }
      flush_i8_tile(part, q, a.tile_scale[t]);
    }
  }
  write_i8_rows(a, panel_begin, panel_end);
}

void rvq_build_slab_scalar(const RvqGemmArgs& a, uint32_t block_begin, uint32_t block_end) {
  switch (a.token_pad) {
    case 1: return build_slab_blocks<VecF32x1, 1>(a, block_begin, block_end);
    case 2: return build_slab_blocks<VecF32x1, 2>(a, block_begin, block_end);
    case 4: return build_slab_blocks<VecF32x1, 4>(a, block_begin, block_end);
    default: return build_slab_blocks<VecF32x1, 8>(a, block_begin, block_end);
  }
}

void rvq_rows_slab_scalar(const RvqGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  switch (a.token_pad) {
    case 1: return rows_slab<VecF32x1, 1>(a, row_begin, row_end);
    case 2: return rows_slab<VecF32x1, 2>(a, row_begin, row_end);
    case 4: return rows_slab<VecF32x1, 4>(a, row_begin, row_end);
    default: return rows_slab<VecF32x1, 8>(a, row_begin, row_end);
  }
}

}  // namespace submoe::kernels::detail
