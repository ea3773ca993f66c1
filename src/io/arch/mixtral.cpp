// Mixtral (MixtralForCausalLM, transformers MixtralConfig): Llama attention
// without biases or QK-norm, an optional sliding window on every layer, every
// layer sparse with experts w1 (gate), w3 (up), w2 (down) in "block_sparse_moe";
// the router always renormalises its top-k (there is no norm_topk_prob key).
#include "descriptors.h"

namespace submoe::io::arch {
namespace {

void set_defaults(MoeModelConfig* c) {
  c->vocab_size = 32000;
  c->hidden_size = 4096;
  c->intermediate_size = 14336;
  c->num_hidden_layers = 32;
  c->num_attention_heads = 32;
  c->num_key_value_heads = 8;
  c->max_position_embeddings = 4096 * 32;
  c->rms_norm_eps = 1e-5;
  c->rope_theta = 1e6;
  c->num_experts = 8;
  c->num_experts_per_tok = 2;
  c->bos_token_id = 1;
  c->eos_token_ids = {2};
}

Status parse_fields(const ConfigFields& f, MoeModelConfig* c) {
  c->moe_intermediate_size = c->intermediate_size;
  c->norm_topk_prob = true;
  return f.get_opt_int("sliding_window", &c->sliding_window);
}

bool layer_slides(const MoeModelConfig&, int) { return true; }

Status check_forward(const MoeModelConfig& c) {
  if (!c.norm_topk_prob) return invalid_argument("config: mixtral always renormalises top-k weights");
  if (c.qk_norm != QkNorm::kNone || c.qkv_bias || c.o_proj_bias || c.has_shared_expert())
    return invalid_argument("config: mixtral has no QK-norm, attention bias or shared expert");
  return Status::ok();
}

void synth_defaults(MoeModelConfig* c) {
  c->rms_norm_eps = 1e-5;
  c->rope_theta = 1e6;
  c->norm_topk_prob = true;
}

void write_config_fields(const MoeModelConfig& c, nlohmann::json* j) {
  (*j)["intermediate_size"] = c.moe_intermediate_size;
  (*j)["num_local_experts"] = c.num_experts;
  (*j)["head_dim"] = c.head_dim;
  (*j)["sliding_window"] = nullptr;
  (*j)["router_jitter_noise"] = 0.0;
}

}  // namespace

const ArchitectureDescriptor kMixtral{
    .id = Architecture::kMixtral,
    .model_type = "mixtral",
    .causal_lm_class = "MixtralForCausalLM",
    .model_type_alias = {},
    .sparse_block = "block_sparse_moe",
    .expert_projection = {"w1", "w3", "w2"},
    .sparse_block_alias = "mlp",
    .has_shared_expert = false,
    .shared_expert_module = {},
    .shared_expert_gate = {},
    .explicit_head_dim = true,
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
