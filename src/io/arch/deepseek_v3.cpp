// DeepSeek-V3 (DeepseekV3ForCausalLM, transformers DeepseekV3Config; Kimi-K2's
// configs, model_type "kimi_k2", use the same class): multi-head latent
// attention with RoPE on interleaved pairs, sigmoid router scores with
// e_score_correction_bias used for selection only, group-limited top-k (groups
// ranked by the sum of their two best biased scores), renormalised weights
// times routed_scaling_factor, always-on shared experts, the first
// first_k_dense_replace layers dense. Defaults are DeepseekV3Config's
// (transformers 5.25).
#include "descriptors.h"

namespace submoe::io::arch {
namespace {

void set_defaults(MoeModelConfig* c) {
  c->vocab_size = 129280;
  c->hidden_size = 7168;
  c->intermediate_size = 18432;
  c->moe_intermediate_size = 2048;
  c->num_hidden_layers = 61;
  c->num_attention_heads = 128;
  c->num_key_value_heads = 128;
  c->num_shared_experts = 1;
  c->num_experts = 256;
  c->routed_scaling_factor = 2.5;
  c->kv_lora_rank = 512;
  c->q_lora_rank = 1536;
  c->qk_rope_head_dim = 64;
  c->v_head_dim = 128;
  c->qk_nope_head_dim = 128;
  c->n_group = 8;
  c->topk_group = 4;
  c->num_experts_per_tok = 8;
  c->first_k_dense_replace = 3;
  c->norm_topk_prob = true;
  c->max_position_embeddings = 4096;
  c->rms_norm_eps = 1e-6;
  c->rope_theta = 10000.0;
  c->rope_interleave = true;
  c->bos_token_id = 0;
  c->eos_token_ids = {1};
}

Status parse_fields(const ConfigFields& f, MoeModelConfig* c) {
  SUBMOE_RETURN_IF_ERROR(parse_deepseek_fields(f, c));
  SUBMOE_RETURN_IF_ERROR(f.get_bool("norm_topk_prob", &c->norm_topk_prob));
  SUBMOE_RETURN_IF_ERROR(f.get_bool("rope_interleave", &c->rope_interleave));
  SUBMOE_RETURN_IF_ERROR(f.get_int("n_group", &c->n_group));
  SUBMOE_RETURN_IF_ERROR(f.get_int("topk_group", &c->topk_group));
  // scoring_func and topk_method are written by DeepSeek's exports and ignored
  // by transformers (sigmoid / noaux_tc are hard-coded); so here.
  c->router_selection = RouterSelection::kSigmoidGroupTop2;
  return check_router_groups(f, *c, /*min_group=*/2);
}

bool layer_slides(const MoeModelConfig&, int) { return false; }

void synth_defaults(MoeModelConfig* c) {
  deepseek_synth_shape(c, 2.5);
  c->router_selection = RouterSelection::kSigmoidGroupTop2;
  c->rope_interleave = true;
  c->rms_norm_eps = 1e-6;
  c->rope_theta = 1e4;
  c->norm_topk_prob = true;
}

void write_config_fields(const MoeModelConfig& c, nlohmann::json* j) {
  write_deepseek_fields(c, j);
  (*j)["rope_interleave"] = c.rope_interleave;
}

}  // namespace

const ArchitectureDescriptor kDeepseekV3{
    .id = Architecture::kDeepseekV3,
    .model_type = "deepseek_v3",
    .causal_lm_class = "DeepseekV3ForCausalLM",
    .model_type_alias = "kimi_k2",
    .sparse_block = "mlp",
    .expert_projection = {"gate_proj", "up_proj", "down_proj"},
    .sparse_block_alias = {},
    .has_shared_expert = true,
    .shared_expert_module = "shared_experts",
    .shared_expert_gate = {},
    .explicit_head_dim = false,
    .dense_mlp_layers = true,
    .mlp_only_layers_key = false,
    .set_defaults = &set_defaults,
    .parse_fields = &parse_fields,
    .layer_slides = &layer_slides,
    .check_forward = &check_deepseek_forward,
    .synth_defaults = &synth_defaults,
    .write_config_fields = &write_config_fields,
};

}  // namespace submoe::io::arch
