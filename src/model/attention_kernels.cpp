#include "attention_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "submoe/core/cpu_features.h"

namespace submoe::model::detail {
namespace {

// Eight partial sums: a plain float reduction would not be vectorised (the
// compiler may not reassociate it).
float dot(const float* a, const float* b, size_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (size_t j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void scores_portable(const float* q, const float* keys, size_t n, size_t D, float scale, float* scores) {
  for (size_t j = 0; j < n; ++j) scores[j] = dot(q, keys + j * D, D) * scale;
}

void mix_portable(const float* p, const float* values, size_t n, size_t D, float* out) {
  std::fill(out, out + D, 0.0f);
  for (size_t j = 0; j < n; ++j)
    for (size_t d = 0; d < D; ++d) out[d] += p[j] * values[j * D + d];
}

}  // namespace

const AttentionKernels& attention_kernels_portable() {
  static const AttentionKernels k{&scores_portable, &mix_portable};
  return k;
}

const AttentionKernels& attention_kernels() {
  static const AttentionKernels& k =
      best_isa() == Isa::kAvx512 ? attention_kernels_avx512() : attention_kernels_portable();
  return k;
}

void attend_one_head(const AttentionKernels& k, const float* q, const float* keys, const float* values, size_t first,
                     size_t last, size_t D, float scaling, float* scores, float* out, const float* sink) {
  const size_t n = last - first + 1;
  k.scores(q, keys + first * D, n, D, scaling, scores);
  float mx = sink != nullptr ? *sink : -std::numeric_limits<float>::infinity();
  for (size_t j = 0; j < n; ++j) mx = std::max(mx, scores[j]);
  // The sink is one more softmax column, dropped afterwards: only its mass counts.
  double sum = sink != nullptr ? std::exp(*sink - mx) : 0.0;
  for (size_t j = 0; j < n; ++j) {
    scores[j] = std::exp(scores[j] - mx);
    sum += scores[j];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (size_t j = 0; j < n; ++j) scores[j] *= inv;
  k.mix(scores, values + first * D, n, D, out);
}

}  // namespace submoe::model::detail
