// MXFP4 matrices (docs/format.md 9.6): OCP Microscaling FP4 E2M1 codes, two
// per byte with the even column in the low nibble, and one E8M0 scale per 32
// columns of a row; exactly the layout of GPT-OSS's hub experts (`*_blocks`,
// `*_scales`). 4.25 bits per weight. The format itself: values, validation of
// untrusted bytes, the reference decoder and the quantizer of one group; the
// mxfp4 representation (runtime/repr/mxfp4), the fused kernels
// (kernels/mxfp4_gemv.h) and GPT-OSS's hub loader build on it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "submoe/core/status.h"

namespace submoe::mxfp4 {

inline constexpr uint32_t kBlock = 32;  // elements per E8M0 scale
// Largest valid E8M0 scale code: 2^(252 - 127) * 6 is still a finite float;
// 253 and 254 can overflow it and 255 is the format's NaN.
inline constexpr uint8_t kMaxScale = 252;

// The value of an FP4 E2M1 code (0..15): (-1)^(code >> 3) * {0, .5, 1, 1.5, 2, 3, 4, 6}[code & 7].
float fp4_e2m1_value(uint8_t code);
// Twice each code's value, an integer in [-12, 12] (the kernels' table).
extern const int8_t kFp4Twice[16];
// 2^(scale - 127).
float e8m0_value(uint8_t scale);

// A validated matrix: blocks [rows, cols / 2], scales [rows, cols / 32].
struct Mxfp4Matrix {
  uint32_t rows = 0, cols = 0;
  std::vector<uint8_t> blocks, scales;
  // Ledger bytes: rows * cols / 2 + rows * cols / 32.
  size_t bytes() const { return blocks.size() + scales.size(); }
};

// cols a positive multiple of 32, rows positive.
Status check_shape(uint32_t rows, uint32_t cols);
// Copies and validates untrusted field bytes: sizes, and every scale at most
// kMaxScale (255 is NaN; 253 and 254 can overflow float).
Result<Mxfp4Matrix> from_fields(uint32_t rows, uint32_t cols, std::span<const uint8_t> blocks,
                                std::span<const uint8_t> scales);
// The reference decoder: W [rows, cols] row-major, value by value from the
// format's definition.
std::vector<float> decode(const Mxfp4Matrix& m);

// The quantizer of one group of 32 values: codes by round to nearest, ties to
// the even code, saturating at 6 x scale (quantize_value); the scale code is
// OCP's rule, 2^(floor(log2 a) - 2) for the group's largest magnitude a (a
// lands in [4, 8) x scale, so values above 6 x scale clip), or the next one up
// (no clipping, half the resolution), whichever reconstructs the group with
// the smaller squared error (OCP's on ties; 0 for an all-zero group), clamped
// to [0, kMaxScale]. A group that is already MXFP4 comes back exactly.
uint8_t group_scale(std::span<const float> group);
// The code of `v` under scale code `s`, and its value.
uint8_t quantize_value(float v, uint8_t s);

}  // namespace submoe::mxfp4
