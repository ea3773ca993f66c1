// Scalar residual-VQ LUT kernels: the shared loops of rvq_gemv_internal.h with
// one float per "vector"; the readable reference of the fast paths.
#include "kernels/rvq_gemv_internal.h"

namespace submoe::kernels::detail {

void rvq_build_tp1_scalar(const RvqGemmArgs& a, uint32_t block_begin, uint32_t block_end) {
  build_tp1_blocks<VecF32x1>(a, block_begin, block_end);
}

void rvq_rows_tp1_scalar(const RvqGemmArgs& a, uint32_t row_begin, uint32_t row_end) {
  rows_tp1_scalar_loads(a, row_begin, row_end);
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
