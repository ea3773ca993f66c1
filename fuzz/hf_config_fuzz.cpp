// libFuzzer target: the Hugging Face config.json parser (io/hf_config.h,
// parse_hf_config over io/json_strict). The input is the config text. Beyond
// "no crash", an accepted config must hold what the model code relies on
// (the consistency checks at the end of parse_hf_config):
//   - the documented bounds: 1 <= num_hidden_layers <= 2^12, 1 <= vocab_size
//     <= 2^24, 1 <= hidden_size <= 2^20, 0 <= num_experts <= 2^20,
//     1 <= max_position_embeddings <= 2^26, head_dim, num_attention_heads and
//     num_key_value_heads positive with num_key_value_heads dividing
//     num_attention_heads, rms_norm_eps >= 0, hidden_act "silu";
//   - with experts, 1 <= num_experts_per_tok <= num_experts and
//     moe_intermediate_size > 0; no negative eos id; layer_types empty or one
//     known entry per layer; model_type matching the architecture;
//   - per layer (the first 64): is_moe_layer only with experts, a dense layer
//     only with intermediate_size > 0, a sliding window only when positive;
//     both accessors false / none outside [0, num_hidden_layers).
// Any crash, sanitizer report or broken invariant (abort) is a finding.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "submoe/io/architecture.h"
#include "submoe/io/hf_config.h"

#include "fuzz_input.h"

using namespace submoe;
using namespace submoe::io;

namespace {

using submoe::fuzz::require;

void check_config(const MoeModelConfig& c) {
  const ArchitectureDescriptor& d = c.descriptor();
  require(d.id == c.architecture);
  require(c.model_type == d.model_type || (!d.model_type_alias.empty() && c.model_type == d.model_type_alias));
  require(c.num_hidden_layers >= 1 && c.num_hidden_layers <= (int64_t{1} << 12));
  require(c.vocab_size >= 1 && c.vocab_size <= (int64_t{1} << 24));
  require(c.hidden_size >= 1 && c.hidden_size <= (int64_t{1} << 20));
  require(c.num_experts >= 0 && c.num_experts <= (int64_t{1} << 20));
  require(c.max_position_embeddings >= 1 && c.max_position_embeddings <= (int64_t{1} << 26));
  require(c.head_dim > 0 && c.num_attention_heads > 0 && c.num_key_value_heads > 0);
  require(c.num_attention_heads % c.num_key_value_heads == 0);
  require(c.rms_norm_eps >= 0 && c.hidden_act == "silu");
  if (c.num_experts > 0) {
    require(c.num_experts_per_tok >= 1 && c.num_experts_per_tok <= c.num_experts);
    require(c.moe_intermediate_size > 0);
  }
  require(c.shared_expert_intermediate_size >= 0);
  require(c.has_shared_expert() == (c.shared_expert_intermediate_size > 0));
  for (int64_t id : c.eos_token_ids) require(id >= 0);
  require(c.layer_types.empty() || static_cast<int64_t>(c.layer_types.size()) == c.num_hidden_layers);
  for (const auto& t : c.layer_types) require(t == "full_attention" || t == "sliding_attention");
  if (c.sliding_window) require(*c.sliding_window > 0);
  if (c.clip_qkv) require(*c.clip_qkv > 0);
  require(c.routed_scaling_factor > 0 && c.first_k_dense_replace >= 0 && c.num_shared_experts >= 0);
  if (c.attention == AttentionKind::kMla) {
    require(c.kv_lora_rank > 0 && c.qk_nope_head_dim > 0 && c.v_head_dim > 0);
    require(c.qk_rope_head_dim > 0 && c.qk_rope_head_dim % 2 == 0 && c.head_dim == c.qk_rope_head_dim);
    require(!c.q_lora_rank || *c.q_lora_rank > 0);
    require(c.num_key_value_heads == c.num_attention_heads);
  }
  if (c.router_selection != RouterSelection::kSoftmaxTopK && c.num_experts > 0) {
    require(c.n_group >= 1 && c.topk_group >= 1 && c.topk_group <= c.n_group && c.num_experts % c.n_group == 0);
    require(c.num_experts_per_tok <= c.topk_group * (c.num_experts / c.n_group));
  }
  // Whatever parses has a descriptor whose forward check answers (yes or a
  // refusal naming the reason), never a crash.
  const Status forward = check_forward_supported(c);
  require(forward.is_ok() || !forward.message().empty());

  const int layers = static_cast<int>(std::min<int64_t>(c.num_hidden_layers, 64));
  for (int i = 0; i < layers; ++i) {
    if (c.is_moe_layer(i)) {
      require(c.num_experts > 0);
    } else {
      require(c.intermediate_size > 0);
    }
    const auto w = c.sliding_window_for_layer(i);
    if (w) require(*w > 0 && c.sliding_window && *w == *c.sliding_window);
  }
  const int past = static_cast<int>(c.num_hidden_layers);
  require(!c.is_moe_layer(-1) && !c.is_moe_layer(past));
  require(!c.sliding_window_for_layer(-1) && !c.sliding_window_for_layer(past));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1u << 16)) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto c = parse_hf_config(text, "fuzz");
  if (!c.is_ok()) {
    require(!c.status().message().empty());
    return 0;
  }
  check_config(*c);
  return 0;
}
