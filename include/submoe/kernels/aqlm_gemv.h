// Fused products straight from AQLM matrices (codec/aqlm.h): Y = W X for B =
// 1..kMaxKernelBatch tokens of f32 activations. W is never materialized: per
// row and 8-column group the M codewords are summed from the matrix's f32
// codebooks (2x8: 2 x 256 x 8 floats = 16 KiB, L1-resident; 1x16: 2 MiB, from
// L2/L3, the cost the chapter's runtime notes predict, 0x05H) and multiplied
// into every token's sum, so each group is decoded once for the whole batch:
//
//   y[t][r] = s_r * sum_g (C_0[a_{r,g,0}] + ... + C_{M-1}[a_{r,g,M-1}]) . x[t][8g .. 8g+7]
//
// The rows differ from the reference decoder followed by a dense product only
// by f32 summation order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "submoe/codec/aqlm.h"
#include "submoe/core/aligned_buffer.h"
#include "submoe/core/cpu_features.h"
#include "submoe/core/status.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::kernels {

// One matrix in the kernels' layout.
struct AqlmPanels {
  uint32_t rows = 0, cols = 0;
  aqlm::Shape shape;
  // f32 [M, 2^B, 8], 64-byte aligned.
  AlignedBuffer<float> codebooks;
  // [rows, cols/8, M] indices, one byte each when B <= 8 (2x8 streams half
  // the bytes of u16 indices), else u16; code_bytes says which.
  AlignedBuffer<uint8_t> codes;
  uint32_t code_bytes = 0;
  AlignedBuffer<float> scales;  // f32 of the f16 row scales
  static Result<AqlmPanels> pack(const aqlm::AqlmMatrix& m);
  uint32_t groups() const { return cols / aqlm::kDim; }
  template <typename C>
  const C* codes_as() const {
    return reinterpret_cast<const C*>(codes.data());
  }
};

struct AqlmArgs {
  const AqlmPanels* w = nullptr;
  uint32_t batch = 1;
  const float* x = nullptr;  // token t at x + t * cols
  float* y = nullptr;        // token t's results at y + t * y_stride
  size_t y_stride = 0;
};
using AqlmRowsFn = void (*)(const AqlmArgs& args, uint32_t row_begin, uint32_t row_end);

struct AqlmGemvKernels {
  Isa isa = Isa::kScalar;
  AqlmRowsFn rows = nullptr;
};
const AqlmGemvKernels& aqlm_gemv_kernels(Isa isa);
const AqlmGemvKernels& best_aqlm_gemv_kernels();

// y = W x for `batch` tokens (1..kMaxKernelBatch) of cols f32 activations
// (token t at x + t * cols; y token t at y + t * rows), rows split across pool.
Status gemm_aqlm(const AqlmGemvKernels& k, const AqlmPanels& w, const float* x, uint32_t batch, float* y,
                 ThreadPool* pool);

}  // namespace submoe::kernels
