// Architecture adapters: what differs between the supported MoE decoders beyond
// the resolved config fields (io::MoeModelConfig already settles biases, QK-norm
// placement, clip_qkv, norm_topk_prob and sliding windows). An adapter names the
// checkpoint tensors of its family and checks that a config is one the shared
// forward pass computes exactly. One file per architecture (src/model/arch_*.cpp);
// adding one means adding a row to the table, not a branch in the forward pass.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "submoe/core/status.h"
#include "submoe/io/hf_config.h"

namespace submoe::model {

enum class ExpertProjection { kGate = 0, kUp = 1, kDown = 2 };

struct ArchitectureAdapter {
  io::Architecture architecture;
  std::string_view model_type;
  // Module holding the router and experts of layer i (hub names):
  // "model.layers.{i}.<sparse_block>.gate.weight", "...experts.{e}.<proj>.weight".
  std::string_view sparse_block;
  // Hub names of one routed expert's projections: gate, up, down.
  std::string_view expert_gate;
  std::string_view expert_up;
  std::string_view expert_down;
  // Qwen2-MoE: "shared_expert" SwiGLU + "shared_expert_gate" [1, H] in the sparse block.
  bool has_shared_expert;
  // Rejects configs whose semantics this architecture's forward does not cover
  // (e.g. an activation other than silu), naming the field.
  Status (*check_config)(const io::MoeModelConfig& config);
};

const ArchitectureAdapter& mixtral_adapter();
const ArchitectureAdapter& qwen2_moe_adapter();
const ArchitectureAdapter& qwen3_moe_adapter();
const ArchitectureAdapter& olmoe_adapter();

// The adapter of config.architecture.
const ArchitectureAdapter& adapter_for(io::Architecture architecture);

// Checks shared by all adapters: positive sizes, head counts dividing, experts per
// token within the expert count, silu activation.
Status check_common_config(const io::MoeModelConfig& config);

// "model.layers.{layer}.{sparse_block}"
std::string sparse_block_prefix(const ArchitectureAdapter& arch, int layer);
// "model.layers.{layer}.{sparse_block}.experts.{expert}.{proj}.weight"
std::string expert_tensor_name(const ArchitectureAdapter& arch, int layer, int expert, ExpertProjection proj);

}  // namespace submoe::model
