// Synthetic checkpoint: option checking, config.json in each architecture's own
// spelling, sharded streaming write.
#include "submoe/model/synth_checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "submoe/io/file_util.h"
#include "submoe/io/architecture.h"

namespace submoe::model {
namespace {

namespace fs = std::filesystem;

// "qwen2_moe and qwen3_moe": the families whose dense layers are listed by mlp_only_layers.
std::string dense_layer_model_types() {
  std::vector<std::string_view> names;
  for (const io::ArchitectureDescriptor* d : io::architecture_registry())
    if (d->mlp_only_layers_key) names.push_back(d->model_type);
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) s += i + 1 == names.size() ? " and " : ", ";
    s += names[i];
  }
  return s;
}

Status positive(int64_t v, const char* option) {
  if (v <= 0) return invalid_argument(std::string(option) + " must be positive, got " + std::to_string(v));
  return Status::ok();
}

// Files this command writes besides the weights; with overwrite, the ones not
// written this time are removed so no stale tokenizer sits beside new weights.
constexpr const char* kTokenizerFiles[] = {
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model", "vocab.json",
    "merges.txt",     "added_tokens.json",     "chat_template.jinja"};
constexpr const char* kGenerationConfig = "generation_config.json";
constexpr const char* kIndexFile = "model.safetensors.index.json";

bool is_weight_file(const std::string& name) {
  if (name == "model.safetensors" || name == kIndexFile) return true;
  // model-00001-of-00004.safetensors
  const std::string_view ext = ".safetensors";
  return name.rfind("model-", 0) == 0 && name.find("-of-") != std::string::npos && name.size() > ext.size() &&
         name.compare(name.size() - ext.size(), ext.size(), ext) == 0;
}

bool is_managed_file(const std::string& name) {
  if (is_weight_file(name) || name == "config.json" || name == kGenerationConfig) return true;
  for (const char* t : kTokenizerFiles)
    if (name == t) return true;
  return false;
}

std::string shard_name(size_t index, size_t count) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", index + 1, count);
  return buf;
}

nlohmann::json nullable(const std::optional<int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

// Greedy packing in layout order, as transformers' max_shard_size: a shard is
// closed when the next tensor would overflow it; a tensor larger than the limit
// gets a shard of its own.
std::vector<std::vector<size_t>> plan_shards(std::span<const CheckpointTensor> layout, size_t esize,
                                             uint64_t shard_bytes) {
  std::vector<std::vector<size_t>> shards;
  uint64_t current = 0;
  for (size_t i = 0; i < layout.size(); ++i) {
    const uint64_t bytes = static_cast<uint64_t>(layout[i].numel()) * esize;
    if (shards.empty() || (current > 0 && current + bytes > shard_bytes)) {
      shards.emplace_back();
      current = 0;
    }
    shards.back().push_back(i);
    current += bytes;
  }
  return shards;
}

Status check_output_dir(const std::string& dir, bool overwrite) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return io_error("cannot create output directory " + dir + ": " + ec.message());
  if (!fs::is_directory(dir, ec)) return invalid_argument("output " + dir + " is not a directory");
  if (overwrite) return Status::ok();
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == "config.json" || is_weight_file(name))
      return invalid_argument("output directory " + dir + " already holds a checkpoint (" + name +
                              "); choose another directory or overwrite it (--force)");
  }
  if (ec) return io_error("cannot list " + dir + ": " + ec.message());
  return Status::ok();
}

Status remove_stale_files(const std::string& dir, const std::set<std::string>& written) {
  std::error_code ec;
  std::vector<fs::path> stale;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (is_managed_file(name) && !written.count(name)) stale.push_back(entry.path());
  }
  if (ec) return io_error("cannot list " + dir + ": " + ec.message());
  for (const fs::path& p : stale) {
    fs::remove(p, ec);
    if (ec) return io_error("cannot remove stale " + p.string() + ": " + ec.message());
  }
  return Status::ok();
}

// Absurd sizes would overflow int64 element counts or build a layout of
// billions of entries before any byte is written; real models are far below
// both limits (DeepSeek-V3: 6.7e11 parameters, 47k tensors).
Status check_size_limits(const io::MoeModelConfig& c) {
  const double L = static_cast<double>(c.num_hidden_layers), E = static_cast<double>(c.num_experts);
  const double H = static_cast<double>(c.hidden_size), V = static_cast<double>(c.vocab_size);
  const double attn = 2.0 * H * static_cast<double>(c.head_dim) *
                      (static_cast<double>(c.num_attention_heads) + static_cast<double>(c.num_key_value_heads));
  const double ffn = 3.0 * H *
                     std::max(static_cast<double>(c.moe_intermediate_size) * E +
                                  static_cast<double>(c.shared_expert_intermediate_size),
                              static_cast<double>(c.intermediate_size));
  const double params = 2.0 * V * H + L * (attn + ffn + E * H);
  if (params > 1e15)
    return invalid_argument("the model would have ~" + std::to_string(params) + " parameters; the limit is 1e15");
  const double tensors = L * (3.0 * E + 24.0);
  if (tensors > 1e7)
    return invalid_argument("the model would have ~" + std::to_string(tensors) + " tensors; the limit is 1e7");
  return Status::ok();
}

}  // namespace

Result<io::MoeModelConfig> resolve_synth_config(const SynthSpec& s, const io::Tokenizer* tokenizer) {
  const io::ArchitectureDescriptor& arch = io::architecture_descriptor(s.architecture);
  SUBMOE_RETURN_IF_ERROR(positive(s.layers, "--layers"));
  SUBMOE_RETURN_IF_ERROR(positive(s.experts, "--experts"));
  SUBMOE_RETURN_IF_ERROR(positive(s.hidden, "--hidden"));
  SUBMOE_RETURN_IF_ERROR(positive(s.ffn, "--ffn"));
  SUBMOE_RETURN_IF_ERROR(positive(s.max_position_embeddings, "max_position_embeddings"));
  if (s.top_k < 1 || s.top_k > s.experts)
    return invalid_argument("--top-k must be in [1, --experts=" + std::to_string(s.experts) + "], got " +
                            std::to_string(s.top_k));
  // The routing trace format and every expert-indexed table here use 16-bit ids.
  if (s.experts > 65536) return invalid_argument("--experts must be <= 65536, got " + std::to_string(s.experts));
  for (auto [v, name] :
       {std::pair{s.heads, "--heads"}, std::pair{s.kv_heads, "--kv-heads"}, std::pair{s.head_dim, "--head-dim"},
        std::pair{s.vocab, "--vocab"}, std::pair{s.shared_ffn, "--shared-ffn"}, std::pair{s.dense_ffn, "--dense-ffn"}})
    if (v < 0)
      return invalid_argument(std::string(name) + " must be positive (or 0 for the default), got " + std::to_string(v));
  // Products of two sizes must stay within int64 (the total is bounded later).
  constexpr int64_t kMaxSize = (int64_t{1} << 31) - 1;
  for (auto [v, name] :
       {std::pair{s.layers, "--layers"}, std::pair{s.hidden, "--hidden"}, std::pair{s.ffn, "--ffn"},
        std::pair{s.heads, "--heads"}, std::pair{s.kv_heads, "--kv-heads"}, std::pair{s.head_dim, "--head-dim"},
        std::pair{s.vocab, "--vocab"}, std::pair{s.shared_ffn, "--shared-ffn"}, std::pair{s.dense_ffn, "--dense-ffn"},
        std::pair{s.max_position_embeddings, "max_position_embeddings"}})
    if (v > kMaxSize) return invalid_argument(std::string(name) + " must be at most " + std::to_string(kMaxSize));
  if (s.dtype != io::DType::kBF16 && s.dtype != io::DType::kF32)
    return invalid_argument("--dtype must be bf16 or f32, got " + std::string(io::dtype_name(s.dtype)));

  const int64_t heads = s.heads > 0 ? s.heads : std::max<int64_t>(1, s.hidden / 128);
  int64_t head_dim = s.head_dim;
  if (head_dim > 0 && !arch.explicit_head_dim && head_dim * heads != s.hidden)
    return invalid_argument("--head-dim: " + std::string(arch.model_type) +
                            " always uses hidden / heads = " + std::to_string(s.hidden) + " / " +
                            std::to_string(heads) + "; drop --head-dim or change --heads");
  if (head_dim == 0) {
    if (s.hidden % heads != 0)
      return invalid_argument("--heads " + std::to_string(heads) + " does not divide --hidden " +
                              std::to_string(s.hidden) + (arch.explicit_head_dim ? " (or give --head-dim)" : ""));
    head_dim = s.hidden / heads;
  }
  if (head_dim % 2 != 0) return invalid_argument("head_dim must be even for RoPE, got " + std::to_string(head_dim));
  const int64_t kv_heads = s.kv_heads > 0 ? s.kv_heads : (heads % 4 == 0 ? heads / 4 : heads);
  if (heads % kv_heads != 0)
    return invalid_argument("--kv-heads " + std::to_string(kv_heads) + " does not divide the " + std::to_string(heads) +
                            " attention heads");

  int64_t vocab = s.vocab;
  if (tokenizer) {
    const int64_t need = tokenizer->vocab_size();
    if (vocab == 0) vocab = need;
    if (vocab < need)
      return invalid_argument("--vocab " + std::to_string(vocab) + " is smaller than the tokenizer's " +
                              std::to_string(need) + " ids");
  } else if (vocab == 0) {
    vocab = 32000;
  }

  if (!s.mlp_only_layers.empty() && !arch.mlp_only_layers_key)
    return invalid_argument("--mlp-only-layers applies to " + dense_layer_model_types() + " only");
  std::set<int64_t> dense(s.mlp_only_layers.begin(), s.mlp_only_layers.end());
  for (int64_t l : s.mlp_only_layers)
    if (l < 0 || l >= s.layers)
      return invalid_argument("--mlp-only-layers: layer " + std::to_string(l) + " is outside [0, " +
                              std::to_string(s.layers) + ")");
  if (static_cast<int64_t>(dense.size()) == s.layers) return invalid_argument("--mlp-only-layers leaves no MoE layer");

  io::MoeModelConfig c;
  c.architecture = arch.id;
  c.model_type = std::string(arch.model_type);
  c.architectures = {std::string(arch.causal_lm_class)};
  c.vocab_size = vocab;
  c.hidden_size = s.hidden;
  c.num_hidden_layers = s.layers;
  c.num_attention_heads = heads;
  c.num_key_value_heads = kv_heads;
  c.head_dim = head_dim;
  c.hidden_act = "silu";
  c.max_position_embeddings = s.max_position_embeddings;
  c.num_experts = s.experts;
  c.num_experts_per_tok = s.top_k;
  c.moe_intermediate_size = s.ffn;
  c.intermediate_size = arch.dense_mlp_layers ? (s.dense_ffn > 0 ? s.dense_ffn : 4 * s.ffn) : s.ffn;
  c.dtype = s.dtype == io::DType::kBF16 ? "bfloat16" : "float32";
  if (arch.has_shared_expert) c.shared_expert_intermediate_size = s.shared_ffn > 0 ? s.shared_ffn : 4 * s.ffn;
  if (arch.mlp_only_layers_key) c.mlp_only_layers.assign(dense.begin(), dense.end());
  // The family's released checkpoints: eps, theta, top-k renormalisation, biases, layer rules.
  arch.synth_defaults(&c);
  if (c.attention == io::AttentionKind::kMla && c.qk_rope_head_dim % 2 != 0)
    return invalid_argument("multi-head latent attention: hidden / heads = " + std::to_string(c.qk_nope_head_dim) +
                            " must be a multiple of 4 (the RoPE part, qk_rope_head_dim, is half of it and even)");
  if (tokenizer) {
    if (tokenizer->bos_id()) c.bos_token_id = *tokenizer->bos_id();
    if (tokenizer->eos_id()) c.eos_token_ids = {*tokenizer->eos_id()};
  }
  SUBMOE_RETURN_IF_ERROR(check_size_limits(c));
  SUBMOE_RETURN_IF_ERROR(io::check_forward_supported(c));
  return c;
}

std::string synth_config_json(const io::MoeModelConfig& c) {
  nlohmann::json j;
  j["architectures"] = c.architectures;
  j["model_type"] = c.model_type;
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["hidden_act"] = c.hidden_act;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  j["rope_scaling"] = nullptr;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["initializer_range"] = 0.02;
  j["attention_dropout"] = 0.0;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["use_cache"] = true;
  j["num_experts_per_tok"] = c.num_experts_per_tok;
  j["output_router_logits"] = false;
  j["dtype"] = c.dtype;
  j["bos_token_id"] = nullable(c.bos_token_id);
  j["eos_token_id"] = c.eos_token_ids.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.eos_token_ids.front());
  j["pad_token_id"] = nullable(c.pad_token_id);
  c.descriptor().write_config_fields(c, &j);
  return j.dump(2) + "\n";
}

Result<SynthResult> write_synth_checkpoint(const SynthSpec& spec, const std::string& out_dir,
                                           const SynthWriteOptions& options) {
  if (options.shard_bytes == 0) return invalid_argument("shard size must be positive");
  std::optional<io::Tokenizer> tokenizer;
  if (!options.tokenizer_from.empty()) {
    auto tok = io::Tokenizer::load(options.tokenizer_from);
    if (!tok.is_ok()) return tok.status().with_context("--tokenizer-from " + options.tokenizer_from);
    tokenizer = std::move(tok).value();
  }
  SUBMOE_ASSIGN_OR_RETURN(io::MoeModelConfig config, resolve_synth_config(spec, tokenizer ? &*tokenizer : nullptr));
  SUBMOE_RETURN_IF_ERROR(check_output_dir(out_dir, options.overwrite));

  SynthResult result;
  const std::vector<CheckpointTensor> layout = checkpoint_layout(config);
  const size_t esize = io::dtype_size(spec.dtype);
  result.parameters = layout_parameters(layout);
  result.tensor_bytes = static_cast<uint64_t>(result.parameters) * esize;
  const fs::path dir(out_dir);
  std::set<std::string> written;
  auto note_file = [&](const std::string& name) {
    std::error_code ec;
    result.bytes_written += fs::file_size(dir / name, ec);
    result.files.push_back(name);
    written.insert(name);
  };

  const auto shards = plan_shards(layout, esize, options.shard_bytes);
  std::map<std::string, std::string> weight_map;
  uint64_t done = 0;
  for (size_t s = 0; s < shards.size(); ++s) {
    const std::string name = shards.size() == 1 ? "model.safetensors" : shard_name(s, shards.size());
    io::SafetensorsWriter writer;
    writer.set_metadata("format", "pt");  // transformers refuses safetensors without it
    for (size_t i : shards[s]) {
      const CheckpointTensor& t = layout[i];
      weight_map[t.name] = name;
      auto fill = [&t, &spec, &options, &done, &result, esize](uint64_t offset, std::span<uint8_t> out) {
        Status st = fill_synth_tensor(spec.seed, t, spec.dtype, offset / esize, out, options.pool);
        if (!st.is_ok()) return st;
        done += out.size();
        if (options.progress) options.progress(done, result.tensor_bytes);
        return Status::ok();
      };
      SUBMOE_RETURN_IF_ERROR(writer.add_generated_chunked(t.name, spec.dtype, t.shape, std::move(fill)));
    }
    io::SafetensorsWriter::Options wopt;
    wopt.fsync = options.fsync;
    SUBMOE_RETURN_IF_ERROR(writer.write((dir / name).string(), wopt));
    note_file(name);
  }
  if (shards.size() > 1) {
    SUBMOE_RETURN_IF_ERROR(io::write_safetensors_index((dir / kIndexFile).string(), result.tensor_bytes, weight_map));
    note_file(kIndexFile);
  }

  if (tokenizer) {
    for (const char* f : kTokenizerFiles) {
      const fs::path src = fs::path(options.tokenizer_from) / f;
      std::error_code ec;
      if (!fs::is_regular_file(src, ec)) continue;
      SUBMOE_ASSIGN_OR_RETURN(std::string text, io::read_file_to_string(src.string()));
      SUBMOE_RETURN_IF_ERROR(io::write_file_atomic((dir / f).string(), text, options.fsync));
      note_file(f);
    }
    nlohmann::json gen;
    gen["_from_model_config"] = true;
    gen["bos_token_id"] = nullable(config.bos_token_id);
    gen["eos_token_id"] =
        config.eos_token_ids.empty() ? nlohmann::json(nullptr) : nlohmann::json(config.eos_token_ids.front());
    SUBMOE_RETURN_IF_ERROR(
        io::write_file_atomic((dir / kGenerationConfig).string(), gen.dump(2) + "\n", options.fsync));
    note_file(kGenerationConfig);
  }

  // config.json last, so an interrupted first write leaves no loadable-looking directory.
  SUBMOE_RETURN_IF_ERROR(
      io::write_file_atomic((dir / "config.json").string(), synth_config_json(config), options.fsync));
  note_file("config.json");
  if (options.overwrite) SUBMOE_RETURN_IF_ERROR(remove_stale_files(out_dir, written));
  result.config = std::move(config);
  return result;
}

}  // namespace submoe::model
