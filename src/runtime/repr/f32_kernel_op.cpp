#include "runtime/repr/f32_kernel_op.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <vector>

#include "runtime/op_workspace.h"
#include "submoe/core/bf16.h"
#include "submoe/kernels/activations.h"

namespace submoe::runtime::repr {

void F32KernelLinearOp::forward(const float* in, size_t n, float* out, ThreadPool* pool) const {
  const size_t rows = out_features(), cols = in_features();
  ThreadPool* p = rows * cols * n >= detail::kParallelMinMacs ? pool : nullptr;
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
          const float s = kernels::quantize_activations_int8(view, t, static_cast<uint32_t>(cols), q.data());
          for (size_t c = 0; c < cols; ++c) buf[t * cols + c] = s * q[c];
        }
      }
      x = buf.data();
    }
    float* y = out + t0 * rows;
    if (!run(x, nb, y, p).is_ok()) {
      assert(false && "LinearOp: kernel rejected its arguments");
      std::fill(y, y + nb * rows, std::numeric_limits<float>::quiet_NaN());
    }
  }
}

const char* F32KernelLinearOp::mode_note() const {
  return mode_ == ExecutionMode::kFusedBf16   ? ", bf16 activations"
         : mode_ == ExecutionMode::kFusedInt8 ? ", int8 activations (dequantized into the f32 kernel)"
                                              : "";
}

}  // namespace submoe::runtime::repr
