// NF4 matrices (QLoRA / bitsandbytes; docs/format.md 9.7): one 4-bit index
// per weight into the 16-value NormalFloat table, two per byte with the FIRST
// column in the HIGH nibble (bitsandbytes' packing), and one absmax per block
// of `block` consecutive columns of a row (the row-major blocks of
// bitsandbytes' flattened tensor, since block divides cols):
//
//   W[r][c] = kNf4[q[r][c]] * absmax[r][c / block]
//
// The absmaxes are stored one of three ways (Nf4Scales):
//   kF32  float32, 4 + 32/block bits per weight (bitsandbytes' default);
//   kF16  float16, rounded before the codes are chosen;
//   kDq8  QLoRA's double quantization: offset = mean of the matrix's absmaxes,
//         absmax - offset coded by the 8-bit dynamic map kDynamic8 with one
//         float32 absmax2 per 256 consecutive blocks (row-major), and
//         absmax = kDynamic8[qa] * absmax2[b / 256] + offset;
//         4 + 8/block + 32/(256 block) bits per weight (4.127 at block 64),
//         plus one float32 per matrix.
// An all-zero block stores absmax 0 (kF32, kF16) and the exact-zero code 7,
// so it decodes to exact zeros under any stored scale. The format itself:
// tables, validation of untrusted bytes, the reference decoder and the
// quantizer of one block; the nf4 representation (runtime/repr/nf4) and the
// fused kernels (kernels/nf4_gemv.h) build on it.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "submoe/core/status.h"

namespace submoe::nf4 {

// bitsandbytes' NF4 table (create_normal_map(0.9677083), normalized), in
// code order: 7 negative values, the exact zero at code 7, 8 positive ones.
extern const float kNf4[16];
inline constexpr uint8_t kZeroCode = 7;
// bitsandbytes' signed 8-bit dynamic map (create_dynamic_map(signed=True)),
// sorted; QLoRA's double quantization codes absmax - offset with it.
extern const float kDynamic8[256];
inline constexpr uint32_t kDq8Group = 256;  // blocks per absmax2
inline constexpr uint32_t kDefaultBlock = 64;

enum class Nf4Scales : uint8_t { kF32, kF16, kDq8 };
std::string_view scales_name(Nf4Scales s);  // "fp32", "fp16", "dq8"

// Block sizes bitsandbytes accepts: powers of two from 32 to 4096.
Status check_block(uint32_t block);
// rows positive, cols a positive multiple of block.
Status check_shape(uint32_t rows, uint32_t cols, uint32_t block);

// A validated matrix. codes [rows, cols / 2]; by `scales`:
//   kF32: absmax_f32 [rows * cols / block];  kF16: absmax_f16 (same count);
//   kDq8: absmax_codes (same count), absmax2 [ceil(count / 256)], offset.
struct Nf4Matrix {
  uint32_t rows = 0, cols = 0, block = kDefaultBlock;
  Nf4Scales scales = Nf4Scales::kDq8;
  std::vector<uint8_t> codes;
  std::vector<float> absmax_f32;
  std::vector<uint16_t> absmax_f16;
  std::vector<uint8_t> absmax_codes;
  std::vector<float> absmax2;
  float offset = 0.0f;

  size_t blocks() const { return size_t{rows} * (cols / block); }
  // Ledger bytes: everything above.
  size_t bytes() const;
  // Block b's absmax (b in row-major block order), as the decoder uses it.
  float absmax(size_t b) const;
};

// The number of float32 absmax2 entries of `blocks` blocks under kDq8.
inline size_t dq8_groups(size_t blocks) { return (blocks + kDq8Group - 1) / kDq8Group; }

// Copies and validates untrusted field bytes: sizes; kF32/kF16 absmaxes finite
// and >= 0; kDq8 absmax2 finite and >= 0, offset finite, every decoded absmax
// finite. Every 4-bit code and every 8-bit absmax code is valid.
struct Nf4Fields {
  std::span<const uint8_t> codes;
  std::span<const uint8_t> absmax;   // f32, f16 or u8 bytes, by scales
  std::span<const uint8_t> absmax2;  // kDq8 only: float32
  std::span<const uint8_t> offset;   // kDq8 only: one float32
};
Result<Nf4Matrix> from_fields(uint32_t rows, uint32_t cols, uint32_t block, Nf4Scales scales, const Nf4Fields& f);

// The reference decoder: W [rows, cols] row-major, value by value from the
// definition above (float32 arithmetic, as bitsandbytes' dequantize_4bit).
std::vector<float> decode(const Nf4Matrix& m);

// One block's absmax (max |v|) as it will be stored for kF32 / kF16 (fp16
// rounds to nearest, saturating at the largest finite half); kDq8 keeps the
// float32 value until double_quantize.
float block_absmax(std::span<const float> block, Nf4Scales scales);
// The code of v under a block's absmax a: v * (1 / a) clamped to [-1, 1],
// then the nearest table value, ties to the lower code (bitsandbytes'
// bucketize on the float32 midpoints); an all-zero block (a == 0) codes 7.
uint8_t quantize_value(float v, float a);
// QLoRA's double quantization of float32 absmaxes (row-major block order):
// sets absmax_codes, absmax2 and offset of m (m.scales must be kDq8).
void double_quantize(std::span<const float> absmax, Nf4Matrix* m);
// Packs codes (one per weight, row-major) two per byte, first in the high nibble.
std::vector<uint8_t> pack_codes(std::span<const uint8_t> codes);

}  // namespace submoe::nf4
