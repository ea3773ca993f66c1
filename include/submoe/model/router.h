// Router math: the softmax-then-top-k routers (Mixtral, Qwen2-MoE, Qwen3-MoE,
// OLMoE: float32 softmax over the router logits, top-k over the probabilities,
// optional renormalisation of the k selected weights) and DeepSeek's
// group-limited routers (router_grouped.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace submoe::model {

// In-place numerically stable softmax in float32 (max subtracted before exp).
void softmax_f32(std::span<float> x);

// Writes the indices of the k largest values of `values` into `idx` (size k), in
// descending value order. Equal values keep ascending index order, i.e. on a tie
// the lower index is chosen first (torch.topk gives no guarantee; HF's references
// are built in fp32 where ties do not occur, and `argmax` picks the first
// maximum). NaN compares below every number. Requires 1 <= k <= values.size().
void top_k_indices(std::span<const float> values, std::span<int32_t> idx);

// Routing decision for a batch of tokens: expert ids and their weights, k per token,
// ranked by descending probability.
struct Routing {
  size_t num_tokens = 0;
  size_t k = 0;
  std::vector<int32_t> experts;  // [num_tokens, k]
  std::vector<float> weights;    // [num_tokens, k]
};

// logits: [num_tokens, num_experts] router logits (overwritten with probabilities).
// weights = top-k of softmax_f32(logits); if `renormalize`, divided by their sum.
void route_softmax_top_k(std::span<float> logits, size_t num_tokens, size_t num_experts, size_t k,
                         bool renormalize, Routing* out);

// GPT-OSS (transformers GptOssTopKRouter): the k largest logits (ranked by
// descending logit), weights = softmax over those k values. `logits` is not
// changed.
void route_top_k_softmax(std::span<const float> logits, size_t num_tokens, size_t num_experts, size_t k, Routing* out);

// DeepSeek-V3 (transformers DeepseekV3TopkRouter, "noaux_tc"): scores =
// sigmoid(logits) in float32; selection runs on scores + bias (the layer's
// e_score_correction_bias, [num_experts]): the experts form n_group contiguous
// groups, each ranked by the sum of its two best biased scores; experts outside
// the best topk_group groups get 0.0 (not -inf: transformers' quirk, so a
// negative biased score can lose to a masked expert), and the k best of those
// are chosen, ranked by that masked biased score. Their weights are the
// unbiased scores, divided by (their sum + 1e-20) if `renormalize`. `logits`
// is overwritten with the scores. Requires n_group to divide num_experts with
// at least two experts a group, 1 <= topk_group <= n_group.
void route_sigmoid_group_top2(std::span<float> logits, std::span<const float> bias, size_t num_tokens,
                              size_t num_experts, size_t k, size_t n_group, size_t topk_group, bool renormalize,
                              Routing* out);

// DeepSeek-V2 (transformers DeepseekV2Moe): softmax(logits) in float32; with
// n_group > 1 ("group_limited_greedy") the experts of all but the topk_group
// groups with the highest maximum probability are set to 0.0, then the k
// largest probabilities are chosen and kept as weights (no renormalisation);
// n_group == 1 is plain top-k ("greedy"). `logits` is overwritten with the
// probabilities.
void route_softmax_group_max(std::span<float> logits, size_t num_tokens, size_t num_experts, size_t k,
                             size_t n_group, size_t topk_group, Routing* out);

// The tokens each expert received, for grouped (one matrix product per expert)
// execution: for expert e, the pairs (token, slot) in ascending token order, where
// slot indexes Routing::weights. Experts with no tokens have empty lists.
struct ExpertGroups {
  std::vector<uint32_t> offsets;  // [num_experts + 1] into tokens/slots
  std::vector<uint32_t> tokens;
  std::vector<uint32_t> slots;    // token * k + j
  size_t count(size_t expert) const { return offsets[expert + 1] - offsets[expert]; }
};
void group_by_expert(const Routing& routing, size_t num_experts, ExpertGroups* out);

// out[tokens[i]] += weights[slots[i]] * y[i] over the rows y [n, H] of one
// expert's outputs (n = tokens.size() = slots.size()). Every path that combines
// routed experts (the forward pass, calibration) calls it one expert after the
// other in ascending id, as HF's index_add_, so their sums round alike.
void add_expert_rows(const float* y, std::span<const uint32_t> tokens, std::span<const uint32_t> slots,
                     std::span<const float> weights, size_t H, float* out);

}  // namespace submoe::model
