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

struct SqueezeGemvKernels {
  Isa isa = Isa::kScalar;
  SqueezeRowsFn rows = nullptr;
};
const SqueezeGemvKernels& squeezellm_gemv_kernels(Isa isa);
const SqueezeGemvKernels& best_squeezellm_gemv_kernels();

// y = W x for args.batch tokens (1..kMaxKernelBatch), rows split across `pool`
// (may be null); kInvalidArgument on a bad shape or stride.
Status gemm_squeezellm(const SqueezeGemvKernels& k, const SqueezeGemmArgs& args, ThreadPool* pool);

}  // namespace submoe::kernels
