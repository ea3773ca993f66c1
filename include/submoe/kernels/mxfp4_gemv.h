// Fused decode + matrix-vector / small-batch products straight from MXFP4
// (OCP Microscaling v1.0: FP4 E2M1 elements, one E8M0 scale per 32 elements
// of a row; GPT-OSS's expert format): Y = W X for B = 1..kMaxKernelBatch
// tokens with
//
//   W[r][c] = fp4(code[r][c]) * 2^(scale[r][c / 32] - 127),
//   fp4(code) = (-1)^(code >> 3) * {0, 0.5, 1, 1.5, 2, 3, 4, 6}[code & 7],
//
// codes two per byte, the even column in the low nibble (the hub's layout).
// W is never materialized: each block of 32 weights is decoded once per call
// into registers (exact: twice each value is a small integer) and applied to
// every token. Scalar, AVX2 and AVX-512 tables, chosen once
// (best_mxfp4_gemv_kernels).
#pragma once

#include <cstddef>
#include <cstdint>

#include "submoe/codec/mxfp4.h"
#include "submoe/core/cpu_features.h"
#include "submoe/core/status.h"
#include "submoe/kernels/activations.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::kernels {

inline constexpr uint32_t kMxfp4Block = mxfp4::kBlock;

// A [rows, cols] matrix: blocks [rows, cols / 2] bytes, scales [rows, cols / 32]
// (cols a multiple of 32), row-major, no padding.
struct Mxfp4View {
  const uint8_t* blocks = nullptr;
  const uint8_t* scales = nullptr;
  uint32_t rows = 0, cols = 0;
};

// What one kernel invocation sees: token t's cols activations at
// x + t * x_stride, its rows results at y + t * y_stride.
struct Mxfp4GemmArgs {
  Mxfp4View w;
  const float* x = nullptr;
  size_t x_stride = 0;
  uint32_t batch = 1;
  float* y = nullptr;
  size_t y_stride = 0;
};
using Mxfp4RowsFn = void (*)(const Mxfp4GemmArgs& args, uint32_t row_begin, uint32_t row_end);

// The int8-activation product (ActivationQuant::kInt8, kernels/activations.h):
// token t's activations are s_t q_t with q_t int8 (xq + t * xq_stride, cols of
// them) and y[t][r] = s_t * sum_b 2^(scale - 127) / 2 * sum_{c in b} (2 fp4) q_t[c];
// the sums of each block are exact in int32 (twice an FP4 value is an integer),
// as llama.cpp's MXFP4 x Q8_0 dot product.
using Mxfp4I8Args = Int8GemmArgs<Mxfp4View>;
using Mxfp4I8RowsFn = void (*)(const Mxfp4I8Args& args, uint32_t row_begin, uint32_t row_end);

struct Mxfp4GemvKernels {
  Isa isa = Isa::kScalar;
  Mxfp4RowsFn rows = nullptr;
  Mxfp4I8RowsFn rows_i8 = nullptr;
};
// Scalar, AVX2, AVX-512 (f32 activations 16 lanes wide; int8 ones as AVX2).
const Mxfp4GemvKernels& mxfp4_gemv_kernels(Isa isa);
const Mxfp4GemvKernels& best_mxfp4_gemv_kernels();

// y = W x for args.batch tokens (1..kMaxKernelBatch), rows split across `pool`
// (may be null); kInvalidArgument on a bad shape or stride.
Status gemm_mxfp4(const Mxfp4GemvKernels& k, const Mxfp4GemmArgs& args, ThreadPool* pool);
// The same over int8 activations (Mxfp4I8Args).
Status gemm_mxfp4_i8(const Mxfp4GemvKernels& k, const Mxfp4I8Args& args, ThreadPool* pool);

}  // namespace submoe::kernels
