// DeepSeek's group-limited routers (doc §6.4, §6.5), as transformers computes
// them in float32.
#include <cassert>
#include <cmath>
#include <limits>

#include "router_rows.h"
#include "submoe/model/router.h"

namespace submoe::model {
namespace {

// Zeroes every expert outside the topk_group groups (of `n_group` contiguous
// groups of `per_group` experts) whose `group_score` is highest.
void keep_best_groups(std::span<float> choice, std::span<const float> group_score, size_t per_group,
                      size_t topk_group, std::vector<int32_t>& kept_scratch) {
  kept_scratch.resize(topk_group);
  top_k_indices(group_score, kept_scratch);
  for (size_t g = 0; g < group_score.size(); ++g) {
    bool kept = false;
    for (int32_t k : kept_scratch) kept = kept || static_cast<size_t>(k) == g;
    if (!kept)
      for (size_t e = g * per_group; e < (g + 1) * per_group; ++e) choice[e] = 0.0f;
  }
}

}  // namespace

void route_sigmoid_group_top2(std::span<float> logits, std::span<const float> bias, size_t num_tokens,
                              size_t num_experts, size_t k, size_t n_group, size_t topk_group, bool renormalize,
                              Routing* out) {
  assert(logits.size() == num_tokens * num_experts && bias.size() == num_experts);
  assert(n_group >= 1 && num_experts % n_group == 0 && num_experts / n_group >= 2);
  detail::size_routing(num_tokens, k, out);
  const size_t per_group = num_experts / n_group;
  std::vector<float> choice(num_experts), group_score(n_group);
  std::vector<int32_t> kept;
  for (size_t t = 0; t < num_tokens; ++t) {
    std::span<float> s = logits.subspan(t * num_experts, num_experts);
    for (size_t e = 0; e < num_experts; ++e) {
      s[e] = 1.0f / (1.0f + std::exp(-s[e]));
      choice[e] = s[e] + bias[e];
    }
    if (n_group > 1) {
      for (size_t g = 0; g < n_group; ++g) {
        float best = -std::numeric_limits<float>::infinity(), second = best;
        for (size_t e = g * per_group; e < (g + 1) * per_group; ++e) {
          const float v = choice[e];
          if (v > best) {
            second = best;
            best = v;
          } else if (v > second) {
            second = v;
          }
        }
        group_score[g] = best + second;
      }
      keep_best_groups(choice, group_score, per_group, topk_group, kept);
    }
    const float sum = detail::choose_top_k(choice, s, t, out);
    if (renormalize) {
      const float denominator = sum + 1e-20f;
      for (size_t j = 0; j < k; ++j) out->weights[t * k + j] /= denominator;
    }
  }
}

void route_softmax_group_max(std::span<float> logits, size_t num_tokens, size_t num_experts, size_t k,
                             size_t n_group, size_t topk_group, Routing* out) {
  assert(logits.size() == num_tokens * num_experts && n_group >= 1 && num_experts % n_group == 0);
  detail::size_routing(num_tokens, k, out);
  const size_t per_group = num_experts / n_group;
  std::vector<float> choice(num_experts), group_score(n_group);
  std::vector<int32_t> kept;
  for (size_t t = 0; t < num_tokens; ++t) {
    std::span<float> p = logits.subspan(t * num_experts, num_experts);
    softmax_f32(p);
    std::copy(p.begin(), p.end(), choice.begin());
    if (n_group > 1) {
      for (size_t g = 0; g < n_group; ++g) {
        float best = -std::numeric_limits<float>::infinity();
        for (size_t e = g * per_group; e < (g + 1) * per_group; ++e) best = std::max(best, p[e]);
        group_score[g] = best;
      }
      keep_best_groups(choice, group_score, per_group, topk_group, kept);
    }
    detail::choose_top_k(choice, choice, t, out);
  }
}

}  // namespace submoe::model
