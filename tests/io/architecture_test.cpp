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
    MoeModelConfig c;
    c.architecture = d->id;
    c.model_type = std::string(d->model_type);
    c.vocab_size = 96;
    c.hidden_size = 32;
    c.num_hidden_layers = 3;
    c.num_attention_heads = 4;
    c.num_key_value_heads = 2;
    c.head_dim = 8;
    c.max_position_embeddings = 64;
    c.num_experts = 6;
    c.num_experts_per_tok = 2;
    c.moe_intermediate_size = 16;
    c.intermediate_size = d->dense_mlp_layers ? 48 : 16;
    if (d->has_shared_expert) c.shared_expert_intermediate_size = 40;
    if (d->dense_mlp_layers) c.mlp_only_layers = {1};
    d->synth_defaults(&c);
    ASSERT_TRUE(check_forward_supported(c).is_ok()) << check_forward_supported(c).to_string();
    nlohmann::json j;
    j["model_type"] = c.model_type;
    j["vocab_size"] = c.vocab_size;
    j["hidden_size"] = c.hidden_size;
    j["num_hidden_layers"] = c.num_hidden_layers;
    j["num_attention_heads"] = c.num_attention_heads;
    j["num_key_value_heads"] = c.num_key_value_heads;
    j["max_position_embeddings"] = c.max_position_embeddings;
    j["num_experts_per_tok"] = c.num_experts_per_tok;
    j["rms_norm_eps"] = c.rms_norm_eps;
    j["rope_theta"] = c.rope_theta;
    d->write_config_fields(c, &j);
    auto back = parse_hf_config(j.dump(), "written.json");
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    EXPECT_EQ(back->architecture, d->id);
    EXPECT_EQ(back->num_experts, c.num_experts);
    EXPECT_EQ(back->moe_intermediate_size, c.moe_intermediate_size);
    EXPECT_EQ(back->intermediate_size, c.intermediate_size);
    EXPECT_EQ(back->shared_expert_intermediate_size, c.shared_expert_intermediate_size);
    EXPECT_EQ(back->mlp_only_layers, c.mlp_only_layers);
    EXPECT_EQ(back->norm_topk_prob, c.norm_topk_prob);
    EXPECT_EQ(back->qkv_bias, c.qkv_bias);
    EXPECT_EQ(back->o_proj_bias, c.o_proj_bias);
    EXPECT_EQ(back->qk_norm, c.qk_norm);
    EXPECT_EQ(back->rms_norm_eps, c.rms_norm_eps);
    EXPECT_EQ(back->rope_theta, c.rope_theta);
    if (d->explicit_head_dim) {
      EXPECT_EQ(back->head_dim, c.head_dim);
    }
    for (int l = 0; l < c.num_hidden_layers; ++l) {
      EXPECT_EQ(back->is_moe_layer(l), c.is_moe_layer(l)) << "layer " << l;
      EXPECT_EQ(back->sliding_window_for_layer(l), c.sliding_window_for_layer(l)) << "layer " << l;
    }
    EXPECT_TRUE(check_forward_supported(*back).is_ok());
  }
}

}  // namespace
}  // namespace submoe::io
