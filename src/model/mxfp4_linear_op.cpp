// The fused MXFP4 LinearOp (kernels/mxfp4_gemv.h on an owned matrix): the
// expert op of GPT-OSS's hub checkpoints and of mxfp4 artifacts.
#include <algorithm>
#include <cassert>
#include <cstdio>
#include <limits>

#include "submoe/kernels/activations.h"
#include "submoe/kernels/mxfp4_gemv.h"
#include "submoe/model/linear_op.h"

namespace submoe::model {
namespace {

class Mxfp4LinearOp final : public LinearOp {
 public:
  Mxfp4LinearOp(mxfp4::Mxfp4Matrix m, const kernels::Mxfp4GemvKernels& k) : m_(std::move(m)), kernels_(k) {}
  size_t in_features() const override { return m_.cols; }
  size_t out_features() const override { return m_.rows; }
  void forward(const float* in, size_t n, float* out, ThreadPool* pool) const override {
    const kernels::Mxfp4View w{m_.blocks.data(), m_.scales.data(), m_.rows, m_.cols};
    for (size_t t0 = 0; t0 < n; t0 += kernels::kMaxKernelBatch) {
      const auto nb = static_cast<uint32_t>(std::min<size_t>(kernels::kMaxKernelBatch, n - t0));
      const Status st = kernels::gemm_mxfp4(kernels_, {w, in + t0 * m_.cols, m_.cols, nb, out + t0 * m_.rows, m_.rows}, pool);
      if (!st.is_ok()) {  // the shape was validated when the matrix was built: a bug here
        assert(false && "mxfp4 LinearOp: kernel rejected its arguments");
        std::fill(out + t0 * m_.rows, out + (t0 + nb) * m_.rows, std::numeric_limits<float>::quiet_NaN());
      }
    }
  }
  std::string describe() const override {
    char buf[128];
    std::snprintf(buf, sizeof buf, "mxfp4 [%u, %u] %.3f bits/weight, fused %s", m_.rows, m_.cols,
                  8.0 * static_cast<double>(weight_bytes()) / (double(m_.rows) * m_.cols), isa_name(kernels_.isa));
    return buf;
  }
  size_t weight_bytes() const override { return m_.bytes(); }

 private:
  mxfp4::Mxfp4Matrix m_;
  const kernels::Mxfp4GemvKernels& kernels_;
};

}  // namespace

std::unique_ptr<LinearOp> make_mxfp4_linear(mxfp4::Mxfp4Matrix m) {
  return std::make_unique<Mxfp4LinearOp>(std::move(m), kernels::best_mxfp4_gemv_kernels());
}

}  // namespace submoe::model
