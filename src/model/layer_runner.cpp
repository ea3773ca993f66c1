#include "submoe/model/layer_runner.h"

#include <algorithm>

#include "blocks.h"
#include "forward_ops.h"
#include "submoe/core/thread_pool.h"

namespace submoe::model {

LayerRunner::LayerRunner(const MoeModel& model, ThreadPool* pool)
    : model_(model),
      pool_(pool),
      cache_(static_cast<size_t>(model.config().num_hidden_layers),
             static_cast<size_t>(model.config().num_key_value_heads), static_cast<size_t>(model.config().head_dim)),
      s_(Session::Scratch::for_pool(pool)) {}

LayerRunner::~LayerRunner() = default;

Status LayerRunner::embed(std::span<const int32_t> tokens, float* h) const {
  const size_t V = static_cast<size_t>(model_.config().vocab_size), H = static_cast<size_t>(model_.config().hidden_size);
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t] < 0 || static_cast<size_t>(tokens[t]) >= V)
      return invalid_argument("token id " + std::to_string(tokens[t]) + " at index " + std::to_string(t) +
                              " is outside the vocabulary [0, " + std::to_string(V) + ")");
    model_.weights().embed.lookup(static_cast<size_t>(tokens[t]), h + t * H);
  }
  return Status::ok();
}

void LayerRunner::prepare(size_t T) {
  const io::MoeModelConfig& c = model_.config();
  const size_t D = static_cast<size_t>(c.head_dim);
  s_->resize_for(c, T);
  for (size_t t = 0; t < T; ++t) model_.rope().angles(t, &s_->cos[t * D / 2], &s_->sin[t * D / 2]);
}

void LayerRunner::attention(size_t layer, float* h, size_t T, float* x) {
  const io::MoeModelConfig& c = model_.config();
  const size_t H = static_cast<size_t>(c.hidden_size);
  const float eps = static_cast<float>(c.rms_norm_eps);
  const LayerWeights& L = model_.weights().layers[layer];
  prepare(T);
  Session::Scratch& s = *s_;
  for (size_t t = 0; t < T; ++t) detail::rms_norm_to(h + t * H, &s.x[t * H], H, L.input_norm.data(), eps);
  cache_.clear();
  cache_.ensure_room(T);
  s.placement.clear();
  s.placement.append(&cache_, 0, T);
  const detail::BlockContext ctx{model_, pool_, s, T, s.placement};
  detail::attention_block(ctx, layer);
  for (size_t i = 0; i < T * H; ++i) h[i] += s.block[i];
  for (size_t t = 0; t < T; ++t) detail::rms_norm_to(h + t * H, x + t * H, H, L.post_attention_norm.data(), eps);
}

void LayerRunner::route(size_t layer, const float* x, size_t T, Routing* routing) {
  const io::MoeModelConfig& c = model_.config();
  const size_t E = static_cast<size_t>(c.num_experts), k = static_cast<size_t>(c.num_experts_per_tok);
  Session::Scratch& s = *s_;
  s.router_logits.resize(T * E);
  model_.weights().layers[layer].router->forward(x, T, s.router_logits.data(), pool_);
  route_softmax_top_k(s.router_logits, T, E, k, c.norm_topk_prob, routing);
}

void LayerRunner::dense_ffn(size_t layer, const float* x, size_t T, float* out) {
  const size_t H = static_cast<size_t>(model_.config().hidden_size);
  const LayerWeights& L = model_.weights().layers[layer];
  Session::Scratch& s = *s_;
  auto& ts = s.threads[0];
  if (!L.sparse) {
    detail::swiglu(*L.mlp.gate, *L.mlp.up, *L.mlp.down, x, T, out, ts.g, ts.u, pool_);
    return;
  }
  std::fill(out, out + T * H, 0.0f);
  if (!L.shared_expert.gate) return;
  s.gate_scalar.resize(T);
  detail::swiglu(*L.shared_expert.gate, *L.shared_expert.up, *L.shared_expert.down, x, T, out, ts.g, ts.u, pool_);
  L.shared_expert_gate->forward(x, T, s.gate_scalar.data(), pool_);
  for (size_t t = 0; t < T; ++t) {
    const float g = detail::sigmoid(s.gate_scalar[t]);
    for (size_t d = 0; d < H; ++d) out[t * H + d] *= g;
  }
}

void expert_activations(const ExpertOps& ops, const float* x, size_t n, std::vector<float>& g, std::vector<float>& u,
                        ThreadPool* pool) {
  const size_t inner = ops.gate->out_features();
  g.resize(n * inner);
  u.resize(n * inner);
  ops.gate->forward(x, n, g.data(), pool);
  ops.up->forward(x, n, u.data(), pool);
  detail::silu_mul(g.data(), u.data(), n * inner);
}

void expert_forward(const ExpertOps& ops, const float* x, size_t n, float* y, std::vector<float>& g,
                    std::vector<float>& u, ThreadPool* pool) {
  detail::swiglu(*ops.gate, *ops.up, *ops.down, x, n, y, g, u, pool);
}

}  // namespace submoe::model
