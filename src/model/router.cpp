#include "submoe/model/router.h"

#include <cassert>
#include <cmath>
#include <limits>

#include "router_rows.h"

namespace submoe::model {

void softmax_f32(std::span<float> x) {
  if (x.empty()) return;
  float mx = -std::numeric_limits<float>::infinity();
  for (float v : x) mx = std::max(mx, v);
  // Sum in double: a float running sum over 128+ experts drifts by a few ulps,
  // and near-tied probabilities are exactly where the top-k choice is fragile.
  double sum = 0.0;
  for (float& v : x) {
    v = std::exp(v - mx);
    sum += v;
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (float& v : x) v *= inv;
}

namespace {
// a ranks before b: larger value, or equal value and lower index; NaN last.
inline bool ranks_before(float a, size_t ia, float b, size_t ib) {
  const bool na = std::isnan(a), nb = std::isnan(b);
  if (na != nb) return nb;
  if (!na && a != b) return a > b;
  return ia < ib;
}
}  // namespace

void top_k_indices(std::span<const float> values, std::span<int32_t> idx) {
  const size_t k = idx.size();
  assert(k >= 1 && k <= values.size());
  // Insertion into a sorted list of k: O(n k), and k is at most a few dozen.
  size_t filled = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (filled == k && !ranks_before(values[i], i, values[static_cast<size_t>(idx[k - 1])],
                                     static_cast<size_t>(idx[k - 1])))
      continue;
    size_t pos = filled < k ? filled++ : k - 1;
    while (pos > 0 && ranks_before(values[i], i, values[static_cast<size_t>(idx[pos - 1])],
                                   static_cast<size_t>(idx[pos - 1]))) {
      idx[pos] = idx[pos - 1];
      --pos;
    }
    idx[pos] = static_cast<int32_t>(i);
  }
}

namespace detail {

void size_routing(size_t num_tokens, size_t k, Routing* out) {
  out->num_tokens = num_tokens;
  out->k = k;
  out->experts.resize(num_tokens * k);
  out->weights.resize(num_tokens * k);
}

float choose_top_k(std::span<const float> ranking, std::span<const float> scores, size_t t, Routing* out) {
  const size_t k = out->k;
  std::span<int32_t> idx(out->experts.data() + t * k, k);
  top_k_indices(ranking, idx);
  float* w = out->weights.data() + t * k;
  float sum = 0.0f;
  for (size_t j = 0; j < k; ++j) {
    w[j] = scores[static_cast<size_t>(idx[j])];
    sum += w[j];
  }
  return sum;
}

}  // namespace detail

void route_softmax_top_k(std::span<float> logits, size_t num_tokens, size_t num_experts, size_t k,
                         bool renormalize, Routing* out) {
  assert(logits.size() == num_tokens * num_experts);
  detail::size_routing(num_tokens, k, out);
  for (size_t t = 0; t < num_tokens; ++t) {
    std::span<float> p = logits.subspan(t * num_experts, num_experts);
    softmax_f32(p);
    const float sum = detail::choose_top_k(p, p, t, out);
    if (renormalize)
      for (size_t j = 0; j < k; ++j) out->weights[t * k + j] /= sum;
  }
}

void route_top_k_softmax(std::span<const float> logits, size_t num_tokens, size_t num_experts, size_t k,
                         Routing* out) {
  assert(logits.size() == num_tokens * num_experts);
  detail::size_routing(num_tokens, k, out);
  for (size_t t = 0; t < num_tokens; ++t) {
    std::span<const float> row = logits.subspan(t * num_experts, num_experts);
    detail::choose_top_k(row, row, t, out);
    softmax_f32({out->weights.data() + t * k, k});
  }
}

void group_by_expert(const Routing& routing, size_t num_experts, ExpertGroups* out) {
  out->offsets.assign(num_experts + 1, 0);
  const size_t n = routing.num_tokens * routing.k;
  for (size_t s = 0; s < n; ++s) ++out->offsets[static_cast<size_t>(routing.experts[s]) + 1];
  for (size_t e = 0; e < num_experts; ++e) out->offsets[e + 1] += out->offsets[e];
  out->tokens.resize(n);
  out->slots.resize(n);
  std::vector<uint32_t> cursor(out->offsets.begin(), out->offsets.end() - 1);
  // Slots are visited in token order, so each expert's list comes out sorted by token.
  for (size_t s = 0; s < n; ++s) {
    const size_t e = static_cast<size_t>(routing.experts[s]);
    const uint32_t at = cursor[e]++;
    out->tokens[at] = static_cast<uint32_t>(s / routing.k);
    out->slots[at] = static_cast<uint32_t>(s);
  }
}

void add_expert_rows(const float* y, std::span<const uint32_t> tokens, std::span<const uint32_t> slots,
                     std::span<const float> weights, size_t H, float* out) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    const float w = weights[slots[i]];
    const float* row = y + i * H;
    float* dst = out + size_t{tokens[i]} * H;
    for (size_t d = 0; d < H; ++d) dst[d] += row[d] * w;
  }
}

}  // namespace submoe::model
