// The fused NF4 LinearOp (kernels/nf4_gemv.h on an owned matrix): the op of
// nf4 artifacts.
#include "model/fused_matrix_op.h"
#include "submoe/kernels/nf4_gemv.h"

namespace submoe::model {

std::unique_ptr<LinearOp> make_nf4_linear(nf4::Nf4Matrix m, kernels::ActivationType activations,
                                          kernels::ActivationQuant quant) {
  using Op = FusedMatrixOp<nf4::Nf4Matrix, kernels::Nf4GemvKernels>;
  return std::make_unique<Op>(
      std::move(m), kernels::best_nf4_gemv_kernels(), activations, quant,
      [](const kernels::Nf4GemvKernels& k, const nf4::Nf4Matrix& w, const float* x, uint32_t nb, float* y,
         ThreadPool* pool) { return kernels::gemm_nf4(k, {kernels::Nf4View::of(w), x, w.cols, nb, y, w.rows}, pool); },
      [](const nf4::Nf4Matrix& w) {
        char buf[128];
        std::snprintf(buf, sizeof buf, "nf4 [%u, %u] block %u, %s absmax", w.rows, w.cols, w.block,
                      std::string(nf4::scales_name(w.scales)).c_str());
        return std::string(buf);
      },
      [](const kernels::Nf4GemvKernels& k, const nf4::Nf4Matrix& w, const int8_t* xq, const float* scales,
         uint32_t nb, float* y, ThreadPool* pool) {
        return kernels::gemm_nf4_i8(k, {kernels::Nf4View::of(w), xq, w.cols, scales, nb, y, w.rows}, pool);
      });
}

}  // namespace submoe::model
