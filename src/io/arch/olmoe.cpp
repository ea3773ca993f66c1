// OLMoE (OlmoeForCausalLM, transformers OlmoeConfig): q/k RMSNorm over the whole
// projection (nH*D, nKV*D) before reshaping, then an optional clamp of q, k, v to
// +-clip_qkv; optional attention biases on q, k, v and o; every layer sparse; no
// shared expert, no sliding window.
#include "descriptors.h"

namespace submoe::io::arch {
namespace {

void set_defaults(MoeModelConfig* c) {
  c->vocab_size = 50304;
  c->hidden_size = 2048;
  c->intermediate_size = 2048;
  c->num_hidden_layers = 16;
  c->num_attention_heads = 16;
  c->num_key_value_heads = 0;  // = num_attention_heads, resolved after parsing
  c->max_position_embeddings = 4096;
  c->rms_norm_eps = 1e-5;
  c->rope_theta = 10000.0;
  c->num_experts = 64;
  c->num_experts_per_tok = 8;
  c->pad_token_id = 1;
  c->eos_token_ids = {50279};
}

Status parse_fields(const ConfigFields& f, MoeModelConfig* c) {
  c->moe_intermediate_size = c->intermediate_size;
  SUBMOE_RETURN_IF_ERROR(f.get_bool("norm_topk_prob", &c->norm_topk_prob));
  SUBMOE_RETURN_IF_ERROR(f.get_opt_double("clip_qkv", &c->clip_qkv));
  if (c->clip_qkv && !(*c->clip_qkv > 0)) return f.error("clip_qkv", "must be positive");
  SUBMOE_RETURN_IF_ERROR(f.get_bool("attention_bias", &c->attention_bias));
  c->qkv_bias = c->o_proj_bias = c->attention_bias;
  c->qk_norm = QkNorm::kWholeProjection;
  return Status::ok();
}

bool layer_slides(const MoeModelConfig&, int) { return false; }

Status check_forward(const MoeModelConfig& c) {
  if (c.qk_norm != QkNorm::kWholeProjection) return invalid_argument("config: olmoe needs whole-projection QK-norm");
  if (c.has_shared_expert()) return invalid_argument("config: olmoe has no shared expert");
  return Status::ok();
}

void synth_defaults(MoeModelConfig* c) {
  c->rms_norm_eps = 1e-5;
  c->rope_theta = 1e4;
  c->norm_topk_prob = false;
  c->qk_norm = QkNorm::kWholeProjection;
}

void write_config_fields(const MoeModelConfig& c, nlohmann::json* j) {
  (*j)["intermediate_size"] = c.moe_intermediate_size;
  (*j)["num_experts"] = c.num_experts;
  (*j)["norm_topk_prob"] = c.norm_topk_prob;
  (*j)["clip_qkv"] = c.clip_qkv ? nlohmann::json(*c.clip_qkv) : nlohmann::json(nullptr);
  (*j)["attention_bias"] = c.attention_bias;
}

}  // namespace

const ArchitectureDescriptor kOlmoe{
    .id = Architecture::kOlmoe,
    .model_type = "olmoe",
    .causal_lm_class = "OlmoeForCausalLM",
    .model_type_alias = {},
    .sparse_block = "mlp",
    .expert_projection = {"gate_proj", "up_proj", "down_proj"},
    .sparse_block_alias = {},
    .has_shared_expert = false,
    .shared_expert_module = {},
    .shared_expert_gate = {},
    .explicit_head_dim = false,
    .dense_mlp_layers = false,
    .mlp_only_layers_key = false,
    .set_defaults = &set_defaults,
    .parse_fields = &parse_fields,
    .layer_slides = &layer_slides,
    .check_forward = &check_forward,
    .synth_defaults = &synth_defaults,
    .write_config_fields = &write_config_fields,
};

}  // namespace submoe::io::arch
