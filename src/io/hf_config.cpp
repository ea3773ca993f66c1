// config.json -> MoeModelConfig. Defaults are those of the transformers config
// classes (MixtralConfig, Qwen2MoeConfig, Qwen3MoeConfig, OlmoeConfig).
#include "submoe/io/hf_config.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>

#include "json_strict.h"
#include "submoe/io/file_util.h"

namespace submoe::io {
namespace {

using json = nlohmann::json;

struct ArchInfo {
  Architecture arch;
  std::string_view model_type;
  std::string_view class_name;  // the "architectures" entry, to infer a missing model_type
};

constexpr std::array<ArchInfo, 4> kArchs{{
    {Architecture::kMixtral, "mixtral", "MixtralForCausalLM"},
    {Architecture::kQwen2Moe, "qwen2_moe", "Qwen2MoeForCausalLM"},
    {Architecture::kQwen3Moe, "qwen3_moe", "Qwen3MoeForCausalLM"},
    {Architecture::kOlmoe, "olmoe", "OlmoeForCausalLM"},
}};
constexpr std::array<Architecture, 4> kArchList{Architecture::kMixtral, Architecture::kQwen2Moe,
                                                Architecture::kQwen3Moe, Architecture::kOlmoe};

struct RopeTypeInfo {
  RopeType type;
  std::string_view name;
};
constexpr std::array<RopeTypeInfo, 5> kRopeTypes{{
    {RopeType::kDefault, "default"},
    {RopeType::kLinear, "linear"},
    {RopeType::kDynamic, "dynamic"},
    {RopeType::kYarn, "yarn"},
    {RopeType::kLlama3, "llama3"},
}};

std::string supported_list() {
  std::string s;
  for (const ArchInfo& a : kArchs) {
    if (!s.empty()) s += ", ";
    s += a.model_type;
  }
  return s;
}

// Typed access to one JSON object; every error names the source and the key
// (with the enclosing object as a prefix, e.g. "rope_scaling.factor").
class Fields {
 public:
  Fields(const json& obj, std::string source, std::string prefix)
      : obj_(obj), source_(std::move(source)), prefix_(std::move(prefix)) {}

  bool has(const char* key) const { return obj_.contains(key); }
  bool present(const char* key) const { return obj_.contains(key) && !obj_.at(key).is_null(); }
  const json& at(const char* key) const { return obj_.at(key); }

  Status error(const char* key, const std::string& what) const {
    return invalid_argument(source_ + ": '" + prefix_ + key + "' " + what);
  }
  Status wrong_type(const char* key, const char* expected) const {
    return error(key, std::string("must be ") + expected + ", got a JSON " + json_type_name(obj_.at(key)));
  }

  // Absent keeps *out; null is an error (these fields have no None in HF).
  Status get_int(const char* key, int64_t* out) const {
    if (!has(key)) return Status::ok();
    const json& v = obj_.at(key);
    if (!v.is_number_integer()) return wrong_type(key, "an integer");
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      return error(key, "is out of range");
    *out = v.get<int64_t>();
    return Status::ok();
  }
  // Absent or null -> nullopt (when absent, *out keeps its default).
  Status get_opt_int(const char* key, std::optional<int64_t>* out) const {
    if (!has(key)) return Status::ok();
    if (obj_.at(key).is_null()) {
      *out = std::nullopt;
      return Status::ok();
    }
    int64_t v = 0;
    SUBMOE_RETURN_IF_ERROR(get_int(key, &v));
    *out = v;
    return Status::ok();
  }
  // JSON integers are accepted for numbers (hub files write 10000 for 1e4).
  Status get_double(const char* key, double* out) const {
    if (!has(key)) return Status::ok();
    const json& v = obj_.at(key);
    if (!v.is_number()) return wrong_type(key, "a number");
    *out = v.get<double>();
    if (!std::isfinite(*out)) return error(key, "is not finite");
    return Status::ok();
  }
  Status get_opt_double(const char* key, std::optional<double>* out) const {
    if (!has(key)) return Status::ok();
    if (obj_.at(key).is_null()) {
      *out = std::nullopt;
      return Status::ok();
    }
    double v = 0;
    SUBMOE_RETURN_IF_ERROR(get_double(key, &v));
    *out = v;
    return Status::ok();
  }
  Status get_bool(const char* key, bool* out) const {
    if (!has(key)) return Status::ok();
    const json& v = obj_.at(key);
    if (!v.is_boolean()) return wrong_type(key, "a boolean");
    *out = v.get<bool>();
    return Status::ok();
  }
  Status get_string(const char* key, std::string* out) const {
    if (!has(key)) return Status::ok();
    const json& v = obj_.at(key);
    if (!v.is_string()) return wrong_type(key, "a string");
    *out = v.get<std::string>();
    return Status::ok();
  }
  // Absent or null -> empty list.
  Status get_int_list(const char* key, std::vector<int64_t>* out) const {
    if (!present(key)) return Status::ok();
    const json& v = obj_.at(key);
    if (!v.is_array()) return wrong_type(key, "a list of integers");
    out->clear();
    for (const json& e : v) {
      if (!e.is_number_integer()) return error(key, std::string("must be a list of integers, holds a JSON ") + json_type_name(e));
      out->push_back(e.get<int64_t>());
    }
    return Status::ok();
  }
  Status get_string_list(const char* key, std::vector<std::string>* out) const {
    if (!present(key)) return Status::ok();
    const json& v = obj_.at(key);
    if (!v.is_array()) return wrong_type(key, "a list of strings");
    out->clear();
    for (const json& e : v) {
      if (!e.is_string()) return error(key, std::string("must be a list of strings, holds a JSON ") + json_type_name(e));
      out->push_back(e.get<std::string>());
    }
    return Status::ok();
  }

  const std::string& source() const { return source_; }

 private:
  const json& obj_;
  std::string source_;
  std::string prefix_;
};

Result<RopeType> parse_rope_type(const std::string& name, const Fields& f, const char* key) {
  for (const RopeTypeInfo& r : kRopeTypes)
    if (r.name == name) return r.type;
  std::string known;
  for (const RopeTypeInfo& r : kRopeTypes) known += (known.empty() ? "" : ", ") + std::string(r.name);
  return Status(ErrorCode::kUnsupported,
                f.error(key, "is '" + name + "', which is not supported (supported: " + known + ")").message());
}

// Reads a scaling dict (v4 rope_scaling or v5 rope_parameters). `name` is the
// dict's key for error messages.
Status parse_rope_scaling(const json& dict, const std::string& source, const std::string& name, RopeScaling* out) {
  const Fields f(dict, source, name + ".");
  std::string type_name;
  const char* type_key = f.present("rope_type") ? "rope_type" : "type";
  if (!f.present(type_key)) return invalid_argument(source + ": '" + name + "' has no 'rope_type' (or 'type')");
  SUBMOE_RETURN_IF_ERROR(f.get_string(type_key, &type_name));
  SUBMOE_ASSIGN_OR_RETURN(out->type, parse_rope_type(type_name, f, type_key));
  if (out->type == RopeType::kDefault) return Status::ok();

  if (f.present("factor")) {
    SUBMOE_RETURN_IF_ERROR(f.get_double("factor", &out->factor));
    out->factor_given = true;
    if (!(out->factor > 0)) return f.error("factor", "must be positive");
  } else if (out->type != RopeType::kYarn) {
    return f.error("factor", "is required for rope type '" + type_name + "'");
  }
  SUBMOE_RETURN_IF_ERROR(f.get_opt_int("original_max_position_embeddings", &out->original_max_position_embeddings));
  if (out->original_max_position_embeddings && *out->original_max_position_embeddings <= 0)
    return f.error("original_max_position_embeddings", "must be positive");

  if (out->type == RopeType::kYarn) {
    SUBMOE_RETURN_IF_ERROR(f.get_opt_double("attention_factor", &out->attention_factor));
    SUBMOE_RETURN_IF_ERROR(f.get_opt_double("mscale", &out->mscale));
    SUBMOE_RETURN_IF_ERROR(f.get_opt_double("mscale_all_dim", &out->mscale_all_dim));
    if (f.present("beta_fast")) SUBMOE_RETURN_IF_ERROR(f.get_double("beta_fast", &out->beta_fast));
    if (f.present("beta_slow")) SUBMOE_RETURN_IF_ERROR(f.get_double("beta_slow", &out->beta_slow));
    if (f.present("truncate")) SUBMOE_RETURN_IF_ERROR(f.get_bool("truncate", &out->truncate));
    if (!out->factor_given && !out->original_max_position_embeddings)
      return f.error("factor", "is required for yarn when original_max_position_embeddings is absent");
  }
  if (out->type == RopeType::kLlama3) {
    for (const char* key : {"low_freq_factor", "high_freq_factor"})
      if (!f.present(key)) return f.error(key, "is required for rope type 'llama3'");
    if (!out->original_max_position_embeddings)
      return f.error("original_max_position_embeddings", "is required for rope type 'llama3'");
    SUBMOE_RETURN_IF_ERROR(f.get_double("low_freq_factor", &out->low_freq_factor));
    SUBMOE_RETURN_IF_ERROR(f.get_double("high_freq_factor", &out->high_freq_factor));
    if (!(out->high_freq_factor > out->low_freq_factor))
      return f.error("high_freq_factor", "must exceed low_freq_factor");
  }
  return Status::ok();
}

// theta = rope_parameters.rope_theta ?? rope_theta ?? model default; the scaling
// dict is rope_parameters when it names a non-default type, else rope_scaling.
Status parse_rope(const Fields& top, const json& root, MoeModelConfig* c) {
  const std::string& source = top.source();
  SUBMOE_RETURN_IF_ERROR(top.get_double("rope_theta", &c->rope_theta));
  bool params_scaling = false;
  if (top.present("rope_parameters")) {
    const json& rp = root.at("rope_parameters");
    if (!rp.is_object()) return top.wrong_type("rope_parameters", "an object");
    const Fields f(rp, source, "rope_parameters.");
    if (!f.has("rope_type") && !f.has("type") && !f.has("rope_theta"))
      return Status(ErrorCode::kUnsupported,
                    source + ": 'rope_parameters' without rope_type/rope_theta (per-layer-type RoPE) is not supported");
    SUBMOE_RETURN_IF_ERROR(f.get_double("rope_theta", &c->rope_theta));
    std::string type = "default";
    if (f.present("rope_type")) {
      SUBMOE_RETURN_IF_ERROR(f.get_string("rope_type", &type));
    } else if (f.present("type")) {
      SUBMOE_RETURN_IF_ERROR(f.get_string("type", &type));
    }
    if (type != "default") {
      SUBMOE_RETURN_IF_ERROR(parse_rope_scaling(rp, source, "rope_parameters", &c->rope_scaling));
      params_scaling = true;
    }
  }
  if (!params_scaling && top.present("rope_scaling")) {
    const json& rs = root.at("rope_scaling");
    if (!rs.is_object()) return top.wrong_type("rope_scaling", "an object");
    SUBMOE_RETURN_IF_ERROR(parse_rope_scaling(rs, source, "rope_scaling", &c->rope_scaling));
  }
  if (!(c->rope_theta > 0)) return top.error("rope_theta", "must be positive");
  return Status::ok();
}

void set_defaults(Architecture arch, MoeModelConfig* c) {
  c->architecture = arch;
  c->hidden_act = "silu";
  c->tie_word_embeddings = false;
  c->decoder_sparse_step = 1;
  switch (arch) {
    case Architecture::kMixtral:
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
      break;
    case Architecture::kQwen2Moe:
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
      break;
    case Architecture::kQwen3Moe:
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
      break;
    case Architecture::kOlmoe:
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
      break;
  }
}

Result<Architecture> architecture_of(const Fields& top) {
  if (top.present("model_type")) {
    std::string mt;
    SUBMOE_RETURN_IF_ERROR(top.get_string("model_type", &mt));
    auto arch = parse_model_type(mt);
    if (!arch.is_ok()) return arch.status().with_context(top.source());
    return arch;
  }
  // Very old exports lack model_type; the class name decides then.
  std::vector<std::string> classes;
  SUBMOE_RETURN_IF_ERROR(top.get_string_list("architectures", &classes));
  for (const std::string& cls : classes)
    for (const ArchInfo& a : kArchs)
      if (a.class_name == cls) return a.arch;
  return Status(ErrorCode::kUnsupported,
                top.source() + ": no 'model_type' (and no known 'architectures' entry); supported: " + supported_list());
}

Status require_positive(const Fields& f, const char* key, int64_t v) {
  if (v <= 0) return f.error(key, "must be positive, got " + std::to_string(v));
  return Status::ok();
}

// Sizes no model has: every count the model code loops over or allocates by
// is bounded before anything is sized by it (a corrupt or hostile config.json
// must fail here, not in an allocation or a loop of 2^40 iterations). The
// largest real values are far below: 61-128 layers, 384 experts, 256 K vocab,
// 1 M positions.
Status require_at_most(const Fields& f, const char* key, int64_t v, int64_t most) {
  if (v > most) return f.error(key, "is " + std::to_string(v) + ", beyond any model (at most " + std::to_string(most) + ")");
  return Status::ok();
}

}  // namespace

std::string_view architecture_model_type(Architecture arch) {
  for (const ArchInfo& a : kArchs)
    if (a.arch == arch) return a.model_type;
  return "unknown";
}

Result<Architecture> parse_model_type(std::string_view model_type) {
  for (const ArchInfo& a : kArchs)
    if (a.model_type == model_type) return a.arch;
  return unsupported("model_type '" + std::string(model_type) + "' is not supported (supported: " + supported_list() +
                     ")");
}

std::span<const Architecture> supported_architectures() { return kArchList; }

std::string_view rope_type_name(RopeType type) {
  for (const RopeTypeInfo& r : kRopeTypes)
    if (r.type == type) return r.name;
  return "unknown";
}

bool MoeModelConfig::is_moe_layer(int layer) const {
  if (layer < 0 || layer >= num_hidden_layers) return false;
  switch (architecture) {
    case Architecture::kMixtral:
    case Architecture::kOlmoe:
      return true;
    case Architecture::kQwen2Moe:
    case Architecture::kQwen3Moe:
      if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) != mlp_only_layers.end()) return false;
      return num_experts > 0 && decoder_sparse_step > 0 && (layer + 1) % decoder_sparse_step == 0;
  }
  return false;
}

std::optional<int64_t> MoeModelConfig::sliding_window_for_layer(int layer) const {
  if (!sliding_window || *sliding_window <= 0 || layer < 0 || layer >= num_hidden_layers) return std::nullopt;
  if (!layer_types.empty()) {
    if (layer_types[static_cast<size_t>(layer)] == "sliding_attention") return sliding_window;
    return std::nullopt;
  }
  switch (architecture) {
    case Architecture::kMixtral:
      return sliding_window;
    case Architecture::kQwen2Moe:
    case Architecture::kQwen3Moe:
      if (use_sliding_window && layer >= max_window_layers) return sliding_window;
      return std::nullopt;
    case Architecture::kOlmoe:
      return std::nullopt;
  }
  return std::nullopt;
}

Result<MoeModelConfig> parse_hf_config(std::string_view json_text, std::string_view source_view) {
  const std::string source(source_view);
  SUBMOE_ASSIGN_OR_RETURN(const json root, parse_json_strict(json_text, source));
  if (!root.is_object()) return invalid_argument(source + ": not a JSON object");
  const Fields f(root, source, "");

  SUBMOE_ASSIGN_OR_RETURN(const Architecture arch, architecture_of(f));
  MoeModelConfig c;
  set_defaults(arch, &c);
  c.model_type = std::string(architecture_model_type(arch));
  SUBMOE_RETURN_IF_ERROR(f.get_string_list("architectures", &c.architectures));
  const bool is_qwen = arch == Architecture::kQwen2Moe || arch == Architecture::kQwen3Moe;

  SUBMOE_RETURN_IF_ERROR(f.get_int("vocab_size", &c.vocab_size));
  SUBMOE_RETURN_IF_ERROR(f.get_int("hidden_size", &c.hidden_size));
  SUBMOE_RETURN_IF_ERROR(f.get_int("intermediate_size", &c.intermediate_size));
  SUBMOE_RETURN_IF_ERROR(f.get_int("num_hidden_layers", &c.num_hidden_layers));
  SUBMOE_RETURN_IF_ERROR(f.get_int("num_attention_heads", &c.num_attention_heads));
  // null means "same as num_attention_heads" in every class that allows it.
  std::optional<int64_t> kv = c.num_key_value_heads > 0 ? std::optional<int64_t>(c.num_key_value_heads) : std::nullopt;
  SUBMOE_RETURN_IF_ERROR(f.get_opt_int("num_key_value_heads", &kv));
  c.num_key_value_heads = kv ? *kv : c.num_attention_heads;
  SUBMOE_RETURN_IF_ERROR(f.get_int("max_position_embeddings", &c.max_position_embeddings));
  SUBMOE_RETURN_IF_ERROR(f.get_double("rms_norm_eps", &c.rms_norm_eps));
  SUBMOE_RETURN_IF_ERROR(f.get_string("hidden_act", &c.hidden_act));
  SUBMOE_RETURN_IF_ERROR(f.get_bool("tie_word_embeddings", &c.tie_word_embeddings));
  SUBMOE_RETURN_IF_ERROR(parse_rope(f, root, &c));

  // head_dim: Qwen2-MoE and OLMoE always derive it; the others honour an explicit value.
  std::optional<int64_t> head_dim;
  if (arch == Architecture::kMixtral || arch == Architecture::kQwen3Moe)
    SUBMOE_RETURN_IF_ERROR(f.get_opt_int("head_dim", &head_dim));
  SUBMOE_RETURN_IF_ERROR(require_positive(f, "num_attention_heads", c.num_attention_heads));
  c.head_dim = head_dim ? *head_dim : c.hidden_size / c.num_attention_heads;

  // Experts: num_local_experts (Mixtral's name) and num_experts are aliases in HF's attribute maps.
  {
    std::optional<int64_t> local, plain;
    SUBMOE_RETURN_IF_ERROR(f.get_opt_int("num_local_experts", &local));
    SUBMOE_RETURN_IF_ERROR(f.get_opt_int("num_experts", &plain));
    if (local && plain && *local != *plain)
      return f.error("num_experts", "(" + std::to_string(*plain) + ") disagrees with 'num_local_experts' (" +
                                        std::to_string(*local) + ")");
    if (local) c.num_experts = *local;
    if (plain) c.num_experts = *plain;
  }
  SUBMOE_RETURN_IF_ERROR(f.get_int("num_experts_per_tok", &c.num_experts_per_tok));

  switch (arch) {
    case Architecture::kMixtral:
      c.moe_intermediate_size = c.intermediate_size;
      c.norm_topk_prob = true;  // Mixtral always renormalises; the key does not exist
      SUBMOE_RETURN_IF_ERROR(f.get_opt_int("sliding_window", &c.sliding_window));
      break;
    case Architecture::kQwen2Moe:
    case Architecture::kQwen3Moe:
      SUBMOE_RETURN_IF_ERROR(f.get_int("moe_intermediate_size", &c.moe_intermediate_size));
      if (arch == Architecture::kQwen2Moe)
        SUBMOE_RETURN_IF_ERROR(f.get_int("shared_expert_intermediate_size", &c.shared_expert_intermediate_size));
      SUBMOE_RETURN_IF_ERROR(f.get_bool("norm_topk_prob", &c.norm_topk_prob));
      SUBMOE_RETURN_IF_ERROR(f.get_int("decoder_sparse_step", &c.decoder_sparse_step));
      SUBMOE_RETURN_IF_ERROR(f.get_int_list("mlp_only_layers", &c.mlp_only_layers));
      SUBMOE_RETURN_IF_ERROR(f.get_bool("use_sliding_window", &c.use_sliding_window));
      SUBMOE_RETURN_IF_ERROR(f.get_opt_int("sliding_window", &c.sliding_window));
      SUBMOE_RETURN_IF_ERROR(f.get_int("max_window_layers", &c.max_window_layers));
      break;
    case Architecture::kOlmoe:
      c.moe_intermediate_size = c.intermediate_size;
      SUBMOE_RETURN_IF_ERROR(f.get_bool("norm_topk_prob", &c.norm_topk_prob));
      SUBMOE_RETURN_IF_ERROR(f.get_opt_double("clip_qkv", &c.clip_qkv));
      if (c.clip_qkv && !(*c.clip_qkv > 0)) return f.error("clip_qkv", "must be positive");
      break;
  }
  if (c.sliding_window && *c.sliding_window <= 0) c.sliding_window = std::nullopt;  // v5 writes 0 for "off"
  SUBMOE_RETURN_IF_ERROR(f.get_string_list("layer_types", &c.layer_types));

  // Attention biases and q/k norms per architecture.
  switch (arch) {
    case Architecture::kMixtral:
      break;
    case Architecture::kQwen2Moe:
      c.qkv_bias = true;
      SUBMOE_RETURN_IF_ERROR(f.get_bool("qkv_bias", &c.qkv_bias));
      break;
    case Architecture::kQwen3Moe:
      SUBMOE_RETURN_IF_ERROR(f.get_bool("attention_bias", &c.attention_bias));
      c.qkv_bias = c.o_proj_bias = c.attention_bias;
      c.qk_norm = QkNorm::kPerHead;
      break;
    case Architecture::kOlmoe:
      SUBMOE_RETURN_IF_ERROR(f.get_bool("attention_bias", &c.attention_bias));
      c.qkv_bias = c.o_proj_bias = c.attention_bias;
      c.qk_norm = QkNorm::kWholeProjection;
      break;
  }

  SUBMOE_RETURN_IF_ERROR(f.get_opt_int("bos_token_id", &c.bos_token_id));
  SUBMOE_RETURN_IF_ERROR(f.get_opt_int("pad_token_id", &c.pad_token_id));
  if (f.has("eos_token_id")) {
    const json& e = root.at("eos_token_id");
    if (e.is_null()) {
      c.eos_token_ids.clear();
    } else if (e.is_number_integer()) {
      c.eos_token_ids = {e.get<int64_t>()};
    } else if (e.is_array()) {
      SUBMOE_RETURN_IF_ERROR(f.get_int_list("eos_token_id", &c.eos_token_ids));
    } else {
      return f.wrong_type("eos_token_id", "an integer or a list of integers");
    }
  }
  // v5 spells it dtype, v4 torch_dtype; dtype wins when a file has both.
  for (const char* key : {"torch_dtype", "dtype"})
    if (f.present(key)) SUBMOE_RETURN_IF_ERROR(f.get_string(key, &c.dtype));

  // Consistency: what the model code will rely on.
  SUBMOE_RETURN_IF_ERROR(require_positive(f, "vocab_size", c.vocab_size));
  SUBMOE_RETURN_IF_ERROR(require_positive(f, "hidden_size", c.hidden_size));
  SUBMOE_RETURN_IF_ERROR(require_positive(f, "num_hidden_layers", c.num_hidden_layers));
  SUBMOE_RETURN_IF_ERROR(require_positive(f, "num_attention_heads", c.num_attention_heads));
  SUBMOE_RETURN_IF_ERROR(require_positive(f, "num_key_value_heads", c.num_key_value_heads));
  SUBMOE_RETURN_IF_ERROR(require_positive(f, "max_position_embeddings", c.max_position_embeddings));
  SUBMOE_RETURN_IF_ERROR(require_at_most(f, "num_hidden_layers", c.num_hidden_layers, int64_t{1} << 12));
  SUBMOE_RETURN_IF_ERROR(require_at_most(f, "vocab_size", c.vocab_size, int64_t{1} << 24));
  SUBMOE_RETURN_IF_ERROR(require_at_most(f, "hidden_size", c.hidden_size, int64_t{1} << 20));
  SUBMOE_RETURN_IF_ERROR(require_at_most(f, "num_experts", c.num_experts, int64_t{1} << 20));
  SUBMOE_RETURN_IF_ERROR(require_at_most(f, "max_position_embeddings", c.max_position_embeddings, int64_t{1} << 26));
  if (c.head_dim <= 0) return f.error("head_dim", "must be positive, got " + std::to_string(c.head_dim));
  // Widths the weight loader multiplies (heads x head_dim, rows x columns):
  // bounded far above any real model so no product can overflow.
  SUBMOE_RETURN_IF_ERROR(require_at_most(f, "num_attention_heads", c.num_attention_heads, int64_t{1} << 16));
  SUBMOE_RETURN_IF_ERROR(require_at_most(f, "num_key_value_heads", c.num_key_value_heads, int64_t{1} << 16));
  SUBMOE_RETURN_IF_ERROR(require_at_most(f, "head_dim", c.head_dim, int64_t{1} << 16));
  if (c.num_attention_heads * c.head_dim > (int64_t{1} << 22))
    return f.error("head_dim", "x num_attention_heads = " + std::to_string(c.num_attention_heads * c.head_dim) +
                                   " is beyond any model (at most 4194304)");
  SUBMOE_RETURN_IF_ERROR(require_at_most(f, "intermediate_size", c.intermediate_size, int64_t{1} << 22));
  SUBMOE_RETURN_IF_ERROR(require_at_most(f, "moe_intermediate_size", c.moe_intermediate_size, int64_t{1} << 22));
  SUBMOE_RETURN_IF_ERROR(
      require_at_most(f, "shared_expert_intermediate_size", c.shared_expert_intermediate_size, int64_t{1} << 22));
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    return f.error("num_key_value_heads", "(" + std::to_string(c.num_key_value_heads) +
                                              ") must divide num_attention_heads (" +
                                              std::to_string(c.num_attention_heads) + ")");
  if (c.rms_norm_eps < 0) return f.error("rms_norm_eps", "must not be negative");
  if (c.hidden_act != "silu")
    return Status(ErrorCode::kUnsupported,
                  f.error("hidden_act", "is '" + c.hidden_act + "'; only 'silu' is supported").message());
  const bool any_moe = c.num_experts > 0;
  if (!is_qwen || any_moe) SUBMOE_RETURN_IF_ERROR(require_positive(f, "num_experts", c.num_experts));
  if (any_moe) {
    SUBMOE_RETURN_IF_ERROR(require_positive(f, "num_experts_per_tok", c.num_experts_per_tok));
    if (c.num_experts_per_tok > c.num_experts)
      return f.error("num_experts_per_tok", "(" + std::to_string(c.num_experts_per_tok) + ") exceeds num_experts (" +
                                                std::to_string(c.num_experts) + ")");
    SUBMOE_RETURN_IF_ERROR(require_positive(f, "moe_intermediate_size", c.moe_intermediate_size));
  }
  if (is_qwen && any_moe) SUBMOE_RETURN_IF_ERROR(require_positive(f, "decoder_sparse_step", c.decoder_sparse_step));
  if (arch == Architecture::kQwen2Moe && c.shared_expert_intermediate_size < 0)
    return f.error("shared_expert_intermediate_size", "must not be negative");
  bool any_dense = false;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) any_dense = any_dense || !c.is_moe_layer(static_cast<int>(i));
  if (any_dense) SUBMOE_RETURN_IF_ERROR(require_positive(f, "intermediate_size", c.intermediate_size));
  if (!c.layer_types.empty()) {
    if (static_cast<int64_t>(c.layer_types.size()) != c.num_hidden_layers)
      return f.error("layer_types", "has " + std::to_string(c.layer_types.size()) + " entries for " +
                                        std::to_string(c.num_hidden_layers) + " layers");
    for (const std::string& t : c.layer_types)
      if (t != "full_attention" && t != "sliding_attention")
        return Status(ErrorCode::kUnsupported, f.error("layer_types", "holds unknown type '" + t + "'").message());
  }
  if (c.eos_token_ids.size() > 0)
    for (int64_t id : c.eos_token_ids)
      if (id < 0) return f.error("eos_token_id", "holds a negative id");
  return c;
}

Result<MoeModelConfig> load_hf_config(const std::string& path) {
  std::error_code ec;
  std::string file = path;
  if (std::filesystem::is_directory(path, ec)) file = (std::filesystem::path(path) / "config.json").string();
  SUBMOE_ASSIGN_OR_RETURN(const std::string text, read_file_to_string(file));
  return parse_hf_config(text, file);
}

}  // namespace submoe::io
