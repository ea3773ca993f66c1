// The MoE transformer forward pass (doc §1.5): embedding, per layer
// h += Attn(RMSNorm(h)); h += FFN(RMSNorm(h)) with FFN a routed-expert block or a
// dense SwiGLU MLP, final RMSNorm, lm_head. Activations are f32; weights stay in
// their stored dtype behind LinearOps.
//
// A MoeModel is immutable after construction and may be shared; a Session runs
// one token sequence through it (its KV cache and scratch memory). Prefill and
// decode are the same call: forward() takes any number of new tokens.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "submoe/core/status.h"
#include "submoe/io/hf_config.h"
#include "submoe/io/architecture.h"
#include "submoe/model/kv_cache.h"
#include "submoe/model/model_weights.h"
#include "submoe/model/op_profile.h"
#include "submoe/model/rope.h"
#include "submoe/model/router.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::model {

class MoeModel {
 public:
  // A Hugging Face checkpoint directory: config.json + model.safetensors (or a
  // sharded index). Weights are memory-mapped and used in place.
  static Result<std::unique_ptr<MoeModel>> load(const std::string& directory, const LoadWeightsOptions& options = {});
  // From a parsed config and weights built elsewhere (checked against the config).
  static Result<std::unique_ptr<MoeModel>> create(io::MoeModelConfig config, ModelWeights weights);

  const io::MoeModelConfig& config() const { return config_; }
  const io::ArchitectureDescriptor& architecture() const { return *arch_; }
  const ModelWeights& weights() const { return weights_; }
  ExpertProvider& experts() const { return *weights_.experts; }
  const Rope& rope() const { return rope_; }
  // Sliding window of each layer (0 = full causal attention).
  size_t window(size_t layer) const { return windows_[layer]; }
  // What each layer keeps per position in a session's KV cache.
  const std::vector<KvLayerShape>& kv_shapes() const { return kv_shapes_; }
  // Token ids that end generation: config.json eos_token_id (int or list).
  const std::vector<int64_t>& eos_token_ids() const { return config_.eos_token_ids; }

 private:
  MoeModel() = default;

  io::MoeModelConfig config_;
  const io::ArchitectureDescriptor* arch_ = nullptr;
  ModelWeights weights_;
  Rope rope_;
  std::vector<size_t> windows_;
  std::vector<KvLayerShape> kv_shapes_;
};

// What each layer of `config` keeps per position in a KV cache: grouped-query
// attention keeps num_key_value_heads keys and values of head_dim; multi-head
// latent attention one row of kv_lora_rank + qk_rope_head_dim (the compressed
// latent and the shared RoPE key) and no values.
std::vector<KvLayerShape> kv_cache_shapes(const io::MoeModelConfig& config);

// RoPE parameters implied by a config (theta, scaling dict, YaRN's factor rule).
Result<RopeParams> rope_params_from_config(const io::MoeModelConfig& config);

enum class LogitsMode {
  kNone,  // only fill the KV cache
  kLast,  // logits of the last new token: [V]
  kAll,   // logits of every new token: [T, V]
};

// Called after each sparse layer's routing with the layer index, the position of
// the first token in the batch and the decision (for traces and tests).
using RoutingObserver = std::function<void(int layer, size_t first_position, const Routing& routing)>;

class Session {
 public:
  // `pool` may be null (single thread); both must outlive the session.
  Session(const MoeModel& model, ThreadPool* pool);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Runs `tokens` at positions length() .. length()+T-1 and appends their keys and
  // values to the cache. Token ids outside [0, vocab_size) are kInvalidArgument
  // (nothing is changed then); errors from the expert provider are passed on.
  Status forward(std::span<const int32_t> tokens, LogitsMode mode, std::vector<float>* logits);

  // Positions processed so far.
  size_t length() const { return cache_.length(); }
  // Forgets the sequence (keeps the memory).
  void reset() { cache_.clear(); }
  // Pre-sizes the KV cache for `positions` positions.
  void reserve(size_t positions) { cache_.reserve(positions); }
  const KvCache& cache() const { return cache_; }
  void set_routing_observer(RoutingObserver observer) { observer_ = std::move(observer); }
  // Pre-gating's predictions (see ExpertProvider::predict): after each sparse
  // layer but the last, the next sparse layer's router run on the current
  // hidden state, per token, as `layer` = that next layer. Made whenever this
  // observer is set (or the provider asks for predictions); they change nothing.
  void set_prediction_observer(RoutingObserver observer) { prediction_observer_ = std::move(observer); }
  // Times every forward by op class into `profile` (null: off); it must
  // outlive the session or be reset to null.
  void set_profile(OpProfile* profile) { profile_ = profile; }

  struct Scratch;  // per-forward buffers (src/model/session_scratch.h)

 private:
  friend class BatchForward;

  const MoeModel& model_;
  ThreadPool* pool_;
  KvCache cache_;
  RoutingObserver observer_;
  RoutingObserver prediction_observer_;
  OpProfile* profile_ = nullptr;
  std::unique_ptr<Scratch> scratch_;
};

// One sequence's part of a batched forward: its session and its new tokens.
struct BatchEntry {
  Session* session = nullptr;
  std::span<const int32_t> tokens;  // at least one
  bool logits = true;               // whether the last new token's logits are wanted
};

// Runs the new tokens of several sessions of one model in one forward pass
// (continuous batching): every linear op (attention projections, router,
// experts, lm_head) takes all the rows together, so each routed expert is fetched
// and run once for the whole batch, while each row attends only to its own
// session's cache. Each session's result equals its own Session::forward up to
// the rounding differences of batched kernels. Owns the batch's scratch memory;
// one caller at a time. Sessions' routing observers and profiles are not called.
class BatchForward {
 public:
  // `pool` may be null; both must outlive this object.
  BatchForward(const MoeModel& model, ThreadPool* pool);
  ~BatchForward();
  BatchForward(const BatchForward&) = delete;
  BatchForward& operator=(const BatchForward&) = delete;

  // logits: [entries whose .logits is set, V] in entry order. A token outside the
  // vocabulary, an entry without tokens, a session of another model or one listed
  // twice is kInvalidArgument and nothing changes; an error from the expert
  // provider leaves every session at its old length.
  Status forward(std::span<const BatchEntry> entries, std::vector<float>* logits);
  // Times every forward by op class (null: off); must outlive this object or be reset.
  void set_profile(OpProfile* profile) { profile_ = profile; }

 private:
  const MoeModel& model_;
  ThreadPool* pool_;
  OpProfile* profile_ = nullptr;
  std::unique_ptr<Session::Scratch> scratch_;
  std::vector<int32_t> tokens_;
};

}  // namespace submoe::model
