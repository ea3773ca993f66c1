// config.json parsing: hub-shaped configs of the four architectures, every default,
// v4/v5 spellings, per-architecture rules and error reporting.
#include <gtest/gtest.h>

#include "io/io_test_util.h"
#include "submoe/io/hf_config.h"

namespace submoe::io {
namespace {

MoeModelConfig parse_ok(const std::string& text) {
  auto r = parse_hf_config(text, "test.json");
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? *r : MoeModelConfig{};
}

Status parse_err(const std::string& text) {
  auto r = parse_hf_config(text, "test.json");
  EXPECT_FALSE(r.is_ok()) << text;
  return r.is_ok() ? Status::ok() : r.status();
}

void expect_error(const std::string& text, ErrorCode code, const std::string& mention) {
  const Status s = parse_err(text);
  EXPECT_EQ(s.code(), code) << text << " -> " << s.to_string();
  EXPECT_NE(s.message().find(mention), std::string::npos) << text << " -> " << s.message();
  EXPECT_NE(s.message().find("test.json"), std::string::npos) << s.message();
}

std::vector<int> moe_layers(const MoeModelConfig& c) {
  std::vector<int> v;
  for (int i = 0; i < c.num_hidden_layers; ++i)
    if (c.is_moe_layer(i)) v.push_back(i);
  return v;
}

// Hub configs of released checkpoints (values as published).
const char* kMixtral8x7B = R"({
  "architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
  "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
  "max_position_embeddings": 32768, "model_type": "mixtral", "num_attention_heads": 32, "num_experts_per_tok": 2,
  "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8, "output_router_logits": false,
  "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.02, "sliding_window": null,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.36.0.dev0",
  "use_cache": true, "vocab_size": 32000})";

const char* kQwen15MoeA27B = R"({
  "architectures": ["Qwen2MoeForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
  "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
  "intermediate_size": 5632, "max_position_embeddings": 8192, "max_window_layers": 21, "model_type": "qwen2_moe",
  "num_attention_heads": 16, "num_hidden_layers": 24, "num_key_value_heads": 16, "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.39.0.dev0", "use_cache": true, "use_sliding_window": false, "vocab_size": 151936,
  "decoder_sparse_step": 1, "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
  "num_experts_per_tok": 4, "num_experts": 60, "norm_topk_prob": false, "output_router_logits": false,
  "router_aux_loss_coef": 0.001})";

const char* kQwen3_30B_A3B = R"({
  "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
  "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 6144, "max_position_embeddings": 40960,
  "max_window_layers": 48, "mlp_only_layers": [], "model_type": "qwen3_moe", "moe_intermediate_size": 768,
  "norm_topk_prob": true, "num_attention_heads": 32, "num_experts": 128, "num_experts_per_tok": 8,
  "num_hidden_layers": 48, "num_key_value_heads": 4, "output_router_logits": false, "rms_norm_eps": 1e-06,
  "rope_scaling": null, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001, "sliding_window": null,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true,
  "use_sliding_window": false, "vocab_size": 151936})";

const char* kOlmoe1B7B = R"({
  "architectures": ["OlmoeForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "clip_qkv": null,
  "eos_token_id": 50279, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
  "intermediate_size": 1024, "max_position_embeddings": 4096, "model_type": "olmoe", "norm_topk_prob": false,
  "num_attention_heads": 16, "num_experts": 64, "num_experts_per_tok": 8, "num_hidden_layers": 16,
  "num_key_value_heads": 16, "output_router_logits": false, "pad_token_id": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": null, "rope_theta": 10000.0, "router_aux_loss_coef": 0.01, "tie_word_embeddings": false,
  "torch_dtype": "float32", "transformers_version": "4.43.0.dev0", "use_cache": true, "vocab_size": 50304})";

TEST(HfConfig, Mixtral8x7B) {
  const MoeModelConfig c = parse_ok(kMixtral8x7B);
  EXPECT_EQ(c.architecture, Architecture::kMixtral);
  EXPECT_EQ(c.model_type, "mixtral");
  EXPECT_EQ(c.architectures, std::vector<std::string>{"MixtralForCausalLM"});
  EXPECT_EQ(c.vocab_size, 32000);
  EXPECT_EQ(c.hidden_size, 4096);
  EXPECT_EQ(c.intermediate_size, 14336);
  EXPECT_EQ(c.moe_intermediate_size, 14336);
  EXPECT_EQ(c.shared_expert_intermediate_size, 0);
  EXPECT_FALSE(c.has_shared_expert());
  EXPECT_EQ(c.num_hidden_layers, 32);
  EXPECT_EQ(c.num_attention_heads, 32);
  EXPECT_EQ(c.num_key_value_heads, 8);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.max_position_embeddings, 32768);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.rope_scaling.type, RopeType::kDefault);
  EXPECT_FALSE(c.sliding_window.has_value());
  EXPECT_EQ(c.num_experts, 8);
  EXPECT_EQ(c.num_experts_per_tok, 2);
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_FALSE(c.o_proj_bias);
  EXPECT_EQ(c.qk_norm, QkNorm::kNone);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{2});
  EXPECT_FALSE(c.pad_token_id.has_value());
  EXPECT_EQ(c.dtype, "bfloat16");
  EXPECT_EQ(moe_layers(c).size(), 32u);
  for (int i = 0; i < 32; ++i) EXPECT_FALSE(c.sliding_window_for_layer(i).has_value());
}

TEST(HfConfig, Qwen15MoeA27B) {
  const MoeModelConfig c = parse_ok(kQwen15MoeA27B);
  EXPECT_EQ(c.architecture, Architecture::kQwen2Moe);
  EXPECT_EQ(c.intermediate_size, 5632);
  EXPECT_EQ(c.moe_intermediate_size, 1408);
  EXPECT_EQ(c.shared_expert_intermediate_size, 5632);
  EXPECT_TRUE(c.has_shared_expert());
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.num_experts, 60);
  EXPECT_EQ(c.num_experts_per_tok, 4);
  EXPECT_FALSE(c.norm_topk_prob);
  EXPECT_TRUE(c.qkv_bias);  // v4 Qwen2-MoE always has q/k/v biases
  EXPECT_FALSE(c.o_proj_bias);
  EXPECT_EQ(c.qk_norm, QkNorm::kNone);
  EXPECT_EQ(c.max_window_layers, 21);
  EXPECT_EQ(c.sliding_window, 32768);
  EXPECT_FALSE(c.use_sliding_window);
  for (int i = 0; i < 24; ++i) EXPECT_FALSE(c.sliding_window_for_layer(i).has_value()) << i;
  EXPECT_EQ(c.bos_token_id, 151643);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{151643});
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(moe_layers(c).size(), 24u);
}

TEST(HfConfig, Qwen3_30B_A3B) {
  const MoeModelConfig c = parse_ok(kQwen3_30B_A3B);
  EXPECT_EQ(c.architecture, Architecture::kQwen3Moe);
  EXPECT_EQ(c.head_dim, 128);  // explicit, != 2048 / 32
  EXPECT_EQ(c.num_attention_heads, 32);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.moe_intermediate_size, 768);
  EXPECT_EQ(c.num_experts, 128);
  EXPECT_EQ(c.num_experts_per_tok, 8);
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_EQ(c.qk_norm, QkNorm::kPerHead);
  EXPECT_FALSE(c.has_shared_expert());
  EXPECT_EQ(c.max_position_embeddings, 40960);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{151645});
  EXPECT_EQ(moe_layers(c).size(), 48u);
}

TEST(HfConfig, Olmoe1B7B) {
  const MoeModelConfig c = parse_ok(kOlmoe1B7B);
  EXPECT_EQ(c.architecture, Architecture::kOlmoe);
  EXPECT_EQ(c.intermediate_size, 1024);
  EXPECT_EQ(c.moe_intermediate_size, 1024);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.num_experts, 64);
  EXPECT_EQ(c.num_experts_per_tok, 8);
  EXPECT_FALSE(c.norm_topk_prob);
  EXPECT_FALSE(c.clip_qkv.has_value());
  EXPECT_EQ(c.qk_norm, QkNorm::kWholeProjection);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_EQ(c.pad_token_id, 1);
  EXPECT_FALSE(c.bos_token_id.has_value());
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{50279});
  EXPECT_EQ(c.dtype, "float32");
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
}

TEST(HfConfig, ClassDefaultsWhenKeysAreAbsent) {
  {
    const MoeModelConfig c = parse_ok(R"({"model_type":"mixtral"})");
    EXPECT_EQ(c.vocab_size, 32000);
    EXPECT_EQ(c.hidden_size, 4096);
    EXPECT_EQ(c.intermediate_size, 14336);
    EXPECT_EQ(c.num_hidden_layers, 32);
    EXPECT_EQ(c.num_attention_heads, 32);
    EXPECT_EQ(c.num_key_value_heads, 8);
    EXPECT_EQ(c.head_dim, 128);
    EXPECT_EQ(c.max_position_embeddings, 131072);
    EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
    EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
    EXPECT_EQ(c.num_experts, 8);
    EXPECT_EQ(c.num_experts_per_tok, 2);
    EXPECT_EQ(c.bos_token_id, 1);
    EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{2});
    EXPECT_FALSE(c.tie_word_embeddings);
    EXPECT_FALSE(c.sliding_window.has_value());
    EXPECT_EQ(c.dtype, "");
  }
  {
    const MoeModelConfig c = parse_ok(R"({"model_type":"qwen2_moe"})");
    EXPECT_EQ(c.vocab_size, 151936);
    EXPECT_EQ(c.hidden_size, 2048);
    EXPECT_EQ(c.intermediate_size, 5632);
    EXPECT_EQ(c.moe_intermediate_size, 1408);
    EXPECT_EQ(c.shared_expert_intermediate_size, 5632);
    EXPECT_EQ(c.num_hidden_layers, 24);
    EXPECT_EQ(c.num_attention_heads, 16);
    EXPECT_EQ(c.num_key_value_heads, 16);
    EXPECT_EQ(c.max_position_embeddings, 32768);
    EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
    EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
    EXPECT_EQ(c.num_experts, 60);
    EXPECT_EQ(c.num_experts_per_tok, 4);
    EXPECT_FALSE(c.norm_topk_prob);
    EXPECT_EQ(c.decoder_sparse_step, 1);
    EXPECT_TRUE(c.mlp_only_layers.empty());
    EXPECT_FALSE(c.use_sliding_window);
    EXPECT_EQ(c.sliding_window, 4096);
    EXPECT_EQ(c.max_window_layers, 28);
    EXPECT_TRUE(c.qkv_bias);
    EXPECT_FALSE(c.bos_token_id.has_value());
    EXPECT_TRUE(c.eos_token_ids.empty());
  }
  {
    const MoeModelConfig c = parse_ok(R"({"model_type":"qwen3_moe"})");
    EXPECT_EQ(c.intermediate_size, 6144);
    EXPECT_EQ(c.moe_intermediate_size, 768);
    EXPECT_EQ(c.num_attention_heads, 32);
    EXPECT_EQ(c.num_key_value_heads, 4);
    EXPECT_EQ(c.head_dim, 64);  // no head_dim key: hidden / heads
    EXPECT_EQ(c.num_experts, 128);
    EXPECT_EQ(c.num_experts_per_tok, 8);
    EXPECT_FALSE(c.norm_topk_prob);
    EXPECT_FALSE(c.attention_bias);
    EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
    EXPECT_EQ(c.max_position_embeddings, 32768);
  }
  {
    const MoeModelConfig c = parse_ok(R"({"model_type":"olmoe"})");
    EXPECT_EQ(c.vocab_size, 50304);
    EXPECT_EQ(c.intermediate_size, 2048);
    EXPECT_EQ(c.num_hidden_layers, 16);
    EXPECT_EQ(c.num_attention_heads, 16);
    EXPECT_EQ(c.num_key_value_heads, 16);  // defaults to num_attention_heads
    EXPECT_EQ(c.max_position_embeddings, 4096);
    EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
    EXPECT_EQ(c.num_experts, 64);
    EXPECT_EQ(c.num_experts_per_tok, 8);
    EXPECT_EQ(c.pad_token_id, 1);
    EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{50279});
  }
  // OLMoE's kv heads follow a non-default head count.
  EXPECT_EQ(parse_ok(R"({"model_type":"olmoe","num_attention_heads":8})").num_key_value_heads, 8);
  EXPECT_EQ(parse_ok(R"({"model_type":"mixtral","num_key_value_heads":null})").num_key_value_heads, 32);
}

TEST(HfConfig, V4AndV5SpellingsAgree) {
  const std::string base = R"("model_type":"qwen3_moe","hidden_size":64,"num_attention_heads":4,
      "num_key_value_heads":2,"head_dim":32,"num_hidden_layers":3,"num_experts":8,"num_experts_per_tok":2,
      "moe_intermediate_size":48,"intermediate_size":96,"vocab_size":300)";
  const MoeModelConfig v4 =
      parse_ok("{" + base + R"(,"rope_theta":500000.0,"rope_scaling":{"type":"linear","factor":2},"torch_dtype":"float32"})");
  const MoeModelConfig v5 = parse_ok(
      "{" + base + R"(,"rope_parameters":{"rope_type":"linear","rope_theta":500000,"factor":2.0},"dtype":"float32"})");
  for (const MoeModelConfig* c : {&v4, &v5}) {
    EXPECT_DOUBLE_EQ(c->rope_theta, 5e5);
    EXPECT_EQ(c->rope_scaling.type, RopeType::kLinear);
    EXPECT_DOUBLE_EQ(c->rope_scaling.factor, 2.0);
    EXPECT_TRUE(c->rope_scaling.factor_given);
    EXPECT_EQ(c->dtype, "float32");
    EXPECT_EQ(c->head_dim, 32);
  }
  // v5 default rope_parameters only carry theta.
  const MoeModelConfig d = parse_ok(R"({"model_type":"olmoe","rope_parameters":{"rope_type":"default","rope_theta":12345}})");
  EXPECT_DOUBLE_EQ(d.rope_theta, 12345.0);
  EXPECT_EQ(d.rope_scaling.type, RopeType::kDefault);
  // rope_parameters wins over rope_theta; dtype wins over torch_dtype.
  const MoeModelConfig both = parse_ok(
      R"({"model_type":"olmoe","rope_theta":1.0,"rope_parameters":{"rope_type":"default","rope_theta":7.0},
          "torch_dtype":"float16","dtype":"bfloat16"})");
  EXPECT_DOUBLE_EQ(both.rope_theta, 7.0);
  EXPECT_EQ(both.dtype, "bfloat16");
  // A default-type rope_parameters leaves a v4 rope_scaling in force.
  const MoeModelConfig mixed = parse_ok(
      R"({"model_type":"mixtral","rope_parameters":{"rope_type":"default","rope_theta":3.0},
          "rope_scaling":{"rope_type":"dynamic","factor":4}})");
  EXPECT_DOUBLE_EQ(mixed.rope_theta, 3.0);
  EXPECT_EQ(mixed.rope_scaling.type, RopeType::kDynamic);
  EXPECT_DOUBLE_EQ(mixed.rope_scaling.factor, 4.0);
}

TEST(HfConfig, RopeScalingKinds) {
  const MoeModelConfig y = parse_ok(R"({"model_type":"mixtral","max_position_embeddings":8192,
      "rope_scaling":{"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":2048,"beta_fast":16,
                      "beta_slow":2,"mscale":0.707,"mscale_all_dim":1.0,"attention_factor":1.25,"truncate":false}})");
  EXPECT_EQ(y.rope_scaling.type, RopeType::kYarn);
  EXPECT_DOUBLE_EQ(y.rope_scaling.factor, 4.0);
  EXPECT_EQ(y.rope_scaling.original_max_position_embeddings, 2048);
  EXPECT_DOUBLE_EQ(y.rope_scaling.beta_fast, 16.0);
  EXPECT_DOUBLE_EQ(y.rope_scaling.beta_slow, 2.0);
  EXPECT_EQ(y.rope_scaling.mscale, 0.707);
  EXPECT_EQ(y.rope_scaling.mscale_all_dim, 1.0);
  EXPECT_EQ(y.rope_scaling.attention_factor, 1.25);
  EXPECT_FALSE(y.rope_scaling.truncate);

  const MoeModelConfig yd = parse_ok(R"({"model_type":"mixtral","rope_scaling":{"type":"yarn","factor":2}})");
  EXPECT_DOUBLE_EQ(yd.rope_scaling.beta_fast, 32.0);
  EXPECT_DOUBLE_EQ(yd.rope_scaling.beta_slow, 1.0);
  EXPECT_TRUE(yd.rope_scaling.truncate);
  EXPECT_FALSE(yd.rope_scaling.attention_factor.has_value());
  EXPECT_FALSE(yd.rope_scaling.original_max_position_embeddings.has_value());

  // v5 YaRN without factor (derived from the position ratio by the model).
  const MoeModelConfig yf = parse_ok(
      R"({"model_type":"mixtral","rope_parameters":{"rope_type":"yarn","rope_theta":1e4,"original_max_position_embeddings":1024}})");
  EXPECT_FALSE(yf.rope_scaling.factor_given);

  const MoeModelConfig l3 = parse_ok(R"({"model_type":"qwen2_moe","rope_scaling":{"rope_type":"llama3","factor":8.0,
      "low_freq_factor":1.0,"high_freq_factor":4.0,"original_max_position_embeddings":8192}})");
  EXPECT_EQ(l3.rope_scaling.type, RopeType::kLlama3);
  EXPECT_DOUBLE_EQ(l3.rope_scaling.low_freq_factor, 1.0);
  EXPECT_DOUBLE_EQ(l3.rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(l3.rope_scaling.original_max_position_embeddings, 8192);

  EXPECT_EQ(rope_type_name(RopeType::kYarn), "yarn");
  expect_error(R"({"model_type":"mixtral","rope_scaling":{"rope_type":"longrope","factor":2}})", ErrorCode::kUnsupported,
               "longrope");
  expect_error(R"({"model_type":"mixtral","rope_scaling":{"rope_type":"linear"}})", ErrorCode::kInvalidArgument,
               "rope_scaling.factor");
  expect_error(R"({"model_type":"mixtral","rope_scaling":{"rope_type":"linear","factor":"2"}})",
               ErrorCode::kInvalidArgument, "rope_scaling.factor");
  expect_error(R"({"model_type":"mixtral","rope_scaling":{"rope_type":"llama3","factor":8,"low_freq_factor":1,
      "high_freq_factor":4}})", ErrorCode::kInvalidArgument, "original_max_position_embeddings");
  expect_error(R"({"model_type":"mixtral","rope_scaling":{"factor":2}})", ErrorCode::kInvalidArgument, "rope_type");
  expect_error(R"({"model_type":"mixtral","rope_scaling":{"rope_type":"yarn"}})", ErrorCode::kInvalidArgument,
               "factor");
  expect_error(R"({"model_type":"mixtral","rope_scaling":[1]})", ErrorCode::kInvalidArgument, "'rope_scaling'");
  expect_error(R"({"model_type":"mixtral","rope_theta":0})", ErrorCode::kInvalidArgument, "rope_theta");
  expect_error(R"({"model_type":"mixtral","rope_parameters":{"full_attention":{"rope_type":"default"}}})",
               ErrorCode::kUnsupported, "rope_parameters");
}

TEST(HfConfig, MoeLayerRulesMatchHf) {
  // Qwen: MoE iff not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0.
  const MoeModelConfig a = parse_ok(
      R"({"model_type":"qwen2_moe","num_hidden_layers":8,"decoder_sparse_step":2,"mlp_only_layers":[3]})");
  EXPECT_EQ(moe_layers(a), (std::vector<int>{1, 5, 7}));
  const MoeModelConfig b = parse_ok(R"({"model_type":"qwen3_moe","num_hidden_layers":6,"mlp_only_layers":[0,5,17]})");
  EXPECT_EQ(moe_layers(b), (std::vector<int>{1, 2, 3, 4}));
  const MoeModelConfig c3 = parse_ok(R"({"model_type":"qwen3_moe","num_hidden_layers":7,"decoder_sparse_step":3})");
  EXPECT_EQ(moe_layers(c3), (std::vector<int>{2, 5}));
  const MoeModelConfig none = parse_ok(R"({"model_type":"qwen2_moe","num_hidden_layers":4,"num_experts":0})");
  EXPECT_TRUE(moe_layers(none).empty());
  // Mixtral and OLMoE ignore the Qwen keys entirely.
  const MoeModelConfig m = parse_ok(R"({"model_type":"mixtral","num_hidden_layers":4,"decoder_sparse_step":2,
      "mlp_only_layers":[0]})");
  EXPECT_EQ(moe_layers(m), (std::vector<int>{0, 1, 2, 3}));
  const MoeModelConfig o = parse_ok(R"({"model_type":"olmoe","num_hidden_layers":3,"mlp_only_layers":[1]})");
  EXPECT_EQ(moe_layers(o), (std::vector<int>{0, 1, 2}));
  EXPECT_FALSE(o.is_moe_layer(-1));
  EXPECT_FALSE(o.is_moe_layer(3));
  expect_error(R"({"model_type":"qwen2_moe","decoder_sparse_step":0})", ErrorCode::kInvalidArgument,
               "decoder_sparse_step");
  expect_error(R"({"model_type":"qwen2_moe","mlp_only_layers":[1,"2"]})", ErrorCode::kInvalidArgument,
               "mlp_only_layers");
}

TEST(HfConfig, SlidingWindowRules) {
  const MoeModelConfig m = parse_ok(R"({"model_type":"mixtral","num_hidden_layers":3,"sliding_window":4096})");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(m.sliding_window_for_layer(i), 4096);
  const MoeModelConfig q = parse_ok(R"({"model_type":"qwen2_moe","num_hidden_layers":4,"use_sliding_window":true,
      "sliding_window":16,"max_window_layers":2})");
  EXPECT_FALSE(q.sliding_window_for_layer(0).has_value());
  EXPECT_FALSE(q.sliding_window_for_layer(1).has_value());
  EXPECT_EQ(q.sliding_window_for_layer(2), 16);
  EXPECT_EQ(q.sliding_window_for_layer(3), 16);
  const MoeModelConfig lt = parse_ok(R"({"model_type":"qwen2_moe","num_hidden_layers":3,"use_sliding_window":true,
      "sliding_window":8,"layer_types":["sliding_attention","full_attention","sliding_attention"]})");
  EXPECT_EQ(lt.sliding_window_for_layer(0), 8);
  EXPECT_FALSE(lt.sliding_window_for_layer(1).has_value());
  EXPECT_EQ(lt.sliding_window_for_layer(2), 8);
  // v5 writes sliding_window 0 when disabled.
  const MoeModelConfig z = parse_ok(R"({"model_type":"qwen2_moe","num_hidden_layers":2,"sliding_window":0,
      "layer_types":["full_attention","full_attention"]})");
  EXPECT_FALSE(z.sliding_window.has_value());
  const MoeModelConfig o = parse_ok(R"({"model_type":"olmoe","num_hidden_layers":2,"sliding_window":8})");
  EXPECT_FALSE(o.sliding_window_for_layer(0).has_value());
  expect_error(R"({"model_type":"qwen2_moe","num_hidden_layers":3,"layer_types":["full_attention"]})",
               ErrorCode::kInvalidArgument, "layer_types");
  expect_error(R"({"model_type":"qwen2_moe","num_hidden_layers":1,"layer_types":["chunked_attention"]})",
               ErrorCode::kUnsupported, "chunked_attention");
}

TEST(HfConfig, AttentionBiasAndNormPerArchitecture) {
  EXPECT_FALSE(parse_ok(R"({"model_type":"qwen2_moe","qkv_bias":false})").qkv_bias);
  // attention_bias means nothing to Qwen2-MoE (it has qkv_bias) or Mixtral.
  const MoeModelConfig q2 = parse_ok(R"({"model_type":"qwen2_moe","attention_bias":false})");
  EXPECT_TRUE(q2.qkv_bias);
  EXPECT_FALSE(q2.o_proj_bias);
  const MoeModelConfig mx = parse_ok(R"({"model_type":"mixtral","attention_bias":true})");
  EXPECT_FALSE(mx.qkv_bias);
  EXPECT_FALSE(mx.o_proj_bias);
  for (const char* t : {"qwen3_moe", "olmoe"}) {
    const MoeModelConfig c = parse_ok(std::string(R"({"model_type":")") + t + R"(","attention_bias":true})");
    EXPECT_TRUE(c.qkv_bias) << t;
    EXPECT_TRUE(c.o_proj_bias) << t;
  }
  const MoeModelConfig clip = parse_ok(R"({"model_type":"olmoe","clip_qkv":0.5})");
  EXPECT_EQ(clip.clip_qkv, 0.5);
  expect_error(R"({"model_type":"olmoe","clip_qkv":-1})", ErrorCode::kInvalidArgument, "clip_qkv");
  // head_dim is honoured by Mixtral and Qwen3-MoE only.
  EXPECT_EQ(parse_ok(R"({"model_type":"mixtral","head_dim":96})").head_dim, 96);
  EXPECT_EQ(parse_ok(R"({"model_type":"mixtral","head_dim":null})").head_dim, 128);
  EXPECT_EQ(parse_ok(R"({"model_type":"qwen2_moe","head_dim":96})").head_dim, 128);
  EXPECT_EQ(parse_ok(R"({"model_type":"olmoe","head_dim":96})").head_dim, 128);
}

TEST(HfConfig, TokensAndAliases) {
  const MoeModelConfig e = parse_ok(R"({"model_type":"qwen3_moe","eos_token_id":[151645,151643],"bos_token_id":null})");
  EXPECT_EQ(e.eos_token_ids, (std::vector<int64_t>{151645, 151643}));
  EXPECT_FALSE(e.bos_token_id.has_value());
  EXPECT_TRUE(parse_ok(R"({"model_type":"mixtral","eos_token_id":null})").eos_token_ids.empty());
  EXPECT_TRUE(parse_ok(R"({"model_type":"mixtral","tie_word_embeddings":true})").tie_word_embeddings);
  EXPECT_EQ(parse_ok(R"({"model_type":"mixtral","num_experts":4})").num_experts, 4);
  EXPECT_EQ(parse_ok(R"({"model_type":"olmoe","num_local_experts":4,"num_experts":4,"num_experts_per_tok":2})").num_experts, 4);
  expect_error(R"({"model_type":"mixtral","num_local_experts":4,"num_experts":8})", ErrorCode::kInvalidArgument,
               "num_local_experts");
  // No model_type: the architectures list decides.
  EXPECT_EQ(parse_ok(R"({"architectures":["OlmoeForCausalLM"]})").architecture, Architecture::kOlmoe);
}

TEST(HfConfig, WrongTypesNameTheKey) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"model_type":"mixtral","hidden_size":"4096"})", "hidden_size"},
      {R"({"model_type":"mixtral","hidden_size":4096.5})", "hidden_size"},
      {R"({"model_type":"mixtral","hidden_size":null})", "hidden_size"},
      {R"({"model_type":"mixtral","num_hidden_layers":true})", "num_hidden_layers"},
      {R"({"model_type":"mixtral","rms_norm_eps":"1e-5"})", "rms_norm_eps"},
      {R"({"model_type":"mixtral","rope_theta":[1]})", "rope_theta"},
      {R"({"model_type":"mixtral","tie_word_embeddings":1})", "tie_word_embeddings"},
      {R"({"model_type":"qwen2_moe","norm_topk_prob":"true"})", "norm_topk_prob"},
      {R"({"model_type":"mixtral","eos_token_id":"2"})", "eos_token_id"},
      {R"({"model_type":"mixtral","eos_token_id":[2,"3"]})", "eos_token_id"},
      {R"({"model_type":"mixtral","torch_dtype":16})", "torch_dtype"},
      {R"({"model_type":"mixtral","architectures":"MixtralForCausalLM"})", "architectures"},
      {R"({"model_type":"olmoe","clip_qkv":"8"})", "clip_qkv"},
      {R"({"model_type":7})", "model_type"},
  };
  for (const auto& [text, key] : cases) expect_error(text, ErrorCode::kInvalidArgument, std::string("'") + key + "'");
}

TEST(HfConfig, InconsistentValuesAreErrors) {
  expect_error(R"({"model_type":"mixtral","num_attention_heads":32,"num_key_value_heads":5})",
               ErrorCode::kInvalidArgument, "num_key_value_heads");
  expect_error(R"({"model_type":"mixtral","num_experts_per_tok":9})", ErrorCode::kInvalidArgument,
               "num_experts_per_tok");
  expect_error(R"({"model_type":"mixtral","num_local_experts":0})", ErrorCode::kInvalidArgument, "num_experts");
  expect_error(R"({"model_type":"mixtral","hidden_size":0})", ErrorCode::kInvalidArgument, "hidden_size");
  expect_error(R"({"model_type":"mixtral","num_attention_heads":0})", ErrorCode::kInvalidArgument,
               "num_attention_heads");
  expect_error(R"({"model_type":"mixtral","vocab_size":-1})", ErrorCode::kInvalidArgument, "vocab_size");
  // Widths the loader multiplies are bounded, so no product can overflow.
  expect_error(R"({"model_type":"qwen3_moe","num_attention_heads":2147483648,"num_key_value_heads":2147483648,
                  "head_dim":8589934592})",
               ErrorCode::kInvalidArgument, "num_attention_heads");
  expect_error(R"({"model_type":"qwen3_moe","head_dim":131072})", ErrorCode::kInvalidArgument, "head_dim");
  expect_error(R"({"model_type":"qwen3_moe","num_attention_heads":65536,"num_key_value_heads":4,"head_dim":128})",
               ErrorCode::kInvalidArgument, "x num_attention_heads");
  expect_error(R"({"model_type":"qwen3_moe","moe_intermediate_size":8388608})", ErrorCode::kInvalidArgument,
               "moe_intermediate_size");
  expect_error(R"({"model_type":"mixtral","hidden_act":"gelu"})", ErrorCode::kUnsupported, "hidden_act");
  expect_error(R"({"model_type":"qwen2_moe","mlp_only_layers":[0],"intermediate_size":0})",
               ErrorCode::kInvalidArgument, "intermediate_size");
  // A dense-free Qwen model does not need intermediate_size.
  EXPECT_EQ(parse_ok(R"({"model_type":"qwen3_moe","intermediate_size":0})").intermediate_size, 0);
}

TEST(HfConfig, UnsupportedAndMalformedDocuments) {
  const Status s = parse_err(R"({"model_type":"llama","hidden_size":4096})");
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported);
  for (const char* t : {"llama", "mixtral", "qwen2_moe", "qwen3_moe", "olmoe"})
    EXPECT_NE(s.message().find(t), std::string::npos) << s.message();
  expect_error(R"({"hidden_size":4096})", ErrorCode::kUnsupported, "qwen3_moe");
  expect_error(R"({"model_type":"mixtral",)", ErrorCode::kCorruptData, "JSON");
  expect_error(R"([1,2])", ErrorCode::kInvalidArgument, "object");
  expect_error(R"({"model_type":"mixtral","hidden_size":64,"hidden_size":128})", ErrorCode::kCorruptData,
               "duplicate key 'hidden_size'");
  EXPECT_EQ(architecture_model_type(Architecture::kQwen2Moe), "qwen2_moe");
  EXPECT_EQ(supported_architectures().size(), 7u);
  for (Architecture a : supported_architectures()) {
    auto back = parse_model_type(architecture_model_type(a));
    ASSERT_TRUE(back.is_ok());
    EXPECT_EQ(*back, a);
  }
}

TEST(HfConfig, LoadFromFileAndDirectory) {
  testing::TempDir dir;
  testing::write_bytes(dir.file("config.json"), kOlmoe1B7B);
  auto a = load_hf_config(dir.path());
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ(a->architecture, Architecture::kOlmoe);
  auto b = load_hf_config(dir.file("config.json"));
  ASSERT_TRUE(b.is_ok());
  auto c = load_hf_config(dir.file("missing.json"));
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kNotFound);
  testing::write_bytes(dir.file("config.json"), R"({"model_type":"mixtral","hidden_size":"x"})");
  auto d = load_hf_config(dir.path());
  ASSERT_FALSE(d.is_ok());
  EXPECT_NE(d.status().message().find(dir.file("config.json")), std::string::npos) << d.status().message();
}

}  // namespace
}  // namespace submoe::io

namespace submoe::io {
namespace {

// GPT-OSS: GptOssConfig's defaults (head_dim 64 when absent, attention biases
// forced on, even layers slide, the hub's YaRN), and a bad swiglu_limit
// refused by name.
TEST(HfConfig, GptOssDefaultsAndBadSwigluLimit) {
  auto c = parse_hf_config(R"({"model_type": "gpt_oss", "hidden_size": 2880, "num_hidden_layers": 4,
                               "attention_bias": false})");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->architecture, Architecture::kGptOss);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_TRUE(c->qkv_bias && c->o_proj_bias && c->attention_sinks && c->router_linear_bias && c->expert_bias);
  EXPECT_EQ(c->router_selection, RouterSelection::kTopKSoftmax);
  EXPECT_EQ(c->expert_activation, ExpertActivation::kClampedSwiGlu);
  EXPECT_EQ(c->swiglu_limit, 7.0);
  EXPECT_EQ(c->sliding_window_for_layer(0), std::optional<int64_t>(128));
  EXPECT_EQ(c->sliding_window_for_layer(1), std::nullopt);
  EXPECT_EQ(c->rope_scaling.type, RopeType::kYarn);
  EXPECT_FALSE(c->rope_scaling.truncate);
  EXPECT_EQ(c->moe_intermediate_size, 2880);
  auto bad = parse_hf_config(R"({"model_type": "gpt_oss", "swiglu_limit": -1})");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("swiglu_limit"), std::string::npos) << bad.status().message();
  auto typed = parse_hf_config(R"({"model_type": "gpt_oss", "swiglu_alpha": "fast"})");
  ASSERT_FALSE(typed.is_ok());
  EXPECT_NE(typed.status().message().find("swiglu_alpha"), std::string::npos) << typed.status().message();
}

}  // namespace
}  // namespace submoe::io
