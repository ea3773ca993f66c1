// The tensors of a hub checkpoint (names and shapes, doc §1.5 and §2-§5), derived
// from a resolved config; sparse-block and expert names come from the
// architecture adapter so they are spelled in one place.
#include "submoe/io/architecture.h"
#include "submoe/model/synth_checkpoint.h"

namespace submoe::model {

int64_t CheckpointTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t layout_parameters(std::span<const CheckpointTensor> layout) {
  int64_t n = 0;
  for (const CheckpointTensor& t : layout) n += t.numel();
  return n;
}

namespace {

void add(std::vector<CheckpointTensor>* out, std::string name, std::vector<int64_t> shape, SynthInit init) {
  out->push_back(CheckpointTensor{std::move(name), std::move(shape), init});
}

void add_swiglu(std::vector<CheckpointTensor>* out, const std::string& prefix, int64_t hidden, int64_t inner) {
  add(out, prefix + ".gate_proj.weight", {inner, hidden}, SynthInit::kNormal);
  add(out, prefix + ".up_proj.weight", {inner, hidden}, SynthInit::kNormal);
  add(out, prefix + ".down_proj.weight", {hidden, inner}, SynthInit::kNormal);
}

// Multi-head latent attention (DeepSeek, doc §6.3).
void add_mla_attention(std::vector<CheckpointTensor>* out, const io::MoeModelConfig& c, const std::string& a) {
  const int64_t H = c.hidden_size, nH = c.num_attention_heads, rope = c.qk_rope_head_dim;
  const int64_t q_width = nH * (c.qk_nope_head_dim + rope), rank = c.kv_lora_rank;
  if (c.q_lora_rank) {
    add(out, a + "q_a_proj.weight", {*c.q_lora_rank, H}, SynthInit::kNormal);
    add(out, a + "q_a_layernorm.weight", {*c.q_lora_rank}, SynthInit::kOnes);
    add(out, a + "q_b_proj.weight", {q_width, *c.q_lora_rank}, SynthInit::kNormal);
  } else {
    add(out, a + "q_proj.weight", {q_width, H}, SynthInit::kNormal);
  }
  add(out, a + "kv_a_proj_with_mqa.weight", {rank + rope, H}, SynthInit::kNormal);
  add(out, a + "kv_a_layernorm.weight", {rank}, SynthInit::kOnes);
  add(out, a + "kv_b_proj.weight", {nH * (c.qk_nope_head_dim + c.v_head_dim), rank}, SynthInit::kNormal);
  add(out, a + "o_proj.weight", {H, nH * c.v_head_dim}, SynthInit::kNormal);
}

void add_attention(std::vector<CheckpointTensor>* out, const io::MoeModelConfig& c, const std::string& prefix) {
  if (c.attention == io::AttentionKind::kMla) return add_mla_attention(out, c, prefix + "self_attn.");
  const int64_t H = c.hidden_size, D = c.head_dim;
  const int64_t q = c.num_attention_heads * D, kv = c.num_key_value_heads * D;
  const std::string a = prefix + "self_attn.";
  add(out, a + "q_proj.weight", {q, H}, SynthInit::kNormal);
  if (c.qkv_bias) add(out, a + "q_proj.bias", {q}, SynthInit::kZeros);
  add(out, a + "k_proj.weight", {kv, H}, SynthInit::kNormal);
  if (c.qkv_bias) add(out, a + "k_proj.bias", {kv}, SynthInit::kZeros);
  add(out, a + "v_proj.weight", {kv, H}, SynthInit::kNormal);
  if (c.qkv_bias) add(out, a + "v_proj.bias", {kv}, SynthInit::kZeros);
  add(out, a + "o_proj.weight", {H, q}, SynthInit::kNormal);
  if (c.o_proj_bias) add(out, a + "o_proj.bias", {H}, SynthInit::kZeros);
  if (c.attention_sinks) add(out, a + "sinks", {c.num_attention_heads}, SynthInit::kZeros);
  if (c.qk_norm == io::QkNorm::kPerHead) {
    add(out, a + "q_norm.weight", {D}, SynthInit::kOnes);
    add(out, a + "k_norm.weight", {D}, SynthInit::kOnes);
  } else if (c.qk_norm == io::QkNorm::kWholeProjection) {
    add(out, a + "q_norm.weight", {q}, SynthInit::kOnes);
    add(out, a + "k_norm.weight", {kv}, SynthInit::kOnes);
  }
}

}  // namespace

std::vector<CheckpointTensor> checkpoint_layout(const io::MoeModelConfig& c) {
  const io::ArchitectureDescriptor& arch = io::architecture_descriptor(c.architecture);
  const int64_t H = c.hidden_size, V = c.vocab_size, I = c.moe_intermediate_size;
  std::vector<CheckpointTensor> out;
  add(&out, "model.embed_tokens.weight", {V, H}, SynthInit::kEmbedding);
  for (int layer = 0; layer < c.num_hidden_layers; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    add(&out, p + "input_layernorm.weight", {H}, SynthInit::kOnes);
    add_attention(&out, c, p);
    add(&out, p + "post_attention_layernorm.weight", {H}, SynthInit::kOnes);
    if (!c.is_moe_layer(layer)) {
      add_swiglu(&out, p + "mlp", H, c.intermediate_size);
      continue;
    }
    const std::string block = sparse_block_prefix(arch, layer);
    const std::string router = block + "." + std::string(arch.router_module);
    add(&out, router + ".weight", {c.num_experts, H}, SynthInit::kRouter);
    if (c.router_linear_bias) add(&out, router + ".bias", {c.num_experts}, SynthInit::kZeros);
    if (c.router_selection == io::RouterSelection::kSigmoidGroupTop2)
      add(&out, block + ".gate.e_score_correction_bias", {c.num_experts}, SynthInit::kZeros);
    if (arch.has_shared_expert) {
      add_swiglu(&out, block + "." + std::string(arch.shared_expert_module), H, c.shared_expert_intermediate_size);
      if (!arch.shared_expert_gate.empty())
        add(&out, block + "." + std::string(arch.shared_expert_gate) + ".weight", {1, H}, SynthInit::kNormal);
    }
    if (arch.fused_transposed_experts) {  // GPT-OSS's hub layout
      const int64_t E = c.num_experts;
      add(&out, block + ".experts.gate_up_proj", {E, H, 2 * I}, SynthInit::kNormal);
      add(&out, block + ".experts.gate_up_proj_bias", {E, 2 * I}, SynthInit::kZeros);
      add(&out, block + ".experts.down_proj", {E, I, H}, SynthInit::kNormal);
      add(&out, block + ".experts.down_proj_bias", {E, H}, SynthInit::kZeros);
      continue;
    }
    for (int e = 0; e < c.num_experts; ++e) {
      add(&out, expert_tensor_name(arch, layer, e, io::ExpertProjection::kGate), {I, H}, SynthInit::kNormal);
      add(&out, expert_tensor_name(arch, layer, e, io::ExpertProjection::kUp), {I, H}, SynthInit::kNormal);
      add(&out, expert_tensor_name(arch, layer, e, io::ExpertProjection::kDown), {H, I}, SynthInit::kNormal);
    }
  }
  add(&out, "model.norm.weight", {H}, SynthInit::kOnes);
  if (!c.tie_word_embeddings) add(&out, "lm_head.weight", {V, H}, SynthInit::kNormal);
  return out;
}

}  // namespace submoe::model
