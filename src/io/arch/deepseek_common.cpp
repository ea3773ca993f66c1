// What DeepSeek-V2 and -V3 share (transformers DeepseekV2Config / V3Config):
// multi-head latent attention, routed experts named n_routed_experts, always-on
// shared experts (one SwiGLU of n_shared_experts x moe_intermediate_size, no
// gate), dense MLP layers below first_k_dense_replace, routed_scaling_factor.
#include <cmath>

#include "descriptors.h"

namespace submoe::io::arch {
namespace {

// "(v)" (built by appending: GCC 12 misreads '"(" + std::string' as overlapping copies).
std::string in_parens(int64_t v) {
  std::string s = "(";
  s.append(std::to_string(v)).append(")");
  return s;
}

Status require_positive(const ConfigFields& f, const char* key, int64_t v) {
  if (v <= 0) return f.error(key, "must be positive, got " + std::to_string(v));
  return Status::ok();
}

}  // namespace

Status parse_deepseek_fields(const ConfigFields& f, MoeModelConfig* c) {
  // n_routed_experts is the real key; num_local_experts / num_experts are its
  // attribute-map aliases (already read into num_experts).
  std::optional<int64_t> routed;
  SUBMOE_RETURN_IF_ERROR(f.get_opt_int("n_routed_experts", &routed));
  if (routed) {
    if ((f.present("num_local_experts") || f.present("num_experts")) && *routed != c->num_experts)
      return f.error("n_routed_experts", in_parens(*routed) + " disagrees with its alias " + in_parens(c->num_experts));
    c->num_experts = *routed;
  } else if (f.has("n_routed_experts")) {
    c->num_experts = 0;  // null: a dense model
  }
  SUBMOE_RETURN_IF_ERROR(f.get_int("moe_intermediate_size", &c->moe_intermediate_size));
  std::optional<int64_t> shared = c->num_shared_experts;
  SUBMOE_RETURN_IF_ERROR(f.get_opt_int("n_shared_experts", &shared));
  c->num_shared_experts = shared.value_or(0);
  if (c->num_shared_experts < 0 || c->num_shared_experts > 1024)
    return f.error("n_shared_experts", "must be in [0, 1024], got " + std::to_string(c->num_shared_experts));
  SUBMOE_RETURN_IF_ERROR(f.get_int("first_k_dense_replace", &c->first_k_dense_replace));
  if (c->first_k_dense_replace < 0) return f.error("first_k_dense_replace", "must not be negative");
  // DeepSeek's own modeling code also skips layers by moe_layer_freq;
  // transformers ignores the key. Every released config writes 1.
  if (f.present("moe_layer_freq")) {
    int64_t freq = 1;
    SUBMOE_RETURN_IF_ERROR(f.get_int("moe_layer_freq", &freq));
    if (freq != 1)
      return Status(ErrorCode::kUnsupported,
                    f.error("moe_layer_freq", "is " + std::to_string(freq) +
                                                  "; only 1 is supported (transformers ignores the key)")
                        .message());
  }
  SUBMOE_RETURN_IF_ERROR(f.get_double("routed_scaling_factor", &c->routed_scaling_factor));
  if (!(c->routed_scaling_factor > 0)) return f.error("routed_scaling_factor", "must be positive");
  SUBMOE_RETURN_IF_ERROR(f.get_bool("attention_bias", &c->attention_bias));

  // DeepseekV2/V3Attention (transformers yarn_apply_mscale): the softmax scale
  // is multiplied by mscale^2, mscale = yarn_get_mscale(rope factor,
  // mscale_all_dim), for any non-default rope type naming a non-zero
  // mscale_all_dim (the factor as written).
  const RopeScaling& r = c->rope_scaling;
  if (r.type != RopeType::kDefault && r.mscale_all_dim && *r.mscale_all_dim != 0.0) {
    const double m = yarn_get_mscale(r.factor, *r.mscale_all_dim);
    c->attention_scale_multiplier = m * m;
  }

  // Multi-head latent attention.
  c->attention = AttentionKind::kMla;
  SUBMOE_RETURN_IF_ERROR(f.get_opt_int("q_lora_rank", &c->q_lora_rank));
  SUBMOE_RETURN_IF_ERROR(f.get_int("kv_lora_rank", &c->kv_lora_rank));
  SUBMOE_RETURN_IF_ERROR(f.get_int("qk_nope_head_dim", &c->qk_nope_head_dim));
  SUBMOE_RETURN_IF_ERROR(f.get_int("qk_rope_head_dim", &c->qk_rope_head_dim));
  SUBMOE_RETURN_IF_ERROR(f.get_int("v_head_dim", &c->v_head_dim));
  if (c->q_lora_rank) SUBMOE_RETURN_IF_ERROR(require_positive(f, "q_lora_rank", *c->q_lora_rank));
  SUBMOE_RETURN_IF_ERROR(require_positive(f, "kv_lora_rank", c->kv_lora_rank));
  SUBMOE_RETURN_IF_ERROR(require_positive(f, "qk_nope_head_dim", c->qk_nope_head_dim));
  SUBMOE_RETURN_IF_ERROR(require_positive(f, "qk_rope_head_dim", c->qk_rope_head_dim));
  SUBMOE_RETURN_IF_ERROR(require_positive(f, "v_head_dim", c->v_head_dim));
  constexpr int64_t kMaxRank = int64_t{1} << 20;
  for (auto [key, v] : {std::pair{"q_lora_rank", c->q_lora_rank.value_or(0)}, std::pair{"kv_lora_rank", c->kv_lora_rank},
                        std::pair{"qk_nope_head_dim", c->qk_nope_head_dim},
                        std::pair{"qk_rope_head_dim", c->qk_rope_head_dim}, std::pair{"v_head_dim", c->v_head_dim}})
    if (v > kMaxRank) return f.error(key, "is " + std::to_string(v) + ", beyond any model");
  if (c->qk_rope_head_dim % 2 != 0)
    return f.error("qk_rope_head_dim", "must be even for RoPE, got " + std::to_string(c->qk_rope_head_dim));
  // transformers sets head_dim = qk_rope_head_dim; a config saying otherwise
  // contradicts its own ranks.
  if (f.present("head_dim")) {
    int64_t head_dim = 0;
    SUBMOE_RETURN_IF_ERROR(f.get_int("head_dim", &head_dim));
    if (head_dim != c->qk_rope_head_dim)
      return f.error("head_dim", in_parens(head_dim) + " must equal qk_rope_head_dim " + in_parens(c->qk_rope_head_dim) +
                                     " for multi-head latent attention");
  }
  c->head_dim = c->qk_rope_head_dim;
  // MLA gives every query head its own key and value (kv_b_proj has
  // num_attention_heads x (nope + v) rows); transformers' grouped-query repeat
  // would break with fewer KV heads.
  if (c->num_key_value_heads != c->num_attention_heads)
    return f.error("num_key_value_heads", in_parens(c->num_key_value_heads) + " must equal num_attention_heads " +
                                              in_parens(c->num_attention_heads) + " for multi-head latent attention");
  if (c->moe_intermediate_size > (int64_t{1} << 22))
    return f.error("moe_intermediate_size", "is beyond any model (at most 4194304)");
  c->shared_expert_intermediate_size = c->num_shared_experts * c->moe_intermediate_size;
  return Status::ok();
}

Status check_router_groups(const ConfigFields& f, const MoeModelConfig& c, int64_t min_group) {
  if (c.num_experts <= 0) return Status::ok();
  if (c.n_group <= 0) return f.error("n_group", "must be positive, got " + std::to_string(c.n_group));
  if (c.topk_group <= 0) return f.error("topk_group", "must be positive, got " + std::to_string(c.topk_group));
  if (c.topk_group > c.n_group)
    return f.error("topk_group", in_parens(c.topk_group) + " exceeds n_group " + in_parens(c.n_group));
  if (c.num_experts % c.n_group != 0)
    return f.error("n_group", in_parens(c.n_group) + " does not divide n_routed_experts " + in_parens(c.num_experts));
  const int64_t per_group = c.num_experts / c.n_group;
  if (per_group < min_group)
    return f.error("n_group", "leaves " + std::to_string(per_group) + " expert(s) per group; the router needs at least " +
                                  std::to_string(min_group));
  if (c.num_experts_per_tok > c.topk_group * per_group)
    return f.error("num_experts_per_tok", in_parens(c.num_experts_per_tok) + " exceeds the " +
                                              std::to_string(c.topk_group * per_group) +
                                              " experts of the topk_group groups a token may use");
  return Status::ok();
}

Status check_deepseek_forward(const MoeModelConfig& c) {
  if (c.attention != AttentionKind::kMla || c.kv_lora_rank <= 0)
    return invalid_argument("config: " + c.model_type + " uses multi-head latent attention (kv_lora_rank > 0)");
  if (c.qk_norm != QkNorm::kNone || c.clip_qkv || c.sliding_window)
    return invalid_argument("config: " + c.model_type + " has no QK-norm, qkv clipping or sliding window");
  return Status::ok();
}

void deepseek_synth_shape(MoeModelConfig* c, double routed_scaling_factor) {
  c->attention = AttentionKind::kMla;
  const int64_t d = c->hidden_size / c->num_attention_heads;
  c->qk_nope_head_dim = d;
  c->v_head_dim = d;
  c->qk_rope_head_dim = d / 2;
  c->head_dim = c->qk_rope_head_dim;
  c->kv_lora_rank = 4 * d;
  c->q_lora_rank = 12 * d;
  c->num_key_value_heads = c->num_attention_heads;
  c->first_k_dense_replace = c->num_hidden_layers > 1 ? 1 : 0;
  c->num_shared_experts = std::max<int64_t>(1, c->shared_expert_intermediate_size / c->moe_intermediate_size);
  c->shared_expert_intermediate_size = c->num_shared_experts * c->moe_intermediate_size;
  c->routed_scaling_factor = routed_scaling_factor;
  c->n_group = 1;
  for (int64_t g : {8, 4, 2})
    if (c->num_experts % g == 0 && c->num_experts / g >= 2) {
      c->n_group = g;
      break;
    }
  c->topk_group = std::max<int64_t>(1, c->n_group / 2);
  while (c->topk_group < c->n_group && c->num_experts_per_tok > c->topk_group * (c->num_experts / c->n_group))
    ++c->topk_group;
}

void write_deepseek_fields(const MoeModelConfig& c, nlohmann::json* j) {
  (*j)["intermediate_size"] = c.intermediate_size;
  (*j)["moe_intermediate_size"] = c.moe_intermediate_size;
  (*j)["n_routed_experts"] = c.num_experts;
  (*j)["n_shared_experts"] = c.num_shared_experts;
  (*j)["first_k_dense_replace"] = c.first_k_dense_replace;
  (*j)["routed_scaling_factor"] = c.routed_scaling_factor;
  (*j)["norm_topk_prob"] = c.norm_topk_prob;
  (*j)["n_group"] = c.n_group;
  (*j)["topk_group"] = c.topk_group;
  (*j)["q_lora_rank"] = c.q_lora_rank ? nlohmann::json(*c.q_lora_rank) : nlohmann::json(nullptr);
  (*j)["kv_lora_rank"] = c.kv_lora_rank;
  (*j)["qk_nope_head_dim"] = c.qk_nope_head_dim;
  (*j)["qk_rope_head_dim"] = c.qk_rope_head_dim;
  (*j)["v_head_dim"] = c.v_head_dim;
  (*j)["attention_bias"] = c.attention_bias;
}

}  // namespace submoe::io::arch
