// The fused NF4 LinearOp (kernels/nf4_gemv.h on an owned matrix): the op of
// nf4 artifacts.
#include <algorithm>
#include <cassert>
#include <cstdio>
#include <limits>
#include <vector>

#include "submoe/core/bf16.h"
#include "submoe/kernels/activations.h"
#include "submoe/kernels/nf4_gemv.h"
#include "model/rounded_inputs.h"
#include "submoe/model/linear_op.h"

namespace submoe::model {
namespace {

class Nf4LinearOp final : public LinearOp {
 public:
  Nf4LinearOp(nf4::Nf4Matrix m, const kernels::Nf4GemvKernels& k, kernels::ActivationType activations,
              kernels::ActivationQuant quant)
      : m_(std::move(m)), kernels_(k), activations_(activations), quant_(quant) {}
  size_t in_features() const override { return m_.cols; }
  size_t out_features() const override { return m_.rows; }
  void forward(const float* in, size_t n, float* out, ThreadPool* pool) const override {
    const kernels::Nf4View w = kernels::Nf4View::of(m_);
    const size_t cols = m_.cols, rows = m_.rows;
    for (size_t t0 = 0; t0 < n; t0 += kernels::kMaxKernelBatch) {
      const auto nb = static_cast<uint32_t>(std::min<size_t>(kernels::kMaxKernelBatch, n - t0));
      const float* x = in + t0 * cols;
      float* y = out + t0 * rows;
      x = rounded_inputs(x, nb, cols, activations_, quant_);
      const Status st = kernels::gemm_nf4(kernels_, {w, x, cols, nb, y, rows}, pool);
      if (!st.is_ok()) {  // the shape was validated when the matrix was built: a bug here
        assert(false && "nf4 LinearOp: kernel rejected its arguments");
        std::fill(y, y + nb * rows, std::numeric_limits<float>::quiet_NaN());
      }
    }
  }
  std::string describe() const override {
    char buf[192];
    std::snprintf(buf, sizeof buf, "nf4 [%u, %u] block %u, %s absmax, %.3f bits/weight, fused %s%s", m_.rows,
                  m_.cols, m_.block, std::string(nf4::scales_name(m_.scales)).c_str(),
                  8.0 * static_cast<double>(weight_bytes()) / (double(m_.rows) * m_.cols), isa_name(kernels_.isa),
                  rounding_note(activations_, quant_));
    return buf;
  }
  size_t weight_bytes() const override { return m_.bytes(); }

 private:
  nf4::Nf4Matrix m_;
  const kernels::Nf4GemvKernels& kernels_;
  kernels::ActivationType activations_;
  kernels::ActivationQuant quant_;
};

}  // namespace

std::unique_ptr<LinearOp> make_nf4_linear(nf4::Nf4Matrix m, kernels::ActivationType activations,
                                          kernels::ActivationQuant quant) {
  return std::make_unique<Nf4LinearOp>(std::move(m), kernels::best_nf4_gemv_kernels(), activations, quant);
}

}  // namespace submoe::model
