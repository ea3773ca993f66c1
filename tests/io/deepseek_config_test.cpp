// DeepSeek-V2/V3 config.json (and Kimi-K2's, model_type kimi_k2, the same
// class) through the architecture registry: MLA ranks, routers, shared
// experts, dense first layers, transformers' defaults, and every inconsistent
// field refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "submoe/io/architecture.h"
#include "submoe/io/hf_config.h"

namespace submoe::io {
namespace {

// DeepSeek-V3's hub config.json (deepseek-ai/DeepSeek-V3), the fields it writes.
const char* kDeepseekV3 = R"({
  "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
  "vocab_size": 129280, "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048,
  "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
  "n_shared_experts": 1, "n_routed_experts": 256, "routed_scaling_factor": 2.5,
  "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128,
  "topk_method": "noaux_tc", "n_group": 8, "topk_group": 4, "num_experts_per_tok": 8, "moe_layer_freq": 1,
  "first_k_dense_replace": 3, "norm_topk_prob": true, "scoring_func": "sigmoid", "hidden_act": "silu",
  "max_position_embeddings": 163840, "rms_norm_eps": 1e-06, "rope_theta": 10000,
  "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                   "original_max_position_embeddings": 4096, "type": "yarn"},
  "attention_bias": false, "bos_token_id": 0, "eos_token_id": 1, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "num_nextn_predict_layers": 1})";

Result<MoeModelConfig> parse(const nlohmann::json& j) { return parse_hf_config(j.dump(), "test.json"); }

nlohmann::json v3() { return nlohmann::json::parse(kDeepseekV3); }

void expect_refused(nlohmann::json j, const std::string& field, const std::string& mention = "") {
  auto r = parse(j);
  ASSERT_FALSE(r.is_ok()) << j.dump();
  EXPECT_NE(r.status().message().find("'" + field + "'"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("test.json"), std::string::npos) << r.status().message();
  if (!mention.empty()) {
    EXPECT_NE(r.status().message().find(mention), std::string::npos) << r.status().message();
  }
}

TEST(DeepseekConfig, V3HubConfigResolves) {
  auto r = parse(v3());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const MoeModelConfig& c = *r;
  EXPECT_EQ(c.architecture, Architecture::kDeepseekV3);
  EXPECT_EQ(c.attention, AttentionKind::kMla);
  EXPECT_EQ(c.q_lora_rank, 1536);
  EXPECT_EQ(c.kv_lora_rank, 512);
  EXPECT_EQ(c.qk_nope_head_dim, 128);
  EXPECT_EQ(c.qk_rope_head_dim, 64);
  EXPECT_EQ(c.v_head_dim, 128);
  EXPECT_EQ(c.head_dim, 64);  // transformers: head_dim = qk_rope_head_dim
  EXPECT_TRUE(c.rope_interleave);
  EXPECT_EQ(c.rope_scaling.type, RopeType::kYarn);
  EXPECT_EQ(c.rope_scaling.factor, 40.0);
  EXPECT_EQ(c.rope_scaling.mscale_all_dim, 1.0);
  EXPECT_EQ(c.num_experts, 256);
  EXPECT_EQ(c.num_experts_per_tok, 8);
  EXPECT_EQ(c.num_shared_experts, 1);
  EXPECT_EQ(c.shared_expert_intermediate_size, 2048);
  EXPECT_TRUE(c.has_shared_expert());
  EXPECT_EQ(c.router_selection, RouterSelection::kSigmoidGroupTop2);
  EXPECT_EQ(c.n_group, 8);
  EXPECT_EQ(c.topk_group, 4);
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_EQ(c.routed_scaling_factor, 2.5);
  EXPECT_EQ(c.first_k_dense_replace, 3);
  for (int l = 0; l < 61; ++l) EXPECT_EQ(c.is_moe_layer(l), l >= 3) << l;
  EXPECT_FALSE(c.sliding_window_for_layer(10));
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{1});
  EXPECT_EQ(c.descriptor().shared_expert_module, "shared_experts");
  EXPECT_TRUE(c.descriptor().shared_expert_gate.empty());
}

TEST(DeepseekConfig, ClassDefaultsAreTransformersDeepseekV3Config) {
  auto r = parse(nlohmann::json{{"model_type", "deepseek_v3"}});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->hidden_size, 7168);
  EXPECT_EQ(r->num_hidden_layers, 61);
  EXPECT_EQ(r->num_experts, 256);
  EXPECT_EQ(r->max_position_embeddings, 4096);
  EXPECT_EQ(r->rope_theta, 10000.0);
  EXPECT_EQ(r->rope_scaling.type, RopeType::kDefault);
  EXPECT_EQ(r->bos_token_id, 0);
}

// Kimi-K2's configs name their own model_type and use DeepSeek-V3's class. The
// values are Kimi-K2's published shape (61 layers, 64 heads, 384 experts of
// which 8 are routed per token, 1 shared, first layer dense, vocab 163840).
TEST(DeepseekConfig, KimiK2IsDeepseekV3) {
  nlohmann::json j = v3();
  j["model_type"] = "kimi_k2";
  j["num_attention_heads"] = 64;
  j["num_key_value_heads"] = 64;
  j["n_routed_experts"] = 384;
  j["n_group"] = 1;
  j["topk_group"] = 1;
  j["first_k_dense_replace"] = 1;
  j["vocab_size"] = 163840;
  j["rope_theta"] = 50000.0;
  auto r = parse(j);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->architecture, Architecture::kDeepseekV3);
  EXPECT_EQ(r->model_type, "kimi_k2");
  EXPECT_EQ(r->num_experts, 384);
  EXPECT_EQ(&r->descriptor(), &architecture_descriptor(Architecture::kDeepseekV3));
  auto by_alias = find_architecture("kimi_k2");
  ASSERT_TRUE(by_alias.is_ok());
  EXPECT_EQ((*by_alias)->id, Architecture::kDeepseekV3);
}

TEST(DeepseekConfig, V2Routers) {
  nlohmann::json j = v3();
  j["model_type"] = "deepseek_v2";
  j["architectures"] = {"DeepseekV2ForCausalLM"};
  for (const char* k : {"n_group", "topk_group", "topk_method", "scoring_func", "norm_topk_prob"}) j.erase(k);
  auto greedy = parse(j);
  ASSERT_TRUE(greedy.is_ok()) << greedy.status().to_string();
  EXPECT_EQ(greedy->architecture, Architecture::kDeepseekV2);
  EXPECT_EQ(greedy->router_selection, RouterSelection::kSoftmaxTopK);
  EXPECT_FALSE(greedy->norm_topk_prob);
  j["topk_method"] = "group_limited_greedy";
  expect_refused(j, "n_group", "group_limited_greedy");
  j["n_group"] = 8;
  j["topk_group"] = 3;
  auto limited = parse(j);
  ASSERT_TRUE(limited.is_ok()) << limited.status().to_string();
  EXPECT_EQ(limited->router_selection, RouterSelection::kSoftmaxGroupMax);
  EXPECT_EQ(limited->topk_group, 3);
  j["topk_method"] = "noaux_tc";
  expect_refused(j, "topk_method", "greedy, group_limited_greedy");
}

TEST(DeepseekConfig, InconsistentFieldsAreRefusedByName) {
  auto with = [](const char* key, nlohmann::json v) {
    nlohmann::json j = v3();
    j[key] = std::move(v);
    return j;
  };
  expect_refused(with("topk_group", 9), "topk_group", "exceeds n_group");
  expect_refused(with("n_group", 7), "n_group", "does not divide n_routed_experts");
  expect_refused(with("n_group", 256), "n_group", "at least 2");  // top-2 per group needs 2 experts
  nlohmann::json few = v3();
  few["n_group"] = 64;
  few["topk_group"] = 1;  // 4 experts reachable, 8 wanted
  expect_refused(few, "num_experts_per_tok", "exceeds");
  expect_refused(with("kv_lora_rank", 0), "kv_lora_rank", "positive");
  expect_refused(with("q_lora_rank", -4), "q_lora_rank", "positive");
  expect_refused(with("qk_rope_head_dim", 63), "qk_rope_head_dim", "even");
  expect_refused(with("v_head_dim", 0), "v_head_dim");
  expect_refused(with("head_dim", 128), "head_dim", "qk_rope_head_dim");
  expect_refused(with("num_key_value_heads", 16), "num_key_value_heads", "latent");
  expect_refused(with("moe_layer_freq", 2), "moe_layer_freq", "only 1");
  expect_refused(with("num_local_experts", 128), "n_routed_experts", "disagrees");
  expect_refused(with("first_k_dense_replace", -1), "first_k_dense_replace");
  expect_refused(with("routed_scaling_factor", 0), "routed_scaling_factor");
  expect_refused(with("n_shared_experts", 5000), "n_shared_experts");
  expect_refused(with("kv_lora_rank", "512"), "kv_lora_rank", "integer");
  // A plain q_proj (q_lora_rank null) is a valid MLA layout.
  auto plain_q = parse(with("q_lora_rank", nullptr));
  ASSERT_TRUE(plain_q.is_ok()) << plain_q.status().to_string();
  EXPECT_FALSE(plain_q->q_lora_rank);
}

// The forward runs every variant; the softmax scale carries YaRN's
// mscale(factor, mscale_all_dim)^2 (transformers yarn_apply_mscale) for V2 and V3
// alike, and only for a non-default rope type with a non-zero mscale_all_dim.
TEST(DeepseekConfig, ForwardAcceptedWithTheYarnSoftmaxScale) {
  const double m = 0.1 * 1.0 * std::log(40.0) + 1.0;  // the hub config: factor 40, mscale_all_dim 1
  for (const char* type : {"deepseek_v3", "kimi_k2", "deepseek_v2"}) {
    nlohmann::json j = v3();
    j["model_type"] = type;
    if (std::string(type) == "deepseek_v2") {
      j["architectures"] = {"DeepseekV2ForCausalLM"};
      j["topk_method"] = "group_limited_greedy";
    }
    auto r = parse(j);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    const Status s = check_forward_supported(*r);
    EXPECT_TRUE(s.is_ok()) << type << ": " << s.to_string();
    EXPECT_NEAR(r->attention_scale_multiplier, m * m, 1e-12) << type;
  }
  nlohmann::json j = v3();
  j["rope_scaling"]["mscale_all_dim"] = 0;
  auto no_all_dim = parse(j);
  ASSERT_TRUE(no_all_dim.is_ok()) << no_all_dim.status().to_string();
  EXPECT_EQ(no_all_dim->attention_scale_multiplier, 1.0);
  j.erase("rope_scaling");
  auto plain = parse(j);
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  EXPECT_EQ(plain->attention_scale_multiplier, 1.0);
}

}  // namespace
}  // namespace submoe::io
