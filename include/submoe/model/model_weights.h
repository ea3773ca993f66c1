// Everything a forward pass reads, independent of how it was produced: norms and
// biases as small f32 vectors, every projection as a LinearOp, routed experts
// behind an ExpertProvider. load_checkpoint_weights() builds it from a Hugging
// Face checkpoint with dense ops; other builders (compressed artifacts) fill the
// same struct with other LinearOps.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "submoe/core/status.h"
#include "submoe/io/hf_config.h"
#include "submoe/io/safetensors.h"
#include "submoe/io/architecture.h"
#include "submoe/model/dense_class.h"
#include "submoe/model/expert_provider.h"
#include "submoe/model/linear_op.h"

namespace submoe::model {

// Token embedding rows read in their stored dtype (BF16 / F16 / F32) and widened
// to f32 on lookup; the table is never copied.
class EmbeddingTable {
 public:
  EmbeddingTable() = default;
  static Result<EmbeddingTable> from_tensor(const io::TensorView& tensor);
  size_t rows() const { return rows_; }
  size_t cols() const { return cols_; }
  // Copies row `id` (< rows()) as f32 into out[0, cols).
  void lookup(size_t id, float* out) const;
  const io::TensorView& tensor() const { return tensor_; }

 private:
  io::TensorView tensor_;
  size_t rows_ = 0, cols_ = 0, row_bytes_ = 0;
};

// down( silu(gate x) * up x )
struct SwiGluWeights {
  std::unique_ptr<LinearOp> gate, up, down;
};

// Multi-head latent attention (DeepSeek, doc §6.3): dims nope, rope, v and the
// ranks of the config. The output projection is LayerWeights::o [H, nH*v].
struct MlaWeights {
  std::unique_ptr<LinearOp> q_a;     // [q_lora, H]  (q_lora_rank set)
  std::vector<float> q_a_norm;       // [q_lora]
  std::unique_ptr<LinearOp> q_b;     // [nH*(nope+rope), q_lora]
  std::unique_ptr<LinearOp> q;       // [nH*(nope+rope), H]  (q_lora_rank null)
  std::unique_ptr<LinearOp> kv_a;    // [kv_lora + rope, H]: the latent, then the shared rope key
  std::vector<float> kv_a_norm;      // [kv_lora]
  // kv_b_proj [nH*(nope+v), kv_lora] row-major f32: per head nope key rows then
  // v value rows. Held as a matrix, not an op: it is absorbed into each query
  // (keys) and applied to each attention-weighted latent (values).
  std::vector<float> kv_b;
  std::vector<float> q_a_bias, kv_a_bias;  // attention_bias; empty when absent
};

struct LayerWeights {
  std::vector<float> input_norm;           // [H]
  std::vector<float> post_attention_norm;  // [H]
  std::unique_ptr<LinearOp> q, k, v, o;    // [nH*D, H], [nKV*D, H] x2, [H, nH*D] (MLA: o only)
  MlaWeights mla;                          // multi-head latent attention layers
  std::vector<float> q_bias, k_bias, v_bias, o_bias;  // empty when absent
  std::vector<float> q_norm, k_norm;  // [D] per head (Qwen3) or [nH*D]/[nKV*D] (OLMoE); empty: none
  bool sparse = false;
  std::unique_ptr<LinearOp> router;  // [E, H], sparse layers
  std::vector<float> router_bias;    // [E] DeepSeek-V3 e_score_correction_bias (selection only); else empty
  std::vector<float> router_linear_bias;  // [E] added to the router logits (GPT-OSS); else empty
  std::vector<float> attention_sinks;     // [nH] per-head sink logits (GPT-OSS); else empty
  // Routed-expert biases after gate, up and down (GPT-OSS), expert-major:
  // [E * I], [E * I], [E * H]; empty when the family has none.
  std::vector<float> expert_gate_bias, expert_up_bias, expert_down_bias;
  SwiGluWeights mlp;                 // dense layers: [I, H], [I, H], [H, I]
  SwiGluWeights shared_expert;       // Qwen2-MoE sparse layers
  std::unique_ptr<LinearOp> shared_expert_gate;  // [1, H]
};

struct ModelWeights {
  EmbeddingTable embed;                      // [V, H]
  std::vector<LayerWeights> layers;
  std::vector<float> final_norm;             // [H]
  std::unique_ptr<LinearOp> lm_head;         // [V, H] (the embedding when tied)
  std::unique_ptr<ExpertProvider> experts;   // routed experts of sparse layers
  // Keeps whatever the views above point into alive (e.g. the mapped checkpoint).
  std::shared_ptr<const void> storage;
};

// A dense projection built by someone other than the loader (a compressed
// artifact's packed matrix): the op and the tensors it read.
struct DenseOverride {
  std::unique_ptr<LinearOp> op;  // null: the loader reads the tensor itself
  std::vector<const io::TensorView*> tensors;
};
// Asked before each dense projection [rows, cols] of the checkpoint is read,
// with the tensor name it would read.
using DenseLinearHook =
    std::function<Result<DenseOverride>(const std::string& name, DenseClass cls, int64_t rows, int64_t cols)>;

struct LoadWeightsOptions {
  // Read no routed-expert tensor and leave ModelWeights::experts null: builders
  // whose experts are stored otherwise (compressed artifacts, runtime/) fill it.
  bool skip_routed_experts = false;
  // Tensors another reader consumes (an artifact's packed experts and codec
  // tensors; with skip_routed_experts it must cover them); they do not count
  // as unused.
  std::function<bool(const io::TensorView&)> read_elsewhere;
  // A tensor of the checkpoint that the model does not read is an error
  // (kCorruptData naming it: the config probably does not describe this
  // checkpoint) unless this is set (--allow-extra-tensors).
  bool allow_unused_tensors = false;
  // Optional: builds some dense projections itself (see DenseLinearHook).
  DenseLinearHook dense_linear;
  // Where the dense projections it reads keep their weights (linear_op.h).
  DenseStorage dense_storage = DenseStorage::kInPlace;
  // Whether their inputs are rounded to bf16 first (make_dense_linear).
  kernels::ActivationType dense_activations = kernels::ActivationType::kF32;
};

// Builds dense weights from an opened checkpoint (hub per-expert names; v5 fused
// experts.gate_up_proj / experts.down_proj are split into views). Every tensor's
// shape is checked against the config; a missing or misshaped tensor is an error
// naming it. The returned weights keep `tensors` alive.
Result<ModelWeights> load_checkpoint_weights(const io::MoeModelConfig& config, const io::ArchitectureDescriptor& arch,
                                             std::shared_ptr<const io::SafetensorsModel> tensors,
                                             const LoadWeightsOptions& options = {});

// The source tensors of one routed expert as 2-D views [out, in]: gate and up
// [I, H], down [H, I] (hub per-expert tensors, or slices of v5 fused tensors).
struct ExpertWeightViews {
  io::TensorView gate, up, down;
};
// Every routed expert of a sparse layer, and the names of the checkpoint tensors
// that hold them (everything else in the checkpoint is dense weight).
struct LayerExpertWeights {
  std::vector<ExpertWeightViews> experts;
  std::vector<std::string> tensor_names;
  // Memory the views point into when the checkpoint's layout had to be
  // rewritten (GPT-OSS's fused or MXFP4 experts); null for views of the file.
  std::shared_ptr<const void> storage;
};
// Shapes are checked against the config; a missing tensor is kNotFound naming it.
Result<LayerExpertWeights> find_layer_expert_weights(const io::SafetensorsModel& tensors,
                                                     const io::MoeModelConfig& config,
                                                     const io::ArchitectureDescriptor& arch, int layer);

// Checks that prebuilt weights have the shapes `config` implies (for builders
// other than the checkpoint loader).
Status check_weights(const io::MoeModelConfig& config, const io::ArchitectureDescriptor& arch, const ModelWeights& weights);

}  // namespace submoe::model
