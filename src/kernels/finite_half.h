// A finite IEEE half's value, exactly and without branches, for the kernels'
// per-row and per-block scale and table reads (f16_bits_to_float's ldexp is
// far slower): the half's exponent and mantissa moved into a float's fields
// read 2^(e - 127) x 1.m, or m x 2^-149 for a subnormal half, and x 2^112
// rebiases both exactly. Only for values validated finite.
#pragma once

#include <cstdint>
#include <cstring>

namespace submoe::kernels::detail {

inline float finite_half_to_float(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h & 0x7FFF) << 13;
  float v;
  std::memcpy(&v, &bits, 4);
  v *= 0x1p112f;
  return (h & 0x8000) ? -v : v;
}

}  // namespace submoe::kernels::detail
