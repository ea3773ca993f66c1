// OLMoE (OlmoeForCausalLM): q/k RMSNorm over the whole projection (nH*D, nKV*D)
// before reshaping, then optional clamp of q, k, v to ±clip_qkv; every layer
// sparse; no shared expert, no sliding window.
#include "submoe/model/architecture.h"

namespace submoe::model {
namespace {

Status check_olmoe(const io::MoeModelConfig& c) {
  SUBMOE_RETURN_IF_ERROR(check_common_config(c));
  if (c.qk_norm != io::QkNorm::kWholeProjection)
    return invalid_argument("config: olmoe needs whole-projection QK-norm");
  if (c.has_shared_expert()) return invalid_argument("config: olmoe has no shared expert");
  return Status::ok();
}

}  // namespace

const ArchitectureAdapter& olmoe_adapter() {
  static const ArchitectureAdapter a{io::Architecture::kOlmoe, "olmoe", "mlp", "gate_proj", "up_proj", "down_proj",
                                     /*has_shared_expert=*/false, &check_olmoe};
  return a;
}

}  // namespace submoe::model
