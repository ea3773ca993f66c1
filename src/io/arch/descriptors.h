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
extern const ArchitectureDescriptor kDeepseekV2;
extern const ArchitectureDescriptor kDeepseekV3;
extern const ArchitectureDescriptor kGptOss;

// Qwen2-MoE and Qwen3-MoE share their layer rules and these keys:
// moe_intermediate_size, norm_topk_prob, decoder_sparse_step, mlp_only_layers,
// use_sliding_window, sliding_window, max_window_layers.
Status parse_qwen_moe_fields(const ConfigFields& f, MoeModelConfig* c);
bool qwen_layer_slides(const MoeModelConfig& c, int layer);
void write_qwen_moe_fields(const MoeModelConfig& c, nlohmann::json* j);
// Qwen synth-model layer rules: one sparse step, no sliding layer.
void qwen_synth_layers(MoeModelConfig* c);

// DeepSeek-V2 and -V3 share multi-head latent attention, n_routed_experts,
// n_shared_experts, first_k_dense_replace and routed_scaling_factor; each
// checks its own router keys after this.
Status parse_deepseek_fields(const ConfigFields& f, MoeModelConfig* c);
// Group-limited routing must be able to pick k experts from topk_group of
// n_group equal groups (each of at least `min_group` experts).
Status check_router_groups(const ConfigFields& f, const MoeModelConfig& c, int64_t min_group);
Status check_deepseek_forward(const MoeModelConfig& c);
void write_deepseek_fields(const MoeModelConfig& c, nlohmann::json* j);
// synth-model's DeepSeek shape from hidden, heads, experts and widths already
// set: DeepSeek-V3's MLA proportions per head of d = hidden / heads
// (qk_nope = v = d, qk_rope = d / 2, kv_lora_rank = 4d, q_lora_rank = 12d;
// 128, 64, 512 and 1536 at V3's d = 128), one dense first layer, shared experts
// of moe_intermediate_size (as many as the shared width holds, at least one),
// and up to 8 expert groups of which half are kept.
void deepseek_synth_shape(MoeModelConfig* c, double routed_scaling_factor);

}  // namespace submoe::io::arch
