// Pieces the vector encoders (rvq, e8p) share: the first error of a matrix
// whose rows quantize on several threads, and the solver's block metric
// A = U_FF^-1 (quant/block_quantizer.h begin_columns).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "submoe/core/status.h"

namespace submoe::runtime::repr {

// The first error reported by any thread (later ones are dropped).
class FirstError {
 public:
  void set(Status st) {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.is_ok()) error_ = std::move(st);
  }
  Status get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }

 private:
  mutable std::mutex mu_;
  Status error_;
};

// A = U_FF^-1 for the block F = [c, c + D) of the solver's upper Cholesky
// factor U of H^-1 (u[i * ld + j], global columns): upper triangular, solved
// column by column in double.
template <uint32_t D>
void inverse_block(const float* u, size_t ld, size_t c, double (&a)[D][D]) {
  for (uint32_t i = 0; i < D; ++i)
    for (uint32_t j = 0; j < D; ++j) a[i][j] = 0;
  for (uint32_t j = 0; j < D; ++j)
    for (uint32_t i = j + 1; i-- > 0;) {
      double v = i == j ? 1.0 : 0.0;
      for (uint32_t k = i + 1; k <= j; ++k) v -= double{u[(c + i) * ld + c + k]} * a[k][j];
      a[i][j] = v / double{u[(c + i) * ld + c + i]};
    }
}

}  // namespace submoe::runtime::repr
