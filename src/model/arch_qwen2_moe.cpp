// Qwen2-MoE (Qwen2MoeForCausalLM): Llama attention with q/k/v biases, routed
// experts plus one shared SwiGLU expert scaled by sigmoid(shared_expert_gate · x),
// dense MLP layers chosen by decoder_sparse_step / mlp_only_layers, top-k weights
// renormalised only with norm_topk_prob.
#include "submoe/model/architecture.h"

namespace submoe::model {
namespace {

Status check_qwen2_moe(const io::MoeModelConfig& c) {
  SUBMOE_RETURN_IF_ERROR(check_common_config(c));
  if (c.qk_norm != io::QkNorm::kNone) return invalid_argument("config: qwen2_moe has no QK-norm");
  if (!c.has_shared_expert())
    return invalid_argument("config: qwen2_moe needs shared_expert_intermediate_size > 0");
  return Status::ok();
}

}  // namespace

const ArchitectureAdapter& qwen2_moe_adapter() {
  static const ArchitectureAdapter a{io::Architecture::kQwen2Moe, "qwen2_moe", "mlp", "gate_proj", "up_proj",
                                     "down_proj", /*has_shared_expert=*/true, &check_qwen2_moe};
  return a;
}

}  // namespace submoe::model
