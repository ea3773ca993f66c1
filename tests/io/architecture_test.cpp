// The architecture registry: one complete descriptor per architecture, found by
// model_type and class name, unknown names refused, and each descriptor's
// config.json round trip (what it writes, the parser reads back unchanged).
#include "submoe/io/architecture.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

namespace submoe::io {
namespace {

TEST(ArchitectureRegistry, EveryEntryIsCompleteAndUnique) {
  std::set<Architecture> ids;
  std::set<std::string_view> types, classes;
  ASSERT_FALSE(architecture_registry().empty());
  for (const ArchitectureDescriptor* d : architecture_registry()) {
    ASSERT_NE(d, nullptr);
    SCOPED_TRACE(std::string(d->model_type));
    EXPECT_TRUE(ids.insert(d->id).second) << "id registered twice";
    EXPECT_TRUE(types.insert(d->model_type).second);
    EXPECT_TRUE(classes.insert(d->causal_lm_class).second);
    EXPECT_FALSE(d->model_type.empty());
    EXPECT_FALSE(d->causal_lm_class.empty());
    EXPECT_FALSE(d->sparse_block.empty());
    for (std::string_view p : d->expert_projection) EXPECT_FALSE(p.empty());
    EXPECT_NE(d->sparse_block_alias, d->sparse_block);
    EXPECT_NE(d->set_defaults, nullptr);
    EXPECT_NE(d->parse_fields, nullptr);
    EXPECT_NE(d->layer_slides, nullptr);
    EXPECT_NE(d->check_forward, nullptr);
    EXPECT_NE(d->synth_defaults, nullptr);
    EXPECT_NE(d->write_config_fields, nullptr);
    EXPECT_EQ(&architecture_descriptor(d->id), d);
    auto by_type = find_architecture(d->model_type);
    ASSERT_TRUE(by_type.is_ok());
    EXPECT_EQ(*by_type, d);
    EXPECT_EQ(find_architecture_by_class(d->causal_lm_class), d);
    EXPECT_EQ(architecture_model_type(d->id), d->model_type);
  }
  EXPECT_EQ(supported_architectures().size(), architecture_registry().size());
}

TEST(ArchitectureRegistry, UnknownNamesAreErrorsListingTheRegistry) {
  for (std::string_view name : {"llama", "", "MIXTRAL", "mixtral "}) {
    auto r = find_architecture(name);
    ASSERT_FALSE(r.is_ok()) << name;
    EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
    for (const ArchitectureDescriptor* d : architecture_registry())
      EXPECT_NE(r.status().message().find(d->model_type), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(find_architecture_by_class("LlamaForCausalLM"), nullptr);
  EXPECT_EQ(find_architecture_by_class(""), nullptr);
}

TEST(ArchitectureRegistry, TensorNamesSpellTheHubLayout) {
  const ArchitectureDescriptor& mixtral = architecture_descriptor(Architecture::kMixtral);
  EXPECT_EQ(sparse_block_prefix(mixtral, 3), "model.layers.3.block_sparse_moe");
  EXPECT_EQ(expert_tensor_name(mixtral, 3, 7, ExpertProjection::kGate), "model.layers.3.block_sparse_moe.experts.7.w1.weight");
  EXPECT_EQ(expert_tensor_name(mixtral, 0, 0, ExpertProjection::kUp), "model.layers.0.block_sparse_moe.experts.0.w3.weight");
  EXPECT_EQ(expert_tensor_name(mixtral, 0, 0, ExpertProjection::kDown), "model.layers.0.block_sparse_moe.experts.0.w2.weight");
  const ArchitectureDescriptor& qwen = architecture_descriptor(Architecture::kQwen2Moe);
  EXPECT_EQ(expert_tensor_name(qwen, 11, 59, ExpertProjection::kDown), "model.layers.11.mlp.experts.59.down_proj.weight");
  EXPECT_TRUE(qwen.has_shared_expert);
}

// A config written by each descriptor (the synth-model spelling) parses back to
// the same resolved fields, so write_config_fields and parse_fields agree.
TEST(ArchitectureRegistry, WrittenConfigParsesBack) {
  for (const ArchitectureDescriptor* d : architecture_registry()) {
    SCOPED_TRACE(std::string(d->model_type));
    nlohmann::json in = {{"model_type", d->model_type}, {"vocab_size", 96}, {"hidden_size", 32},
                         {"num_hidden_layers", 3},      {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                         {"max_position_embeddings", 64}, {"num_experts", 6}, {"num_experts_per_tok", 2},
                         {"moe_intermediate_size", 16}, {"intermediate_size", d->dense_mlp_layers ? 48 : 16}};
    if (d->has_shared_expert && d->shared_expert_gate.empty()) {  // DeepSeek: MLA, groups, dense first layer
      in.erase("num_experts");
      in.update({{"n_routed_experts", 6}, {"num_key_value_heads", 4}, {"n_group", 2}, {"topk_group", 1},
                 {"first_k_dense_replace", 1}, {"kv_lora_rank", 12}, {"q_lora_rank", 10}, {"qk_nope_head_dim", 6},
                 {"qk_rope_head_dim", 4}, {"v_head_dim", 5}, {"n_shared_experts", 2}, {"topk_method", "group_limited_greedy"}});
    }
    if (d->has_shared_expert && !d->shared_expert_gate.empty()) in["shared_expert_intermediate_size"] = 40;
    if (d->mlp_only_layers_key) in["mlp_only_layers"] = {1};
    auto c = parse_hf_config(in.dump(), "in.json");
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    ASSERT_TRUE(check_common_forward(*c).is_ok()) << check_common_forward(*c).to_string();
    d->synth_defaults(&*c);
    nlohmann::json j;
    j["model_type"] = c->model_type;
    j["vocab_size"] = c->vocab_size;
    j["hidden_size"] = c->hidden_size;
    j["num_hidden_layers"] = c->num_hidden_layers;
    j["num_attention_heads"] = c->num_attention_heads;
    j["num_key_value_heads"] = c->num_key_value_heads;
    j["max_position_embeddings"] = c->max_position_embeddings;
    j["num_experts_per_tok"] = c->num_experts_per_tok;
    j["rms_norm_eps"] = c->rms_norm_eps;
    j["rope_theta"] = c->rope_theta;
    d->write_config_fields(*c, &j);
    auto back = parse_hf_config(j.dump(), "written.json");
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_EQ(back->architecture, d->id);
    EXPECT_EQ(back->num_experts, c->num_experts);
    EXPECT_EQ(back->moe_intermediate_size, c->moe_intermediate_size);
    EXPECT_EQ(back->intermediate_size, c->intermediate_size);
    EXPECT_EQ(back->shared_expert_intermediate_size, c->shared_expert_intermediate_size);
    EXPECT_EQ(back->num_shared_experts, c->num_shared_experts);
    EXPECT_EQ(back->mlp_only_layers, c->mlp_only_layers);
    EXPECT_EQ(back->first_k_dense_replace, c->first_k_dense_replace);
    EXPECT_EQ(back->norm_topk_prob, c->norm_topk_prob);
    EXPECT_EQ(back->routed_scaling_factor, c->routed_scaling_factor);
    EXPECT_EQ(back->router_selection, c->router_selection);
    EXPECT_EQ(back->n_group, c->n_group);
    EXPECT_EQ(back->topk_group, c->topk_group);
    EXPECT_EQ(back->attention, c->attention);
    EXPECT_EQ(back->q_lora_rank, c->q_lora_rank);
    EXPECT_EQ(back->kv_lora_rank, c->kv_lora_rank);
    EXPECT_EQ(back->qk_nope_head_dim, c->qk_nope_head_dim);
    EXPECT_EQ(back->qk_rope_head_dim, c->qk_rope_head_dim);
    EXPECT_EQ(back->v_head_dim, c->v_head_dim);
    EXPECT_EQ(back->rope_interleave, c->rope_interleave);
    EXPECT_EQ(back->qkv_bias, c->qkv_bias);
    EXPECT_EQ(back->o_proj_bias, c->o_proj_bias);
    EXPECT_EQ(back->qk_norm, c->qk_norm);
    EXPECT_EQ(back->rms_norm_eps, c->rms_norm_eps);
    EXPECT_EQ(back->rope_theta, c->rope_theta);
    EXPECT_EQ(back->head_dim, c->head_dim);
    for (int l = 0; l < c->num_hidden_layers; ++l) {
      EXPECT_EQ(back->is_moe_layer(l), c->is_moe_layer(l)) << "layer " << l;
      EXPECT_EQ(back->sliding_window_for_layer(l), c->sliding_window_for_layer(l)) << "layer " << l;
    }
  }
}

}  // namespace
}  // namespace submoe::io
