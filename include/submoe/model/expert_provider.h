// ExpertProvider: hands the model the LinearOps of routed expert (layer, expert).
// The model asks for the set of experts a layer needs before running them, so a
// provider that pages experts (offload) can fetch them together, and tells it
// when the layer is done so they can be released. A resident provider keeps
// every expert in memory and does nothing in begin/end.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "submoe/core/status.h"
#include "submoe/model/linear_op.h"

namespace submoe::model {

// One SwiGLU expert: down( silu(gate x) * up x ). gate/up: [I, H], down: [H, I].
struct ExpertOps {
  const LinearOp* gate = nullptr;
  const LinearOp* up = nullptr;
  const LinearOp* down = nullptr;
};

// What one expert computes around its three projections: optional biases
// after gate, up and down (GPT-OSS, [I], [I], [H]) and the gated activation
// h = silu(g) * u, or with `clamped` GPT-OSS's
// h = (clamp(u, -limit, limit) + 1) * min(g, limit) * sigmoid(alpha * min(g, limit)).
// The default is the plain SwiGLU of every other family.
struct ExpertMlp {
  const float* gate_bias = nullptr;
  const float* up_bias = nullptr;
  const float* down_bias = nullptr;
  bool clamped = false;
  float alpha = 1.702f;
  float limit = 7.0f;
};

class ExpertProvider {
 public:
  virtual ~ExpertProvider() = default;

  // Makes `experts` (ascending, distinct) of `layer` available until
  // end_layer(layer). Fails when an expert cannot be produced (I/O, corrupt data).
  virtual Status begin_layer(int layer, std::span<const int> experts) = 0;
  // Valid between begin_layer and end_layer for an expert that was listed.
  virtual ExpertOps ops(int layer, int expert) const = 0;
  virtual void end_layer(int layer) { (void)layer; }

  // Pre-gating (prefetch on hidden states): whether the provider wants the
  // model's prediction of the next sparse layer's experts. When it does, the
  // model runs that layer's router on the current hidden state once the
  // current layer's experts are acquired (begin_layer returned) and passes the
  // union of the predicted experts (ascending, distinct) to predict(), so their
  // reads overlap the current layer's compute.
  virtual bool wants_predictions() const { return false; }
  virtual void predict(int layer, std::span<const int> experts) {
    (void)layer;
    (void)experts;
  }
};

// Owns every expert's ops, all in memory (e.g. dense views into a mapped checkpoint).
class ResidentExpertProvider final : public ExpertProvider {
 public:
  struct Expert {
    std::unique_ptr<LinearOp> gate, up, down;
  };
  // experts[layer] holds num_experts entries for sparse layers, none for dense layers.
  explicit ResidentExpertProvider(std::vector<std::vector<Expert>> experts) : experts_(std::move(experts)) {}

  Status begin_layer(int layer, std::span<const int> experts) override;
  ExpertOps ops(int layer, int expert) const override {
    const Expert& e = experts_[static_cast<size_t>(layer)][static_cast<size_t>(expert)];
    return {e.gate.get(), e.up.get(), e.down.get()};
  }
  const std::vector<std::vector<Expert>>& experts() const { return experts_; }

 private:
  std::vector<std::vector<Expert>> experts_;
};

}  // namespace submoe::model
