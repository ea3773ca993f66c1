// Projection configs: the submoe schema, DeepSeek-V2/V3 config.json (MLA
// attention, which io::parse_hf_config does not model) and the HF MoE configs
// io::parse_hf_config reads.
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
  SUBMOE_ASSIGN_OR_RETURN(const int64_t q_width, f.integer("q_width", false, s.d_model, 1));
  SUBMOE_ASSIGN_OR_RETURN(const int64_t kv_width, f.integer("kv_width", true, 0, 1));
  SUBMOE_ASSIGN_OR_RETURN(s.vocab_size, f.integer("vocab_size", true, 0, 1));
  SUBMOE_ASSIGN_OR_RETURN(s.tied_embeddings, f.boolean("tied_embeddings", false));
  if (dense_layers >= s.num_layers) {
    return invalid_argument(f.where() + "dense_layers must be below num_layers (no MoE layer left)");
  }
  s.moe_layers = s.num_layers - dense_layers;
  s.attention_params_per_layer = gqa_attention_params(s.d_model, q_width, kv_width);
  return s;
}

// DeepSeek-V2/V3: first_k_dense_replace dense layers, then MoE layers with
// n_shared_experts shared experts; multi-head latent attention.
Result<MoeShape> parse_deepseek(const json& j, std::string_view source) {
  Fields f(j, source);
  MoeShape s;
  s.name = j.value("model_type", std::string("deepseek"));
  SUBMOE_ASSIGN_OR_RETURN(s.num_layers, f.integer("num_hidden_layers", true, 0, 1));
  SUBMOE_ASSIGN_OR_RETURN(s.d_model, f.integer("hidden_size", true, 0, 1));
  SUBMOE_ASSIGN_OR_RETURN(s.num_experts, f.integer("n_routed_experts", true, 0, 1));
  SUBMOE_ASSIGN_OR_RETURN(s.top_k, f.integer("num_experts_per_tok", true, 0, 1));
  SUBMOE_ASSIGN_OR_RETURN(s.expert_intermediate, f.integer("moe_intermediate_size", true, 0, 1));
  SUBMOE_ASSIGN_OR_RETURN(s.num_shared_experts, f.integer("n_shared_experts", false, 0, 0));
  s.shared_expert_intermediate = s.expert_intermediate;
  SUBMOE_ASSIGN_OR_RETURN(const int64_t dense_layers, f.integer("first_k_dense_replace", false, 0, 0));
  SUBMOE_ASSIGN_OR_RETURN(s.dense_mlp_intermediate, f.integer("intermediate_size", dense_layers > 0, 0, 0));
  SUBMOE_ASSIGN_OR_RETURN(const int64_t moe_freq, f.integer("moe_layer_freq", false, 1, 1));
  SUBMOE_ASSIGN_OR_RETURN(s.vocab_size, f.integer("vocab_size", true, 0, 1));
  SUBMOE_ASSIGN_OR_RETURN(s.tied_embeddings, f.boolean("tie_word_embeddings", false));
  if (dense_layers >= s.num_layers) return invalid_argument(f.where() + "first_k_dense_replace >= num_hidden_layers");
  // HF DeepseekV3: layer i is MoE iff i >= first_k_dense_replace and i % moe_layer_freq == 0.
  s.moe_layers = 0;
  for (int64_t i = dense_layers; i < s.num_layers; ++i) s.moe_layers += (i % moe_freq == 0) ? 1 : 0;
  if (s.moe_layers == 0) return invalid_argument(f.where() + "no MoE layer");

  SUBMOE_ASSIGN_OR_RETURN(const int64_t heads, f.integer("num_attention_heads", true, 0, 1));
  SUBMOE_ASSIGN_OR_RETURN(const int64_t q_lora, f.integer("q_lora_rank", false, 0, 0));
  SUBMOE_ASSIGN_OR_RETURN(const int64_t kv_lora, f.integer("kv_lora_rank", true, 0, 1));
  SUBMOE_ASSIGN_OR_RETURN(const int64_t nope, f.integer("qk_nope_head_dim", true, 0, 1));
  SUBMOE_ASSIGN_OR_RETURN(const int64_t rope, f.integer("qk_rope_head_dim", true, 0, 0));
  SUBMOE_ASSIGN_OR_RETURN(const int64_t v_dim, f.integer("v_head_dim", true, 0, 1));
  const int64_t d = s.d_model, qk = nope + rope;
  // q: low-rank (down, norm, up) or one projection; kv: joint down projection to
  // the latent plus the shared rope key, norm, up to per-head k_nope and v; o.
  const int64_t q = q_lora > 0 ? d * q_lora + q_lora + q_lora * heads * qk : d * heads * qk;
  const int64_t kv = d * (kv_lora + rope) + kv_lora + kv_lora * heads * (nope + v_dim);
  const int64_t o = heads * v_dim * d;
  s.attention_params_per_layer = q + kv + o;
  return s;
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
    s.num_shared_experts = 1;
    s.shared_expert_intermediate = c.shared_expert_intermediate_size;
  }
  s.moe_layers = 0;
  for (int i = 0; i < c.num_hidden_layers; ++i) s.moe_layers += c.is_moe_layer(i) ? 1 : 0;
  if (s.moe_layers == 0 || s.num_experts <= 0 || s.top_k <= 0) {
    return invalid_argument(std::string(source) + ": the config has no routed-expert layer");
  }
  s.attention_params_per_layer = gqa_attention_params(c.hidden_size, c.num_attention_heads * c.head_dim,
                                                      c.num_key_value_heads * c.head_dim);
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
  } else if (auto mt = j.find("model_type"); mt != j.end() && mt->is_string() &&
                                              (mt->get<std::string>() == "deepseek_v3" ||
                                               mt->get<std::string>() == "deepseek_v2")) {
    shape = parse_deepseek(j, source);
  } else if (mt != j.end()) {
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
