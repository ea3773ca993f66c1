// Fused products straight from SpQR matrices (codec/spqr.h): Y = W X for
// B = 1..kMaxKernelBatch tokens, W = the two-level dense decode plus the
// exceptions' corrections. Per row and 16-column group, the group's scale and
// zero are decoded from their 3-bit codes and fp16 block parameters, the 16
// codes are spread into bytes (pdep) and widened to floats, the weights
// formed as s (q - z) exactly as the reference decoder forms them, and
// multiplied into each token's accumulators, tokens 4 at a time; then the
// row's CSR corrections (kernels/csr_pass.h). W is never materialized.
// Scalar, AVX2 and AVX-512 tables, chosen once (best_spqr_gemv_kernels).
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

struct SpqrGemvKernels {
  Isa isa = Isa::kScalar;
  SpqrRowsFn rows = nullptr;
};
const SpqrGemvKernels& spqr_gemv_kernels(Isa isa);
const SpqrGemvKernels& best_spqr_gemv_kernels();

// y = W x for args.batch tokens (1..kMaxKernelBatch), rows split across `pool`
// (may be null); kInvalidArgument on a bad shape, pointer or stride.
Status gemm_spqr(const SpqrGemvKernels& k, const SpqrGemmArgs& args, ThreadPool* pool);

}  // namespace submoe::kernels
