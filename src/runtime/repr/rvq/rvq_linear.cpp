#include "runtime/repr/rvq/rvq_linear.h"

#include <cassert>
#include <cstdio>
#include <limits>
#include <vector>

#include "submoe/core/aligned_buffer.h"
#include "submoe/kernels/rvq_panels.h"

#include "runtime/op_workspace.h"
#include "submoe/core/bf16.h"
#include "submoe/kernels/ternary_gemv.h"

namespace submoe::runtime::repr {
namespace {

class RvqLinearOp final : public model::LinearOp {
 public:
  // Keeps the scales and codebooks of m and its codes repacked in the
  // kernels' execution layout; m's row-major codes are not kept.
  RvqLinearOp(const rvq::RvqMatrix& m, std::optional<RvqRotation> rot, ExecutionMode mode,
              std::shared_ptr<const std::vector<float>> codebooks_t, const kernels::RvqGemvKernels& k)
      : rows_(m.rows()), cols_(m.cols()), stages_(m.stages()), scales_(m.rows(), false), codebooks_(m.codebooks()),
        codebooks_t_(std::move(codebooks_t)), rot_(std::move(rot)), mode_(mode), kernels_(k) {
    std::copy(m.scales().begin(), m.scales().end(), scales_.data());
    rvq::RvqView v = m.view();
    v.scales = scales_.data();
    v.codebooks = codebooks_->data();
    const bool have_t = codebooks_t_ && codebooks_t_->size() >= size_t{stages_} * rvq::kRvqCodebookFloats;
    Result<kernels::RvqPanels> p = kernels::RvqPanels::pack(v, have_t ? codebooks_t_->data() : nullptr);
    assert(p.is_ok() && "rvq LinearOp: a validated matrix failed to repack");
    if (p.is_ok()) panels_ = std::move(p).value();
  }

  size_t in_features() const override { return cols_; }
  size_t out_features() const override { return rows_; }

  void forward(const float* in, size_t n, float* out, ThreadPool* pool) const override {
    const uint32_t rows = rows_, cols = cols_;
    const kernels::RvqPanelView w = panels_.view();
    ThreadPool* p = size_t{rows} * cols * n >= detail::kParallelMinMacs ? pool : nullptr;
    for (size_t t0 = 0; t0 < n; t0 += kernels::kMaxKernelBatch) {
      const auto nb = static_cast<uint32_t>(std::min<size_t>(kernels::kMaxKernelBatch, n - t0));
      const size_t ws_floats = kernels::rvq_gemm_workspace_floats(kernels_, rows, cols, w.stages, nb);
      const size_t x_offset = (ws_floats + 15) / 16 * 16;  // keeps the activations 64-byte aligned
      const std::span<float> ws = detail::thread_workspace(x_offset + size_t{nb} * cols);
      float* x = ws.data() + x_offset;
      prepare_inputs(in + t0 * cols, nb, x);
      float* y = out + t0 * rows;
      Status st = kernels::gemm_rvq(kernels_, w, kernels::ActivationsView::f32(x, nb, cols),
                                    kernels::OutputView{y, rows}, ws.first(ws_floats), p);
      if (st.is_ok() && rot_) st = rot_->out.transpose(y, nb, rows);
      if (!st.is_ok()) {  // shapes are checked when the op is built: a bug here
        assert(false && "rvq LinearOp: kernel rejected its arguments");
        std::fill(y, y + size_t{nb} * rows, std::numeric_limits<float>::quiet_NaN());
      }
    }
  }

  std::string describe() const override {
    char buf[160];
    std::snprintf(buf, sizeof buf, "rvq %u stages [%u, %u] %.3f bits/weight, fused %s%s%s", stages_, rows_, cols_,
                  8.0 * static_cast<double>(weight_bytes()) / (double(rows_) * cols_),
                  isa_name(kernels_.isa), rot_ ? ", rht" : "",
                  mode_ == ExecutionMode::kFusedBf16   ? ", bf16 activations"
                  : mode_ == ExecutionMode::kFusedInt8 ? ", int8 activations"
                                                       : "");
    return buf;
  }
  // The matrix's ledger bytes (codes + scales), as stored in the artifact.
  size_t weight_bytes() const override { return rvq::rvq_matrix_bytes(rows_, cols_, stages_); }

 private:
  // The mode's rounding of the source activations, then T_i.
  void prepare_inputs(const float* src, uint32_t nb, float* x) const {
    const uint32_t cols = cols_;
    const size_t count = size_t{nb} * cols;
    if (mode_ == ExecutionMode::kFusedBf16) {
      for (size_t i = 0; i < count; ++i) x[i] = bf16_to_float(float_to_bf16(src[i]));
    } else if (mode_ == ExecutionMode::kFusedInt8) {
      thread_local std::vector<int8_t> q;
      q.resize(cols);
      const auto view = kernels::ActivationsView::f32(src, nb, cols);
      for (uint32_t t = 0; t < nb; ++t) {
        const float s = kernels::quantize_activations_int8(view, t, cols, q.data());
        for (uint32_t c = 0; c < cols; ++c) x[size_t{t} * cols + c] = s * static_cast<float>(q[c]);
      }
    } else {
      std::copy(src, src + count, x);
    }
    if (rot_) {
      const Status st = rot_->in.forward(x, nb, cols);
      assert(st.is_ok());
      (void)st;
    }
  }

  uint32_t rows_, cols_, stages_;
  AlignedBuffer<uint16_t> scales_;
  rvq::RvqCodebookSet codebooks_;
  std::shared_ptr<const std::vector<float>> codebooks_t_;
  kernels::RvqPanels panels_;
  std::optional<RvqRotation> rot_;
  ExecutionMode mode_;
  const kernels::RvqGemvKernels& kernels_;
};

}  // namespace

std::unique_ptr<model::LinearOp> make_rvq_linear(rvq::RvqMatrix m, std::optional<RvqRotation> rotation,
                                                 ExecutionMode mode,
                                                 std::shared_ptr<const std::vector<float>> codebooks_t,
                                                 const kernels::RvqGemvKernels& k) {
  return std::make_unique<RvqLinearOp>(m, std::move(rotation), mode, std::move(codebooks_t), k);
}

}  // namespace submoe::runtime::repr
