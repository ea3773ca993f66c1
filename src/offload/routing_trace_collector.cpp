#include "submoe/offload/routing_trace_collector.h"

#include <algorithm>

namespace submoe::offload {

RoutingTraceCollector::RoutingTraceCollector(const io::MoeModelConfig& c)
    : moe_index_(static_cast<size_t>(c.num_hidden_layers), -1), k_(static_cast<uint32_t>(c.num_experts_per_tok)) {
  for (int l = 0; l < c.num_hidden_layers; ++l)
    if (c.is_moe_layer(l)) moe_index_[static_cast<size_t>(l)] = static_cast<int>(moe_layers_++);
  trace_ = RoutingTrace(moe_layers_, static_cast<uint32_t>(c.num_experts), k_);
}

void RoutingTraceCollector::observe(int layer, size_t first_position, const model::Routing& r) {
  if (!status_.is_ok()) return;
  if (layer < 0 || static_cast<size_t>(layer) >= moe_index_.size() || moe_index_[static_cast<size_t>(layer)] < 0 ||
      r.k != k_) {
    status_ = internal_error("routing of layer " + std::to_string(layer) + " does not match the model");
    return;
  }
  if (!started_) {
    started_ = true;
    first_ = first_position;
    tokens_ = r.num_tokens;
    filled_ = 0;
    pending_.assign(tokens_ * moe_layers_ * k_, ExpertChoice{0, bf16_t{0}});
  }
  if (first_position != first_ || r.num_tokens != tokens_) {
    status_ = internal_error("routing of layer " + std::to_string(layer) + " covers other positions than its forward");
    return;
  }
  const size_t m = static_cast<size_t>(moe_index_[static_cast<size_t>(layer)]);
  for (size_t t = 0; t < tokens_; ++t)
    for (size_t j = 0; j < k_; ++j) {
      ExpertChoice& c = pending_[(t * moe_layers_ + m) * k_ + j];
      c.expert = static_cast<uint16_t>(r.experts[t * k_ + j]);
      c.weight = float_to_bf16(r.weights[t * k_ + j]);
    }
  ++filled_;
}

Status RoutingTraceCollector::end_forward() {
  SUBMOE_RETURN_IF_ERROR(status_);
  if (!started_) return Status::ok();  // no MoE routing in this call (e.g. zero tokens)
  started_ = false;
  if (filled_ != moe_layers_)
    return internal_error("trace: " + std::to_string(filled_) + " of " + std::to_string(moe_layers_) +
                          " MoE layers routed in the last forward call");
  const size_t per_token = size_t{moe_layers_} * k_;
  std::vector<ExpertChoice> token(per_token);
  for (size_t t = 0; t < tokens_; ++t) {
    std::copy_n(pending_.begin() + static_cast<std::ptrdiff_t>(t * per_token), per_token, token.begin());
    SUBMOE_RETURN_IF_ERROR(trace_.append_token(token));
  }
  return Status::ok();
}

}  // namespace submoe::offload
