// Fused products straight from SpQR matrices (codec/spqr.h): Y = W X for
// B = 1..kMaxKernelBatch tokens, W = the two-level dense decode plus the
// exceptions' corrections. Per row and 16-column group, the group's scale and
// zero are decoded from their 3-bit codes and fp16 block parameters, the 16
// codes are spread into bytes (pdep) and widened to floats, the weights
// formed as s (q - z) exactly as the reference decoder forms them, and
// multiplied into each token's accumulators, tokens 4 at a time; then the
// row's CSR corrections (kernels/csr_pass.h). W is never materialized.
// Scalar, AVX2 and AVX-512 tables, chosen once (best_spqr_gemv_kernels); with
// int8 activations, integer code x activation sums per group (SpqrI8Args).
#pragma once

#include <cstddef>
#include <cstdint>

#include "submoe/codec/spqr.h"
#include "submoe/core/cpu_features.h"
#include "submoe/core/status.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::kernels {

// A validated matrix's storage (spqr::SpqrMatrix), borrowed.
struct SpqrView {
  const uint8_t* codes = nullptr;
  const uint8_t* stat_codes = nullptr;
  const uint16_t* stat_params = nullptr;  // fp16 [blocks, groups, 4]
  uint32_t rows = 0, cols = 0, bits = 3;
  const int32_t* row_ptr = nullptr;
  const uint16_t* col = nullptr;
  const uint16_t* value = nullptr;  // fp16 corrections
  static SpqrView of(const spqr::SpqrMatrix& m);
};

struct SpqrGemmArgs {
  SpqrView w;
  const float* x = nullptr;  // token t's cols activations at x + t * x_stride
  size_t x_stride = 0;
  uint32_t batch = 1;
  float* y = nullptr;  // token t's rows results at y + t * y_stride
  size_t y_stride = 0;
};
using SpqrRowsFn = void (*)(const SpqrGemmArgs& args, uint32_t row_begin, uint32_t row_end);

// The int8-activation product (ActivationQuant::kInt8, kernels/activations.h):
// token t's activations are s_t q_t with q_t int8 (xq + t * xq_stride, cols of
// them) and
//   y[t][r] = s_t (sum_g [s_g (sum_{c in g} code[r][c] q_t[c]) - s_g z_g Q_t,g]
//                  + sum over row r's exceptions of value q_t[col]),
// Q_t,g = sum_{c in g} q_t[c]; the code x activation sums are exact in int32
// (vpdpbusd on AVX-512 VNNI, as llama.cpp's Q3_K x Q8_K dot product).
struct SpqrI8Args {
  SpqrView w;
  const int8_t* xq = nullptr;
  size_t xq_stride = 0;
  const float* x_scales = nullptr;  // s_t
  uint32_t batch = 1;
  float* y = nullptr;
  size_t y_stride = 0;
  // Filled by gemm_spqr_i8 for the row kernels: Q_t,g as floats, token t's
  // cols / 16 sums at group_sums + t * (cols / 16); and a copy of the
  // activations with 4 zero bytes after each token's (stride cols + 4), so
  // the exceptions' pass may gather 32-bit words at any column.
  const float* group_sums = nullptr;
  const int8_t* xq_padded = nullptr;
};
using SpqrI8RowsFn = void (*)(const SpqrI8Args& args, uint32_t row_begin, uint32_t row_end);

struct SpqrGemvKernels {
  Isa isa = Isa::kScalar;
  SpqrRowsFn rows = nullptr;
  SpqrI8RowsFn rows_i8 = nullptr;
};
const SpqrGemvKernels& spqr_gemv_kernels(Isa isa);
const SpqrGemvKernels& best_spqr_gemv_kernels();

// y = W x for args.batch tokens (1..kMaxKernelBatch), rows split across `pool`
// (may be null); kInvalidArgument on a bad shape, pointer or stride.
Status gemm_spqr(const SpqrGemvKernels& k, const SpqrGemmArgs& args, ThreadPool* pool);
// The same over int8 activations (SpqrI8Args).
Status gemm_spqr_i8(const SpqrGemvKernels& k, const SpqrI8Args& args, ThreadPool* pool);

}  // namespace submoe::kernels
