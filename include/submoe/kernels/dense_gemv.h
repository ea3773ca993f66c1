// Dense baselines: Y = W X for row-major f32 or bf16 weights W [rows x cols] and
// f32 activations, B = 1..kMaxKernelBatch tokens. These are what the compressed
// kernels are measured against and what the model uses for dense layers.
//
// Same conventions as ternary_gemv.h: pick a DenseGemvKernels table once
// (best_dense_gemv_kernels() or dense_gemv_kernels(isa)), pass an optional thread
// pool (rows are split across its threads); nothing is allocated per call.
// bf16 weights are widened exactly to f32 in registers (shift by 16), or, on
// CPUs with AVX512-BF16, multiplied with vdpbf16ps against x split exactly into
// three bf16 parts (hi + mid + lo == x): either way every product is the exact
// f32 product and only the summation order differs from an f32 computation on
// the same weights; x is never rounded to bf16.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "submoe/core/cpu_features.h"
#include "submoe/core/status.h"
#include "submoe/kernels/activations.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::kernels {

enum class DenseType : uint8_t { kF32 = 0, kBF16 = 1 };

struct DenseMatrixView {
  const void* data = nullptr;  // row r at data + r * stride elements
  DenseType type = DenseType::kF32;
  uint32_t rows = 0;
  uint32_t cols = 0;
  size_t stride = 0;  // elements between rows, >= cols

  static DenseMatrixView f32(const float* w, uint32_t rows, uint32_t cols) {
    return {w, DenseType::kF32, rows, cols, cols};
  }
  static DenseMatrixView bf16(const bf16_t* w, uint32_t rows, uint32_t cols) {
    return {w, DenseType::kBF16, rows, cols, cols};
  }
};

// What one kernel invocation sees; rows [row_begin, row_end) are computed for
// all tokens.
struct DenseGemmArgs {
  DenseMatrixView w;
  const float* x = nullptr;  // token t at x + t * x_stride
  size_t x_stride = 0;
  uint32_t batch = 1;
  float* y = nullptr;  // y[t * y_stride + r]
  size_t y_stride = 0;
  // Tables with bf16_split, bf16 weights: token t's x as part_count bf16
  // parts at x_parts + (part_count t + k) * part_stride, zero from cols up to
  // part_stride (a multiple of 32): 3 parts hi + mid + lo == x exactly, or 1,
  // x rounded to bf16. prepare_dense_activations fills them.
  const uint16_t* x_parts = nullptr;
  size_t part_stride = 0;
  uint32_t part_count = 3;
};

using DenseRowsFn = void (*)(const DenseGemmArgs& args, uint32_t row_begin, uint32_t row_end);
// Writes x[0, cols) as `count` bf16 parts (3: exact, hi + mid + lo; 1: x
// rounded to nearest even), each part_stride apart, zero-padded.
using Bf16SplitFn = void (*)(const float* x, uint32_t cols, uint32_t count, uint16_t* parts, size_t part_stride);

struct DenseGemvKernels {
  Isa isa = Isa::kScalar;
  const char* f32_name = nullptr;
  DenseRowsFn f32 = nullptr;
  const char* bf16_name = nullptr;
  DenseRowsFn bf16 = nullptr;
  Bf16SplitFn bf16_split = nullptr;  // set: the bf16 kernel reads DenseGemmArgs::x_parts
};

// The table of one ISA (the caller makes sure the CPU supports it): for
// AVX-512 on a CPU with AVX512-BF16, the vdpbf16ps bf16 kernel.
const DenseGemvKernels& dense_gemv_kernels(Isa isa);
// Every table of `isa` this CPU runs (AVX-512: the widening one, then the
// vdpbf16ps one where supported), for tests and comparisons.
std::vector<const DenseGemvKernels*> dense_gemv_tables(Isa isa);
// dense_gemv_kernels(best_isa()), decided once.
const DenseGemvKernels& best_dense_gemv_kernels();
const char* dense_kernel_name(const DenseGemvKernels& k, DenseType type);

// Callers that run the row kernel themselves (over their own thread split)
// call this first, on the calling thread. `activations` kBF16: each token's x
// is rounded to bf16 first (as llama.cpp's BF16 type and transformers in bf16
// compute). When the table's bf16 kernel reads split activations and args->w
// is bf16, the split of args->batch tokens goes to the calling thread's buffer
// and args->x_parts points at it; otherwise, for kBF16, args->x points at the
// rounded copy in that buffer. Valid until this thread's next call.
void prepare_dense_activations(const DenseGemvKernels& kernels, DenseGemmArgs* args,
                               ActivationType activations = ActivationType::kF32);

// Y = W X. x: batch tokens of w.cols f32 values, token stride x_stride (>= cols
// when batch > 1); y: batch x rows, token stride y_stride (>= rows when
// batch > 1). Errors: null pointers, batch outside 1..kMaxKernelBatch, strides.
Status gemm_dense(const DenseGemvKernels& kernels, const DenseMatrixView& w, const float* x, size_t x_stride,
                  uint32_t batch, const OutputView& y, ThreadPool* pool,
                  ActivationType activations = ActivationType::kF32);

}  // namespace submoe::kernels
