// Fused matrix-vector / small-batch products straight from residual-VQ codes
// (codec/rvq_format.h, in the execution layout of kernels/rvq_panels.h):
// Y = W' X for B = 1..64 tokens of already-rotated activations, W' never
// materialized.
//
// Every code of a row selects one entry of one stage codebook: block
// i = g * S + s of row r holds codes[r][g][s], and the row's result is
//
//   y[r] = scale[r] * sum_{i < n} T[i][code(r, i)],   n = groups * S,
//   T[i][c] = codebook[s][c] . x[g*16 .. g*16+16)      (i = g * S + s),
//
// so a call first builds the lookup table T (the 256 dot products of every
// (group, stage) block, shared by all rows; part of the timed call) and then
// each row adds n table entries and applies its scale.
//
// Batch 1: int8 tables looked up 32 at a time with vpshufb. The table is cut
// into tiles of kRvqI8TileGroups groups (all their stages); a tile's f32
// entries are rounded to int8 against the tile's own scale
// s_t = M_t / 127 (M_t the largest |entry| of the tile): q = round(T / s_t).
// A row sums its q's of a tile exactly in int16/int32 and adds s_t * Q_t in
// f32 (one fma), tile after tile (ascending), then multiplies by its row scale. The
// vpshufb lookup of an 8-bit code c = 16 H + l: 16 slices E_0..E_15 of 16
// bytes per block with
//   E_h = q[16h..16h+16) XOR q[16(h+1)..)   (h != 7, 15),  E_7 = q[112..128),
//   E_15 = q[240..256);
// slice h is read at index adds_epu8(c, 112 - 16 (h mod 8)) (h < 8) or
// adds_epu8(c ^ 0x80, 112 - 16 (h mod 8)) (h >= 8), which keeps c's low
// nibble and has bit 7 clear (vpshufb reads the slice instead of writing 0)
// exactly when h >= H within c's half, so the XOR of the 16 reads
// telescopes to q[c]. Every ISA computes the same tables (the scalar
// reference uses correctly rounded fma in the AVX2 kernel's order) and the
// same sums in the same order: results are bit-identical across ISAs.
//
// B > 1, in slabs of tokens: the codes are decoded once per slab, never per
// token. AVX2 (and AVX-512) decode each 16-weight subvector into registers
// (the sum of its S codebook rows, ascending s) and multiply it into every
// token of the slab with FMAs; the scalar kernel builds f32 tables holding the
// entries of the slab's tokens side by side (T[i][c][t]), so one lookup of a
// code byte serves all of them.
//
// Dispatch once, high up: pick an RvqGemvKernels table (best_rvq_gemv_kernels()
// or rvq_gemv_kernels(isa)) and pass it down; kernels never test CPU features.
// Kernels allocate nothing: the caller passes a workspace of
// rvq_gemm_workspace_floats(...) floats and, optionally, a thread pool (table
// tiles or blocks, then rows, are split across its threads).
//
// Error bounds (what the tests hold every kernel to). With u = 2^-24 and
// gamma_k = k u / (1 - k u), for one output (row r, token t) let
//   A = sum_{i<n} sum_{j<16} |codebook[s][code(r, i)][j] * x_t[g*16 + j]|
// (the sum of the absolute products of the exact formula). Each f32 table
// entry is a dot product of 16 products, computed with FMAs in any order, so
//   |fl(T_i) - T_i| <= gamma_16 * A_i      (A_i: block i's share of A).
// Slabs, f32 tables: the n entries are summed in f32 in any order, adding at
// most gamma_{n-1} * sum |fl(T_i)| <= gamma_{n-1} (1 + gamma_16) A; the final
// product with the f16 scale rounds once more (u |result|):
//   |y_kernel - y_exact| <= |scale| * A * ((gamma_16 + gamma_{n-1} (1 + gamma_16)) (1 + u) + u).
// Slabs, decoded subvectors: each weight's stage sum rounds S - 1 times
// (gamma_{S-1} of its share of A), each product joins at most cols - 1 f32
// additions (lane chains, their horizontal sum, the column tiles):
//   |y_kernel - y_exact| <= |scale| * A * ((gamma_{S-1} + gamma_cols (1 + gamma_{S-1})) (1 + u) + u).
// rvq_error_bound() is the larger of the two (every slab kernel is held to it).
// Batch 1 (int8 tables): rounding an entry to q s_t errs by at most
// s_t (1/2 + 2^-12) (the 1/2 of rounding to nearest, plus the f32 roundings
// of 127 / M_t, of the quotient and of s_t, each below 2^-16 of 127 s_t),
// so with E = sum_t n_t s_t (1/2 + 2^-12) over the row's tiles (n_t entries
// in tile t) and the nt + 1 roundings of the f32 tile sums and the scale,
//   |y_kernel - y_exact| <= |scale| * ((gamma_16 A + E) (1 + g) + g (1 + gamma_16) A),
//   g = gamma_{nt+1},
// which rvq_i8_error_bound() evaluates. E is a worst case (every entry off
// by half a step, all in the same direction); real errors add up like a
// random walk, about sqrt(n / 12) s_t.
// y_exact is the real-number value of the formula in rvq_format.h (a float64
// evaluation of it is exact to ~n * 2^-53 A, far inside the bounds). Against
// the f32 reference decoder, which rounds its stage sums and the scale product
// per weight, the difference additionally contains that decoder's own
// roundings (gamma_S per weight). bf16 activations widen exactly, so the
// bounds are the same. Non-finite activations or codebook entries give
// unspecified (but memory-safe) results; at batch 1 a non-finite table entry
// makes its tile's scale NaN, so the rows read NaN rather than a finite
// wrong number.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "submoe/codec/rvq_format.h"
#include "submoe/kernels/rvq_panels.h"
#include "submoe/core/cpu_features.h"
#include "submoe/core/status.h"
#include "submoe/kernels/activations.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::kernels {

// Groups per tile of the batch-1 int8 tables (the unit of one table scale):
// 2 groups = 32 columns, 2 * S blocks (an even count, so tiles end on pair
// boundaries; a row's int16 partial sums of one tile cannot overflow). Small,
// so one group of large activations (no rotation, or structure the rotation
// concentrates) coarsens the steps of one other group only.
inline constexpr uint32_t kRvqI8TileGroups = 2;
// The spans of the panel layout (kRvqSpanGroups groups): a span's tables are
// built together (each stage's codebook read once for all of them) and its
// sliced tables (32 KiB at 4 stages) stay in L1 while every row reads them.
inline constexpr uint32_t kRvqI8SpanGroups = kRvqSpanGroups;

// What one kernel invocation sees (one slab of tokens).
struct RvqGemmArgs {
  RvqPanelView w;
  const float* xs = nullptr;  // prepared f32 activations of the slab: token t at xs + t * x_stride
  size_t x_stride = 0;
  uint32_t tokens = 1;        // tokens in this slab (1..slab)
  uint32_t token_pad = 1;     // table entries per (block, code): tokens rounded up (1, 4, 8, 16)
  const float* cbt = nullptr; // token_pad == 1: codebooks transposed, [S][16][256]
  float* table = nullptr;     // [n][256][token_pad], n = groups * stages; 64-byte aligned
  int8_t* qtable = nullptr;   // batch 1: int8 tables, [pairs][16][32] (slices) or [n][256] (scalar reference)
  float* tile_scale = nullptr;  // batch 1: s_t of every tile
  float* part = nullptr;      // [rows rounded up to 16][token_pad] partial sums between column tiles
  uint32_t tile_blocks = 0;   // blocks per column tile of the row pass (slabs: a multiple of 16)
  float* y = nullptr;         // y[t * y_stride + r] for the slab's tokens
  size_t y_stride = 0;
};

// Builds table blocks [begin, end) (slabs) or spans [begin, end) (batch 1).
using RvqBuildFn = void (*)(const RvqGemmArgs& args, uint32_t begin, uint32_t end);
// Rows [begin, end) (slabs) or 16-row panels [begin, end) (batch 1): lookups,
// partial sums, scale, output.
using RvqRowsFn = void (*)(const RvqGemmArgs& args, uint32_t begin, uint32_t end);

struct RvqGemvKernels {
  Isa isa = Isa::kScalar;
  // B = 1: int8 tables of one token; build over tiles, rows over panels.
  const char* gemv_name = nullptr;
  RvqBuildFn gemv_build = nullptr;
  RvqRowsFn gemv_rows = nullptr;
  // B >= 2: tokens in slabs of at most `slab`, each slab's entries side by side.
  const char* gemm_name = nullptr;
  RvqBuildFn gemm_build = nullptr;
  RvqRowsFn gemm_rows = nullptr;
  uint32_t slab = 8;
  uint32_t min_token_pad = 1;  // token_pad = max(min_token_pad, bit_ceil(tokens))
  // B >= 2 builds slab tables (gemm_build); false: the rows decode each
  // subvector into registers instead (gemm_build unused, no table).
  bool gemm_table = true;
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

// The slab bound above: |y_kernel - y_exact| <= rvq_error_bound(groups, stages,
// A, |scale|) with A the row's sum of absolute products.
double rvq_error_bound(uint32_t groups, uint32_t stages, double sum_abs_products, double abs_scale);

// The batch-1 bound above: sum_tile_steps = sum_t n_t s_t over the row's
// tiles, tiles = their count.
double rvq_i8_error_bound(uint64_t tiles, double sum_abs_products, double sum_tile_steps, double abs_scale);

// Tiles and spans of a batch-1 call: ceil(groups / kRvqI8TileGroups) and
// ceil(groups / kRvqI8SpanGroups).
inline constexpr uint32_t rvq_i8_tiles(uint32_t cols) {
  return (rvq::rvq_groups(cols) + kRvqI8TileGroups - 1) / kRvqI8TileGroups;
}
inline constexpr uint32_t rvq_i8_spans(uint32_t cols) { return rvq_spans(cols); }

// Y = W' X. Precondition too costly to re-check per call: the matrix is valid
// (codes any byte, finite scales, finite codebooks). The call checks the kernel
// table, shapes (cols a positive multiple of 16, stages 1..kRvqMaxStages),
// pointers, batch (1..kMaxKernelBatch), strides and the workspace size, and
// returns kInvalidArgument on a mismatch.
Status gemm_rvq(const RvqGemvKernels& kernels, const RvqPanelView& w, const ActivationsView& x, const OutputView& y,
                std::span<float> workspace, ThreadPool* pool);

}  // namespace submoe::kernels
