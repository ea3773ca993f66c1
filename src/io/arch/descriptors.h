// The registered descriptors (one file each in this folder) and what the
// families share; the public interface is submoe/io/architecture.h.
#pragma once

#include <nlohmann/json.hpp>

#include "../config_fields.h"
#include "submoe/io/architecture.h"

namespace submoe::io::arch {

extern const ArchitectureDescriptor kMixtral;
extern const ArchitectureDescriptor kQwen2Moe;
extern const ArchitectureDescriptor kQwen3Moe;
extern const ArchitectureDescriptor kOlmoe;

// Qwen2-MoE and Qwen3-MoE share their layer rules and these keys:
// moe_intermediate_size, norm_topk_prob, decoder_sparse_step, mlp_only_layers,
// use_sliding_window, sliding_window, max_window_layers.
Status parse_qwen_moe_fields(const ConfigFields& f, MoeModelConfig* c);
bool qwen_layer_slides(const MoeModelConfig& c, int layer);
void write_qwen_moe_fields(const MoeModelConfig& c, nlohmann::json* j);
// Qwen synth-model layer rules: one sparse step, no sliding layer.
void qwen_synth_layers(MoeModelConfig* c);

}  // namespace submoe::io::arch
