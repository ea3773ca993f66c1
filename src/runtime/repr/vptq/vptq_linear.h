// The fused LinearOp of a VPTQ matrix: y = W x with the kernels of
// kernels/vptq_gemv.h (f32 codebooks and activations; bf16 and int8 modes as
// runtime/repr/f32_kernel_op.h describes).
#pragma once

#include <memory>

#include "submoe/codec/vptq.h"
#include "submoe/kernels/vptq_gemv.h"
#include "submoe/model/linear_op.h"
#include "submoe/runtime/compressed_linear.h"

namespace submoe::runtime::repr {

Result<std::unique_ptr<model::LinearOp>> make_vptq_linear(
    const vptq::VptqMatrix& m, ExecutionMode mode,
    const kernels::VptqGemvKernels& k = kernels::best_vptq_gemv_kernels());

}  // namespace submoe::runtime::repr
