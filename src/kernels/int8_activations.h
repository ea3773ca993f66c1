// ActivationQuant::kInt8's scalar definition, shared by every kernel family
// that quantizes activations to int8 (ternary, int): one symmetric scale per
// token, q = nearest-even(x / s) clamped to +-127.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "submoe/kernels/activations.h"

namespace submoe::kernels::detail {

// The scale for a token whose largest |x| is m: s = m / 127 and inv = 127 / m
// when m is finite and positive (true). Otherwise false and every q is 0: s = 0
// for m = 0, NaN for an infinite activation (every output NaN).
inline bool int8_scale(float m, float* scale, float* inv) {
  if (m > 0.0f && m <= std::numeric_limits<float>::max()) {
    *scale = m / 127.0f;
    *inv = 127.0f / m;
    return true;
  }
  *scale = m == 0.0f ? 0.0f : std::numeric_limits<float>::quiet_NaN();
  *inv = 0.0f;
  return false;
}

// One activation's code: nearest-even(v * inv) clamped to +-127; a NaN lands on
// -127 (std::max keeps its first argument when the second is NaN), as the
// vector quantizers' max/min with the constant second do. Adding and
// subtracting 1.5 * 2^23 rounds to nearest even. Compile this only in
// translation units without FMA: contracting v * inv + kRound into one fused
// multiply-add would round differently from the vector quantizers' vmulps.
inline int8_t int8_quantize(float v, float inv) {
  if (inv == 0.0f) return 0;
  constexpr float kRound = 12582912.0f;
  const float r = std::min(127.0f, std::max(-127.0f, (v * inv + kRound) - kRound));
  return static_cast<int8_t>(static_cast<int32_t>(r));
}

// The kInt8 quantization of n f32 activations per ISA (q and the returned s
// exactly as quantize_activations_int8 gives them).
float quantize_i8_f32_avx2(const float* x, uint32_t n, int8_t* q);    // int_gemv_i8_avx2.cpp
float quantize_i8_f32_avx512(const float* x, uint32_t n, int8_t* q);  // ternary_gemv_avx512.cpp

// Token t's kInt8 quantization into q[0, n) through a kernel table's vector
// quantizer when it has one for f32 input (the same q and s as the scalar
// definition, quantize_activations_int8, which runs otherwise); returns s.
using QuantizeI8Fn = float (*)(const float* x, uint32_t n, int8_t* q);
inline float quantize_token_i8(QuantizeI8Fn vector, const ActivationsView& x, uint32_t t, uint32_t n, int8_t* q) {
  if (vector != nullptr && x.type == ActivationType::kF32)
    return vector(static_cast<const float*>(x.data) + static_cast<size_t>(t) * x.stride, n, q);
  return quantize_activations_int8(x, t, n, q);
}

}  // namespace submoe::kernels::detail
