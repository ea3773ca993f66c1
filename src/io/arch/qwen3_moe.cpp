// Qwen3-MoE (Qwen3MoeForCausalLM, transformers Qwen3MoeConfig): per-head q/k
// RMSNorm over head_dim before RoPE (head_dim may differ from hidden / heads),
// optional biases on q, k, v and o (attention_bias), no shared expert, dense
// layers by decoder_sparse_step / mlp_only_layers.
#include "descriptors.h"

namespace submoe::io::arch {
namespace {

void set_defaults(MoeModelConfig* c) {
  c->vocab_size = 151936;
  c->hidden_size = 2048;
  c->intermediate_size = 6144;
  c->num_hidden_layers = 24;
  c->num_attention_heads = 32;
  c->num_key_value_heads = 4;
  c->max_position_embeddings = 32768;
  c->rms_norm_eps = 1e-6;
  c->rope_theta = 10000.0;
  c->sliding_window = 4096;
  c->max_window_layers = 28;
  c->moe_intermediate_size = 768;
  c->num_experts = 128;
  c->num_experts_per_tok = 8;
}

Status parse_fields(const ConfigFields& f, MoeModelConfig* c) {
  SUBMOE_RETURN_IF_ERROR(parse_qwen_moe_fields(f, c));
  SUBMOE_RETURN_IF_ERROR(f.get_bool("attention_bias", &c->attention_bias));
  c->qkv_bias = c->o_proj_bias = c->attention_bias;
  c->qk_norm = QkNorm::kPerHead;
  return Status::ok();
}

Status check_forward(const MoeModelConfig& c) {
  if (c.qk_norm != QkNorm::kPerHead) return invalid_argument("config: qwen3_moe needs per-head QK-norm");
  if (c.has_shared_expert()) return invalid_argument("config: qwen3_moe has no shared expert");
  return Status::ok();
}

void synth_defaults(MoeModelConfig* c) {
  c->rms_norm_eps = 1e-6;
  c->rope_theta = 1e6;
  c->norm_topk_prob = true;
  c->qk_norm = QkNorm::kPerHead;
  qwen_synth_layers(c);
}

void write_config_fields(const MoeModelConfig& c, nlohmann::json* j) {
  write_qwen_moe_fields(c, j);
  (*j)["head_dim"] = c.head_dim;
  (*j)["attention_bias"] = c.attention_bias;
}

}  // namespace

const ArchitectureDescriptor kQwen3Moe{
    .id = Architecture::kQwen3Moe,
    .model_type = "qwen3_moe",
    .causal_lm_class = "Qwen3MoeForCausalLM",
    .model_type_alias = {},
    .sparse_block = "mlp",
    .expert_projection = {"gate_proj", "up_proj", "down_proj"},
    .sparse_block_alias = {},
    .has_shared_expert = false,
    .shared_expert_module = {},
    .shared_expert_gate = {},
    .explicit_head_dim = true,
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
