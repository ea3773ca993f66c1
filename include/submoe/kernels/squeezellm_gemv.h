// Fused dense-and-sparse products straight from SqueezeLLM matrices
// (codec/squeezellm.h): Y = W X for B = 1..kMaxKernelBatch tokens with
//
//   W = dense (lut[r][code[r][c]]) with the exceptions replacing their
//       coordinates (replacement semantics),
//
// computed as the dense LUT product plus, per exception, (value - lut[r][0])
// x (the dense code under an exception is 0 by the format's hole policy).
// W is never materialized: each row's 8- or 16-entry table is widened to
// floats once per row and held in a register; 4-bit codes are looked up
// straight from their nibbles (activations de-interleaved once per call, as
// the nf4 kernels do), 3-bit ones are pulled out of their 12-byte groups by
// vpmultishiftqb (AVX-512 VBMI) or unpacked in scalar code (AVX2). Scalar,
// AVX2 and AVX-512 tables, chosen once (best_squeezellm_gemv_kernels).
#pragma once

#include <cstddef>
#include <cstdint>

#include "submoe/codec/squeezellm.h"
#include "submoe/core/cpu_features.h"
#include "submoe/core/status.h"
#include "submoe/kernels/activations.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::kernels {

// A validated matrix's storage (squeezellm::SqueezeMatrix), borrowed.
struct SqueezeView {
  const uint8_t* codes = nullptr;
  const uint16_t* lut = nullptr;  // fp16 [rows, 2^bits]
  uint32_t rows = 0, cols = 0, bits = 4;
  const int32_t* row_ptr = nullptr;  // null: no exceptions
  const uint16_t* col = nullptr;
  const uint16_t* value = nullptr;  // fp16
  static SqueezeView of(const squeezellm::SqueezeMatrix& m);
};

struct SqueezeGemmArgs {
  SqueezeView w;
  const float* x = nullptr;  // token t's cols activations at x + t * x_stride
  size_t x_stride = 0;
  uint32_t batch = 1;
  float* y = nullptr;  // token t's rows results at y + t * y_stride
  size_t y_stride = 0;
  // Filled by gemm_squeezellm for the row kernels: 4-bit codes read x
  // de-interleaved per 32 columns (evens, then odds), stride cols.
  const float* x_split = nullptr;
};
using SqueezeRowsFn = void (*)(const SqueezeGemmArgs& args, uint32_t row_begin, uint32_t row_end);

// The int8-activation product (ActivationQuant::kInt8, `--execution
// fused-int8`), as llama.cpp multiplies its k-quants by q8_K: each row's table
// is rounded to int8 steps of its largest magnitude m_r,
//   L_r[k] = nearest-even(float(lut[r][k] * float(127 / m_r)))   (|error| <= m_r / 254 + 1 ulp),
// the row's sum over the int8 activations is exact in int32 (|sum| <= 127^2 x
// 65535), and with token t's activations s_t q_t
//   y[t][r] = float(sum_c L_r[code] q_t[c]) * (m_r / 127) * s_t
//             + sum over the row's exceptions of (value - L_r[0] m_r / 127) s_t q_t[col]
// (the dense pass counted code 0's int8 value under an exception).
using SqueezeI8Args = Int8GemmArgs<SqueezeView>;
// What the int8 row kernels see: the arguments plus, filled by
// gemm_squeezellm_i8, each token's sum of q (int32) and, for matrices with
// exceptions, its activations s_t q_t as floats (stride cols).
struct SqueezeI8Rows {
  SqueezeI8Args a;
  const int32_t* q_sums = nullptr;
  const float* x_dequant = nullptr;
};
using SqueezeI8RowsFn = void (*)(const SqueezeI8Rows& args, uint32_t row_begin, uint32_t row_end);

struct SqueezeGemvKernels {
  Isa isa = Isa::kScalar;
  SqueezeRowsFn rows = nullptr;
  SqueezeI8RowsFn rows_i8 = nullptr;  // AVX-512 with VBMI and VNNI, else the scalar definition
};
const SqueezeGemvKernels& squeezellm_gemv_kernels(Isa isa);
const SqueezeGemvKernels& best_squeezellm_gemv_kernels();

// y = W x for args.batch tokens (1..kMaxKernelBatch), rows split across `pool`
// (may be null); kInvalidArgument on a bad shape or stride.
Status gemm_squeezellm(const SqueezeGemvKernels& k, const SqueezeGemmArgs& args, ThreadPool* pool);
// The same over int8 activations (SqueezeI8Args).
Status gemm_squeezellm_i8(const SqueezeGemvKernels& k, const SqueezeI8Args& args, ThreadPool* pool);

}  // namespace submoe::kernels
