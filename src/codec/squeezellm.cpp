#include "submoe/codec/squeezellm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>

#include "submoe/codec/csr_exceptions.h"
#include "submoe/core/bf16.h"

namespace submoe::squeezellm {
namespace {

std::string at_row(size_t r) { return "row " + std::to_string(r); }

}  // namespace

Status check_shape(uint32_t rows, uint32_t cols, uint32_t bits) {
  if (bits != 3 && bits != 4) return invalid_argument("squeezellm stores 3- or 4-bit codes, not " + std::to_string(bits));
  if (rows == 0 || cols == 0 || cols % kGroup != 0 || cols > 65535) {
    std::string s = "squeezellm: a [";
    s += std::to_string(rows);
    s += ", ";
    s += std::to_string(cols);
    s += "] matrix; columns must be a positive multiple of 32 below 65536 (3-bit codes pack 32 to 12 bytes; "
         "exception columns are 16-bit)";
    return invalid_argument(s);
  }
  return Status::ok();
}

size_t SqueezeMatrix::bytes() const {
  return codes.size() + 2 * lut.size() + (sparse ? 4 * row_ptr.size() + 2 * col.size() + 2 * value.size() : 0);
}

uint8_t code_at(const uint8_t* row_codes, uint32_t c, uint32_t bits) {
  if (bits == 4) {
    const uint8_t b = row_codes[c / 2];
    return c % 2 == 0 ? b >> 4 : b & 0xF;
  }
  const uint8_t* g = row_codes + (c / kGroup) * 12;
  const uint32_t bit = 3 * (c % kGroup);
  uint32_t v = g[bit / 8] >> (bit % 8);
  if (bit % 8 > 5) v |= static_cast<uint32_t>(g[bit / 8 + 1]) << (8 - bit % 8);
  return static_cast<uint8_t>(v & 7);
}

void pack_row(std::span<const uint8_t> codes, uint32_t bits, uint8_t* out) {
  const size_t cols = codes.size();
  std::memset(out, 0, row_code_bytes(static_cast<uint32_t>(cols), bits));
  if (bits == 4) {
    for (size_t c = 0; c < cols; c += 2) out[c / 2] = static_cast<uint8_t>((codes[c] << 4) | (codes[c + 1] & 0xF));
    return;
  }
  for (size_t c = 0; c < cols; ++c) {
    uint8_t* g = out + (c / kGroup) * 12;
    const uint32_t bit = 3 * static_cast<uint32_t>(c % kGroup);
    const uint32_t v = static_cast<uint32_t>(codes[c] & 7) << (bit % 8);
    g[bit / 8] = static_cast<uint8_t>(g[bit / 8] | (v & 0xFF));
    if (v > 0xFF) g[bit / 8 + 1] = static_cast<uint8_t>(g[bit / 8 + 1] | (v >> 8));
  }
}

Result<SqueezeMatrix> from_fields(uint32_t rows, uint32_t cols, uint32_t bits, bool sparse, const SqueezeFields& f) {
  SUBMOE_RETURN_IF_ERROR(check_shape(rows, cols, bits));
  SqueezeMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.bits = bits;
  m.sparse = sparse;
  const size_t row_bytes = row_code_bytes(cols, bits), k = m.entries();
  if (f.codes.size() != rows * row_bytes || f.lut.size() != 2 * rows * k)
    return corrupt_data("squeezellm: " + std::to_string(f.codes.size()) + " code bytes and " +
                        std::to_string(f.lut.size()) + " table bytes for a " + std::to_string(bits) + "-bit [" +
                        std::to_string(rows) + ", " + std::to_string(cols) + "] matrix (expected " +
                        std::to_string(rows * row_bytes) + " and " + std::to_string(2 * rows * k) + ")");
  m.codes.assign(f.codes.begin(), f.codes.end());
  m.lut.resize(rows * k);
  std::memcpy(m.lut.data(), f.lut.data(), f.lut.size());
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < k; ++j) {
      const float v = f16_bits_to_float(m.lut[r * k + j]);
      if (!std::isfinite(v))
        return corrupt_data("squeezellm: " + at_row(r) + ", table entry " + std::to_string(j) + " is not finite");
      if (j > 0 && v < f16_bits_to_float(m.lut[r * k + j - 1]))
        return corrupt_data("squeezellm: " + at_row(r) + "'s table decreases at entry " + std::to_string(j) +
                            " (tables are stored ascending: the canonical order)");
    }
  if (!sparse) {
    if (!f.row_ptr.empty() || !f.col.empty() || !f.value.empty())
      return corrupt_data("squeezellm: exceptions given to a matrix stored without them");
    return m;
  }
  codec::CsrLists csr;
  SUBMOE_RETURN_IF_ERROR(codec::read_csr("squeezellm", rows, cols, f.row_ptr, f.col, f.value, csr));
  m.row_ptr = std::move(csr.row_ptr);
  m.col = std::move(csr.col);
  m.value = std::move(csr.value);
  for (size_t r = 0; r < rows; ++r)
    for (int32_t i = m.row_ptr[r]; i < m.row_ptr[r + 1]; ++i) {
      const uint16_t c = m.col[static_cast<size_t>(i)];
      if (code_at(m.codes.data() + r * row_bytes, c, bits) != 0)
        return corrupt_data("squeezellm: " + at_row(r) + "'s dense code under the exception at column " +
                            std::to_string(c) + " is not 0 (the hole policy)");
    }
  return m;
}

std::vector<float> decode(const SqueezeMatrix& m) {
  const size_t row_bytes = row_code_bytes(m.cols, m.bits), k = m.entries();
  std::vector<float> w(size_t{m.rows} * m.cols);
  for (size_t r = 0; r < m.rows; ++r) {
    for (uint32_t c = 0; c < m.cols; ++c)
      w[r * m.cols + c] = f16_bits_to_float(m.lut[r * k + code_at(m.codes.data() + r * row_bytes, c, m.bits)]);
    if (!m.sparse) continue;
    for (int32_t i = m.row_ptr[r]; i < m.row_ptr[r + 1]; ++i)
      w[r * m.cols + m.col[static_cast<size_t>(i)]] = f16_bits_to_float(m.value[static_cast<size_t>(i)]);
  }
  return w;
}

uint8_t nearest(std::span<const float> sorted, float v) {
  // Midpoints in float, as the kernels' reference would form them; the lower
  // index wins at an exact midpoint.
  uint8_t best = 0;
  float best_d = std::abs(v - sorted[0]);
  for (size_t j = 1; j < sorted.size(); ++j) {
    const float d = std::abs(v - sorted[j]);
    if (d < best_d) {
      best_d = d;
      best = static_cast<uint8_t>(j);
    }
  }
  return best;
}

double weighted_error(std::span<const float> values, std::span<const float> weight, std::span<const float> centroids) {
  double e = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const double d = double{values[i]} - centroids[nearest(centroids, values[i])];
    e += double{weight[i]} * d * d;
  }
  return e;
}

std::vector<float> weighted_kmeans(std::span<const float> values, std::span<const float> weight, uint32_t k,
                                   uint32_t iters) {
  std::vector<float> c(k, 0.0f);
  const size_t n = values.size();
  if (n == 0) return c;
  // Seeds: weighted quantiles (j + 0.5) / k of the sorted values (uniform
  // weights when every weight is zero: the objective is then flat anyway).
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  double total = 0;
  for (float w : weight) total += w;
  const bool uniform = !(total > 0);
  if (uniform) total = static_cast<double>(n);
  {
    double acc = 0;
    size_t i = 0;
    for (uint32_t j = 0; j < k; ++j) {
      const double target = (j + 0.5) / k * total;
      while (i + 1 < n && acc + (uniform ? 1.0 : weight[order[i]]) < target) acc += uniform ? 1.0 : weight[order[i++]];
      c[j] = values[order[i]];
    }
  }
  std::vector<double> mass(k), sum(k);
  std::vector<uint8_t> assign(n, 0);
  for (uint32_t it = 0; it < iters; ++it) {
    std::sort(c.begin(), c.end());
    std::fill(mass.begin(), mass.end(), 0.0);
    std::fill(sum.begin(), sum.end(), 0.0);
    bool changed = it == 0;
    for (size_t i = 0; i < n; ++i) {
      const uint8_t a = nearest(c, values[i]);
      changed |= a != assign[i];
      assign[i] = a;
      const double w = uniform ? 1.0 : weight[i];
      mass[a] += w;
      sum[a] += w * values[i];
    }
    if (!changed) break;
    for (uint32_t j = 0; j < k; ++j)
      if (mass[j] > 0) c[j] = static_cast<float>(sum[j] / mass[j]);  // zero mass: keep the previous centroid
  }
  std::sort(c.begin(), c.end());
  return c;
}

}  // namespace submoe::squeezellm
