#include "submoe/model/layer_runner.h"

#include <algorithm>

#include "blocks.h"
#include "forward_ops.h"
#include "submoe/core/thread_pool.h"

namespace submoe::model {

LayerRunner::LayerRunner(const MoeModel& model, ThreadPool* pool)
    : model_(model),
      pool_(pool),
      cache_(model.kv_shapes()),
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
  prepare(T);
  cache_.clear();
  cache_.ensure_room(T);
  s_->placement.clear();
  s_->placement.append(&cache_, 0, T);
  const detail::BlockContext ctx{model_, pool_, *s_, T, s_->placement};
  detail::attention_half(ctx, layer, h, x);
}

void LayerRunner::route(size_t layer, const float* x, size_t T, Routing* routing) {
  detail::route_layer(model_, layer, x, T, &s_->router_logits, routing, pool_);
}

void LayerRunner::dense_ffn(size_t layer, const float* x, size_t T, float* out) {
  auto& ts = s_->threads[0];
  if (!detail::non_routed_ffn(model_, layer, x, T, out, ts.g, ts.u, s_->gate_scalar, pool_))
    std::fill(out, out + T * static_cast<size_t>(model_.config().hidden_size), 0.0f);
}

ExpertMlp expert_mlp(const MoeModel& model, size_t layer, size_t expert) {
  return detail::routed_expert_mlp(model, layer, expert);
}

void expert_activations(const ExpertMlp& mlp, const ExpertOps& ops, const float* x, size_t n, std::vector<float>& g,
                        std::vector<float>& u, ThreadPool* pool) {
  detail::gated_activation(mlp, *ops.gate, *ops.up, x, n, g, u, pool);
}

void expert_forward(const ExpertMlp& mlp, const ExpertOps& ops, const float* x, size_t n, float* y,
                    std::vector<float>& g, std::vector<float>& u, ThreadPool* pool) {
  detail::gated_mlp(mlp, *ops.gate, *ops.up, *ops.down, x, n, y, g, u, pool);
}

}  // namespace submoe::model
