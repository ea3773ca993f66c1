// Parameter accounting of a checkpoint from its actual tensors: which tensors are
// routed experts (by name, per architecture), how many parameters a token
// touches, what share sits in the experts.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "submoe/core/status.h"
#include "submoe/io/hf_config.h"
#include "submoe/io/safetensors.h"

namespace submoe::io {

enum class TensorRole {
  kRoutedExpert,  // one routed expert's projection (or a fused [E, ...] stack)
  kSharedExpert,  // Qwen2-MoE shared expert and its sigmoid gate: every token uses it
  kRouter,        // the routing gate [E, H]
  kEmbedding,
  kLmHead,
  kAttention,     // q/k/v/o projections and biases
  kNorm,          // RMSNorm weights, including q/k norms
  kDenseMlp,      // dense (non-MoE) layers' MLP
  kOther,
};
inline constexpr size_t kNumTensorRoles = 9;
// "routed_expert", "shared_expert", "router", "embedding", "lm_head", "attention",
// "norm", "dense_mlp", "other".
std::string_view tensor_role_name(TensorRole role);

struct TensorClass {
  TensorRole role = TensorRole::kOther;
  int layer = -1;   // from "model.layers.<L>."; -1 outside the layers
  int expert = -1;  // routed expert index; -1 for fused stacks and everything else
};

// Classifies a Hugging Face tensor name. Routed experts are recognised by the
// architecture's own module path (Mixtral "block_sparse_moe.experts.<E>.",
// the others "mlp.experts.<E>."), or by any ".experts.<E>." when `arch` is
// unknown; fused v5 stacks ("experts.gate_up_proj", "experts.down_proj") count
// as routed experts too.
TensorClass classify_tensor(std::string_view name, std::optional<Architecture> arch);

struct ParameterCounts {
  int64_t total = 0;  // sum of numel over all tensors
  std::array<int64_t, kNumTensorRoles> by_role{};
  int64_t routed_experts() const { return by_role[static_cast<size_t>(TensorRole::kRoutedExpert)]; }
  double routed_share() const { return total > 0 ? static_cast<double>(routed_experts()) / total : 0.0; }
  int moe_layers = 0;             // layers holding routed-expert tensors
  int64_t max_experts_per_layer = 0;  // distinct experts found in one layer
  // Parameters one token uses: everything except the routed experts, plus top_k
  // experts' worth of each MoE layer (its routed parameters * k / E). Absent
  // when top_k is unknown.
  std::optional<int64_t> active_per_token;
};

// `top_k` is num_experts_per_tok (from config.json); without it the active count
// stays empty. Counts numel, so packed integer tensors count as stored elements.
ParameterCounts count_parameters(std::span<const TensorView* const> tensors, std::optional<Architecture> arch,
                                 std::optional<int64_t> top_k);

}  // namespace submoe::io
