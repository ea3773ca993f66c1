// The fused SqueezeLLM LinearOp (kernels/spqr_gemv.h on an owned
// matrix): the op of squeezellm artifacts.
#include <algorithm>
#include <cassert>
#include <cstdio>
#include <limits>

#include "model/rounded_inputs.h"
#include "submoe/kernels/spqr_gemv.h"
#include "submoe/model/linear_op.h"

namespace submoe::model {
namespace {

class SpqrLinearOp final : public LinearOp {
 public:
  SpqrLinearOp(spqr::SpqrMatrix m, const kernels::SpqrGemvKernels& k,
                  kernels::ActivationType activations, kernels::ActivationQuant quant)
      : m_(std::move(m)), kernels_(k), activations_(activations), quant_(quant) {}
  size_t in_features() const override { return m_.cols; }
  size_t out_features() const override { return m_.rows; }
  void forward(const float* in, size_t n, float* out, ThreadPool* pool) const override {
    const kernels::SpqrView w = kernels::SpqrView::of(m_);
    const size_t cols = m_.cols, rows = m_.rows;
    for (size_t t0 = 0; t0 < n; t0 += kernels::kMaxKernelBatch) {
      const auto nb = static_cast<uint32_t>(std::min<size_t>(kernels::kMaxKernelBatch, n - t0));
      const float* x = rounded_inputs(in + t0 * cols, nb, cols, activations_, quant_);
      float* y = out + t0 * rows;
      kernels::SpqrGemmArgs args;
      args.w = w;
      args.x = x;
      args.x_stride = cols;
      args.batch = nb;
      args.y = y;
      args.y_stride = rows;
      const Status st = kernels::gemm_spqr(kernels_, args, pool);
      if (!st.is_ok()) {  // the shape was validated when the matrix was built: a bug here
        assert(false && "spqr LinearOp: kernel rejected its arguments");
        std::fill(y, y + nb * rows, std::numeric_limits<float>::quiet_NaN());
      }
    }
  }
  std::string describe() const override {
    char buf[192];
    std::snprintf(buf, sizeof buf, "spqr [%u, %u] %u-bit groups of 16, %zu exceptions, %.3f bits/weight, fused %s%s",
                  m_.rows, m_.cols, m_.bits, m_.nnz(),
                  8.0 * static_cast<double>(weight_bytes()) / (double(m_.rows) * m_.cols), isa_name(kernels_.isa),
                  rounding_note(activations_, quant_));
    return buf;
  }
  size_t weight_bytes() const override { return m_.bytes(); }

 private:
  spqr::SpqrMatrix m_;
  const kernels::SpqrGemvKernels& kernels_;
  kernels::ActivationType activations_;
  kernels::ActivationQuant quant_;
};

}  // namespace

std::unique_ptr<LinearOp> make_spqr_linear(spqr::SpqrMatrix m, kernels::ActivationType activations,
                                                 kernels::ActivationQuant quant) {
  return std::make_unique<SpqrLinearOp>(std::move(m), kernels::best_spqr_gemv_kernels(), activations, quant);
}

}  // namespace submoe::model
