// The quantizer hook of GPTQ-style error feedback: what a representation tells
// the solver about its code, a block of columns at a time, so one solver
// (quant/gptq.h) serves scalar grids (block width 1) and vector codes (block
// width d, where the update is block-LDL feedback) alike.
//
// The solver walks the columns of a rows x cols matrix in blocks of
// block_width(); for every row it calls begin_row once with the row's original
// values, begin_group at each multiple of group_width() (when non-zero) with
// the row's CURRENT (error-updated) values of that group, and quantize for each
// block with the block's current values. Calls for different rows (or row
// blocks, see row_block) may run concurrently; calls for one row come from one
// thread, in column order (or,
// with act-order, in the solver's permuted order; only quantizers with block
// width 1 and no groups allow that).
#pragma once

#include <cstddef>
#include <span>

namespace submoe::quant {

class BlockQuantizer {
 public:
  virtual ~BlockQuantizer() = default;

  virtual size_t rows() const = 0;
  virtual size_t cols() const = 0;
  // Columns quantized jointly; divides cols().
  virtual size_t block_width() const = 0;
  // Columns whose parameters are fitted from their current values when the
  // solver reaches the first of them (GPTQ's grouped grids); 0 = none.
  // A multiple of block_width() that divides cols().
  virtual size_t group_width() const { return 0; }

  // The whole matrix before any begin_row: its original values (rows() x
  // cols(), row-major) and the diagonal of its Hessian (cols() values; empty
  // under round-to-nearest). Called once by rtn_quantize and gptq_quantize,
  // for quantizers that make matrix-level choices (SqueezeLLM's exceptions
  // and sensitivity-weighted tables); the rest ignore it.
  virtual void begin_matrix(std::span<const float> /*w*/, std::span<const float> /*h_diag*/) {}
  // Quantizers that optimize the whole matrix at once against H instead of
  // column by column (AQLM: alternating beam search over code tuples and
  // least-squares codebooks on tr((W - Q) H (W - Q)^T)): when true, the
  // solvers call solve_matrix once after begin_matrix and nothing else (no
  // begin_row, no quantize). `h` is the full Hessian (cols() x cols(),
  // empty under round-to-nearest) and `damp` GPTQ's relative dampening
  // (damp x mean(diag H) added to the diagonal). Returns the proxy loss.
  virtual bool solves_matrix() const { return false; }
  virtual double solve_matrix(std::span<const float> /*w*/, std::span<const float> /*h*/, double /*damp*/) {
    return 0.0;
  }
  // Row r's original values (cols() floats), before any quantize call on r.
  // Calling it again restarts the row (the solver's RTN fallback does).
  virtual void begin_row(size_t r, std::span<const float> original) = 0;
  // Columns [c, c + group_width()) of row r, current values.
  virtual void begin_group(size_t /*r*/, size_t /*c*/, std::span<const float> /*current*/) {}
  // Rows whose group parameters are fitted jointly (SpQR quantizes each
  // group's scales and zeros again over blocks of 16 rows); 1 = independent
  // rows. With more, the solver walks the rows [r0, r0 + row_block()) (fewer
  // at the end) of a block in lockstep, one thread per block: at each group
  // it calls begin_groups for all of them before quantizing any of them in
  // that group. Needs group_width() > 0.
  virtual size_t row_block() const { return 1; }
  // Columns [c, c + group_width()) of rows [r0, r1), current values (row r at
  // current + (r - r0) * ld). The default calls begin_group for each row.
  virtual void begin_groups(size_t r0, size_t r1, size_t c, const float* current, size_t ld) {
    for (size_t r = r0; r < r1; ++r) begin_group(r, c, {current + (r - r0) * ld, group_width()});
  }
  // The solver's metric for the blocks of columns [c0, c1) (a multiple of
  // block_width() each), called before any row quantizes them, from one
  // thread, with no act-order only. `u` points to the upper Cholesky factor U
  // of H^-1 (row-major, leading dimension `ld`; U[i][j] = u[i * ld + j], global
  // column indices). The solver's loss for block F = [c, c + d) of a row is
  // 1/2 ||(w_F - q_F) U_FF^-1||^2 (w_F the block's current values): a vector
  // code may choose its codeword under that metric instead of the Euclidean
  // one. Scalar grids ignore it (for d = 1 it is a constant factor).
  virtual void begin_columns(size_t /*c0*/, size_t /*c1*/, const float* /*u*/, size_t /*ld*/) {}
  // Quantizes columns [c, c + block_width()) of row r from `values` (their
  // current values) and writes their reconstruction to `reconstructed`.
  virtual void quantize(size_t r, size_t c, const float* values, float* reconstructed) = 0;
};

}  // namespace submoe::quant
