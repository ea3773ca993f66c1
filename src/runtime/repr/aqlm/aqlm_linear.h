// The fused LinearOp of an AQLM matrix: y = W x with the kernels of
// kernels/aqlm_gemv.h (f32 codebooks and activations; bf16 and int8 modes as
// runtime/repr/f32_kernel_op.h describes: AQLM has no integer kernel).
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
