// Layer-at-a-time execution for calibration (QMoE's sequential pipeline): each
// call runs one half of one layer over one whole sequence (positions 0..T-1),
// so a caller can hold every sample's hidden states between layers, compress a
// layer's experts, and run the compressed experts itself. The arithmetic is the
// same code Session::forward uses; running every layer through this class gives
// the same hidden states as a Session (test).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "submoe/core/status.h"
#include "submoe/model/moe_model.h"
#include "submoe/model/router.h"

namespace submoe::model {

class LayerRunner {
 public:
  // `pool` may be null; both must outlive the runner.
  LayerRunner(const MoeModel& model, ThreadPool* pool);
  ~LayerRunner();
  LayerRunner(const LayerRunner&) = delete;
  LayerRunner& operator=(const LayerRunner&) = delete;

  // h[T, H] = embeddings of `tokens` (ids outside the vocabulary are an error).
  Status embed(std::span<const int32_t> tokens, float* h) const;

  // Attention half of `layer` for one sequence of T tokens at positions 0..T-1:
  // h += Attn(input_norm(h)), then x = post_attention_norm(h). h, x: [T, H].
  void attention(size_t layer, float* h, size_t T, float* x);

  // Routing of the FFN inputs x [T, H] of a sparse layer (softmax, top-k,
  // optional renormalisation), exactly as the forward pass decides it.
  void route(size_t layer, const float* x, size_t T, Routing* routing);

  // out[T, H] = the part of the FFN that is not a routed expert: the dense MLP of
  // a dense layer, or the gated shared expert of a sparse layer (zeros if none).
  void dense_ffn(size_t layer, const float* x, size_t T, float* out);

 private:
  void prepare(size_t T);

  const MoeModel& model_;
  ThreadPool* pool_;
  KvCache cache_;
  std::unique_ptr<Session::Scratch> s_;
};

// The expert arithmetic of the forward pass, callable from any thread with its
// own scratch: g[n, I] = the gated activation (the input of down: silu(gate x)
// * up x, or GPT-OSS's biased, clamped form), and y[n, H] = down(g) (+ bias).
// `pool` may be null. expert_mlp gives the ExpertMlp of routed expert
// `expert` of sparse layer `layer` (activation and biases).
ExpertMlp expert_mlp(const MoeModel& model, size_t layer, size_t expert);
void expert_activations(const ExpertMlp& mlp, const ExpertOps& ops, const float* x, size_t n, std::vector<float>& g,
                        std::vector<float>& u, ThreadPool* pool);
void expert_forward(const ExpertMlp& mlp, const ExpertOps& ops, const float* x, size_t n, float* y,
                    std::vector<float>& g, std::vector<float>& u, ThreadPool* pool);

}  // namespace submoe::model
