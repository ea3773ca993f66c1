#include "runtime/repr/e8p/e8p_linear.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <limits>
#include <vector>

#include "runtime/op_workspace.h"
#include "submoe/core/bf16.h"
#include "submoe/kernels/activations.h"

namespace submoe::runtime::repr {
namespace {

class E8pLinearOp final : public model::LinearOp {
 public:
  E8pLinearOp(kernels::E8pPanels panels, std::optional<RvqRotation> rot, ExecutionMode mode,
              const kernels::E8pGemvKernels& k)
      : panels_(std::move(panels)), rot_(std::move(rot)), mode_(mode), kernels_(k) {}

  size_t in_features() const override { return panels_.cols; }
  size_t out_features() const override { return panels_.rows; }

  void forward(const float* in, size_t n, float* out, ThreadPool* pool) const override {
    const uint32_t rows = panels_.rows, cols = panels_.cols;
    ThreadPool* p = size_t{rows} * cols * n >= detail::kParallelMinMacs ? pool : nullptr;
    for (size_t t0 = 0; t0 < n; t0 += kernels::kMaxKernelBatch) {
      const auto nb = static_cast<uint32_t>(std::min<size_t>(kernels::kMaxKernelBatch, n - t0));
      const std::span<float> x = detail::thread_workspace(size_t{nb} * cols);
      const float* src = in + t0 * cols;
      const size_t count = size_t{nb} * cols;
      if (mode_ == ExecutionMode::kFusedBf16) {
        for (size_t i = 0; i < count; ++i) x[i] = bf16_to_float(float_to_bf16(src[i]));
      } else {
        std::copy(src, src + count, x.data());
      }
      Status st = rot_ ? rot_->in.forward(x.data(), nb, cols) : Status::ok();
      float* y = out + t0 * rows;
      if (st.is_ok() && mode_ == ExecutionMode::kFusedInt8) {
        thread_local std::vector<int8_t> q;
        thread_local std::vector<float> scales;
        q.resize(count);
        scales.resize(nb);
        const auto view = kernels::ActivationsView::f32(x.data(), nb, cols);
        for (uint32_t t = 0; t < nb; ++t) scales[t] = kernels::quantize_activations_int8(view, t, cols, &q[size_t{t} * cols]);
        st = kernels::gemm_e8p_i8(kernels_, panels_, q.data(), scales.data(), nb, y, p);
      } else if (st.is_ok()) {
        st = kernels::gemm_e8p(kernels_, panels_, x.data(), nb, y, p);
      }
      if (st.is_ok() && rot_) st = rot_->out.transpose(y, nb, rows);
      if (!st.is_ok()) {  // shapes are checked when the op is built: a bug here
        assert(false && "e8p LinearOp: kernel rejected its arguments");
        std::fill(y, y + size_t{nb} * rows, std::numeric_limits<float>::quiet_NaN());
      }
    }
  }

  std::string describe() const override {
    char buf[160];
    std::snprintf(buf, sizeof buf, "e8p %u bits [%u, %u] %.3f bits/weight, fused %s%s%s", panels_.bits, panels_.rows,
                  panels_.cols, 8.0 * static_cast<double>(weight_bytes()) / (double(panels_.rows) * panels_.cols),
                  isa_name(kernels_.isa), rot_ ? ", rht" : "",
                  mode_ == ExecutionMode::kFusedBf16   ? ", bf16 activations"
                  : mode_ == ExecutionMode::kFusedInt8 ? ", int8 activations (rotated)"
                                                       : "");
    return buf;
  }
  // The matrix's ledger bytes (codes, residual, scales), as stored in the artifact.
  size_t weight_bytes() const override { return e8p::matrix_bytes(panels_.rows, panels_.cols, panels_.bits); }

 private:
  kernels::E8pPanels panels_;
  std::optional<RvqRotation> rot_;
  ExecutionMode mode_;
  const kernels::E8pGemvKernels& kernels_;
};

}  // namespace

Result<std::unique_ptr<model::LinearOp>> make_e8p_linear(const e8p::E8pMatrix& m, std::optional<RvqRotation> rotation,
                                                         ExecutionMode mode, const kernels::E8pGemvKernels& k) {
  SUBMOE_ASSIGN_OR_RETURN(kernels::E8pPanels panels, kernels::E8pPanels::pack(m));
  return std::unique_ptr<model::LinearOp>(new E8pLinearOp(std::move(panels), std::move(rotation), mode, k));
}

}  // namespace submoe::runtime::repr
