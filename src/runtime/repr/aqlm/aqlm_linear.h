// The fused LinearOp of an AQLM matrix: y = W x with the kernels of
// kernels/aqlm_gemv.h (f32 codebooks, f32 activations). Under bf16
// activations the inputs are rounded to bf16 first; under int8 activations
// they are quantized to int8 per token and dequantized (the product's
// numerics of an int8 path; the kernel itself stays f32, AQLM has no integer
// kernel).
#pragma once

#include <memory>

#include "submoe/codec/aqlm.h"
#include "submoe/kernels/aqlm_gemv.h"
#include "submoe/model/linear_op.h"
#include "submoe/runtime/compressed_linear.h"

namespace submoe::runtime::repr {

Result<std::unique_ptr<model::LinearOp>> make_aqlm_linear(
    const aqlm::AqlmMatrix& m, ExecutionMode mode,
    const kernels::AqlmGemvKernels& k = kernels::best_aqlm_gemv_kernels());

}  // namespace submoe::runtime::repr
