// Fused decode + matrix-vector / small-batch products straight from NF4
// (codec/nf4.h, QLoRA / bitsandbytes): Y = W X for B = 1..kMaxKernelBatch
// tokens with
//
//   W[r][c] = kNf4[q[r][c]] * absmax[r][c / block],
//
// codes two per byte, the first column in the high nibble. W is never
// materialized: a row's block absmaxes are decoded once per row (fp32, fp16
// or QLoRA's double quantization), each 32 columns' codes are looked up in the
// 16-entry float table in registers (exact: the decoded weights are the
// reference decoder's floats), and applied to every token, 4 tokens at a time.
// The activations are de-interleaved once per call (each 32 columns: the even
// ones, then the odd ones), so that a byte's two nibbles index the table
// straight from its lane, without putting the weights back in column order.
// Scalar, AVX2 and AVX-512 tables, chosen once (best_nf4_gemv_kernels).
#pragma once

#include <cstddef>
#include <cstdint>

#include "submoe/codec/nf4.h"
#include "submoe/core/cpu_features.h"
#include "submoe/core/status.h"
#include "submoe/kernels/activations.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::kernels {

// A validated matrix's storage (nf4::Nf4Matrix), borrowed.
struct Nf4View {
  const uint8_t* codes = nullptr;  // [rows, cols / 2]
  uint32_t rows = 0, cols = 0, block = nf4::kDefaultBlock;
  nf4::Nf4Scales scales = nf4::Nf4Scales::kF32;
  const void* absmax = nullptr;     // float, half bits or uint8 codes, [rows * cols / block]
  const float* absmax2 = nullptr;   // kDq8: [ceil(rows * cols / block / 256)]
  float offset = 0.0f;              // kDq8
  static Nf4View of(const nf4::Nf4Matrix& m);
};

// Row r's absmaxes (cols / block of them) into out, as the reference decoder
// computes them.
void nf4_row_absmax(const Nf4View& w, uint32_t r, float* out);

// What one kernel invocation sees: token t's cols activations at
// x + t * x_stride, its rows results at y + t * y_stride.
struct Nf4GemmArgs {
  Nf4View w;
  const float* x = nullptr;
  size_t x_stride = 0;
  uint32_t batch = 1;
  float* y = nullptr;
  size_t y_stride = 0;
};
// The row kernels see x de-interleaved (x_stride = cols): for each 32-column
// chunk k, x[32k + j] is column 32k + 2j and x[32k + 16 + j] column 32k + 2j + 1.
using Nf4RowsFn = void (*)(const Nf4GemmArgs& args, uint32_t row_begin, uint32_t row_end);

// The int8-activation product (ActivationQuant::kInt8, `--execution
// fused-int8`), as llama.cpp multiplies IQ4_NL by q8_0: the codes decode to
// the int8 table kNf4I8[q] = round(127 kNf4[q]) (|error| <= 0.5 / 127 of the
// block's absmax), each block's sum over the int8 activations is exact in
// int32, and
//
//   y[t][r] = (s_t / 127) * sum_b absmax[r][b] * sum_{c in b} kNf4I8[q[r][c]] q_t[c]
//
// with token t's activations s_t q_t (q_t int8 at xq + t * xq_stride).
inline constexpr int8_t kNf4I8[16] = {-127, -88, -67, -50, -36, -23, -12, 0, 10, 20, 31, 43, 56, 71, 92, 127};
using Nf4I8Args = Int8GemmArgs<Nf4View>;
// What the int8 row kernels see: each token's activations laid out per unit of
// 128 columns (kNf4I8Unit) as the 64 odd columns (the low nibbles of the
// unit's 64 code bytes), then the 64 even ones (the high nibbles), zero past
// cols; and per unit 16 int32 lane corrections, -128 times the sum of the 8
// activations that code bytes 4i..4i+3 meet (for kernels that add 128 to the
// table to multiply unsigned codes by signed activations).
inline constexpr uint32_t kNf4I8Unit = 128;
struct Nf4I8Rows {
  Nf4View w;
  const int8_t* xl = nullptr;      // [batch][units * 128]
  const int32_t* neg128 = nullptr;  // [batch][units * 16]
  uint32_t units = 0;
  const float* x_scales = nullptr;
  uint32_t batch = 1;
  float* y = nullptr;
  size_t y_stride = 0;
};
using Nf4I8RowsFn = void (*)(const Nf4I8Rows& args, uint32_t row_begin, uint32_t row_end);

struct Nf4GemvKernels {
  Isa isa = Isa::kScalar;
  Nf4RowsFn rows = nullptr;
  Nf4I8RowsFn rows_i8 = nullptr;  // AVX-512 with VNNI when the CPU has it, else the AVX2 kernel
};
const Nf4GemvKernels& nf4_gemv_kernels(Isa isa);
const Nf4GemvKernels& best_nf4_gemv_kernels();

// y = W x for args.batch tokens (1..kMaxKernelBatch), rows split across `pool`
// (may be null); kInvalidArgument on a bad shape, block or stride.
Status gemm_nf4(const Nf4GemvKernels& k, const Nf4GemmArgs& args, ThreadPool* pool);
// The same over int8 activations (Nf4I8Args).
Status gemm_nf4_i8(const Nf4GemvKernels& k, const Nf4I8Args& args, ThreadPool* pool);

}  // namespace submoe::kernels
