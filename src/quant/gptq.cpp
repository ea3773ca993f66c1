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

// Prepares `out` and the per-row state that does not depend on GPTQ's updates:
// ternary levels (from the original weights) and per-row int parameters.
void init_output(std::span<const float> w, size_t rows, size_t cols, const GridSpec& grid, QuantizedMatrix* out) {
  out->grid = grid;
  out->rows = rows;
  out->cols = cols;
  out->codes.assign(rows * cols, 0);
  out->ternary_scales.clear();
  out->scales.clear();
  out->zeros.clear();
  const size_t groups = out->groups_per_row();
  if (grid.kind == GridKind::kTernary) {
    out->ternary_scales.resize(rows);
    for (size_t r = 0; r < rows; ++r) out->ternary_scales[r] = ternary::ternary_row_scales(w.subspan(r * cols, cols));
  } else {
    out->scales.assign(rows * groups, 1.0f);
    out->zeros.assign(rows * groups, 0.0f);
    if (grid.group_size == 0) {
      for (size_t r = 0; r < rows; ++r) {
        const IntGroupParams p = fit_int_group(w.subspan(r * cols, cols), grid.bits);
        out->scales[r] = p.scale;
        out->zeros[r] = p.zero;
      }
    }
  }
}

// Quantizes value x at (row, col) and returns the reconstructed value. For grouped
// int grids the group's parameters are fitted from `row_values` (current values of
// the row) when col is the group's first column.
inline float quantize_at(QuantizedMatrix* out, size_t row, size_t col, float x, const float* row_values) {
  const GridSpec& g = out->grid;
  uint8_t& code = out->codes[row * out->cols + col];
  if (g.kind == GridKind::kTernary) {
    const ternary::RowScales s = out->ternary_scales[row];
    code = ternary::ternary_symbol(x, bf16_to_float(s.w_min), bf16_to_float(s.w_max));
    return ternary::ternary_level(code, s);
  }
  const size_t groups = out->groups_per_row();
  const size_t gi = g.group_size == 0 ? 0 : col / g.group_size;
  if (g.group_size != 0 && col % g.group_size == 0) {
    const IntGroupParams p = fit_int_group({row_values + col, g.group_size}, g.bits);
    out->scales[row * groups + gi] = p.scale;
    out->zeros[row * groups + gi] = p.zero;
  }
  const IntGroupParams p{out->scales[row * groups + gi], out->zeros[row * groups + gi]};
  code = quantize_int(x, p, g.bits);
  return dequantize_int(code, p);
}

void rtn_into(std::span<const float> w, size_t rows, size_t cols, QuantizedMatrix* out) {
  for (size_t r = 0; r < rows; ++r) {
    const float* row = w.data() + r * cols;
    for (size_t c = 0; c < cols; ++c) quantize_at(out, r, c, row[c], row);
  }
}

}  // namespace

Result<QuantizedMatrix> rtn_quantize(std::span<const float> w, size_t rows, size_t cols, const GridSpec& grid) {
  SUBMOE_RETURN_IF_ERROR(check_shapes(w, rows, cols, {}));
  SUBMOE_RETURN_IF_ERROR(grid.validate(cols));
  SUBMOE_RETURN_IF_ERROR(check_finite(w, "weight"));
  QuantizedMatrix out;
  init_output(w, rows, cols, grid, &out);
  rtn_into(w, rows, cols, &out);
  return out;
}

Result<GptqStats> gptq_quantize(std::span<const float> w_in, size_t rows, size_t cols, std::span<const float> h_in,
                                const GridSpec& grid, const GptqOptions& options, QuantizedMatrix* out,
                                ThreadPool* pool) {
  SUBMOE_RETURN_IF_ERROR(check_shapes(w_in, rows, cols, h_in));
  SUBMOE_RETURN_IF_ERROR(grid.validate(cols));
  SUBMOE_RETURN_IF_ERROR(check_finite(w_in, "weight"));
  SUBMOE_RETURN_IF_ERROR(check_finite(h_in, "Hessian"));
  if (options.act_order && grid.group_size != 0) {
    return invalid_argument("act-order is supported with per-row grids only");
  }
  GptqStats stats;
  init_output(w_in, rows, cols, grid, out);
  if (h_in.empty()) {
    stats.rtn_fallback = true;
    stats.fallback_reason = "no calibration inputs";
    rtn_into(w_in, rows, cols, out);
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
    init_output(w_in, rows, cols, grid, out);
    rtn_into(w_in, rows, cols, out);
    return stats;
  }

  // Codes are produced in permuted column order into a scratch matrix and put back at the end.
  QuantizedMatrix permuted = *out;
  size_t block = std::max<size_t>(1, options.block_size);
  if (grid.group_size != 0) block = (block + grid.group_size - 1) / grid.group_size * grid.group_size;
  std::vector<float> err(rows * block);
  std::vector<double> row_loss(rows, 0.0);

  for (size_t b0 = 0; b0 < cols; b0 += block) {
    const size_t b1 = std::min(cols, b0 + block);
    const size_t nb = b1 - b0;
    auto process_rows = [&](size_t r_begin, size_t r_end, int) {
      for (size_t r = r_begin; r < r_end; ++r) {
        float* row = w.data() + r * cols;
        float* row_err = err.data() + r * block;
        double loss = 0.0;
        for (size_t i = b0; i < b1; ++i) {
          const float x = row[i];
          const float q = quantize_at(&permuted, r, i, x, row);
          const float d = u[i * cols + i];
          const float e = (x - q) / d;
          loss += 0.5 * static_cast<double>(x - q) * (x - q) / (static_cast<double>(d) * d);
          const float* ui = u.data() + i * cols;
          for (size_t j = i + 1; j < b1; ++j) row[j] -= e * ui[j];
          row_err[i - b0] = e;
        }
        row_loss[r] += loss;
      }
    };
    if (pool) {
      pool->parallel_for(rows, 16, process_rows);
    } else {
      process_rows(0, rows, 0);
    }
    // Lazy batch update of the columns after the block: W[:, b1:] -= Err U[b0:b1, b1:].
    if (b1 < cols) {
      linalg::gemm_f32(false, false, rows, cols - b1, nb, -1.0f, err.data(), block, u.data() + b0 * cols + b1, cols,
                       1.0f, w.data() + b1, cols);
    }
  }
  stats.proxy_loss = std::accumulate(row_loss.begin(), row_loss.end(), 0.0);

  out->scales = permuted.scales;
  out->zeros = permuted.zeros;
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) out->codes[r * cols + perm[c]] = permuted.codes[r * cols + c];
  return stats;
}

Status gptq_quantize_group(std::span<GptqJob> jobs, const GridSpec& grid, const GptqOptions& options,
                           ThreadPool* pool) {
  std::vector<Status> statuses(jobs.size());
  const int saved_blas_threads = linalg::blas_threads();
  if (pool && pool->num_threads() > 1 && jobs.size() > 1) {
    linalg::set_blas_threads(1);
    pool->parallel_for(jobs.size(), 1, [&](size_t begin, size_t end, int) {
      for (size_t j = begin; j < end; ++j) {
        auto result = gptq_quantize(jobs[j].w, jobs[j].rows, jobs[j].cols, jobs[j].h, grid, options, jobs[j].out, nullptr);
        if (result.is_ok()) jobs[j].stats = result.value(); else statuses[j] = result.status();
      }
    });
    linalg::set_blas_threads(saved_blas_threads);
  } else {
    for (size_t j = 0; j < jobs.size(); ++j) {
      auto result = gptq_quantize(jobs[j].w, jobs[j].rows, jobs[j].cols, jobs[j].h, grid, options, jobs[j].out, pool);
      if (result.is_ok()) jobs[j].stats = result.value(); else statuses[j] = result.status();
    }
  }
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (!statuses[j].is_ok()) return statuses[j].with_context("matrix " + std::to_string(j) + " of the group");
  }
  return Status::ok();
}

}  // namespace submoe::quant
