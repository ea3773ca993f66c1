// The per-layer blocks of the forward pass, called by Session::forward.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "session_scratch.h"

namespace submoe::model::detail {

struct BlockContext {
  const MoeModel& model;
  ThreadPool* pool;
  Session::Scratch& s;
  size_t num_tokens;      // T
  const RowPlacement& rows;
  OpProfile* profile = nullptr;  // null: not profiling
  const RoutingObserver* prediction_observer = nullptr;  // pre-gating's predictions (null: none wanted)
};

// s.block = Attn(s.x) for layer `layer`; writes each row's new key and value at
// its position of its cache (room must exist) before any row attends, so rows of
// one sequence see each other causally.
void attention_block(const BlockContext& ctx, size_t layer);
// The same for a multi-head latent attention layer (mla_attention.cpp): the
// cache row of each new position is its normalised latent and RoPE key.
void mla_attention_block(const BlockContext& ctx, size_t layer);

// The whole forward over T rows placed by `rows` (room in every cache must
// exist): embedding and RoPE angles, every layer, and the logits of the rows
// listed in `logit_rows` into logits [logit_rows.size(), V]. Caches are not
// advanced. Token ids must have been checked.
Status forward_rows(const BlockContext& ctx, std::span<const int32_t> tokens, const RoutingObserver& observer,
                    std::span<const size_t> logit_rows, std::vector<float>* logits);

// kInvalidArgument naming the first token id outside [0, vocab).
Status check_token_ids(std::span<const int32_t> tokens, size_t vocab);

// ---- The decoder layer (decoder_layer.cpp): the one implementation that
// generation, evaluation, tracing (Session, BatchForward) and calibration
// (LayerRunner) run. Its hooks are the resolved config fields and the weights
// present: the attention kind (grouped-query or multi-head latent), QK-norm
// kind, biases, clip_qkv and the sliding window (attention); dense or sparse
// layer (is_moe_layer); router_selection, top-k renormalisation and
// routed_scaling_factor (router); a shared expert with or without its sigmoid
// gate.

// One layer on s.h [T, H]: the attention half, the FFN half, the residual.
Status decoder_layer(const BlockContext& ctx, size_t layer, const RoutingObserver& observer);

// h [T, H] += Attn(input_norm(h)) in place, then x [T, H] = post_attention_norm(h)
// (x may be s.x; uses s.x and s.block as scratch).
void attention_half(const BlockContext& ctx, size_t layer, float* h, float* x);

// s.block = FFN(s.x) of `layer`: the routed experts plus the non-routed part
// (shared expert), or the dense MLP of a dense layer.
Status ffn_half(const BlockContext& ctx, size_t layer, const RoutingObserver& observer);

// The router of sparse layer `layer` on x [T, H]: logits (scratch [T, E]) to
// top-k weights by the config's router_selection (softmax top-k, DeepSeek-V2's
// group-max masking, DeepSeek-V3's biased sigmoid group-top-2), renormalised
// when the config says so, times routed_scaling_factor.
void route_layer(const MoeModel& model, size_t layer, const float* x, size_t T, std::vector<float>* logits,
                 Routing* routing, ThreadPool* pool);

// out [T, H] = the part of the FFN that is not a routed expert: the dense MLP
// of a dense layer, or the shared expert of a sparse layer (times
// sigmoid(shared_expert_gate . x) where the layer has that gate); false (out
// untouched) when a sparse layer has none. g, u, gate: scratch.
bool non_routed_ffn(const MoeModel& model, size_t layer, const float* x, size_t T, float* out, std::vector<float>& g,
                    std::vector<float>& u, std::vector<float>& gate, ThreadPool* pool);

// s.block = sum over the routed experts (ascending id) of w * Expert(s.x) (experts_block.cpp).
Status routed_experts_block(const BlockContext& ctx, size_t layer, const RoutingObserver& observer);

// out[t] = down(silu(gate x[t]) * up x[t]) for n rows; g and u are scratch of n*I.
void swiglu(const LinearOp& gate, const LinearOp& up, const LinearOp& down, const float* x, size_t n, float* out,
            std::vector<float>& g, std::vector<float>& u, ThreadPool* pool);
// g [n, I] = the gated activation of `mlp` over n rows of x (the input of down).
void gated_activation(const ExpertMlp& mlp, const LinearOp& gate, const LinearOp& up, const float* x, size_t n,
                      std::vector<float>& g, std::vector<float>& u, ThreadPool* pool);
// out[t] = down(gated_activation(x[t])) (+ down bias) for n rows.
void gated_mlp(const ExpertMlp& mlp, const LinearOp& gate, const LinearOp& up, const LinearOp& down, const float* x,
               size_t n, float* out, std::vector<float>& g, std::vector<float>& u, ThreadPool* pool);
// The ExpertMlp of routed expert `expert` of sparse layer `layer`.
ExpertMlp routed_expert_mlp(const MoeModel& model, size_t layer, size_t expert);

}  // namespace submoe::model::detail
