#include "submoe/model/moe_model.h"

#include <cmath>

namespace submoe::model {

Status ResidentExpertProvider::begin_layer(int layer, std::span<const int> experts) {
  if (layer < 0 || static_cast<size_t>(layer) >= experts_.size())
    return invalid_argument("expert provider: layer " + std::to_string(layer) + " out of range");
  const auto& row = experts_[static_cast<size_t>(layer)];
  for (int e : experts)
    if (e < 0 || static_cast<size_t>(e) >= row.size())
      return invalid_argument("expert provider: layer " + std::to_string(layer) + " has no expert " +
                              std::to_string(e));
  return Status::ok();
}

Result<RopeParams> rope_params_from_config(const io::MoeModelConfig& c) {
  RopeParams p;
  p.type = std::string(io::rope_type_name(c.rope_scaling.type));
  p.theta = c.rope_theta;
  p.dim = static_cast<int>(c.head_dim);
  p.max_position_embeddings = static_cast<int>(c.max_position_embeddings);
  const io::RopeScaling& r = c.rope_scaling;
  p.factor = r.factor;
  if (r.original_max_position_embeddings) p.original_max_position_embeddings = static_cast<int>(*r.original_max_position_embeddings);
  p.low_freq_factor = r.low_freq_factor;
  p.high_freq_factor = r.high_freq_factor;
  p.beta_fast = r.beta_fast;
  p.beta_slow = r.beta_slow;
  p.attention_factor = r.attention_factor;
  p.mscale = r.mscale;
  p.mscale_all_dim = r.mscale_all_dim;
  p.truncate = r.truncate;
  if (r.type == io::RopeType::kYarn && !r.factor_given && p.original_max_position_embeddings > 0) {
    // Doc §1.3: without an explicit factor, both v4 and v5 derive it from the
    // context extension (with one, v4.5x and v5 disagree; we follow v5).
    p.factor = static_cast<double>(c.max_position_embeddings) / p.original_max_position_embeddings;
  }
  if (r.type == io::RopeType::kDynamic)
    return unsupported("rope: dynamic NTK scaling is not supported (its frequencies depend on the sequence length)");
  return p;
}

namespace {

Status check_linear(const LinearOp* op, size_t out, size_t in, const std::string& what) {
  if (op == nullptr) return invalid_argument("weights: " + what + " is missing");
  if (op->out_features() != out || op->in_features() != in)
    return invalid_argument("weights: " + what + " is [" + std::to_string(op->out_features()) + ", " +
                            std::to_string(op->in_features()) + "], the config implies [" + std::to_string(out) +
                            ", " + std::to_string(in) + "]");
  return Status::ok();
}

Status check_vector(const std::vector<float>& v, size_t n, bool required, const std::string& what) {
  if (v.empty() && !required) return Status::ok();
  if (v.size() != n)
    return invalid_argument("weights: " + what + " has " + std::to_string(v.size()) + " elements, expected " +
                            std::to_string(n));
  return Status::ok();
}

}  // namespace

Status check_mla_weights(const io::MoeModelConfig& c, const LayerWeights& L, const std::string& p) {
  const auto H = static_cast<size_t>(c.hidden_size), nH = static_cast<size_t>(c.num_attention_heads);
  const auto rank = static_cast<size_t>(c.kv_lora_rank), rope = static_cast<size_t>(c.qk_rope_head_dim);
  const size_t q_width = nH * static_cast<size_t>(c.qk_nope_head_dim + c.qk_rope_head_dim);
  const MlaWeights& M = L.mla;
  if (c.q_lora_rank) {
    const auto ql = static_cast<size_t>(*c.q_lora_rank);
    SUBMOE_RETURN_IF_ERROR(check_linear(M.q_a.get(), ql, H, p + "q_a_proj"));
    SUBMOE_RETURN_IF_ERROR(check_vector(M.q_a_norm, ql, true, p + "q_a_layernorm"));
    SUBMOE_RETURN_IF_ERROR(check_vector(M.q_a_bias, ql, c.attention_bias, p + "q_a_proj.bias"));
    SUBMOE_RETURN_IF_ERROR(check_linear(M.q_b.get(), q_width, ql, p + "q_b_proj"));
  } else {
    SUBMOE_RETURN_IF_ERROR(check_linear(M.q.get(), q_width, H, p + "q_proj"));
  }
  SUBMOE_RETURN_IF_ERROR(check_linear(M.kv_a.get(), rank + rope, H, p + "kv_a_proj_with_mqa"));
  SUBMOE_RETURN_IF_ERROR(check_vector(M.kv_a_bias, rank + rope, c.attention_bias, p + "kv_a_proj_with_mqa.bias"));
  SUBMOE_RETURN_IF_ERROR(check_vector(M.kv_a_norm, rank, true, p + "kv_a_layernorm"));
  SUBMOE_RETURN_IF_ERROR(
      check_vector(M.kv_b, nH * static_cast<size_t>(c.qk_nope_head_dim + c.v_head_dim) * rank, true, p + "kv_b_proj"));
  const size_t o_width = nH * static_cast<size_t>(c.v_head_dim);
  SUBMOE_RETURN_IF_ERROR(check_linear(L.o.get(), H, o_width, p + "o_proj"));
  return check_vector(L.o_bias, H, c.attention_bias, p + "o_proj.bias");
}

Status check_weights(const io::MoeModelConfig& c, const io::ArchitectureDescriptor& arch, const ModelWeights& w) {
  const size_t V = static_cast<size_t>(c.vocab_size), H = static_cast<size_t>(c.hidden_size);
  const size_t D = static_cast<size_t>(c.head_dim);
  const size_t qw = static_cast<size_t>(c.num_attention_heads) * D, kw = static_cast<size_t>(c.num_key_value_heads) * D;
  if (w.embed.rows() != V || w.embed.cols() != H) return invalid_argument("weights: embedding shape does not match the config");
  SUBMOE_RETURN_IF_ERROR(check_linear(w.lm_head.get(), V, H, "lm_head"));
  SUBMOE_RETURN_IF_ERROR(check_vector(w.final_norm, H, true, "model.norm"));
  if (w.layers.size() != static_cast<size_t>(c.num_hidden_layers))
    return invalid_argument("weights: " + std::to_string(w.layers.size()) + " layers, config has " +
                            std::to_string(c.num_hidden_layers));
  if (!w.experts) return invalid_argument("weights: no expert provider");
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& L = w.layers[l];
    const std::string p = "layer " + std::to_string(l) + " ";
    SUBMOE_RETURN_IF_ERROR(check_vector(L.input_norm, H, true, p + "input_layernorm"));
    SUBMOE_RETURN_IF_ERROR(check_vector(L.post_attention_norm, H, true, p + "post_attention_layernorm"));
    if (c.attention == io::AttentionKind::kMla) {
      SUBMOE_RETURN_IF_ERROR(check_mla_weights(c, L, p));
    } else {
      SUBMOE_RETURN_IF_ERROR(check_linear(L.q.get(), qw, H, p + "q_proj"));
      SUBMOE_RETURN_IF_ERROR(check_linear(L.k.get(), kw, H, p + "k_proj"));
      SUBMOE_RETURN_IF_ERROR(check_linear(L.v.get(), kw, H, p + "v_proj"));
      SUBMOE_RETURN_IF_ERROR(check_linear(L.o.get(), H, qw, p + "o_proj"));
      SUBMOE_RETURN_IF_ERROR(check_vector(L.q_bias, qw, c.qkv_bias, p + "q_proj.bias"));
      SUBMOE_RETURN_IF_ERROR(check_vector(L.k_bias, kw, c.qkv_bias, p + "k_proj.bias"));
      SUBMOE_RETURN_IF_ERROR(check_vector(L.v_bias, kw, c.qkv_bias, p + "v_proj.bias"));
      SUBMOE_RETURN_IF_ERROR(check_vector(L.o_bias, H, c.o_proj_bias, p + "o_proj.bias"));
      const bool per_head = c.qk_norm == io::QkNorm::kPerHead, norm = c.qk_norm != io::QkNorm::kNone;
      SUBMOE_RETURN_IF_ERROR(check_vector(L.q_norm, per_head ? D : qw, norm, p + "q_norm"));
      SUBMOE_RETURN_IF_ERROR(check_vector(L.k_norm, per_head ? D : kw, norm, p + "k_norm"));
      SUBMOE_RETURN_IF_ERROR(check_vector(L.attention_sinks, static_cast<size_t>(c.num_attention_heads),
                                          c.attention_sinks, p + "self_attn.sinks"));
    }
    if (L.sparse != c.is_moe_layer(static_cast<int>(l)))
      return invalid_argument("weights: " + p + "sparse flag disagrees with the config");
    if (!L.sparse) {
      const size_t I = static_cast<size_t>(c.intermediate_size);
      SUBMOE_RETURN_IF_ERROR(check_linear(L.mlp.gate.get(), I, H, p + "mlp.gate_proj"));
      SUBMOE_RETURN_IF_ERROR(check_linear(L.mlp.up.get(), I, H, p + "mlp.up_proj"));
      SUBMOE_RETURN_IF_ERROR(check_linear(L.mlp.down.get(), H, I, p + "mlp.down_proj"));
      continue;
    }
    SUBMOE_RETURN_IF_ERROR(check_linear(L.router.get(), static_cast<size_t>(c.num_experts), H, p + "router"));
    SUBMOE_RETURN_IF_ERROR(check_vector(L.router_bias, static_cast<size_t>(c.num_experts),
                                        c.router_selection == io::RouterSelection::kSigmoidGroupTop2,
                                        p + "mlp.gate.e_score_correction_bias"));
    SUBMOE_RETURN_IF_ERROR(check_vector(L.router_linear_bias, static_cast<size_t>(c.num_experts), c.router_linear_bias,
                                        p + "router bias"));
    {
      const size_t E = static_cast<size_t>(c.num_experts), I = static_cast<size_t>(c.moe_intermediate_size);
      SUBMOE_RETURN_IF_ERROR(check_vector(L.expert_gate_bias, E * I, c.expert_bias, p + "expert gate biases"));
      SUBMOE_RETURN_IF_ERROR(check_vector(L.expert_up_bias, E * I, c.expert_bias, p + "expert up biases"));
      SUBMOE_RETURN_IF_ERROR(check_vector(L.expert_down_bias, E * H, c.expert_bias, p + "expert down biases"));
    }
    if (arch.has_shared_expert) {
      const size_t I = static_cast<size_t>(c.shared_expert_intermediate_size);
      SUBMOE_RETURN_IF_ERROR(check_linear(L.shared_expert.gate.get(), I, H, p + "shared_expert.gate_proj"));
      SUBMOE_RETURN_IF_ERROR(check_linear(L.shared_expert.up.get(), I, H, p + "shared_expert.up_proj"));
      SUBMOE_RETURN_IF_ERROR(check_linear(L.shared_expert.down.get(), H, I, p + "shared_expert.down_proj"));
      if (!arch.shared_expert_gate.empty())
        SUBMOE_RETURN_IF_ERROR(check_linear(L.shared_expert_gate.get(), 1, H, p + "shared_expert_gate"));
    }
  }
  return Status::ok();
}

std::vector<KvLayerShape> kv_cache_shapes(const io::MoeModelConfig& c) {
  KvLayerShape shape;
  if (c.attention == io::AttentionKind::kMla) {
    shape = {1, static_cast<size_t>(c.kv_lora_rank + c.qk_rope_head_dim), 0};
  } else {
    const auto d = static_cast<size_t>(c.head_dim);
    shape = {static_cast<size_t>(c.num_key_value_heads), d, d};
  }
  return std::vector<KvLayerShape>(static_cast<size_t>(c.num_hidden_layers), shape);
}

Result<std::unique_ptr<MoeModel>> MoeModel::create(io::MoeModelConfig config, ModelWeights weights) {
  const io::ArchitectureDescriptor& arch = io::architecture_descriptor(config.architecture);
  SUBMOE_RETURN_IF_ERROR(io::check_forward_supported(config));
  SUBMOE_RETURN_IF_ERROR(check_weights(config, arch, weights));
  SUBMOE_ASSIGN_OR_RETURN(RopeParams rp, rope_params_from_config(config));
  SUBMOE_ASSIGN_OR_RETURN(Rope rope, Rope::create(rp));
  std::unique_ptr<MoeModel> m(new MoeModel());
  m->arch_ = &arch;
  m->rope_ = std::move(rope);
  for (int l = 0; l < config.num_hidden_layers; ++l) {
    const std::optional<int64_t> w = config.sliding_window_for_layer(l);
    if (w && *w <= 0) return invalid_argument("config: sliding_window must be positive");
    m->windows_.push_back(w ? static_cast<size_t>(*w) : 0);
  }
  m->kv_shapes_ = kv_cache_shapes(config);
  m->config_ = std::move(config);
  m->weights_ = std::move(weights);
  return m;
}

Result<std::unique_ptr<MoeModel>> MoeModel::load(const std::string& directory, const LoadWeightsOptions& options) {
  SUBMOE_ASSIGN_OR_RETURN(io::MoeModelConfig config, io::load_hf_config(directory));
  SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<io::SafetensorsModel> st, io::SafetensorsModel::open(directory));
  std::shared_ptr<const io::SafetensorsModel> tensors(std::move(st));
  SUBMOE_ASSIGN_OR_RETURN(ModelWeights weights,
                          load_checkpoint_weights(config, io::architecture_descriptor(config.architecture), std::move(tensors), options));
  return create(std::move(config), std::move(weights));
}

}  // namespace submoe::model
