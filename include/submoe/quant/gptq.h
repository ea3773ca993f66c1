// GPTQ (Frantar et al.) with lazy block updates and the upper Cholesky factor of
// H^-1, and round-to-nearest (RTN) on the same grids. Batched over a group of
// experts as QMoE does: a group's matrices are processed together, in parallel.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "submoe/core/status.h"
#include "submoe/core/thread_pool.h"
#include "submoe/quant/block_quantizer.h"
#include "submoe/quant/grid.h"

namespace submoe::quant {

struct GptqOptions {
  double damp = 0.1;        // dampening = damp * mean(diag H); QMoE uses 0.1 for experts
  size_t block_size = 128;  // columns per lazy batch (rounded up to a multiple of the group size)
  bool act_order = false;   // columns in order of decreasing diag(H); per-row grids only
};

struct GptqStats {
  bool rtn_fallback = false;   // the factorization failed; RTN was used for this matrix
  std::string fallback_reason;
  size_t dead_inputs = 0;      // columns with diag(H) == 0 (never seen a nonzero input)
  double proxy_loss = 0.0;     // GPTQ's sum over weights of (w - q)^2 / [H^-1]_jj / 2
};

// One matrix W (rows x cols, row-major: rows = outputs, cols = inputs) with its
// Hessian H = X^T X (cols x cols) of the calibration inputs, quantized by
// `quantizer` (whose rows() and cols() must match).
struct GptqJob {
  std::span<const float> w;
  size_t rows = 0;
  size_t cols = 0;
  std::span<const float> h;       // empty => RTN (no calibration data for this matrix)
  BlockQuantizer* quantizer = nullptr;
  GptqStats stats;                // written by gptq_quantize_group
};

// Round to nearest: every block quantized from the original values, no
// feedback. Errors: shapes, non-finite weights.
Status rtn_quantize(std::span<const float> w, size_t rows, size_t cols, BlockQuantizer& quantizer);

// GPTQ with lazy block updates, generalized to blocks of the quantizer's width d:
// for the block F of columns just quantized, E = (W_F - Q_F) U_FF^-1 and the
// later columns get W_R -= E U_FR, U the upper Cholesky factor of H^-1. For
// d = 1 this is GPTQ exactly; for d > 1 it is block-LDL error feedback
// (the LDLQ update of seed 001 and QuIP#). Rows are processed in parallel on
// `pool` (nullptr = calling thread). A failed factorization is not an error:
// the matrix falls back to RTN and stats.rtn_fallback is set. Errors: shapes,
// non-finite W or H, act-order with a quantizer that has groups or blocks.
Result<GptqStats> gptq_quantize(std::span<const float> w, size_t rows, size_t cols, std::span<const float> h,
                                BlockQuantizer& quantizer, const GptqOptions& options, ThreadPool* pool);

// Quantizes a group of matrices (e.g. 16 experts' gate projections) as one batched
// computation: the matrices are distributed over the pool's threads, each one
// processed single-threaded (small matrices keep every core busy this way).
Status gptq_quantize_group(std::span<GptqJob> jobs, const GptqOptions& options, ThreadPool* pool);

// The same on a scalar grid (GridQuantizer into a QuantizedMatrix).
Result<QuantizedMatrix> rtn_quantize(std::span<const float> w, size_t rows, size_t cols, const GridSpec& grid);
Result<GptqStats> gptq_quantize(std::span<const float> w, size_t rows, size_t cols, std::span<const float> h,
                                const GridSpec& grid, const GptqOptions& options, QuantizedMatrix* out,
                                ThreadPool* pool);

}  // namespace submoe::quant
