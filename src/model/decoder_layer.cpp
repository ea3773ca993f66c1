// The decoder layer (doc §1): h += Attn(input_norm(h)); x = post_attention_norm(h);
// h += FFN(x), where FFN is the routed experts plus the non-routed part (shared
// expert) of a sparse layer, or the dense MLP of a dense layer. Session,
// BatchForward (generation, eval, traces) and LayerRunner (calibration) all run
// these functions; blocks.h lists the hooks.
#include "blocks.h"
#include "forward_ops.h"

namespace submoe::model::detail {

void attention_half(const BlockContext& ctx, size_t layer, float* h, float* x) {
  const io::MoeModelConfig& c = ctx.model.config();
  const LayerWeights& L = ctx.model.weights().layers[layer];
  Session::Scratch& s = ctx.s;
  const size_t T = ctx.num_tokens, H = static_cast<size_t>(c.hidden_size);
  const float eps = static_cast<float>(c.rms_norm_eps);
  {
    ScopedOpTimer timer(ctx.profile, OpClass::kNorm);
    for (size_t t = 0; t < T; ++t) rms_norm_to(h + t * H, &s.x[t * H], H, L.input_norm.data(), eps);
  }
  if (c.attention == io::AttentionKind::kMla)
    mla_attention_block(ctx, layer);
  else
    attention_block(ctx, layer);
  ScopedOpTimer timer(ctx.profile, OpClass::kNorm);
  for (size_t i = 0; i < T * H; ++i) h[i] += s.block[i];
  for (size_t t = 0; t < T; ++t) rms_norm_to(h + t * H, x + t * H, H, L.post_attention_norm.data(), eps);
}

void route_layer(const MoeModel& model, size_t layer, const float* x, size_t T, std::vector<float>* logits,
                 Routing* routing, ThreadPool* pool) {
  const io::MoeModelConfig& c = model.config();
  const size_t E = static_cast<size_t>(c.num_experts), k = static_cast<size_t>(c.num_experts_per_tok);
  logits->resize(T * E);
  const LayerWeights& L = model.weights().layers[layer];
  L.router->forward(x, T, logits->data(), pool);
  if (!L.router_linear_bias.empty()) add_rows(logits->data(), L.router_linear_bias.data(), T, E);
  const auto groups = static_cast<size_t>(c.n_group), kept = static_cast<size_t>(c.topk_group);
  switch (c.router_selection) {
    case io::RouterSelection::kSoftmaxTopK:
      route_softmax_top_k(*logits, T, E, k, c.norm_topk_prob, routing);
      break;
    case io::RouterSelection::kSoftmaxGroupMax:
      route_softmax_group_max(*logits, T, E, k, groups, kept, routing);
      break;
    case io::RouterSelection::kSigmoidGroupTop2:
      route_sigmoid_group_top2(*logits, L.router_bias, T, E, k, groups, kept, c.norm_topk_prob, routing);
      break;
    case io::RouterSelection::kTopKSoftmax:
      route_top_k_softmax(*logits, T, E, k, routing);
      break;
  }
  if (c.routed_scaling_factor != 1.0) {
    const float scale = static_cast<float>(c.routed_scaling_factor);
    for (float& w : routing->weights) w *= scale;
  }
}

bool non_routed_ffn(const MoeModel& model, size_t layer, const float* x, size_t T, float* out, std::vector<float>& g,
                    std::vector<float>& u, std::vector<float>& gate, ThreadPool* pool) {
  const LayerWeights& L = model.weights().layers[layer];
  if (!L.sparse) {
    swiglu(*L.mlp.gate, *L.mlp.up, *L.mlp.down, x, T, out, g, u, pool);
    return true;
  }
  if (!L.shared_expert.gate) return false;
  swiglu(*L.shared_expert.gate, *L.shared_expert.up, *L.shared_expert.down, x, T, out, g, u, pool);
  if (!L.shared_expert_gate) return true;
  const size_t H = static_cast<size_t>(model.config().hidden_size);
  gate.resize(T);
  L.shared_expert_gate->forward(x, T, gate.data(), pool);
  for (size_t t = 0; t < T; ++t) {
    const float gt = sigmoid(gate[t]);
    for (size_t d = 0; d < H; ++d) out[t * H + d] = gt * out[t * H + d];
  }
  return true;
}

Status ffn_half(const BlockContext& ctx, size_t layer, const RoutingObserver& observer) {
  const MoeModel& m = ctx.model;
  Session::Scratch& s = ctx.s;
  auto& ts = s.threads[0];
  const size_t T = ctx.num_tokens;
  if (!m.weights().layers[layer].sparse) {
    ScopedOpTimer timer(ctx.profile, OpClass::kDenseMlp);
    non_routed_ffn(m, layer, s.x.data(), T, s.block.data(), ts.g, ts.u, s.gate_scalar, ctx.pool);
    return Status::ok();
  }
  SUBMOE_RETURN_IF_ERROR(routed_experts_block(ctx, layer, observer));
  if (!m.weights().layers[layer].shared_expert.gate) return Status::ok();
  const size_t H = static_cast<size_t>(m.config().hidden_size);
  ScopedOpTimer timer(ctx.profile, OpClass::kSharedExpert);
  s.shared_out.resize(T * H);
  non_routed_ffn(m, layer, s.x.data(), T, s.shared_out.data(), ts.g, ts.u, s.gate_scalar, ctx.pool);
  for (size_t i = 0; i < T * H; ++i) s.block[i] += s.shared_out[i];
  return Status::ok();
}

Status decoder_layer(const BlockContext& ctx, size_t layer, const RoutingObserver& observer) {
  Session::Scratch& s = ctx.s;
  attention_half(ctx, layer, s.h.data(), s.x.data());
  SUBMOE_RETURN_IF_ERROR(ffn_half(ctx, layer, observer));
  ScopedOpTimer timer(ctx.profile, OpClass::kNorm);
  const size_t n = ctx.num_tokens * static_cast<size_t>(ctx.model.config().hidden_size);
  for (size_t i = 0; i < n; ++i) s.h[i] += s.block[i];
  return Status::ok();
}

}  // namespace submoe::model::detail
