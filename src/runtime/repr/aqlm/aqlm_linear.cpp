#include "runtime/repr/aqlm/aqlm_linear.h"

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

class AqlmLinearOp final : public model::LinearOp {
 public:
  AqlmLinearOp(kernels::AqlmPanels panels, ExecutionMode mode, const kernels::AqlmGemvKernels& k)
      : panels_(std::move(panels)), mode_(mode), kernels_(k) {}

  size_t in_features() const override { return panels_.cols; }
  size_t out_features() const override { return panels_.rows; }

  void forward(const float* in, size_t n, float* out, ThreadPool* pool) const override {
    const uint32_t rows = panels_.rows, cols = panels_.cols;
    ThreadPool* p = size_t{rows} * cols * n >= detail::kParallelMinMacs ? pool : nullptr;
    for (size_t t0 = 0; t0 < n; t0 += kernels::kMaxKernelBatch) {
      const auto nb = static_cast<uint32_t>(std::min<size_t>(kernels::kMaxKernelBatch, n - t0));
      const float* src = in + t0 * cols;
      const size_t count = size_t{nb} * cols;
      const float* x = src;
      if (mode_ != ExecutionMode::kFused) {
        const std::span<float> buf = detail::thread_workspace(count);
        if (mode_ == ExecutionMode::kFusedBf16) {
          for (size_t i = 0; i < count; ++i) buf[i] = bf16_to_float(float_to_bf16(src[i]));
        } else {
          thread_local std::vector<int8_t> q;
          q.resize(cols);
          const auto view = kernels::ActivationsView::f32(src, nb, cols);
          for (uint32_t t = 0; t < nb; ++t) {
            const float s = kernels::quantize_activations_int8(view, t, cols, q.data());
            for (uint32_t c = 0; c < cols; ++c) buf[size_t{t} * cols + c] = s * q[c];
          }
        }
        x = buf.data();
      }
      float* y = out + t0 * rows;
      const Status st = kernels::gemm_aqlm(kernels_, panels_, x, nb, y, p);
      if (!st.is_ok()) {  // shapes are checked when the op is built: a bug here
        assert(false && "aqlm LinearOp: kernel rejected its arguments");
        std::fill(y, y + size_t{nb} * rows, std::numeric_limits<float>::quiet_NaN());
      }
    }
  }

  std::string describe() const override {
    char buf[160];
    std::snprintf(buf, sizeof buf, "aqlm %s [%u, %u] %.3f bits/weight, fused %s%s", panels_.shape.name().c_str(),
                  panels_.rows, panels_.cols,
                  8.0 * static_cast<double>(weight_bytes()) / (double(panels_.rows) * panels_.cols),
                  isa_name(kernels_.isa),
                  mode_ == ExecutionMode::kFusedBf16   ? ", bf16 activations"
                  : mode_ == ExecutionMode::kFusedInt8 ? ", int8 activations (dequantized into the f32 kernel)"
                                                       : "");
    return buf;
  }
  // The matrix's ledger bytes (codes, codebooks, scales), as stored in the artifact.
  size_t weight_bytes() const override { return aqlm::matrix_bytes(panels_.rows, panels_.cols, panels_.shape); }

 private:
  kernels::AqlmPanels panels_;
  ExecutionMode mode_;
  const kernels::AqlmGemvKernels& kernels_;
};

}  // namespace

Result<std::unique_ptr<model::LinearOp>> make_aqlm_linear(const aqlm::AqlmMatrix& m, ExecutionMode mode,
                                                          const kernels::AqlmGemvKernels& k) {
  SUBMOE_ASSIGN_OR_RETURN(kernels::AqlmPanels panels, kernels::AqlmPanels::pack(m));
  return std::unique_ptr<model::LinearOp>(new AqlmLinearOp(std::move(panels), mode, k));
}

}  // namespace submoe::runtime::repr
