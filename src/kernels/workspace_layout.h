// Pieces the kernel drivers share when they prepare activations in a caller's
// workspace: 64-byte alignment of its start and reading one activation of either
// type as f32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "submoe/core/bf16.h"
#include "submoe/kernels/activations.h"

namespace submoe::kernels::detail {

inline constexpr size_t kAlignFloats = 16;  // 64 bytes

// First 64-byte aligned float at or after p (workspaces reserve kAlignFloats
// extra floats for this).
inline float* align_up(float* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  const uintptr_t a = (v + kAlignFloats * sizeof(float) - 1) & ~(kAlignFloats * sizeof(float) - 1);
  return reinterpret_cast<float*>(a);
}

// Activation (token t, column c) as f32 (bf16 widens exactly).
inline float activation(const ActivationsView& x, uint32_t t, uint32_t c) {
  const size_t i = static_cast<size_t>(t) * x.stride + c;
  return x.type == ActivationType::kF32 ? static_cast<const float*>(x.data)[i]
                                        : bf16_to_float(static_cast<const bf16_t*>(x.data)[i]);
}

}  // namespace submoe::kernels::detail
