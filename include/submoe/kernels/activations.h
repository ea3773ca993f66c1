// Activation and output views shared by the dense and the compressed kernels.
//
// A batch of B tokens: token t's `cols` activations start at
// data + t * stride elements (stride >= cols). Outputs are f32, token t's `rows`
// results at data + t * stride floats. This is the LinearOp layout ([n, features]
// row-major) with an explicit stride so callers can point into larger buffers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "submoe/core/bf16.h"

namespace submoe::kernels {

enum class ActivationType : uint8_t { kF32 = 0, kBF16 = 1 };
const char* activation_type_name(ActivationType t);

struct ActivationsView {
  const void* data = nullptr;
  ActivationType type = ActivationType::kF32;
  uint32_t batch = 1;
  size_t stride = 0;  // elements between tokens

  static ActivationsView f32(const float* x, uint32_t batch, size_t stride) {
    return {x, ActivationType::kF32, batch, stride};
  }
  static ActivationsView bf16(const bf16_t* x, uint32_t batch, size_t stride) {
    return {x, ActivationType::kBF16, batch, stride};
  }
};

struct OutputView {
  float* data = nullptr;
  size_t stride = 0;  // floats between tokens
};

// Largest batch the small-batch kernels take in one call (callers split larger
// batches; beyond this a GEMM formulation wins anyway).
inline constexpr uint32_t kMaxKernelBatch = 64;

}  // namespace submoe::kernels
