// Inner loops of attention over the KV cache, one query head at a time:
// scores against a run of cached keys and the probability-weighted sum of values.
// A portable version and an AVX-512 one, chosen once per process.
#pragma once

#include <cstddef>

namespace submoe::model::detail {

struct AttentionKernels {
  // scores[j] = (q . keys[j]) * scale for j < n; keys are rows of length D.
  void (*scores)(const float* q, const float* keys, size_t n, size_t D, float scale, float* scores);
  // out[d] = sum_j p[j] * values[j][d] for d < D (out is overwritten).
  void (*mix)(const float* p, const float* values, size_t n, size_t D, float* out);
};

const AttentionKernels& attention_kernels_portable();
const AttentionKernels& attention_kernels_avx512();
// The best for this CPU (AVX-512 unless SUBMOE_MAX_ISA caps it).
const AttentionKernels& attention_kernels();

}  // namespace submoe::model::detail
