// The fused MXFP4 LinearOp (kernels/mxfp4_gemv.h on an owned matrix): the
// expert op of GPT-OSS's hub checkpoints and of mxfp4 artifacts.
#include <algorithm>
#include <cassert>
#include <cstdio>
#include <limits>
#include <vector>

#include "submoe/core/bf16.h"
#include "submoe/kernels/activations.h"
#include "submoe/kernels/mxfp4_gemv.h"
#include "submoe/model/linear_op.h"

namespace submoe::model {
namespace {

class Mxfp4LinearOp final : public LinearOp {
 public:
  Mxfp4LinearOp(mxfp4::Mxfp4Matrix m, const kernels::Mxfp4GemvKernels& k, kernels::ActivationType activations,
                kernels::ActivationQuant quant)
      : m_(std::move(m)), kernels_(k), activations_(activations), quant_(quant) {}
  size_t in_features() const override { return m_.cols; }
  size_t out_features() const override { return m_.rows; }
  void forward(const float* in, size_t n, float* out, ThreadPool* pool) const override {
    const kernels::Mxfp4View w{m_.blocks.data(), m_.scales.data(), m_.rows, m_.cols};
    const size_t cols = m_.cols, rows = m_.rows;
    for (size_t t0 = 0; t0 < n; t0 += kernels::kMaxKernelBatch) {
      const auto nb = static_cast<uint32_t>(std::min<size_t>(kernels::kMaxKernelBatch, n - t0));
      const float* x = in + t0 * cols;
      float* y = out + t0 * rows;
      Status st;
      if (quant_ == kernels::ActivationQuant::kInt8) {
        thread_local std::vector<int8_t> q;
        thread_local std::vector<float> s;
        q.resize(nb * cols);
        s.resize(nb);
        const auto view = kernels::ActivationsView::f32(x, nb, cols);
        for (uint32_t t = 0; t < nb; ++t)
          s[t] = kernels::quantize_activations_int8_fast(view, t, static_cast<uint32_t>(cols), &q[t * cols]);
        st = kernels::gemm_mxfp4_i8(kernels_, {w, q.data(), cols, s.data(), nb, y, rows}, pool);
      } else {
        if (activations_ == kernels::ActivationType::kBF16) {  // as a bf16 checkpoint's expert sees its input
          thread_local std::vector<float> rounded;
          rounded.resize(nb * cols);
          for (size_t i = 0; i < nb * cols; ++i) rounded[i] = bf16_to_float(float_to_bf16(x[i]));
          x = rounded.data();
        }
        st = kernels::gemm_mxfp4(kernels_, {w, x, cols, nb, y, rows}, pool);
      }
      if (!st.is_ok()) {  // the shape was validated when the matrix was built: a bug here
        assert(false && "mxfp4 LinearOp: kernel rejected its arguments");
        std::fill(y, y + nb * rows, std::numeric_limits<float>::quiet_NaN());
      }
    }
  }
  std::string describe() const override {
    char buf[160];
    std::snprintf(buf, sizeof buf, "mxfp4 [%u, %u] %.3f bits/weight, fused %s%s", m_.rows, m_.cols,
                  8.0 * static_cast<double>(weight_bytes()) / (double(m_.rows) * m_.cols), isa_name(kernels_.isa),
                  quant_ == kernels::ActivationQuant::kInt8            ? ", int8 activations"
                  : activations_ == kernels::ActivationType::kBF16 ? ", bf16 activations"
                                                                     : "");
    return buf;
  }
  size_t weight_bytes() const override { return m_.bytes(); }

 private:
  mxfp4::Mxfp4Matrix m_;
  const kernels::Mxfp4GemvKernels& kernels_;
  kernels::ActivationType activations_;
  kernels::ActivationQuant quant_;
};

}  // namespace

std::unique_ptr<LinearOp> make_mxfp4_linear(mxfp4::Mxfp4Matrix m, kernels::ActivationType activations,
                                            kernels::ActivationQuant quant) {
  return std::make_unique<Mxfp4LinearOp>(std::move(m), kernels::best_mxfp4_gemv_kernels(), activations, quant);
}

}  // namespace submoe::model
