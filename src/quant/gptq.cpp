#include "submoe/quant/gptq.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>

#include "submoe/codec/ternary_grid.h"
#include "submoe/linalg/dense.h"

namespace submoe::quant {
namespace {

Status check_finite(std::span<const float> v, const char* what) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) return numerical_error(std::string(what) + " has a non-finite value at index " + std::to_string(i));
  }
  return Status::ok();
}

Status check_shapes(std::span<const float> w, size_t rows, size_t cols, std::span<const float> h) {
  if (rows == 0 || cols == 0) return invalid_argument("empty matrix");
  if (w.size() != rows * cols) return invalid_argument("weight size does not match rows x cols");
  if (!h.empty() && h.size() != cols * cols) return invalid_argument("Hessian size does not match cols x cols");
  return Status::ok();
}

Status check_quantizer(const BlockQuantizer& q, size_t rows, size_t cols) {
  if (q.rows() != rows || q.cols() != cols)
    return invalid_argument("quantizer is for a " + std::to_string(q.rows()) + " x " + std::to_string(q.cols()) +
                            " matrix, the weights are " + std::to_string(rows) + " x " + std::to_string(cols));
  const size_t d = q.block_width(), g = q.group_width();
  if (d == 0 || cols % d != 0)
    return invalid_argument("quantizer block width " + std::to_string(d) + " does not divide " + std::to_string(cols) +
                            " columns");
  if (g != 0 && (g % d != 0 || cols % g != 0))
    return invalid_argument("quantizer group width " + std::to_string(g) + " is not a multiple of its block width " +
                            std::to_string(d) + " dividing " + std::to_string(cols) + " columns");
  if (q.row_block() == 0 || (q.row_block() > 1 && g == 0))
    return invalid_argument("quantizer row block " + std::to_string(q.row_block()) +
                            " (must be 1, or more with column groups)");
  return Status::ok();
}

void begin_rows(std::span<const float> w, size_t rows, size_t cols, BlockQuantizer& q) {
  for (size_t r = 0; r < rows; ++r) q.begin_row(r, w.subspan(r * cols, cols));
}

void rtn_into(std::span<const float> w, size_t rows, size_t cols, BlockQuantizer& q) {
  const size_t d = q.block_width(), g = q.group_width(), rb = q.row_block();
  std::vector<float> rec(d);
  for (size_t r0 = 0; r0 < rows; r0 += rb) {
    const size_t r1 = std::min(rows, r0 + rb);
    for (size_t r = r0; r < r1; ++r) q.begin_row(r, w.subspan(r * cols, cols));
    for (size_t c = 0; c < cols; c += d) {
      if (g != 0 && c % g == 0) q.begin_groups(r0, r1, c, w.data() + r0 * cols + c, cols);
      for (size_t r = r0; r < r1; ++r) q.quantize(r, c, w.data() + r * cols + c, rec.data());
    }
  }
}

}  // namespace

Status rtn_quantize(std::span<const float> w, size_t rows, size_t cols, BlockQuantizer& quantizer) {
  SUBMOE_RETURN_IF_ERROR(check_shapes(w, rows, cols, {}));
  SUBMOE_RETURN_IF_ERROR(check_quantizer(quantizer, rows, cols));
  SUBMOE_RETURN_IF_ERROR(check_finite(w, "weight"));
  quantizer.begin_matrix(w, {});
  if (quantizer.solves_matrix()) {
    quantizer.solve_matrix(w, {}, 0.0);
    return Status::ok();
  }
  rtn_into(w, rows, cols, quantizer);
  return Status::ok();
}

Result<GptqStats> gptq_quantize(std::span<const float> w_in, size_t rows, size_t cols, std::span<const float> h_in,
                                BlockQuantizer& quantizer, const GptqOptions& options, ThreadPool* pool) {
  SUBMOE_RETURN_IF_ERROR(check_shapes(w_in, rows, cols, h_in));
  SUBMOE_RETURN_IF_ERROR(check_quantizer(quantizer, rows, cols));
  SUBMOE_RETURN_IF_ERROR(check_finite(w_in, "weight"));
  SUBMOE_RETURN_IF_ERROR(check_finite(h_in, "Hessian"));
  const size_t d = quantizer.block_width(), g = quantizer.group_width(), rb = quantizer.row_block();
  if (options.act_order && (g != 0 || d != 1)) {
    return invalid_argument("act-order is supported with per-row scalar grids only");
  }
  {
    std::vector<float> h_diag(h_in.empty() ? 0 : cols);
    for (size_t i = 0; i < h_diag.size(); ++i) h_diag[i] = h_in[i * cols + i];
    quantizer.begin_matrix(w_in, h_diag);
  }
  GptqStats stats;
  if (quantizer.solves_matrix()) {
    if (h_in.empty()) {
      stats.rtn_fallback = true;
      stats.fallback_reason = "no calibration inputs";
    }
    stats.proxy_loss = quantizer.solve_matrix(w_in, h_in, options.damp);
    return stats;
  }
  if (h_in.empty()) {
    stats.rtn_fallback = true;
    stats.fallback_reason = "no calibration inputs";
    rtn_into(w_in, rows, cols, quantizer);
    return stats;
  }

  // Column order (identity unless act-order) and the permuted W and H.
  std::vector<size_t> perm(cols);
  std::iota(perm.begin(), perm.end(), size_t{0});
  if (options.act_order) {
    std::stable_sort(perm.begin(), perm.end(),
                     [&](size_t a, size_t b) { return h_in[a * cols + a] > h_in[b * cols + b]; });
  }
  std::vector<float> w(rows * cols);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) w[r * cols + c] = w_in[r * cols + perm[c]];
  std::vector<float> u(cols * cols);
  for (size_t i = 0; i < cols; ++i)
    for (size_t j = 0; j < cols; ++j) u[i * cols + j] = h_in[perm[i] * cols + perm[j]];

  // Dead inputs: never active, so any weight is free; zero them, make H regular.
  double diag_sum = 0.0;
  for (size_t i = 0; i < cols; ++i) {
    if (u[i * cols + i] == 0.0f) {
      ++stats.dead_inputs;
      u[i * cols + i] = 1.0f;
      for (size_t r = 0; r < rows; ++r) w[r * cols + i] = 0.0f;
    }
    diag_sum += u[i * cols + i];
  }
  const float damp = static_cast<float>(options.damp * diag_sum / static_cast<double>(cols));
  for (size_t i = 0; i < cols; ++i) u[i * cols + i] += damp;

  Status factor = linalg::inverse_cholesky_upper_f32(u.data(), cols);
  if (!factor.is_ok()) {
    // Detected numerically by the factorization, not from message text.
    stats.rtn_fallback = true;
    stats.fallback_reason = factor.message();
    rtn_into(w_in, rows, cols, quantizer);
    return stats;
  }

  // Row state from the original weights (ternary levels, per-row int grids).
  begin_rows(w_in, rows, cols, quantizer);
  const size_t unit = g != 0 ? g : d;
  size_t block = std::max<size_t>(1, options.block_size);
  block = (block + unit - 1) / unit * unit;
  std::vector<float> err(rows * block);
  std::vector<double> row_loss(rows, 0.0);

  for (size_t b0 = 0; b0 < cols; b0 += block) {
    const size_t b1 = std::min(cols, b0 + block);
    const size_t nb = b1 - b0;
    if (!options.act_order) quantizer.begin_columns(b0, b1, u.data(), cols);
    // Row blocks of rb rows (1 unless the quantizer couples rows), each walked
    // column by column with its rows in lockstep.
    auto process_blocks = [&](size_t k_begin, size_t k_end, int) {
      std::vector<float> rec(d), e(d);
      for (size_t k0 = k_begin; k0 < k_end; ++k0) {
        const size_t r0 = k0 * rb, r1 = std::min(rows, r0 + rb);
        for (size_t i = b0; i < b1; i += d) {
          if (g != 0 && i % g == 0) quantizer.begin_groups(r0, r1, i, w.data() + r0 * cols + i, cols);
          for (size_t r = r0; r < r1; ++r) {
            float* row = w.data() + r * cols;
            float* row_err = err.data() + r * block;
            quantizer.quantize(r, perm[i], row + i, rec.data());
            // e U_FF = (w_F - q_F): forward substitution over the block (U upper).
            double loss = 0.0;
            for (size_t k = 0; k < d; ++k) {
              float v = row[i + k] - rec[k];
              for (size_t m = 0; m < k; ++m) v -= e[m] * u[(i + m) * cols + i + k];
              e[k] = v / u[(i + k) * cols + i + k];
              loss += 0.5 * static_cast<double>(e[k]) * e[k];
            }
            for (size_t k = 0; k < d; ++k) {
              const float* uk = u.data() + (i + k) * cols;
              for (size_t j = i + d; j < b1; ++j) row[j] -= e[k] * uk[j];
              row_err[i - b0 + k] = e[k];
            }
            row_loss[r] += loss;
          }
        }
      }
    };
    const size_t row_blocks = (rows + rb - 1) / rb;
    if (pool) {
      pool->parallel_for(row_blocks, std::max<size_t>(1, 16 / rb), process_blocks);
    } else {
      process_blocks(0, row_blocks, 0);
    }
    // Lazy batch update of the columns after the block: W[:, b1:] -= Err U[b0:b1, b1:].
    if (b1 < cols) {
      linalg::gemm_f32(false, false, rows, cols - b1, nb, -1.0f, err.data(), block, u.data() + b0 * cols + b1, cols,
                       1.0f, w.data() + b1, cols);
    }
  }
  stats.proxy_loss = std::accumulate(row_loss.begin(), row_loss.end(), 0.0);
  return stats;
}

Result<QuantizedMatrix> rtn_quantize(std::span<const float> w, size_t rows, size_t cols, const GridSpec& grid) {
  SUBMOE_RETURN_IF_ERROR(grid.validate(cols));
  QuantizedMatrix out;
  GridQuantizer q(grid, rows, cols, &out);
  SUBMOE_RETURN_IF_ERROR(rtn_quantize(w, rows, cols, q));
  return out;
}

Result<GptqStats> gptq_quantize(std::span<const float> w, size_t rows, size_t cols, std::span<const float> h,
                                const GridSpec& grid, const GptqOptions& options, QuantizedMatrix* out,
                                ThreadPool* pool) {
  SUBMOE_RETURN_IF_ERROR(grid.validate(cols));
  GridQuantizer q(grid, rows, cols, out);
  return gptq_quantize(w, rows, cols, h, q, options, pool);
}

Status gptq_quantize_group(std::span<GptqJob> jobs, const GptqOptions& options, ThreadPool* pool) {
  std::vector<Status> statuses(jobs.size());
  const int saved_blas_threads = linalg::blas_threads();
  if (pool && pool->num_threads() > 1 && jobs.size() > 1) {
    linalg::set_blas_threads(1);
    pool->parallel_for(jobs.size(), 1, [&](size_t begin, size_t end, int) {
      for (size_t j = begin; j < end; ++j) {
        auto result = gptq_quantize(jobs[j].w, jobs[j].rows, jobs[j].cols, jobs[j].h, *jobs[j].quantizer, options, nullptr);
        if (result.is_ok()) jobs[j].stats = result.value(); else statuses[j] = result.status();
      }
    });
    linalg::set_blas_threads(saved_blas_threads);
  } else {
    for (size_t j = 0; j < jobs.size(); ++j) {
      auto result = gptq_quantize(jobs[j].w, jobs[j].rows, jobs[j].cols, jobs[j].h, *jobs[j].quantizer, options, pool);
      if (result.is_ok()) jobs[j].stats = result.value(); else statuses[j] = result.status();
    }
  }
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (!statuses[j].is_ok()) return statuses[j].with_context("matrix " + std::to_string(j) + " of the group");
  }
  return Status::ok();
}

}  // namespace submoe::quant
