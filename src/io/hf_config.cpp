// config.json -> MoeModelConfig. Defaults are those of the transformers config
// classes (MixtralConfig, Qwen2MoeConfig, Qwen3MoeConfig, OlmoeConfig).
#include "submoe/io/hf_config.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>

#include "config_fields.h"
#include "submoe/io/architecture.h"
#include "submoe/io/file_util.h"

namespace submoe::io {
namespace {

using json = nlohmann::json;

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

Result<RopeType> parse_rope_type(const std::string& name, const ConfigFields& f, const char* key) {
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
  const ConfigFields f(dict, source, name + ".");
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
Status parse_rope(const ConfigFields& top, const json& root, MoeModelConfig* c) {
  const std::string& source = top.source();
  SUBMOE_RETURN_IF_ERROR(top.get_double("rope_theta", &c->rope_theta));
  bool params_scaling = false;
  if (top.present("rope_parameters")) {
    const json& rp = root.at("rope_parameters");
    if (!rp.is_object()) return top.wrong_type("rope_parameters", "an object");
    const ConfigFields f(rp, source, "rope_parameters.");
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

Result<const ArchitectureDescriptor*> architecture_of(const ConfigFields& top) {
  if (top.present("model_type")) {
    std::string mt;
    SUBMOE_RETURN_IF_ERROR(top.get_string("model_type", &mt));
    auto arch = find_architecture(mt);
    if (!arch.is_ok()) return arch.status().with_context(top.source());
    return arch;
  }
  // Very old exports lack model_type; the class name decides then.
  std::vector<std::string> classes;
  SUBMOE_RETURN_IF_ERROR(top.get_string_list("architectures", &classes));
  for (const std::string& cls : classes)
    if (const ArchitectureDescriptor* d = find_architecture_by_class(cls)) return d;
  return Status(ErrorCode::kUnsupported, top.source() + ": no 'model_type' (and no known 'architectures' entry); supported: " +
                                             supported_model_types());
}

Status require_positive(const ConfigFields& f, const char* key, int64_t v) {
  if (v <= 0) return f.error(key, "must be positive, got " + std::to_string(v));
  return Status::ok();
}

// Sizes no model has: every count the model code loops over or allocates by
// is bounded before anything is sized by it (a corrupt or hostile config.json
// must fail here, not in an allocation or a loop of 2^40 iterations). The
// largest real values are far below: 61-128 layers, 384 experts, 256 K vocab,
// 1 M positions.
Status require_at_most(const ConfigFields& f, const char* key, int64_t v, int64_t most) {
  if (v > most) return f.error(key, "is " + std::to_string(v) + ", beyond any model (at most " + std::to_string(most) + ")");
  return Status::ok();
}

}  // namespace

std::string_view architecture_model_type(Architecture arch) { return architecture_descriptor(arch).model_type; }

Result<Architecture> parse_model_type(std::string_view model_type) {
  SUBMOE_ASSIGN_OR_RETURN(const ArchitectureDescriptor* d, find_architecture(model_type));
  return d->id;
}

std::vector<Architecture> supported_architectures() {
  std::vector<Architecture> ids;
  for (const ArchitectureDescriptor* d : architecture_registry()) ids.push_back(d->id);
  return ids;
}

std::string_view rope_type_name(RopeType type) {
  for (const RopeTypeInfo& r : kRopeTypes)
    if (r.type == type) return r.name;
  return "unknown";
}

const ArchitectureDescriptor& MoeModelConfig::descriptor() const { return architecture_descriptor(architecture); }

bool MoeModelConfig::is_moe_layer(int layer) const {
  if (layer < 0 || layer >= num_hidden_layers) return false;
  if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) != mlp_only_layers.end()) return false;
  return num_experts > 0 && layer >= first_k_dense_replace && decoder_sparse_step > 0 &&
         (layer + 1) % decoder_sparse_step == 0;
}

std::optional<int64_t> MoeModelConfig::sliding_window_for_layer(int layer) const {
  if (!sliding_window || *sliding_window <= 0 || layer < 0 || layer >= num_hidden_layers) return std::nullopt;
  if (!layer_types.empty()) {
    if (layer_types[static_cast<size_t>(layer)] == "sliding_attention") return sliding_window;
    return std::nullopt;
  }
  if (descriptor().layer_slides(*this, layer)) return sliding_window;
  return std::nullopt;
}

Result<MoeModelConfig> parse_hf_config(std::string_view json_text, std::string_view source_view) {
  const std::string source(source_view);
  SUBMOE_ASSIGN_OR_RETURN(const json root, parse_json_strict(json_text, source));
  if (!root.is_object()) return invalid_argument(source + ": not a JSON object");
  const ConfigFields f(root, source, "");

  SUBMOE_ASSIGN_OR_RETURN(const ArchitectureDescriptor* arch, architecture_of(f));
  MoeModelConfig c;
  c.architecture = arch->id;
  c.hidden_act = "silu";
  c.tie_word_embeddings = false;
  c.decoder_sparse_step = 1;
  arch->set_defaults(&c);
  c.model_type = std::string(arch->model_type);
  if (f.present("model_type")) SUBMOE_RETURN_IF_ERROR(f.get_string("model_type", &c.model_type));  // an alias stays
  SUBMOE_RETURN_IF_ERROR(f.get_string_list("architectures", &c.architectures));

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

  // head_dim: some families honour an explicit value, the others always derive it.
  std::optional<int64_t> head_dim;
  if (arch->explicit_head_dim)
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

  SUBMOE_RETURN_IF_ERROR(arch->parse_fields(f, &c));
  if (c.sliding_window && *c.sliding_window <= 0) c.sliding_window = std::nullopt;  // v5 writes 0 for "off"
  SUBMOE_RETURN_IF_ERROR(f.get_string_list("layer_types", &c.layer_types));

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
  if (!arch->dense_mlp_layers || any_moe) SUBMOE_RETURN_IF_ERROR(require_positive(f, "num_experts", c.num_experts));
  if (any_moe) {
    SUBMOE_RETURN_IF_ERROR(require_positive(f, "num_experts_per_tok", c.num_experts_per_tok));
    if (c.num_experts_per_tok > c.num_experts)
      return f.error("num_experts_per_tok", "(" + std::to_string(c.num_experts_per_tok) + ") exceeds num_experts (" +
                                                std::to_string(c.num_experts) + ")");
    SUBMOE_RETURN_IF_ERROR(require_positive(f, "moe_intermediate_size", c.moe_intermediate_size));
  }
  if (arch->mlp_only_layers_key && any_moe)
    SUBMOE_RETURN_IF_ERROR(require_positive(f, "decoder_sparse_step", c.decoder_sparse_step));
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

double yarn_get_mscale(double factor, double mscale) {
  return factor <= 1.0 ? 1.0 : 0.1 * mscale * std::log(factor) + 1.0;
}

bool read_quantization_config(const std::string& directory, nlohmann::json* out) {
  const std::string path = (std::filesystem::path(directory) / "config.json").string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  auto text = read_file_to_string(path);
  if (!text.is_ok()) return false;
  nlohmann::json root = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!root.is_object()) return false;
  const auto qc = root.find("quantization_config");
  if (qc == root.end() || !qc->is_object()) return false;
  *out = std::move(*qc);
  return true;
}

}  // namespace submoe::io
