// The activation layout of the nibble-indexed kernels (nf4, 4-bit squeezellm):
// per 32 columns, the even columns then the odd ones, so that a code byte's
// high nibble (the even column) and low nibble (the odd one) index their
// tables straight from the byte's lane.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace submoe::kernels::detail {

// `batch` tokens of `cols` activations (token t at x + t * stride; cols a
// multiple of 32) de-interleaved into a per-thread buffer of batch x cols floats.
inline const float* deinterleave_activations(const float* x, size_t stride, uint32_t batch, uint32_t cols) {
  thread_local std::vector<float> split;
  split.resize(size_t{batch} * cols);
  for (uint32_t t = 0; t < batch; ++t) {
    const float* in = x + t * stride;
    float* out = split.data() + size_t{t} * cols;
    for (uint32_t c = 0; c < cols; c += 32)
      for (uint32_t j = 0; j < 16; ++j) {
        out[c + j] = in[c + 2 * j];
        out[c + 16 + j] = in[c + 2 * j + 1];
      }
  }
  return split.data();
}

}  // namespace submoe::kernels::detail
