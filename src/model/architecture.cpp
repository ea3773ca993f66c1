#include "submoe/model/architecture.h"

namespace submoe::model {

const ArchitectureAdapter& adapter_for(io::Architecture architecture) {
  switch (architecture) {
    case io::Architecture::kMixtral: return mixtral_adapter();
    case io::Architecture::kQwen2Moe: return qwen2_moe_adapter();
    case io::Architecture::kQwen3Moe: return qwen3_moe_adapter();
    case io::Architecture::kOlmoe: return olmoe_adapter();
  }
  return mixtral_adapter();  // unreachable: io only produces the four above
}

Status check_common_config(const io::MoeModelConfig& c) {
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
  return Status::ok();
}

std::string sparse_block_prefix(const ArchitectureAdapter& arch, int layer) {
  return "model.layers." + std::to_string(layer) + "." + std::string(arch.sparse_block);
}

std::string expert_tensor_name(const ArchitectureAdapter& arch, int layer, int expert, ExpertProjection proj) {
  std::string_view p = proj == ExpertProjection::kGate ? arch.expert_gate
                       : proj == ExpertProjection::kUp ? arch.expert_up
                                                       : arch.expert_down;
  return sparse_block_prefix(arch, layer) + ".experts." + std::to_string(expert) + "." + std::string(p) + ".weight";
}

}  // namespace submoe::model
