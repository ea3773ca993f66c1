// The LinearOp shape shared by representations whose fused kernels take f32
// activations only (aqlm, vptq): forward() cuts the tokens into batches of at
// most kMaxKernelBatch, prepares each batch for the execution mode (kFused:
// as given; kFusedBf16: rounded to bf16; kFusedInt8: quantized to int8 per
// token and dequantized, the numerics of an int8 path on an f32 kernel) and
// hands it to run(). A kernel that rejects its arguments is a bug (shapes are
// checked when the op is built): the batch's outputs become NaN.
#pragma once

#include <cstddef>
#include <cstdint>

#include "submoe/core/status.h"
#include "submoe/model/linear_op.h"
#include "submoe/runtime/compressed_linear.h"

namespace submoe::runtime::repr {

class F32KernelLinearOp : public model::LinearOp {
 public:
  explicit F32KernelLinearOp(ExecutionMode mode) : mode_(mode) {}
  void forward(const float* in, size_t n, float* out, ThreadPool* pool) const final;

 protected:
  // y [nb, out_features] = W x [nb, in_features], nb in 1..kMaxKernelBatch;
  // `pool` is null for products too small to split.
  virtual Status run(const float* x, uint32_t nb, float* y, ThreadPool* pool) const = 0;
  ExecutionMode mode() const { return mode_; }
  // ", bf16 activations" / ", int8 activations (dequantized into the f32 kernel)" / "".
  const char* mode_note() const;

 private:
  ExecutionMode mode_;
};

}  // namespace submoe::runtime::repr
