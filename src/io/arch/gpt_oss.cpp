// GPT-OSS (GptOssForCausalLM, transformers GptOssConfig, doc §7): attention
// with biases on q, k, v and o, a learned sink logit per head, sliding-window
// (default 128) and full layers alternating (even layers slide), YaRN RoPE on
// halves (truncate false on the hub); every layer sparse: the router is a
// Linear with a bias ("mlp.router"), the top-k of its logits are softmaxed
// among themselves; experts have biases and the clamped SwiGLU
// (gate <= limit, |up| <= limit, (up + 1) * gate * sigmoid(alpha * gate)).
// The hub stores experts fused and transposed, or as MXFP4 blocks; opening
// the checkpoint rewrites them as per-expert gate_proj / up_proj / down_proj
// tensors (io/fused_experts.cpp). Defaults are GptOssConfig's (transformers
// 4.57, gpt-oss-120b's shape).
#include "descriptors.h"

namespace submoe::io::arch {
namespace {

void set_gpt_oss_rules(MoeModelConfig* c) {
  // transformers sets attention_bias = True whatever config.json says.
  c->attention_bias = true;
  c->qkv_bias = true;
  c->o_proj_bias = true;
  c->attention_sinks = true;
  c->router_selection = RouterSelection::kTopKSoftmax;
  c->router_linear_bias = true;
  c->norm_topk_prob = true;  // a softmax over the k chosen logits sums to 1
  c->expert_activation = ExpertActivation::kClampedSwiGlu;
  c->expert_bias = true;
}

// The hub's YaRN: factor 32 over an original 4096 positions, truncate false.
void set_gpt_oss_rope(MoeModelConfig* c) {
  c->rope_scaling = RopeScaling{};
  c->rope_scaling.type = RopeType::kYarn;
  c->rope_scaling.factor = 32.0;
  c->rope_scaling.factor_given = true;
  c->rope_scaling.beta_fast = 32.0;
  c->rope_scaling.beta_slow = 1.0;
  c->rope_scaling.truncate = false;
  c->rope_scaling.original_max_position_embeddings = 4096;
}

void set_defaults(MoeModelConfig* c) {
  c->vocab_size = 201088;
  c->hidden_size = 2880;
  c->intermediate_size = 2880;
  c->num_hidden_layers = 36;
  c->num_attention_heads = 64;
  c->num_key_value_heads = 8;
  c->head_dim = 64;
  c->num_experts = 128;
  c->num_experts_per_tok = 4;
  c->sliding_window = 128;
  c->max_position_embeddings = 131072;
  c->rms_norm_eps = 1e-5;
  c->rope_theta = 150000.0;
  set_gpt_oss_rope(c);
  set_gpt_oss_rules(c);
}

Status parse_fields(const ConfigFields& f, MoeModelConfig* c) {
  c->moe_intermediate_size = c->intermediate_size;
  // GptOssConfig's default head_dim is 64 (null: hidden / heads, as parsed).
  if (!f.has("head_dim")) c->head_dim = 64;
  SUBMOE_RETURN_IF_ERROR(f.get_opt_int("sliding_window", &c->sliding_window));
  // Newer transformers read these from the config; 4.57 hard-codes 7.0 and 1.702.
  SUBMOE_RETURN_IF_ERROR(f.get_double("swiglu_limit", &c->swiglu_limit));
  SUBMOE_RETURN_IF_ERROR(f.get_double("swiglu_alpha", &c->swiglu_alpha));
  if (c->swiglu_limit <= 0) return f.error("swiglu_limit", "must be positive");
  set_gpt_oss_rules(c);
  return Status::ok();
}

// GptOssConfig's default layer_types: "sliding_attention" where (i + 1) % 2.
bool layer_slides(const MoeModelConfig&, int layer) { return layer % 2 == 0; }

Status check_forward(const MoeModelConfig& c) {
  if (c.qk_norm != QkNorm::kNone || c.has_shared_expert() || c.attention != AttentionKind::kGqa)
    return invalid_argument("config: gpt_oss has no QK-norm, shared expert or latent attention");
  if (c.router_selection != RouterSelection::kTopKSoftmax || !c.router_linear_bias || !c.expert_bias ||
      !c.attention_sinks)
    return invalid_argument("config: gpt_oss routes by softmax over the top-k of a biased router, with expert "
                            "biases and attention sinks");
  return Status::ok();
}

void synth_defaults(MoeModelConfig* c) {
  c->rms_norm_eps = 1e-5;
  c->rope_theta = 150000.0;
  c->sliding_window = 128;
  c->max_position_embeddings = 131072;  // YaRN's 32 x 4096, as the hub config
  set_gpt_oss_rope(c);
  set_gpt_oss_rules(c);
}

void write_config_fields(const MoeModelConfig& c, nlohmann::json* j) {
  (*j)["intermediate_size"] = c.moe_intermediate_size;
  (*j)["num_local_experts"] = c.num_experts;
  (*j)["head_dim"] = c.head_dim;
  (*j)["attention_bias"] = true;
  (*j)["sliding_window"] = c.sliding_window ? nlohmann::json(*c.sliding_window) : nlohmann::json(nullptr);
  nlohmann::json types = nlohmann::json::array();
  for (int64_t i = 0; i < c.num_hidden_layers; ++i)
    types.push_back(c.sliding_window_for_layer(static_cast<int>(i)) ? "sliding_attention" : "full_attention");
  (*j)["layer_types"] = types;
  (*j)["swiglu_limit"] = c.swiglu_limit;
  if (c.rope_scaling.type == RopeType::kYarn)
    (*j)["rope_scaling"] = {{"rope_type", "yarn"},
                            {"factor", c.rope_scaling.factor},
                            {"beta_fast", c.rope_scaling.beta_fast},
                            {"beta_slow", c.rope_scaling.beta_slow},
                            {"truncate", c.rope_scaling.truncate},
                            {"original_max_position_embeddings",
                             c.rope_scaling.original_max_position_embeddings.value_or(c.max_position_embeddings)}};
  (*j)["router_aux_loss_coef"] = 0.9;
}

}  // namespace

const ArchitectureDescriptor kGptOss{
    .id = Architecture::kGptOss,
    .model_type = "gpt_oss",
    .causal_lm_class = "GptOssForCausalLM",
    .model_type_alias = {},
    .sparse_block = "mlp",
    .expert_projection = {"gate_proj", "up_proj", "down_proj"},
    .sparse_block_alias = {},
    .has_shared_expert = false,
    .shared_expert_module = {},
    .shared_expert_gate = {},
    .explicit_head_dim = true,
    .dense_mlp_layers = false,
    .mlp_only_layers_key = false,
    .router_module = "router",
    .fused_transposed_experts = true,
    .set_defaults = &set_defaults,
    .parse_fields = &parse_fields,
    .layer_slides = &layer_slides,
    .check_forward = &check_forward,
    .synth_defaults = &synth_defaults,
    .write_config_fields = &write_config_fields,
};

}  // namespace submoe::io::arch
