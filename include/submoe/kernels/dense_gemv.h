// Dense baselines: Y = W X for row-major f32 or bf16 weights W [rows x cols] and
// f32 activations, B = 1..kMaxKernelBatch tokens. These are what the compressed
// kernels are measured against and what the model uses for dense layers.
//
// Same conventions as ternary_gemv.h: pick a DenseGemvKernels table once
// (best_dense_gemv_kernels() or dense_gemv_kernels(isa)), pass an optional thread
// pool (rows are split across its threads); nothing is allocated per call.
// bf16 weights are widened exactly to f32 in registers (shift by 16), so results
// match an f32 computation on the same weights; x is rounded to bf16 only when
// the caller asks (ActivationType::kBF16, llama.cpp's BF16 arithmetic), and
// then, on CPUs with AVX512-BF16, bf16 weights meet it in vdpbf16ps.
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
  bool huge_pages = false;  // the rows are in 2 MiB pages (DenseGemmArgs::prefetch_next_row)

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
  // The bf16x kernel's input: token t's x rounded to bf16 at x_bf16 + t *
  // x_bf16_stride, zero from cols up to the stride (a multiple of 32).
  // prepare_dense_activations fills it.
  const uint16_t* x_bf16 = nullptr;
  size_t x_bf16_stride = 0;
  // A single token's rows are read one at a time; this chooses what the
  // software prefetch reaches for: the next row (weights in 4 KiB pages) or
  // 1 KiB ahead in the same row (2 MiB pages: core/page_backing.h). Speed
  // only; results are the same bits either way.
  bool prefetch_next_row = false;
};

using DenseRowsFn = void (*)(const DenseGemmArgs& args, uint32_t row_begin, uint32_t row_end);
// Writes x[0, cols) rounded to bf16 (nearest even) and zeros up to `padded`.
using Bf16RoundFn = void (*)(const float* x, uint32_t cols, uint16_t* out, size_t padded);

struct DenseGemvKernels {
  Isa isa = Isa::kScalar;
  const char* f32_name = nullptr;
  DenseRowsFn f32 = nullptr;
  const char* bf16_name = nullptr;
  DenseRowsFn bf16 = nullptr;
  // Optional: bf16 weights x bf16-rounded inputs (DenseGemmArgs::x_bf16), and
  // the rounding it reads. Without it, kBF16 inputs are rounded into an f32
  // copy for the bf16 kernel.
  const char* bf16x_name = nullptr;
  DenseRowsFn bf16x = nullptr;
  Bf16RoundFn round_bf16 = nullptr;
};

// The table of one ISA (the caller makes sure the CPU supports it): for
// AVX-512 on a CPU with AVX512-BF16, with the vdpbf16ps bf16x kernel.
const DenseGemvKernels& dense_gemv_kernels(Isa isa);
// Every table of `isa` this CPU runs (AVX-512: without bf16x, then with it
// where supported), for tests and comparisons.
std::vector<const DenseGemvKernels*> dense_gemv_tables(Isa isa);
// dense_gemv_kernels(best_isa()), decided once.
const DenseGemvKernels& best_dense_gemv_kernels();
const char* dense_kernel_name(const DenseGemvKernels& k, DenseType type);

// Callers that run the row kernel themselves (over their own thread split)
// call this first, on the calling thread, and run the kernel it returns.
// `activations` kBF16: each token's x is rounded to bf16 first (as llama.cpp's
// BF16 type and transformers in bf16 compute), into the calling thread's
// buffer (valid until its next call): as bf16 for the table's bf16x kernel
// (bf16 weights), else as an f32 copy args->x then points at.
DenseRowsFn prepare_dense_activations(const DenseGemvKernels& kernels, DenseGemmArgs* args,
                                      ActivationType activations = ActivationType::kF32);

// Y = W X. x: batch tokens of w.cols f32 values, token stride x_stride (>= cols
// when batch > 1); y: batch x rows, token stride y_stride (>= rows when
// batch > 1). Errors: null pointers, batch outside 1..kMaxKernelBatch, strides.
Status gemm_dense(const DenseGemvKernels& kernels, const DenseMatrixView& w, const float* x, size_t x_stride,
                  uint32_t batch, const OutputView& y, ThreadPool* pool,
                  ActivationType activations = ActivationType::kF32);

}  // namespace submoe::kernels
