// Mixtral (MixtralForCausalLM): Llama attention without biases or QK-norm,
// optional sliding window on every layer, sparse block "block_sparse_moe" with
// experts w1 (gate), w3 (up), w2 (down); the router always renormalises its top-k.
#include "submoe/model/architecture.h"

namespace submoe::model {
namespace {

Status check_mixtral(const io::MoeModelConfig& c) {
  SUBMOE_RETURN_IF_ERROR(check_common_config(c));
  if (!c.norm_topk_prob) return invalid_argument("config: mixtral always renormalises top-k weights");
  if (c.qk_norm != io::QkNorm::kNone || c.qkv_bias || c.o_proj_bias || c.has_shared_expert())
    return invalid_argument("config: mixtral has no QK-norm, attention bias or shared expert");
  return Status::ok();
}

}  // namespace

const ArchitectureAdapter& mixtral_adapter() {
  static const ArchitectureAdapter a{io::Architecture::kMixtral, "mixtral", "block_sparse_moe", "w1", "w3", "w2",
                                     /*has_shared_expert=*/false, &check_mixtral};
  return a;
}

}  // namespace submoe::model
