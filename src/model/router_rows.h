// What every router does once its ranking is made (router.cpp,
// router_grouped.cpp): size the Routing and pick each token's k experts.
#pragma once

#include <cstddef>
#include <span>

#include "submoe/model/router.h"

namespace submoe::model::detail {

// Sizes `out` for num_tokens rows of k choices.
void size_routing(size_t num_tokens, size_t k, Routing* out);

// Token t's row: the k experts that rank best by `ranking` (top_k_indices'
// order) into out->experts, their `scores` into out->weights; returns the sum
// of those weights, added in choice order.
float choose_top_k(std::span<const float> ranking, std::span<const float> scores, size_t t, Routing* out);

}  // namespace submoe::model::detail
