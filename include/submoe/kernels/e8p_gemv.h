// Fused products straight from E8P matrices (codec/e8p.h): Y = W' X for B =
// 1..kMaxKernelBatch tokens in the rotated coordinates (the caller applies the
// input and output rotations). W' is never materialized: every 16-bit code is
// decoded from the 256-entry table, its sign byte and its parity into eight
// odd quarter units q (4 x the codeword), stage 2 likewise (E8P in quarters,
// the 1-bit table in halves), and multiplied into the tokens' sums:
//
//   y[t][r] = scale_r (S1 / 4 + S2 / (4 rho4) | S2 / (2 rho3)),
//   S_k = sum_c q_k[r][c] x[t][c].
//
// The execution layout (E8pPanels) cuts each row into chunks of 64 codes (512
// columns; the last chunk padded with code 0, whose activations are zero):
// per chunk the 64 abs bytes, then the 64 sign bytes of stage 1, then stage 2's
// (abs + signs for E8P, 64 indices for the 1-bit stage). The AVX-512 rows look
// 64 codes up at once per coordinate (vpermi2b over 256-entry byte tables),
// so they read the activations "planar": chunk j's coordinate c of code k at
// j * 512 + c * 64 + k. The scalar rows read the same layout.
//
// The AVX-512 f32 rows multiply the exact bf16 q (a vpermw of u) by the
// activations split into two bf16 halves, hi + lo, with vdpbf16ps.
// With int8 activations (token t = s_t q_t) the sums are exact in int32: the
// AVX-512 rows form u = q + 16 in [1, 31] and use vpdpbusd, subtracting 16 x
// sum(q_t); the scalar rows give the same integers, so both give bit-equal y.
#pragma once

#include <cstddef>
#include <cstdint>

#include "submoe/codec/e8p.h"
#include "submoe/core/aligned_buffer.h"
#include "submoe/core/cpu_features.h"
#include "submoe/core/status.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::kernels {

inline constexpr uint32_t kE8pChunkCodes = 64;
inline constexpr uint32_t kE8pChunkCols = kE8pChunkCodes * e8p::kDim;  // 512

// One matrix in the kernels' layout (see above).
struct E8pPanels {
  uint32_t rows = 0, cols = 0, bits = 2, chunks = 0;
  e8p::Stage2 stage2 = e8p::Stage2::kNone;
  size_t chunk_bytes = 0;  // 128 + (0 | 64 | 128)
  AlignedBuffer<uint8_t> data;
  AlignedBuffer<float> scales;
  static Result<E8pPanels> pack(const e8p::E8pMatrix& m);
  uint32_t padded_cols() const { return chunks * kE8pChunkCols; }
  const uint8_t* row(uint32_t r) const { return data.data() + size_t{r} * chunks * chunk_bytes; }
};

// Prepared activations, in the table's layout, zero-padded to padded_cols() per token.
struct E8pArgs {
  const E8pPanels* w = nullptr;
  uint32_t batch = 1;
  const float* x = nullptr;         // f32 path: token t at x + t * padded_cols
  // f32 path of tables with split_bf16: x as two bf16 halves, hi = bf16(x),
  // lo = bf16(x - hi) (|x - hi - lo| <= 2^-18 |x|), same layout as x.
  const uint16_t* x_hi = nullptr;
  const uint16_t* x_lo = nullptr;
  const int8_t* xq = nullptr;       // int8 path: token t at xq + t * padded_cols
  const int32_t* xq_sums = nullptr;  // int8 path: sum of token t's codes
  const float* xq_scales = nullptr;  // int8 path: s_t
  float* y = nullptr;                // token t's rows results at y + t * y_stride
  size_t y_stride = 0;
};
using E8pRowsFn = void (*)(const E8pArgs& args, uint32_t row_begin, uint32_t row_end);

struct E8pGemvKernels {
  Isa isa = Isa::kScalar;
  E8pRowsFn rows = nullptr;
  E8pRowsFn rows_i8 = nullptr;
  // The activations' layout the rows read: planar (above) or column order.
  bool planar = true;
  // Whether the f32 rows read x_hi / x_lo (vdpbf16ps on exact bf16 weights).
  bool split_bf16 = false;
};
const E8pGemvKernels& e8p_gemv_kernels(Isa isa);
const E8pGemvKernels& best_e8p_gemv_kernels();

// y = W' x for `batch` tokens (1..kMaxKernelBatch) of cols f32 activations
// (token t at x + t * cols; y token t at y + t * rows), rows split across pool.
Status gemm_e8p(const E8pGemvKernels& k, const E8pPanels& w, const float* x, uint32_t batch, float* y,
                ThreadPool* pool);
// The same over int8 activations (token t = scales[t] xq[t], stride cols).
Status gemm_e8p_i8(const E8pGemvKernels& k, const E8pPanels& w, const int8_t* xq, const float* scales,
                   uint32_t batch, float* y, ThreadPool* pool);

}  // namespace submoe::kernels
