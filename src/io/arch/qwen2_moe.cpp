// Qwen2-MoE (Qwen2MoeForCausalLM, transformers Qwen2MoeConfig): Llama attention
// with q/k/v biases (qkv_bias, default true; o_proj never), routed experts plus
// one shared SwiGLU expert scaled by sigmoid(shared_expert_gate . x), dense MLP
// layers by decoder_sparse_step / mlp_only_layers, top-k weights renormalised
// only with norm_topk_prob; head_dim always hidden / heads.
#include "descriptors.h"

namespace submoe::io::arch {
namespace {

void set_defaults(MoeModelConfig* c) {
  c->vocab_size = 151936;
  c->hidden_size = 2048;
  c->intermediate_size = 5632;
  c->num_hidden_layers = 24;
  c->num_attention_heads = 16;
  c->num_key_value_heads = 16;
  c->max_position_embeddings = 32768;
  c->rms_norm_eps = 1e-6;
  c->rope_theta = 10000.0;
  c->sliding_window = 4096;
  c->max_window_layers = 28;
  c->moe_intermediate_size = 1408;
  c->shared_expert_intermediate_size = 5632;
  c->num_experts = 60;
  c->num_experts_per_tok = 4;
}

Status parse_fields(const ConfigFields& f, MoeModelConfig* c) {
  SUBMOE_RETURN_IF_ERROR(parse_qwen_moe_fields(f, c));
  SUBMOE_RETURN_IF_ERROR(f.get_int("shared_expert_intermediate_size", &c->shared_expert_intermediate_size));
  if (c->shared_expert_intermediate_size < 0) return f.error("shared_expert_intermediate_size", "must not be negative");
  c->qkv_bias = true;
  return f.get_bool("qkv_bias", &c->qkv_bias);
}

Status check_forward(const MoeModelConfig& c) {
  if (c.qk_norm != QkNorm::kNone) return invalid_argument("config: qwen2_moe has no QK-norm");
  if (!c.has_shared_expert()) return invalid_argument("config: qwen2_moe needs shared_expert_intermediate_size > 0");
  return Status::ok();
}

void synth_defaults(MoeModelConfig* c) {
  c->rms_norm_eps = 1e-6;
  c->rope_theta = 1e6;
  c->norm_topk_prob = false;
  c->qkv_bias = true;
  qwen_synth_layers(c);
}

void write_config_fields(const MoeModelConfig& c, nlohmann::json* j) {
  write_qwen_moe_fields(c, j);
  (*j)["shared_expert_intermediate_size"] = c.shared_expert_intermediate_size;
  (*j)["qkv_bias"] = c.qkv_bias;
}

}  // namespace

const ArchitectureDescriptor kQwen2Moe{
    .id = Architecture::kQwen2Moe,
    .model_type = "qwen2_moe",
    .causal_lm_class = "Qwen2MoeForCausalLM",
    .model_type_alias = {},
    .sparse_block = "mlp",
    .expert_projection = {"gate_proj", "up_proj", "down_proj"},
    .sparse_block_alias = {},
    .has_shared_expert = true,
    .shared_expert_module = "shared_expert",
    .shared_expert_gate = "shared_expert_gate",
    .explicit_head_dim = false,
    .dense_mlp_layers = true,
    .mlp_only_layers_key = true,
    .set_defaults = &set_defaults,
    .parse_fields = &parse_fields,
    .layer_slides = &qwen_layer_slides,
    .check_forward = &check_forward,
    .synth_defaults = &synth_defaults,
    .write_config_fields = &write_config_fields,
};

}  // namespace submoe::io::arch
