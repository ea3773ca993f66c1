// DeepSeek-V2 (DeepseekV2ForCausalLM, transformers DeepseekV2Config): the same
// multi-head latent attention as V3 (RoPE on interleaved pairs), a softmax
// router with topk_method "greedy" (plain top-k) or "group_limited_greedy"
// (groups ranked by their best score), weights times routed_scaling_factor and
// never renormalised (transformers ignores norm_topk_prob here), always-on
// shared experts, the first first_k_dense_replace layers dense. Defaults are
// DeepseekV2Config's (transformers 5.25).
#include "descriptors.h"

namespace submoe::io::arch {
namespace {

void set_defaults(MoeModelConfig* c) {
  c->vocab_size = 102400;
  c->hidden_size = 4096;
  c->intermediate_size = 11008;
  c->moe_intermediate_size = 1407;
  c->num_hidden_layers = 32;
  c->num_attention_heads = 32;
  c->num_key_value_heads = 32;
  c->num_shared_experts = 2;
  c->num_experts = 64;
  c->routed_scaling_factor = 1.0;
  c->kv_lora_rank = 512;
  c->q_lora_rank = 1536;
  c->qk_rope_head_dim = 64;
  c->v_head_dim = 128;
  c->qk_nope_head_dim = 128;
  c->num_experts_per_tok = 0;  // None in the config class: required
  c->first_k_dense_replace = 0;
  c->max_position_embeddings = 2048;
  c->rms_norm_eps = 1e-6;
  c->rope_theta = 10000.0;
  c->rope_interleave = true;
  c->bos_token_id = 1;
  c->eos_token_ids = {2};
}

Status parse_fields(const ConfigFields& f, MoeModelConfig* c) {
  SUBMOE_RETURN_IF_ERROR(parse_deepseek_fields(f, c));
  c->norm_topk_prob = false;
  std::string method = "greedy";
  SUBMOE_RETURN_IF_ERROR(f.get_string("topk_method", &method));
  if (method == "greedy") {
    c->router_selection = RouterSelection::kSoftmaxTopK;
    return Status::ok();
  }
  if (method != "group_limited_greedy")
    return Status(ErrorCode::kUnsupported,
                  f.error("topk_method", "is '" + method + "' (supported: greedy, group_limited_greedy)").message());
  c->router_selection = RouterSelection::kSoftmaxGroupMax;
  for (const char* key : {"n_group", "topk_group"})
    if (!f.present(key)) return f.error(key, "is required with topk_method 'group_limited_greedy'");
  SUBMOE_RETURN_IF_ERROR(f.get_int("n_group", &c->n_group));
  SUBMOE_RETURN_IF_ERROR(f.get_int("topk_group", &c->topk_group));
  return check_router_groups(f, *c, /*min_group=*/1);
}

bool layer_slides(const MoeModelConfig&, int) { return false; }

void synth_defaults(MoeModelConfig* c) {
  deepseek_synth_shape(c, 1.0);
  c->router_selection = c->n_group > 1 ? RouterSelection::kSoftmaxGroupMax : RouterSelection::kSoftmaxTopK;
  c->rms_norm_eps = 1e-6;
  c->rope_theta = 1e4;
  c->norm_topk_prob = false;
}

void write_config_fields(const MoeModelConfig& c, nlohmann::json* j) {
  write_deepseek_fields(c, j);
  (*j)["topk_method"] = c.router_selection == RouterSelection::kSoftmaxGroupMax ? "group_limited_greedy" : "greedy";
}

}  // namespace

const ArchitectureDescriptor kDeepseekV2{
    .id = Architecture::kDeepseekV2,
    .model_type = "deepseek_v2",
    .causal_lm_class = "DeepseekV2ForCausalLM",
    .model_type_alias = {},
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
