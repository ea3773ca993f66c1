// The one place where the model's dense LinearOp calls a matrix kernel: the
// kernels module's dense bf16/f32 row kernels (include/submoe/kernels/dense_gemv.h,
// table chosen once per process), fed at most kMaxKernelBatch tokens per call.
#pragma once

#include <cstddef>

#include "submoe/kernels/dense_gemv.h"
#include "submoe/model/linear_op.h"

namespace submoe::model::detail {

struct DenseMatrix {
  const void* data;  // row-major [rows, cols], aligned to the element size
  DenseDType dtype;
  size_t rows;
  size_t cols;
  bool huge_pages = false;  // in 2 MiB pages (kernels::DenseGemmArgs::prefetch_next_row)
};

// One kernel call over at most kernels::kMaxKernelBatch tokens, ready to run on
// any rows: out[t * ldo + r] = sum_c W[r, c] * in[t * cols + c] for t < n.
// Made on the calling thread (the bf16 kernel's split activations live in its
// buffer until its next call); run() is then safe from any thread.
class DenseRowsCall {
 public:
  DenseRowsCall(const DenseMatrix& w, const float* in, size_t n, float* out, size_t ldo,
                kernels::ActivationType activations);
  void run(size_t r0, size_t r1) const;

 private:
  kernels::DenseRowsFn fn_;
  kernels::DenseGemmArgs args_;
};

// Rows per work item when splitting across threads.
inline constexpr size_t kDenseRowGrain = 16;

}  // namespace submoe::model::detail
