#include "dense_matmul.h"

#include <algorithm>

#include "submoe/kernels/dense_gemv.h"

namespace submoe::model::detail {

void dense_matmul_rows(const DenseMatrix& w, size_t r0, size_t r1, const float* in, size_t n, float* out,
                       size_t ldo) {
  if (r0 >= r1 || n == 0) return;
  static const kernels::DenseGemvKernels& table = kernels::best_dense_gemv_kernels();
  const kernels::DenseRowsFn fn = w.dtype == DenseDType::kF32 ? table.f32 : table.bf16;
  kernels::DenseGemmArgs a;
  a.w = {w.data, w.dtype == DenseDType::kF32 ? kernels::DenseType::kF32 : kernels::DenseType::kBF16,
         static_cast<uint32_t>(w.rows), static_cast<uint32_t>(w.cols), w.cols};
  a.x_stride = w.cols;
  a.y_stride = ldo;
  // Batches beyond the kernel's limit go in slices; each slice re-reads the rows,
  // which at 64 tokens per read costs little next to the FMAs.
  for (size_t t0 = 0; t0 < n; t0 += kernels::kMaxKernelBatch) {
    a.x = in + t0 * w.cols;
    a.batch = static_cast<uint32_t>(std::min<size_t>(kernels::kMaxKernelBatch, n - t0));
    a.y = out + t0 * ldo;
    fn(a, static_cast<uint32_t>(r0), static_cast<uint32_t>(r1));
  }
}

}  // namespace submoe::model::detail
