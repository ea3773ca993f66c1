// The architecture registry: one line per descriptor. Lookups iterate over it;
// an unknown model_type is an error listing what is here.
#include <array>
#include <cmath>

#include "descriptors.h"

namespace submoe::io {
namespace {

constexpr std::array<const ArchitectureDescriptor*, 7> kRegistry{
    &arch::kMixtral,
    &arch::kQwen2Moe,
    &arch::kQwen3Moe,
    &arch::kOlmoe,
    &arch::kDeepseekV2,
    &arch::kDeepseekV3,
    &arch::kGptOss,
};

}  // namespace

std::span<const ArchitectureDescriptor* const> architecture_registry() { return kRegistry; }

const ArchitectureDescriptor& architecture_descriptor(Architecture id) {
  for (const ArchitectureDescriptor* d : kRegistry)
    if (d->id == id) return *d;
  // Architecture values come only from this registry (find_architecture); a
  // missing row is a build defect the registry test catches.
  return *kRegistry.front();
}

Result<const ArchitectureDescriptor*> find_architecture(std::string_view model_type) {
  for (const ArchitectureDescriptor* d : kRegistry)
    if (d->model_type == model_type || (!d->model_type_alias.empty() && d->model_type_alias == model_type)) return d;
  return unsupported("model_type '" + std::string(model_type) + "' is not supported (supported: " +
                     supported_model_types() + ")");
}

const ArchitectureDescriptor* find_architecture_by_class(std::string_view class_name) {
  for (const ArchitectureDescriptor* d : kRegistry)
    if (d->causal_lm_class == class_name) return d;
  return nullptr;
}

std::string supported_model_types() {
  std::string s;
  for (const ArchitectureDescriptor* d : kRegistry) {
    if (!s.empty()) s += ", ";
    s += d->model_type;
    if (!d->model_type_alias.empty()) s.append(" (or ").append(d->model_type_alias).append(")");
  }
  return s;
}

std::string sparse_block_prefix(const ArchitectureDescriptor& arch, int layer) {
  std::string s = "model.layers.";
  s += std::to_string(layer);
  s += '.';
  s += arch.sparse_block;
  return s;
}

std::string expert_tensor_name(const ArchitectureDescriptor& arch, int layer, int expert, ExpertProjection proj) {
  std::string s = sparse_block_prefix(arch, layer);
  s += ".experts.";
  s += std::to_string(expert);
  s += '.';
  s += arch.expert_projection[static_cast<int>(proj)];
  s += ".weight";
  return s;
}

Status check_common_forward(const MoeModelConfig& c) {
  auto positive = [](int64_t v, const char* name) -> Status {
    if (v <= 0) return invalid_argument(std::string("config: ") + name + " must be positive, got " + std::to_string(v));
    return Status::ok();
  };
  SUBMOE_RETURN_IF_ERROR(positive(c.vocab_size, "vocab_size"));
  SUBMOE_RETURN_IF_ERROR(positive(c.hidden_size, "hidden_size"));
  SUBMOE_RETURN_IF_ERROR(positive(c.num_hidden_layers, "num_hidden_layers"));
  SUBMOE_RETURN_IF_ERROR(positive(c.num_attention_heads, "num_attention_heads"));
  SUBMOE_RETURN_IF_ERROR(positive(c.num_key_value_heads, "num_key_value_heads"));
  SUBMOE_RETURN_IF_ERROR(positive(c.head_dim, "head_dim"));
  if (c.head_dim % 2 != 0) return invalid_argument("config: head_dim must be even for RoPE, got " + std::to_string(c.head_dim));
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    return invalid_argument("config: num_attention_heads (" + std::to_string(c.num_attention_heads) +
                            ") is not a multiple of num_key_value_heads (" + std::to_string(c.num_key_value_heads) + ")");
  if (c.hidden_act != "silu")
    return unsupported("config: hidden_act '" + c.hidden_act + "' is not supported (only silu)");
  if (!(c.rms_norm_eps > 0.0)) return invalid_argument("config: rms_norm_eps must be positive");
  bool any_moe = false, any_dense = false;
  for (int l = 0; l < c.num_hidden_layers; ++l) (c.is_moe_layer(l) ? any_moe : any_dense) = true;
  if (any_moe) {
    SUBMOE_RETURN_IF_ERROR(positive(c.num_experts, "num_experts"));
    SUBMOE_RETURN_IF_ERROR(positive(c.moe_intermediate_size, "moe_intermediate_size"));
    if (c.num_experts_per_tok <= 0 || c.num_experts_per_tok > c.num_experts)
      return invalid_argument("config: num_experts_per_tok must be in [1, num_experts=" +
                              std::to_string(c.num_experts) + "], got " + std::to_string(c.num_experts_per_tok));
  }
  if (any_dense) SUBMOE_RETURN_IF_ERROR(positive(c.intermediate_size, "intermediate_size"));
  if (c.clip_qkv && !(*c.clip_qkv > 0.0)) return invalid_argument("config: clip_qkv must be positive when set");
  if (!(c.routed_scaling_factor > 0.0) || !std::isfinite(c.routed_scaling_factor))
    return invalid_argument("config: routed_scaling_factor must be positive and finite");
  return Status::ok();
}

Status check_forward_supported(const MoeModelConfig& c) {
  SUBMOE_RETURN_IF_ERROR(check_common_forward(c));
  return architecture_descriptor(c.architecture).check_forward(c);
}

}  // namespace submoe::io
