// Architecture descriptors: everything that differs between the supported MoE
// decoder families, each family in one file (src/io/arch/<model_type>.cpp) and
// one line of the registry (src/io/arch/registry.cpp). A descriptor owns
//   - its identity: config.json model_type and the "architectures" class name;
//   - its config.json: the HF config class's defaults and the keys of its own
//     (aliases and per-architecture rules resolved into MoeModelConfig's plain
//     fields, which are the forward pass's hooks: QK-norm, biases, clip_qkv,
//     shared expert, top-k renormalisation, dense layers, sliding windows);
//   - its layer rules (which layers are sparse, which slide);
//   - its hub tensor names (sparse block, router, expert projections);
//   - what the shared forward computes exactly for it (a config check);
//   - its synthetic checkpoints: the released models' constants and the
//     config.json keys transformers writes for it.
// Nothing outside the descriptor files branches on the architecture: the
// parser, the weight loader, parameter accounting, synth-model and the forward
// read the descriptor or the resolved config.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "submoe/core/status.h"
#include "submoe/io/hf_config.h"

namespace submoe::io {

class ConfigFields;  // typed access to one config.json object (src/io/config_fields.h)

enum class ExpertProjection { kGate = 0, kUp = 1, kDown = 2 };

struct ArchitectureDescriptor {
  Architecture id;
  std::string_view model_type;       // config.json "model_type"
  std::string_view causal_lm_class;  // its "architectures" entry (infers a missing model_type)
  // Another model_type configs of this class carry (Kimi-K2: "kimi_k2"); empty if none.
  std::string_view model_type_alias;

  // Hub names: layer i's router is "model.layers.{i}.<sparse_block>.<router_module>.weight",
  // expert e's projections "model.layers.{i}.<sparse_block>.experts.{e}.<name>.weight".
  std::string_view sparse_block;
  std::string_view expert_projection[3];  // gate, up, down
  // Another spelling of the sparse block some exports use (empty if none):
  // Mixtral's transformers-v5 in-memory (fused) names live under "mlp".
  std::string_view sparse_block_alias;
  // A shared SwiGLU expert in the sparse block: module "<shared_expert_module>",
  // scaled by sigmoid("<shared_expert_gate>" . x) when that name is not empty.
  bool has_shared_expert = false;
  std::string_view shared_expert_module;
  std::string_view shared_expert_gate;
  // config.json head_dim is honoured (else head_dim = hidden / heads, as HF).
  bool explicit_head_dim = false;
  // The family may have dense MLP layers, of width intermediate_size (else
  // every layer is sparse and intermediate_size is the expert width).
  bool dense_mlp_layers = false;
  // Those layers are chosen by decoder_sparse_step / mlp_only_layers (Qwen).
  bool mlp_only_layers_key = false;
  // The router module inside the sparse block: "<sparse_block>.<router_module>.weight".
  std::string_view router_module = "gate";
  // Hub checkpoints hold each layer's experts fused and transposed, with
  // biases (GPT-OSS: experts.gate_up_proj [E, H, 2I], gate/up interleaved,
  // experts.down_proj [E, I, H], *_bias); opening one splits them into the
  // per-expert names above (io/fused_experts.cpp). synth-model writes them so.
  bool fused_transposed_experts = false;

  // config.json: the config class's defaults, then the keys only this family
  // has (read after the common ones; `root` is the whole object).
  void (*set_defaults)(MoeModelConfig* c);
  Status (*parse_fields)(const ConfigFields& root, MoeModelConfig* c);
  // The sliding window of `layer` when config.json has no layer_types (the
  // window is set and positive).
  bool (*layer_slides)(const MoeModelConfig& c, int layer);
  // Rejects configs the shared forward does not compute exactly for this
  // family, naming the field (after check_common_forward).
  Status (*check_forward)(const MoeModelConfig& c);
  // synth-model: the released checkpoints' constants (eps, theta, top-k
  // renormalisation, biases, QK-norm, layer rules), on top of the sizes.
  void (*synth_defaults)(MoeModelConfig* c);
  // The config.json keys of this family, as transformers 4.57 writes them.
  void (*write_config_fields)(const MoeModelConfig& c, nlohmann::json* out);
};

// Every registered descriptor, in registry order.
std::span<const ArchitectureDescriptor* const> architecture_registry();
// The descriptor of `id` (every Architecture value has exactly one; test).
const ArchitectureDescriptor& architecture_descriptor(Architecture id);
// By config.json model_type; kUnsupported listing the supported ones otherwise.
Result<const ArchitectureDescriptor*> find_architecture(std::string_view model_type);
// By "architectures" class name; null if none matches.
const ArchitectureDescriptor* find_architecture_by_class(std::string_view class_name);
// "mixtral, qwen2_moe, ..." for error messages.
std::string supported_model_types();

// "model.layers.{layer}.{sparse_block}"
std::string sparse_block_prefix(const ArchitectureDescriptor& arch, int layer);
// "model.layers.{layer}.{sparse_block}.experts.{expert}.{projection}.weight"
std::string expert_tensor_name(const ArchitectureDescriptor& arch, int layer, int expert, ExpertProjection proj);

// Checks every family's forward needs: positive sizes, head counts dividing,
// experts per token within the expert count, silu, even head_dim (RoPE).
Status check_common_forward(const MoeModelConfig& config);
// check_common_forward, then the config's own descriptor's check_forward.
Status check_forward_supported(const MoeModelConfig& config);

}  // namespace submoe::io
