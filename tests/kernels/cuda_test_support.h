// Shared by the CUDA kernel tests (emulator and device): test matrices coded with
// the codec's encoder, activations, and the float64 oracle built from the codec's
// reference decoder with an error bound derived from the kernels' arithmetic.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "submoe/codec/ternary_dict.h"
#include "submoe/core/bf16.h"
#include "submoe/core/thread_pool.h"
#include "submoe/kernels/cuda/ternary_dict_lane.h"

namespace submoe::kernels::cuda::testing {

// Built once per test binary (a few hundred ms each).
inline const ternary::TernaryDictionary& qmoe_dictionary() {
  static const ternary::TernaryDictionary d = [] {
    auto r = ternary::build_qmoe_dictionary(ternary::kQmoeDefaultP0);
    if (!r.is_ok()) throw std::runtime_error(r.status().to_string());
    return std::move(r).value();
  }();
  return d;
}

inline const ternary::TernaryDictionary& tunstall_dictionary() {
  static const ternary::TernaryDictionary d = [] {
    auto r = ternary::build_tunstall_dictionary(ternary::kQmoeDefaultP0);
    if (!r.is_ok()) throw std::runtime_error(r.status().to_string());
    return std::move(r).value();
  }();
  return d;
}

inline const ternary::TernaryDictionary& dictionary(ternary::DictKind kind) {
  return kind == ternary::DictKind::kQmoe ? qmoe_dictionary() : tunstall_dictionary();
}

struct Shape {
  uint32_t rows;
  uint32_t cols;
};

inline std::string shape_name(Shape s) { return std::to_string(s.rows) + "x" + std::to_string(s.cols); }

// Shapes the issue asks for: 1 x N, N x 1, widths that are not multiples of 28
// or 32 (and some that are), rows that are not multiples of 32.
inline std::vector<Shape> edge_shapes() {
  return {{1, 1},   {1, 1000}, {100, 1}, {7, 27},  {5, 28},   {3, 29},  {33, 31},
          {9, 32},  {31, 56},  {2, 57},  {64, 64}, {13, 333}, {65, 997}, {37, 2049}};
}

inline const std::vector<double>& issue_p0s() {
  static const std::vector<double> p0s = {0.5, 0.8, 0.885, 0.95, 1.0};
  return p0s;
}

struct TestMatrix {
  uint32_t rows = 0;
  uint32_t cols = 0;
  std::vector<uint8_t> symbols;
  std::vector<ternary::RowScales> scales;
  ternary::PackedTernaryMatrix packed;
  std::vector<float> decoded;  // the reference decoder's rows x cols floats
};

// I.i.d. symbols with P(0) = p0 and P(w_min) = P(w_max). With 3 or more rows,
// row 1 is all zero and row 2 all nonzero; random bf16 scales with
// w_min <= 0 <= w_max of varied magnitude.
inline TestMatrix make_matrix(Shape shape, double p0, ternary::DictKind kind, uint64_t seed) {
  TestMatrix m;
  m.rows = shape.rows;
  m.cols = shape.cols;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  m.symbols.resize(static_cast<size_t>(m.rows) * m.cols);
  for (uint32_t r = 0; r < m.rows; ++r) {
    for (uint32_t c = 0; c < m.cols; ++c) {
      uint8_t s;
      if (m.rows >= 3 && r == 1) {
        s = ternary::kSymbolZero;
      } else if (m.rows >= 3 && r == 2) {
        s = u(rng) < 0.5 ? ternary::kSymbolMin : ternary::kSymbolMax;
      } else {
        const double v = u(rng);
        s = v < p0 ? ternary::kSymbolZero : v < p0 + (1.0 - p0) / 2 ? ternary::kSymbolMin : ternary::kSymbolMax;
      }
      m.symbols[static_cast<size_t>(r) * m.cols + c] = s;
    }
  }
  m.scales.resize(m.rows);
  for (auto& s : m.scales) {
    const double mag = std::exp2(-8.0 + 10.0 * u(rng));
    s.w_min = float_to_bf16(static_cast<float>(-mag * (0.25 + u(rng))));
    s.w_max = float_to_bf16(static_cast<float>(mag * (0.25 + u(rng))));
  }
  // Large matrices are encoded on all cores (the bytes do not depend on it).
  static ThreadPool pool(std::max(1, hardware_threads()));
  const bool large = m.symbols.size() > (1u << 20);
  auto packed = ternary::encode_ternary(m.symbols, m.rows, m.cols, m.scales, dictionary(kind), large ? &pool : nullptr);
  if (!packed.is_ok()) throw std::runtime_error("encode_ternary: " + packed.status().to_string());
  m.packed = std::move(packed).value();
  auto decoded = ternary::decode_to_float(m.packed.view());
  if (!decoded.is_ok()) throw std::runtime_error("decode_to_float: " + decoded.status().to_string());
  m.decoded = std::move(decoded).value();
  return m;
}

// Activations of mixed sign and magnitude (a spread of 2^12), batch x cols.
inline std::vector<float> make_activations(uint32_t batch, uint32_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::uniform_real_distribution<float> e(-6.0f, 6.0f);
  std::vector<float> x(static_cast<size_t>(batch) * cols);
  for (auto& v : x) v = n(rng) * std::exp2(e(rng));
  return x;
}

inline std::vector<bf16_t> to_bf16(const std::vector<float>& x) {
  std::vector<bf16_t> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = float_to_bf16(x[i]);
  return out;
}

inline std::vector<float> from_bf16(const std::vector<bf16_t>& x) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = bf16_to_float(x[i]);
  return out;
}

// y64 = W x in float64 from the reference decoder's floats (exact products: a
// float times a float fits a double), plus the per-output error bound of the
// kernels' float arithmetic. Each exact product w*x enters one lane's chain of
// fused multiply-adds (one rounding per later codeword of the row, so at most
// codewords(row) of them), then the 5 additions of the butterfly, then at most
// one addition per further tile: n = codewords(row) + 5 + tiles roundings. With
// u = 2^-24: |y - y64| <= gamma_n * sum |w x|, gamma_n = n u / (1 - n u) (Higham,
// Accuracy and Stability of Numerical Algorithms, 2nd ed., ch. 3, for any
// summation order). The float64 reference sum adds cols * 2^-53 * sum |w x|.
struct Oracle {
  std::vector<double> y;      // batch x rows
  std::vector<double> bound;  // batch x rows
};

inline Oracle float64_oracle(const TestMatrix& m, const std::vector<float>& x, uint32_t batch, uint32_t num_tiles) {
  const std::vector<float>& w = m.decoded;
  Oracle o;
  o.y.assign(static_cast<size_t>(batch) * m.rows, 0.0);
  o.bound.assign(static_cast<size_t>(batch) * m.rows, 0.0);
  constexpr double u = std::numeric_limits<float>::epsilon() / 2;
  const auto offsets = m.packed.row_offsets();
  for (uint32_t r = 0; r < m.rows; ++r) {
    const double n = static_cast<double>(offsets[r + 1] - offsets[r]) + 5.0 + num_tiles;
    const double gamma = n * u / (1.0 - n * u);
    for (uint32_t b = 0; b < batch; ++b) {
      double sum = 0;
      double abs_sum = 0;
      for (uint32_t c = 0; c < m.cols; ++c) {
        const double p = static_cast<double>(w[static_cast<size_t>(r) * m.cols + c]) *
                         static_cast<double>(x[static_cast<size_t>(b) * m.cols + c]);
        sum += p;
        abs_sum += std::fabs(p);
      }
      o.y[static_cast<size_t>(b) * m.rows + r] = sum;
      o.bound[static_cast<size_t>(b) * m.rows + r] = (gamma + m.cols * 0x1p-53) * abs_sum;
    }
  }
  return o;
}

// Number of outputs violating the bound (reported with the first few).
inline int count_oracle_violations(const Oracle& o, const std::vector<float>& y, uint32_t rows,
                                   const std::string& context) {
  int bad = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double err = std::fabs(static_cast<double>(y[i]) - o.y[i]);
    if (!(err <= o.bound[i])) {
      if (++bad <= 3) {
        ADD_FAILURE() << context << ": token " << i / rows << " row " << i % rows << ": got " << y[i]
                      << ", float64 " << o.y[i] << ", error " << err << " > bound " << o.bound[i];
      }
    }
  }
  return bad;
}

// Bitwise equality (the emulator replays the device's operations one for one).
inline int count_bit_mismatches(const std::vector<float>& a, const std::vector<float>& b, uint32_t rows,
                                const std::string& context) {
  int bad = 0;
  if (a.size() != b.size()) {
    ADD_FAILURE() << context << ": sizes " << a.size() << " != " << b.size();
    return 1;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i])) {
      if (++bad <= 3) {
        ADD_FAILURE() << context << ": token " << i / rows << " row " << i % rows << ": " << a[i]
                      << " != " << b[i];
      }
    }
  }
  return bad;
}

}  // namespace submoe::kernels::cuda::testing
