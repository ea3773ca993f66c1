// The LinearOp shape every owned-matrix fused kernel family shares (nf4,
// squeezellm, spqr): inputs rounded as the execution mode asks, the token
// batch cut into kernel batches, the family's gemm called on each, and a
// description of the matrix followed by its bits per weight, ISA and rounding.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "model/rounded_inputs.h"
#include "submoe/kernels/activations.h"
#include "submoe/model/linear_op.h"

namespace submoe::model {

// Matrix: rows, cols and bytes(). Kernels: a family's table with an `isa`.
template <typename Matrix, typename Kernels>
class FusedMatrixOp final : public LinearOp {
 public:
  // y (batch x rows, stride rows) = W x (batch x cols, stride cols), batch <= kMaxKernelBatch.
  using Gemm = Status (*)(const Kernels& k, const Matrix& m, const float* x, uint32_t batch, float* y,
                          ThreadPool* pool);
  // "nf4 [rows, cols] block 64, dq8 absmax": what precedes the common tail.
  using Describe = std::string (*)(const Matrix& m);
  // Optional: the product over int8 activations (token t = scales[t] xq[t],
  // stride cols), used under ActivationQuant::kInt8 instead of rounding the
  // inputs and running `gemm`.
  using GemmI8 = Status (*)(const Kernels& k, const Matrix& m, const int8_t* xq, const float* scales, uint32_t batch,
                            float* y, ThreadPool* pool);

  FusedMatrixOp(Matrix m, const Kernels& k, kernels::ActivationType activations, kernels::ActivationQuant quant,
                Gemm gemm, Describe describe_matrix, GemmI8 gemm_i8 = nullptr)
      : m_(std::move(m)), kernels_(k), activations_(activations), quant_(quant), gemm_(gemm), gemm_i8_(gemm_i8),
        describe_(describe_matrix) {}
  size_t in_features() const override { return m_.cols; }
  size_t out_features() const override { return m_.rows; }
  void forward(const float* in, size_t n, float* out, ThreadPool* pool) const override {
    const size_t cols = m_.cols, rows = m_.rows;
    for (size_t t0 = 0; t0 < n; t0 += kernels::kMaxKernelBatch) {
      const auto nb = static_cast<uint32_t>(std::min<size_t>(kernels::kMaxKernelBatch, n - t0));
      float* y = out + t0 * rows;
      Status st;
      if (gemm_i8_ != nullptr && quant_ == kernels::ActivationQuant::kInt8) {
        thread_local std::vector<int8_t> q;
        thread_local std::vector<float> scales;
        q.resize(nb * cols);
        scales.resize(nb);
        const auto view = kernels::ActivationsView::f32(in + t0 * cols, nb, cols);
        for (uint32_t t = 0; t < nb; ++t)
          scales[t] = kernels::quantize_activations_int8_fast(view, t, static_cast<uint32_t>(cols), &q[t * cols]);
        st = gemm_i8_(kernels_, m_, q.data(), scales.data(), nb, y, pool);
      } else {
        st = gemm_(kernels_, m_, rounded_inputs(in + t0 * cols, nb, cols, activations_, quant_), nb, y, pool);
      }
      if (!st.is_ok()) {  // the shape was validated when the matrix was built: a bug here
        assert(false && "fused LinearOp: kernel rejected its arguments");
        std::fill(y, y + nb * rows, std::numeric_limits<float>::quiet_NaN());
      }
    }
  }
  std::string describe() const override {
    char buf[96];
    std::snprintf(buf, sizeof buf, ", %.3f bits/weight, fused %s%s",
                  8.0 * static_cast<double>(weight_bytes()) / (double(m_.rows) * m_.cols), isa_name(kernels_.isa),
                  rounding_note(activations_, quant_));
    return describe_(m_) + buf;
  }
  size_t weight_bytes() const override { return m_.bytes(); }

 private:
  Matrix m_;
  const Kernels& kernels_;
  kernels::ActivationType activations_;
  kernels::ActivationQuant quant_;
  Gemm gemm_;
  GemmI8 gemm_i8_;
  Describe describe_;
};

}  // namespace submoe::model
