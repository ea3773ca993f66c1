// The fused SpQR LinearOp (kernels/spqr_gemv.h on an owned matrix): the op of
// spqr artifacts.
#include "model/fused_matrix_op.h"
#include "submoe/kernels/spqr_gemv.h"

namespace submoe::model {

std::unique_ptr<LinearOp> make_spqr_linear(spqr::SpqrMatrix m, kernels::ActivationType activations,
                                           kernels::ActivationQuant quant) {
  using Op = FusedMatrixOp<spqr::SpqrMatrix, kernels::SpqrGemvKernels>;
  return std::make_unique<Op>(
      std::move(m), kernels::best_spqr_gemv_kernels(), activations, quant,
      [](const kernels::SpqrGemvKernels& k, const spqr::SpqrMatrix& w, const float* x, uint32_t nb, float* y,
         ThreadPool* pool) {
        kernels::SpqrGemmArgs a;
        a.w = kernels::SpqrView::of(w);
        a.x = x;
        a.x_stride = w.cols;
        a.batch = nb;
        a.y = y;
        a.y_stride = w.rows;
        return kernels::gemm_spqr(k, a, pool);
      },
      [](const spqr::SpqrMatrix& w) {
        char buf[128];
        std::snprintf(buf, sizeof buf, "spqr [%u, %u] %u-bit groups of 16, %zu exceptions", w.rows, w.cols, w.bits,
                      w.nnz());
        return std::string(buf);
      },
      [](const kernels::SpqrGemvKernels& k, const spqr::SpqrMatrix& w, const int8_t* xq, const float* scales,
         uint32_t nb, float* y, ThreadPool* pool) {
        kernels::SpqrI8Args a;
        a.w = kernels::SpqrView::of(w);
        a.xq = xq;
        a.xq_stride = w.cols;
        a.x_scales = scales;
        a.batch = nb;
        a.y = y;
        a.y_stride = w.rows;
        return kernels::gemm_spqr_i8(k, a, pool);
      });
}

}  // namespace submoe::model
