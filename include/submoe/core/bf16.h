// bfloat16 <-> float conversion. Usable from host C++ and CUDA device code.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define SUBMOE_HD __host__ __device__
#else
#define SUBMOE_HD
#endif

namespace submoe {

// Raw bf16 bits (the upper half of an IEEE float32). A distinct type so that bf16
// buffers are never confused with uint16 codewords.
struct bf16_t {
  uint16_t bits;
};
static_assert(sizeof(bf16_t) == 2);

SUBMOE_HD inline float bf16_to_float(bf16_t v) {
  uint32_t u = static_cast<uint32_t>(v.bits) << 16;
  float f;
#if defined(__CUDA_ARCH__)
  f = __uint_as_float(u);
#else
  std::memcpy(&f, &u, sizeof f);
#endif
  return f;
}

// Round to nearest even; NaN stays NaN (quiet).
SUBMOE_HD inline bf16_t float_to_bf16(float f) {
  uint32_t u;
#if defined(__CUDA_ARCH__)
  u = __float_as_uint(f);
#else
  std::memcpy(&u, &f, sizeof u);
#endif
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) {
    return bf16_t{static_cast<uint16_t>((u >> 16) | 0x0040u)};
  }
  uint32_t rounding_bias = 0x7fffu + ((u >> 16) & 1u);
  return bf16_t{static_cast<uint16_t>((u + rounding_bias) >> 16)};
}

// IEEE half -> float (for F16 checkpoints).
float f16_bits_to_float(uint16_t h);
uint16_t float_to_f16_bits(float f);

}  // namespace submoe
