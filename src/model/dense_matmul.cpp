#include "dense_matmul.h"

namespace submoe::model::detail {

DenseRowsCall::DenseRowsCall(const DenseMatrix& w, const float* in, size_t n, float* out, size_t ldo,
                             kernels::ActivationType activations) {
  static const kernels::DenseGemvKernels& table = kernels::best_dense_gemv_kernels();
  args_.w = {w.data, w.dtype == DenseDType::kF32 ? kernels::DenseType::kF32 : kernels::DenseType::kBF16,
             static_cast<uint32_t>(w.rows), static_cast<uint32_t>(w.cols), w.cols};
  args_.x = in;
  args_.x_stride = w.cols;
  args_.batch = static_cast<uint32_t>(n);
  args_.y = out;
  args_.y_stride = ldo;
  args_.prefetch_next_row = !w.huge_pages;
  fn_ = kernels::prepare_dense_activations(table, &args_, activations);
}

void DenseRowsCall::run(size_t r0, size_t r1) const {
  if (r0 < r1) fn_(args_, static_cast<uint32_t>(r0), static_cast<uint32_t>(r1));
}

}  // namespace submoe::model::detail
