// The fused SqueezeLLM LinearOp (kernels/squeezellm_gemv.h on an owned
// matrix): the op of squeezellm artifacts.
#include "model/fused_matrix_op.h"
#include "submoe/kernels/squeezellm_gemv.h"

namespace submoe::model {

std::unique_ptr<LinearOp> make_squeezellm_linear(squeezellm::SqueezeMatrix m, kernels::ActivationType activations,
                                                 kernels::ActivationQuant quant) {
  using Op = FusedMatrixOp<squeezellm::SqueezeMatrix, kernels::SqueezeGemvKernels>;
  return std::make_unique<Op>(
      std::move(m), kernels::best_squeezellm_gemv_kernels(), activations, quant,
      [](const kernels::SqueezeGemvKernels& k, const squeezellm::SqueezeMatrix& w, const float* x, uint32_t nb,
         float* y, ThreadPool* pool) {
        kernels::SqueezeGemmArgs a;
        a.w = kernels::SqueezeView::of(w);
        a.x = x;
        a.x_stride = w.cols;
        a.batch = nb;
        a.y = y;
        a.y_stride = w.rows;
        return kernels::gemm_squeezellm(k, a, pool);
      },
      [](const squeezellm::SqueezeMatrix& w) {
        char buf[128];
        std::snprintf(buf, sizeof buf, "squeezellm [%u, %u] %u-bit row tables, %zu exceptions", w.rows, w.cols,
                      w.bits, w.nnz());
        return std::string(buf);
      },
      [](const kernels::SqueezeGemvKernels& k, const squeezellm::SqueezeMatrix& w, const int8_t* xq,
         const float* scales, uint32_t nb, float* y, ThreadPool* pool) {
        return kernels::gemm_squeezellm_i8(k, {kernels::SqueezeView::of(w), xq, w.cols, scales, nb, y, w.rows}, pool);
      });
}

}  // namespace submoe::model
