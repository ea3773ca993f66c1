// The fused LinearOp of an E8P matrix: y = T_o^T (W' (T_i x)) with the kernels
// of kernels/e8p_gemv.h; under int8 activations the ROTATED activations are
// quantized (one scale per token), which is what the integer kernel consumes.
#pragma once

#include <memory>
#include <optional>

#include "runtime/repr/rvq/rvq_rotation.h"
#include "submoe/codec/e8p.h"
#include "submoe/kernels/e8p_gemv.h"
#include "submoe/model/linear_op.h"
#include "submoe/runtime/compressed_linear.h"

namespace submoe::runtime::repr {

Result<std::unique_ptr<model::LinearOp>> make_e8p_linear(
    const e8p::E8pMatrix& m, std::optional<RvqRotation> rotation, ExecutionMode mode,
    const kernels::E8pGemvKernels& k = kernels::best_e8p_gemv_kernels());

}  // namespace submoe::runtime::repr
