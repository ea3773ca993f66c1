// Fused matrix-vector / small-batch products straight from residual-VQ codes
// (codec/rvq_format.h): Y = W' X for B = 1..64 tokens of already-rotated
// activations, W' never materialized.
//
// Every byte of a row's codes selects one entry of one stage codebook: byte
// i = g * S + s of row r is codes[r][g][s], and the row's result is
//
//   y[r] = scale[r] * sum_{i < n} T[i][codes_r[i]],   n = groups * S,
//   T[i][c] = codebook[s][c] . x[g*16 .. g*16+16)     (i = g * S + s),
//
// so a call first builds the lookup table T (the 256 dot products of every
// (group, stage) block, shared by all rows; part of the timed call) and then
// each row adds n table entries and applies its scale. For B > 1 the table
// holds the entries of a slab of tokens side by side (T[i][c][t]), so one
// lookup of a code byte serves all of them: the codes are decoded once per
// slab, never per token.
//
// Dispatch once, high up: pick an RvqGemvKernels table (best_rvq_gemv_kernels()
// or rvq_gemv_kernels(isa)) and pass it down; kernels never test CPU features.
// Kernels allocate nothing: the caller passes a workspace of
// rvq_gemm_workspace_floats(...) floats and, optionally, a thread pool (table
// blocks, then rows, are split across its threads).
//
// Error bound (what the tests hold every kernel to). With u = 2^-24 and
// gamma_k = k u / (1 - k u), for one output (row r, token t) let
//   A = sum_{i<n} sum_{j<16} |codebook[s][codes_r[i]][j] * x_t[g*16 + j]|
// (the sum of the absolute products of the exact formula). Each table entry is
// an f32 dot product of 16 products, computed with FMAs in any order, so
//   |fl(T_i) - T_i| <= gamma_16 * A_i      (A_i: block i's share of A);
// the n entries are summed in f32 in any order (per-lane partials, tiles,
// horizontal sums), adding at most gamma_{n-1} * sum |fl(T_i)| <=
// gamma_{n-1} (1 + gamma_16) A; the final product with the f16 scale (exact in
// f32) rounds once more (u |result|). Altogether
//   |y_kernel - y_exact| <= |scale| * A * ((gamma_16 + gamma_{n-1} (1 + gamma_16)) (1 + u) + u)
// which rvq_error_bound() evaluates. y_exact is the real-number value of the
// formula in rvq_format.h (a float64 evaluation of it is exact to ~n * 2^-53 A,
// far inside the bound). Against the f32 reference decoder, which rounds its
// stage sums and the scale product per weight, the difference additionally
// contains that decoder's own roundings (gamma_S per weight). bf16 activations
// widen exactly, so the bound is the same. Non-finite activations or
// codebook entries give unspecified (but memory-safe) results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "submoe/codec/rvq_format.h"
#include "submoe/core/cpu_features.h"
#include "submoe/core/status.h"
#include "submoe/kernels/activations.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::kernels {

// What one kernel invocation sees (one slab of tokens).
struct RvqGemmArgs {
  rvq::RvqView w;
  const float* xs = nullptr;  // prepared f32 activations of the slab: token t at xs + t * x_stride
  size_t x_stride = 0;
  uint32_t tokens = 1;        // tokens in this slab (1..slab)
  uint32_t token_pad = 1;     // table entries per (block, code): tokens rounded up (1, 4, 8, 16)
  const float* cbt = nullptr; // token_pad == 1: codebooks transposed, [S][16][256]
  float* table = nullptr;     // [n][256][token_pad], n = groups * stages; 64-byte aligned
  float* part = nullptr;      // [rows][token_pad] partial sums between column tiles
  uint32_t tile_blocks = 0;   // blocks per column tile of the row pass (a multiple of 16)
  float* y = nullptr;         // y[t * y_stride + r] for the slab's tokens
  size_t y_stride = 0;
};

// Builds table blocks [block_begin, block_end).
using RvqBuildFn = void (*)(const RvqGemmArgs& args, uint32_t block_begin, uint32_t block_end);
// Rows [row_begin, row_end): lookups, partial sums, scale, output.
using RvqRowsFn = void (*)(const RvqGemmArgs& args, uint32_t row_begin, uint32_t row_end);

struct RvqGemvKernels {
  Isa isa = Isa::kScalar;
  // B = 1: f32 table of one token (token_pad 1).
  const char* gemv_name = nullptr;
  RvqBuildFn gemv_build = nullptr;
  RvqRowsFn gemv_rows = nullptr;
  // B >= 2: tokens in slabs of at most `slab`, each slab's entries side by side.
  const char* gemm_name = nullptr;
  RvqBuildFn gemm_build = nullptr;
  RvqRowsFn gemm_rows = nullptr;
  uint32_t slab = 8;
  uint32_t min_token_pad = 1;  // token_pad = max(min_token_pad, bit_ceil(tokens))
};

// The table of one ISA. The caller must make sure the CPU supports it
// (cpu_features()); tests call every supported table directly.
const RvqGemvKernels& rvq_gemv_kernels(Isa isa);
// rvq_gemv_kernels(best_isa()), decided once.
const RvqGemvKernels& best_rvq_gemv_kernels();

// Name of the kernel gemm_rvq runs for this table and batch size.
const char* rvq_kernel_name(const RvqGemvKernels& k, uint32_t batch);

// Table entries per (block, code) for a slab of `tokens` tokens.
uint32_t rvq_token_pad(const RvqGemvKernels& k, uint32_t tokens);

// Floats of workspace gemm_rvq needs for this table, shape, stage count and batch
// (transposed codebooks, the activations as f32, the table of one slab, the
// partial sums of every row). At 2080 x 6144, 4 stages: ~0.42 M floats (1.7 MB)
// for batch 1, ~3.2 M (12.8 MB) for batch 8 on AVX2.
size_t rvq_gemm_workspace_floats(const RvqGemvKernels& k, uint32_t rows, uint32_t cols, uint32_t stages,
                                 uint32_t batch);

// The bound above: |y_kernel - y_exact| <= rvq_error_bound(n, A, |scale|) with
// n = groups * stages table entries per row and A the row's sum of absolute
// products.
double rvq_error_bound(uint64_t n, double sum_abs_products, double abs_scale);

// Y = W' X. Precondition too costly to re-check per call: the matrix is valid
// (codes any byte, finite scales, finite codebooks). The call checks the kernel
// table, shapes (cols a positive multiple of 16, stages 1..kRvqMaxStages),
// pointers, batch (1..kMaxKernelBatch), strides and the workspace size, and
// returns kInvalidArgument on a mismatch.
Status gemm_rvq(const RvqGemvKernels& kernels, const rvq::RvqView& w, const ActivationsView& x, const OutputView& y,
                std::span<float> workspace, ThreadPool* pool);

}  // namespace submoe::kernels
