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

// One query head of one token against cache rows [first, last]: scores
// (q . key) * scaling, fp32 softmax (max subtracted, sum in double), then
// out [D] = the probability-weighted sum of the value rows. Keys and values are
// rows of D floats (a latent cache passes its rows as both). scores: scratch of
// last - first + 1. A non-null `sink` is GPT-OSS's sink logit: an extra column
// of the softmax (in the max and the sum) whose probability is dropped.
void attend_one_head(const AttentionKernels& k, const float* q, const float* keys, const float* values, size_t first,
                     size_t last, size_t D, float scaling, float* scores, float* out, const float* sink = nullptr);

}  // namespace submoe::model::detail
