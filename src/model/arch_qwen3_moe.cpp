// Qwen3-MoE (Qwen3MoeForCausalLM): per-head q/k RMSNorm over head_dim before RoPE
// (head_dim may differ from hidden/heads), optional biases on q, k, v and o,
// no shared expert, dense layers via decoder_sparse_step / mlp_only_layers.
#include "submoe/model/architecture.h"

namespace submoe::model {
namespace {

Status check_qwen3_moe(const io::MoeModelConfig& c) {
  SUBMOE_RETURN_IF_ERROR(check_common_config(c));
  if (c.qk_norm != io::QkNorm::kPerHead) return invalid_argument("config: qwen3_moe needs per-head QK-norm");
  if (c.has_shared_expert()) return invalid_argument("config: qwen3_moe has no shared expert");
  return Status::ok();
}

}  // namespace

const ArchitectureAdapter& qwen3_moe_adapter() {
  static const ArchitectureAdapter a{io::Architecture::kQwen3Moe, "qwen3_moe", "mlp", "gate_proj", "up_proj",
                                     "down_proj", /*has_shared_expert=*/false, &check_qwen3_moe};
  return a;
}

}  // namespace submoe::model
