// The fused rvq LinearOp: y = T_o^T (W' (T_i x)) with the LUT kernels on W'.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "runtime/repr/rvq/rvq_rotation.h"
#include "submoe/codec/rvq.h"
#include "submoe/kernels/rvq_gemv.h"
#include "submoe/model/linear_op.h"
#include "submoe/runtime/compressed_linear.h"

namespace submoe::runtime::repr {

// `rotation` empty: W' = W (a matrix coded without incoherence processing).
// `codebooks_t`: m's codebooks transposed (kernels::transpose_rvq_codebooks,
// at least m's stages), shared by every op of a codec; null = each call
// transposes them.
std::unique_ptr<model::LinearOp> make_rvq_linear(rvq::RvqMatrix m, std::optional<RvqRotation> rotation,
                                                 ExecutionMode mode,
                                                 std::shared_ptr<const std::vector<float>> codebooks_t = nullptr,
                                                 const kernels::RvqGemvKernels& k = kernels::best_rvq_gemv_kernels());

}  // namespace submoe::runtime::repr
