// Shared helpers of the kernel tests: dictionaries (built once per binary), random
// ternary matrices encoded by the codec, random activations, the float64 oracle
// and the float summation error bound every fast path is held to.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "submoe/codec/ternary_dict.h"
#include "submoe/core/bf16.h"
#include "submoe/core/cpu_features.h"
#include "submoe/kernels/activations.h"
#include "submoe/kernels/ternary_kernel_table.h"

namespace submoe::kernels::testing {

// ISAs this CPU can run; every kernel table is tested on each of them directly.
inline std::vector<Isa> supported_isas() {
  std::vector<Isa> isas = {Isa::kScalar};
  if (cpu_features().avx2) isas.push_back(Isa::kAvx2);
  if (cpu_features().avx512) isas.push_back(Isa::kAvx512);
  return isas;
}

// A dictionary and its kernel table, built once per (kind, p0) per process.
struct DictFixture {
  ternary::TernaryDictionary dict;
  TernaryKernelTable table;
};

inline const DictFixture& dict_fixture(ternary::DictKind kind, double p0) {
  static std::map<std::pair<int, double>, std::unique_ptr<DictFixture>> cache;
  auto key = std::make_pair(static_cast<int>(kind), p0);
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  auto d = ternary::build_dictionary(kind, p0);
  if (!d.is_ok()) {
    ADD_FAILURE() << "build_dictionary: " << d.status().to_string();
    std::abort();
  }
  auto t = build_ternary_kernel_table(d->entries());
  if (!t.is_ok()) {
    ADD_FAILURE() << "build_ternary_kernel_table: " << t.status().to_string();
    std::abort();
  }
  auto fx = std::make_unique<DictFixture>(DictFixture{std::move(d).value(), std::move(t).value()});
  // The table points at the dictionary's heap storage, which moving kept valid.
  return *cache.emplace(key, std::move(fx)).first->second;
}

// How a test row's symbols are drawn.
enum class RowKind { kRandom, kAllZero, kAllMax, kAllMin, kAllNonzero };

// A packed matrix plus what the oracle needs.
struct TestMatrix {
  ternary::PackedTernaryMatrix packed;
  std::vector<float> dense;  // decode_to_float of packed: rows x cols
};

inline TestMatrix make_test_matrix(const DictFixture& fx, uint32_t rows, uint32_t cols, double p0, uint64_t seed,
                                   const std::vector<RowKind>& special = {}) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<uint8_t> sym(static_cast<size_t>(rows) * cols);
  std::vector<ternary::RowScales> scales(rows);
  for (uint32_t r = 0; r < rows; ++r) {
    const RowKind kind = r < special.size() ? special[r] : RowKind::kRandom;
    for (uint32_t c = 0; c < cols; ++c) {
      uint8_t s = 0;
      switch (kind) {
        case RowKind::kRandom: {
          const double v = u(rng);
          s = v < p0 ? ternary::kSymbolZero : (v < p0 + (1 - p0) / 2 ? ternary::kSymbolMin : ternary::kSymbolMax);
          break;
        }
        case RowKind::kAllZero:
          s = ternary::kSymbolZero;
          break;
        case RowKind::kAllMax:
          s = ternary::kSymbolMax;
          break;
        case RowKind::kAllMin:
          s = ternary::kSymbolMin;
          break;
        case RowKind::kAllNonzero:
          s = (rng() & 1) ? ternary::kSymbolMin : ternary::kSymbolMax;
          break;
      }
      sym[static_cast<size_t>(r) * cols + c] = s;
    }
    // Scales over several binades, sometimes one side zero (a row of one sign).
    const double mag = std::ldexp(0.5 + u(rng), static_cast<int>(rng() % 9) - 4);
    const uint64_t pick = rng() % 8;
    const float lo = pick == 0 ? 0.0f : static_cast<float>(-mag * (0.5 + u(rng)));
    const float hi = pick == 1 ? 0.0f : static_cast<float>(mag * (0.5 + u(rng)));
    scales[r] = {float_to_bf16(lo), float_to_bf16(hi)};
  }
  auto packed = ternary::encode_ternary(sym, rows, cols, scales, fx.dict);
  if (!packed.is_ok()) {
    ADD_FAILURE() << "encode_ternary: " << packed.status().to_string();
    std::abort();
  }
  TestMatrix m;
  m.packed = std::move(packed).value();
  auto dense = ternary::decode_to_float(m.packed.view());
  if (!dense.is_ok()) {
    ADD_FAILURE() << "decode_to_float: " << dense.status().to_string();
    std::abort();
  }
  m.dense = std::move(dense).value();
  return m;
}

// batch tokens of cols activations, token stride `stride`: normal values scaled
// over 2^-6..2^6 so partial sums cancel and magnitudes differ.
inline std::vector<float> random_activations(uint32_t batch, uint32_t cols, size_t stride, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(batch) * stride, 0.0f);
  for (uint32_t t = 0; t < batch; ++t) {
    for (uint32_t c = 0; c < cols; ++c) {
      x[t * stride + c] = std::ldexp(nd(rng), static_cast<int>(rng() % 13) - 6);
    }
  }
  return x;
}

// Worst-case error bound of a float computation of y = sum_j w_j x_j whose only
// roundings are the m - 1 additions of the m nonzero terms (in any order, Higham
// 4.3: |error| <= (m - 1) u sum |terms| to first order), one product per term or
// per sign group, and one final combination: (m + 2) u sum_j |w_j x_j|, with
// u = 2^-24, times 1.01 for the second-order terms. A missing or doubled term
// costs about sum/m, far above this for the widths tested.
inline double summation_bound(uint64_t nonzero_terms, double sum_abs) {
  return 1.01 * static_cast<double>(nonzero_terms + 2) * std::ldexp(1.0, -24) * sum_abs;
}

struct OracleRow {
  double y = 0;
  double sum_abs = 0;
  uint64_t nonzeros = 0;
};

// float64 oracle for one (row, token): the reference decoder's weights times x.
inline OracleRow oracle(const std::vector<float>& dense, uint32_t cols, uint32_t r, const float* x) {
  OracleRow o;
  for (uint32_t c = 0; c < cols; ++c) {
    const double w = dense[static_cast<size_t>(r) * cols + c];
    if (w == 0.0) continue;
    o.y += w * static_cast<double>(x[c]);
    o.sum_abs += std::fabs(w * static_cast<double>(x[c]));
    ++o.nonzeros;
  }
  return o;
}

}  // namespace submoe::kernels::testing
