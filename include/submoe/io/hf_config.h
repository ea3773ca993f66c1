// Hugging Face config.json for the supported MoE decoders (Mixtral, Qwen2-MoE,
// Qwen3-MoE, OLMoE), parsed into one struct with every default, alias and
// per-architecture rule resolved here, so the model code reads plain fields.
//
// Both transformers v4 and v5 spellings are accepted: rope_theta / rope_scaling
// vs rope_parameters (with "type" as an alias of "rope_type"), torch_dtype vs
// dtype, num_local_experts vs num_experts. Absent keys take the defaults of the
// HF config classes (../shared/docs/hf-moe-architectures.md §2-§5). A key of the
// wrong JSON type is an error naming the key; an unknown model_type is an error
// listing the supported ones.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "submoe/core/status.h"

namespace submoe::io {

// The registered architectures: each value has one descriptor
// (submoe/io/architecture.h) that owns everything the family means.
enum class Architecture { kMixtral, kQwen2Moe, kQwen3Moe, kOlmoe, kDeepseekV2, kDeepseekV3, kGptOss };
struct ArchitectureDescriptor;

// The config.json model_type: "mixtral", "qwen2_moe", "qwen3_moe", "olmoe", ...
std::string_view architecture_model_type(Architecture arch);
// kUnsupported (listing the supported types) for anything else.
Result<Architecture> parse_model_type(std::string_view model_type);
// In registry order.
std::vector<Architecture> supported_architectures();

enum class RopeType { kDefault, kLinear, kDynamic, kYarn, kLlama3 };
// "default", "linear", "dynamic", "yarn", "llama3".
std::string_view rope_type_name(RopeType type);

// RoPE scaling parameters, raw as written (ints accepted for numbers). Which
// fields apply depends on type; the rest keep their defaults.
struct RopeScaling {
  RopeType type = RopeType::kDefault;
  // linear, dynamic, llama3: required; yarn: optional (factor_given says whether it
  // was written; v4 and v5 differ on YaRN when original_max_position_embeddings is
  // also given, see the doc §1.3).
  double factor = 1.0;
  bool factor_given = false;
  // yarn, llama3 (required), dynamic (optional).
  std::optional<int64_t> original_max_position_embeddings;
  // yarn
  std::optional<double> attention_factor;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  std::optional<double> mscale;
  std::optional<double> mscale_all_dim;
  bool truncate = true;
  // llama3
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
};

// YaRN's magnitude correction, transformers' get_mscale / yarn_get_mscale:
// 0.1 * mscale * ln(factor) + 1 for factor > 1, else 1. The RoPE tables
// (model/rope.cpp) and DeepSeek's softmax scale (io/arch) both use it.
double yarn_get_mscale(double factor, double mscale);

// The quantization_config object of `directory`/config.json into *out: false
// when there is no readable, parsable config or no such object (the config
// reader reports bad configs). Its quant_method tells a submoe artifact
// ("submoe") from an FP8 block-scaled hub checkpoint ("fp8").
bool read_quantization_config(const std::string& directory, nlohmann::json* out);

// Where the query/key RMSNorm sits, if any.
enum class QkNorm {
  kNone,
  kPerHead,          // Qwen3-MoE: over head_dim, weight [head_dim]
  kWholeProjection,  // OLMoE: over nH*D / nKV*D before reshaping, weight [nH*D] / [nKV*D]
};

// How a layer attends: grouped-query attention over per-head keys and values,
// or DeepSeek's multi-head latent attention (a compressed KV latent plus one
// shared RoPE key per position).
enum class AttentionKind { kGqa, kMla };

// How the router picks a token's experts.
enum class RouterSelection {
  kSoftmaxTopK,        // top-k of softmax(logits) (Mixtral, Qwen, OLMoE; DeepSeek-V2 "greedy")
  kSoftmaxGroupMax,    // DeepSeek-V2 "group_limited_greedy": groups ranked by their best softmax score
  kSigmoidGroupTop2,   // DeepSeek-V3: sigmoid scores, selection on score + e_score_correction_bias,
                       // groups ranked by the sum of their two best biased scores
  kTopKSoftmax,        // GPT-OSS: top-k of the (biased) logits, softmax over those k
};

// The gated activation of the routed experts: h = silu(gate) * up, or GPT-OSS's
// clamped form h = (clamp(up, -limit, limit) + 1) * g * sigmoid(alpha * g) with
// g = min(gate, limit).
enum class ExpertActivation { kSwiGlu, kClampedSwiGlu };

struct MoeModelConfig {
  Architecture architecture = Architecture::kMixtral;
  std::string model_type;
  std::vector<std::string> architectures;  // "architectures" list, e.g. MixtralForCausalLM

  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  // Dense SwiGLU MLP width (Qwen dense layers). For Mixtral and OLMoE, whose
  // config intermediate_size is the per-expert width, both fields hold it.
  int64_t intermediate_size = 0;
  // Routed expert width I.
  int64_t moe_intermediate_size = 0;
  // Qwen2-MoE shared expert width; 0 when the architecture has none.
  int64_t shared_expert_intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  // Explicit head_dim when present and non-null, else hidden_size / num_attention_heads.
  int64_t head_dim = 0;
  std::string hidden_act = "silu";
  double rms_norm_eps = 1e-6;

  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  int64_t max_position_embeddings = 0;

  // Sliding-window attention. sliding_window is the raw value (absent, null and 0
  // all read as none); use sliding_window_for_layer() for the per-layer rule.
  std::optional<int64_t> sliding_window;
  bool use_sliding_window = false;  // Qwen only
  int64_t max_window_layers = 0;    // Qwen only
  // "layer_types" when config.json lists it ("full_attention"/"sliding_attention").
  std::vector<std::string> layer_types;

  // Attention biases, resolved per architecture: Mixtral none; Qwen2-MoE q/k/v
  // biased (qkv_bias, default true), o_proj never; Qwen3-MoE and OLMoE
  // attention_bias (default false) on q, k, v and o.
  bool attention_bias = false;  // the raw config field (false where absent)
  bool qkv_bias = false;
  bool o_proj_bias = false;
  QkNorm qk_norm = QkNorm::kNone;
  std::optional<double> clip_qkv;  // OLMoE: clamp q, k, v to [-c, c] after the norm

  int64_t num_experts = 0;
  int64_t num_experts_per_tok = 0;
  // Renormalise the top-k router weights: Mixtral always; others per config.
  bool norm_topk_prob = false;
  // The routed experts' weights are multiplied by it after top-k (and after
  // renormalisation): DeepSeek's routed_scaling_factor, 1 elsewhere.
  double routed_scaling_factor = 1.0;
  RouterSelection router_selection = RouterSelection::kSoftmaxTopK;
  // The router is a Linear with a bias (GPT-OSS: logits = x W^T + b).
  bool router_linear_bias = false;
  // Routed experts: activation, and biases after gate, up and down (GPT-OSS).
  ExpertActivation expert_activation = ExpertActivation::kSwiGlu;
  double swiglu_alpha = 1.702;
  double swiglu_limit = 7.0;
  bool expert_bias = false;
  // A learned logit per attention head that joins every softmax as an extra
  // column and is dropped after it (GPT-OSS "sinks").
  bool attention_sinks = false;
  // Group-limited selection: experts in n_group contiguous groups, only the
  // best topk_group groups may be chosen (1 / 1 otherwise).
  int64_t n_group = 1;
  int64_t topk_group = 1;
  // DeepSeek: layers [0, first_k_dense_replace) have a dense MLP.
  int64_t first_k_dense_replace = 0;
  // DeepSeek's always-on shared experts, as one SwiGLU of
  // shared_expert_intermediate_size = num_shared_experts * moe_intermediate_size
  // (Qwen2-MoE: 1, its own width).
  int64_t num_shared_experts = 0;

  // Attention kind; the MLA fields hold for kMla only (head_dim is then
  // qk_rope_head_dim, as transformers sets it).
  AttentionKind attention = AttentionKind::kGqa;
  std::optional<int64_t> q_lora_rank;  // null: one q_proj instead of q_a/q_b
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
  // RoPE on interleaved pairs (x_2i, x_2i+1) instead of halves (DeepSeek-V3).
  bool rope_interleave = false;
  // Multiplies the attention softmax scale qk_head_dim^-0.5: DeepSeek-V3 with a
  // rope scaling that gives mscale_all_dim uses mscale(factor, mscale_all_dim)^2
  // (1 elsewhere).
  double attention_scale_multiplier = 1.0;
  int64_t decoder_sparse_step = 1;      // Qwen only (1 elsewhere)
  std::vector<int64_t> mlp_only_layers;  // Qwen only

  bool tie_word_embeddings = false;
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;  // eos_token_id may be an int or a list
  std::optional<int64_t> pad_token_id;
  // torch_dtype (v4) or dtype (v5), e.g. "bfloat16"; empty when absent.
  std::string dtype;

  // The descriptor of `architecture`.
  const ArchitectureDescriptor& descriptor() const;
  bool has_shared_expert() const { return shared_expert_intermediate_size > 0; }
  // Whether decoder layer `layer` has the routed-expert block (else a dense MLP of
  // intermediate_size), exactly as the HF modeling code decides: iff layer is not
  // in mlp_only_layers, layer >= first_k_dense_replace, num_experts > 0 and
  // (layer + 1) % decoder_sparse_step == 0 (families without dense layers keep
  // step 1, no mlp_only_layers and no first dense layers).
  bool is_moe_layer(int layer) const;
  // The attention window of `layer` (keys j with j > i - window are visible), or
  // none for full causal attention. layer_types, when present, decides which
  // layers slide; otherwise the descriptor's rule (Mixtral: every layer; Qwen:
  // use_sliding_window and layer >= max_window_layers, the v4 modeling rule;
  // OLMoE: none).
  std::optional<int64_t> sliding_window_for_layer(int layer) const;
};

// Parses config.json text. `source` names it in error messages.
Result<MoeModelConfig> parse_hf_config(std::string_view json_text, std::string_view source = "config.json");
// Reads `path`: a config.json file or a directory holding one.
Result<MoeModelConfig> load_hf_config(const std::string& path);

}  // namespace submoe::io
