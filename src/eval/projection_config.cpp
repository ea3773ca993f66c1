// Projection configs: the submoe schema, or any config.json the architecture
// registry reads (io::parse_hf_config; DeepSeek's MLA attention included).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "submoe/eval/projection.h"
#include "submoe/io/file_util.h"
#include "submoe/io/hf_config.h"

namespace submoe::eval {
namespace {

using nlohmann::json;

constexpr std::string_view kSchemaFormat = "submoe-projection-config";

// Reads an integer field; absent -> fallback (or an error when required), wrong
// type or out of range -> an error naming the key.
class Fields {
 public:
  Fields(const json& j, std::string_view source) : j_(j), source_(source) {}

  Result<int64_t> integer(const char* key, bool required, int64_t fallback, int64_t min_value) const {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) {
      if (required) return invalid_argument(where() + "missing required integer '" + key + "'");
      return fallback;
    }
    if (!it->is_number_integer()) return invalid_argument(where() + "'" + key + "' must be an integer");
    const int64_t v = it->get<int64_t>();
    if (v < min_value || v > (int64_t{1} << 40)) {
      return invalid_argument(where() + "'" + key + "' = " + std::to_string(v) + " is out of range (min " +
                              std::to_string(min_value) + ")");
    }
    return v;
  }

  Result<bool> boolean(const char* key, bool fallback) const {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) return invalid_argument(where() + "'" + key + "' must be true or false");
    return it->get<bool>();
  }

  std::string where() const { return std::string(source_) + ": "; }

 private:
  const json& j_;
  std::string_view source_;
};

Result<MoeShape> parse_schema(const json& j, std::string_view source) {
  Fields f(j, source);
  MoeShape s;
  if (auto it = j.find("name"); it != j.end() && it->is_string()) s.name = it->get<std::string>();
  const auto version = f.integer("version", true, 0, 1);
  if (!version.is_ok()) return version.status();
  if (*version != 1) return unsupported(f.where() + "projection config version " + std::to_string(*version));
  SUBMOE_ASSIGN_OR_RETURN(s.num_layers, f.integer("num_layers", true, 0, 1));
  SUBMOE_ASSIGN_OR_RETURN(s.d_model, f.integer("d_model", true, 0, 1));
  SUBMOE_ASSIGN_OR_RETURN(s.num_experts, f.integer("num_experts", true, 0, 1));
  SUBMOE_ASSIGN_OR_RETURN(s.top_k, f.integer("top_k", true, 0, 1));
  SUBMOE_ASSIGN_OR_RETURN(s.expert_intermediate, f.integer("expert_intermediate", true, 0, 1));
  SUBMOE_ASSIGN_OR_RETURN(s.expert_matrices, f.integer("expert_matrices", false, 3, 1));
  SUBMOE_ASSIGN_OR_RETURN(s.num_shared_experts, f.integer("num_shared_experts", false, 0, 0));
  SUBMOE_ASSIGN_OR_RETURN(s.shared_expert_intermediate,
                          f.integer("shared_expert_intermediate", false, s.expert_intermediate, 1));
  SUBMOE_ASSIGN_OR_RETURN(const int64_t dense_layers, f.integer("dense_layers", false, 0, 0));
  SUBMOE_ASSIGN_OR_RETURN(s.dense_mlp_intermediate,
                          f.integer("dense_intermediate", dense_layers > 0, 0, dense_layers > 0 ? 1 : 0));
  // Attention: per-layer parameters given directly (any attention kind, e.g.
  // MLA), else grouped-query widths.
  SUBMOE_ASSIGN_OR_RETURN(const int64_t attention, f.integer("attention_params_per_layer", false, 0, 0));
  SUBMOE_ASSIGN_OR_RETURN(const int64_t q_width, f.integer("q_width", false, s.d_model, 1));
  SUBMOE_ASSIGN_OR_RETURN(const int64_t kv_width, f.integer("kv_width", attention == 0, 1, 1));
  SUBMOE_ASSIGN_OR_RETURN(s.vocab_size, f.integer("vocab_size", true, 0, 1));
  SUBMOE_ASSIGN_OR_RETURN(s.tied_embeddings, f.boolean("tied_embeddings", false));
  if (dense_layers >= s.num_layers) {
    return invalid_argument(f.where() + "dense_layers must be below num_layers (no MoE layer left)");
  }
  s.moe_layers = s.num_layers - dense_layers;
  s.attention_params_per_layer = attention > 0 ? attention : gqa_attention_params(s.d_model, q_width, kv_width);
  return s;
}

// Attention parameters of one layer. MLA (DeepSeek-V2/V3): q low-rank (down,
// norm, up) or one projection; kv: a joint down projection to the latent plus
// the shared RoPE key, its norm, the up projection to per-head k_nope and v; o.
int64_t attention_params(const io::MoeModelConfig& c) {
  if (c.attention != io::AttentionKind::kMla)
    return gqa_attention_params(c.hidden_size, c.num_attention_heads * c.head_dim, c.num_key_value_heads * c.head_dim);
  const int64_t d = c.hidden_size, heads = c.num_attention_heads, rope = c.qk_rope_head_dim;
  const int64_t qk = c.qk_nope_head_dim + rope, kv_lora = c.kv_lora_rank;
  const int64_t q = c.q_lora_rank ? d * *c.q_lora_rank + *c.q_lora_rank + *c.q_lora_rank * heads * qk : d * heads * qk;
  const int64_t kv = d * (kv_lora + rope) + kv_lora + kv_lora * heads * (c.qk_nope_head_dim + c.v_head_dim);
  const int64_t o = heads * c.v_head_dim * d;
  return q + kv + o;
}

Result<MoeShape> parse_hf(std::string_view text, std::string_view source) {
  SUBMOE_ASSIGN_OR_RETURN(io::MoeModelConfig c, io::parse_hf_config(text, source));
  MoeShape s;
  s.name = c.model_type;
  s.num_layers = c.num_hidden_layers;
  s.d_model = c.hidden_size;
  s.num_experts = c.num_experts;
  s.top_k = c.num_experts_per_tok;
  s.expert_intermediate = c.moe_intermediate_size;
  s.dense_mlp_intermediate = c.intermediate_size;
  if (c.has_shared_expert()) {
    // DeepSeek's n shared experts are one SwiGLU n times as wide: same parameters.
    s.num_shared_experts = std::max<int64_t>(1, c.num_shared_experts);
    s.shared_expert_intermediate = c.shared_expert_intermediate_size / s.num_shared_experts;
  }
  s.moe_layers = 0;
  for (int i = 0; i < c.num_hidden_layers; ++i) s.moe_layers += c.is_moe_layer(i) ? 1 : 0;
  if (s.moe_layers == 0 || s.num_experts <= 0 || s.top_k <= 0) {
    return invalid_argument(std::string(source) + ": the config has no routed-expert layer");
  }
  s.attention_params_per_layer = attention_params(c);
  s.vocab_size = c.vocab_size;
  s.tied_embeddings = c.tie_word_embeddings;
  return s;
}

}  // namespace

int64_t gqa_attention_params(int64_t d_model, int64_t q_width, int64_t kv_width) {
  return 2 * d_model * q_width + 2 * d_model * kv_width;
}

Result<MoeShape> parse_projection_config(std::string_view json_text, std::string_view source) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    return invalid_argument(std::string(source) + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) return invalid_argument(std::string(source) + ": expected a JSON object");
  Result<MoeShape> shape = invalid_argument("unreachable");
  if (auto it = j.find("format"); it != j.end()) {
    if (!it->is_string() || it->get<std::string>() != kSchemaFormat) {
      return invalid_argument(std::string(source) + ": unknown \"format\" (expected \"" + std::string(kSchemaFormat) +
                              "\")");
    }
    shape = parse_schema(j, source);
  } else if (j.contains("model_type") || j.contains("architectures")) {
    shape = parse_hf(json_text, source);
  } else {
    return invalid_argument(std::string(source) +
                            ": neither a submoe projection config (\"format\") nor a config.json (\"model_type\")");
  }
  if (!shape.is_ok()) return shape.status();
  if (shape->top_k > shape->num_experts) {
    return invalid_argument(std::string(source) + ": top_k exceeds the number of routed experts");
  }
  SUBMOE_RETURN_IF_ERROR(count_params(*shape).status());
  return shape;
}

Result<MoeShape> load_projection_config(const std::string& path) {
  SUBMOE_ASSIGN_OR_RETURN(std::string text, io::read_file_to_string(path));
  return parse_projection_config(text, path);
}

}  // namespace submoe::eval
