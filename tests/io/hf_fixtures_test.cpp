// The transformers-written fixtures (tests/fixtures/<arch>/, see README there):
// config.json, config.v5.json and config.v4-legacy.json must parse to the same
// model, and what the parsed config implies (MoE layers, tensor shapes, biases,
// norms, tying, parameter count) must match the checkpoint transformers saved
// and the facts it recorded in golden.json.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "submoe/io/file_util.h"
#include "submoe/io/hf_config.h"
#include "submoe/io/param_stats.h"
#include "submoe/io/safetensors.h"

namespace submoe::io {
namespace {

const std::string kFixtures = std::string(SUBMOE_SOURCE_DIR) + "/tests/fixtures/";

class HfFixture : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    dir_ = kFixtures + GetParam();
    if (!std::filesystem::exists(dir_ + "/config.json")) GTEST_SKIP() << "no fixture at " << dir_;
    auto text = read_file_to_string(dir_ + "/golden.json");
    ASSERT_TRUE(text.is_ok()) << text.status().to_string();
    golden_ = nlohmann::json::parse(*text);
  }
  std::string dir_;
  nlohmann::json golden_;
};

void expect_same_model(const MoeModelConfig& a, const MoeModelConfig& b, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(a.architecture, b.architecture);
  EXPECT_EQ(a.model_type, b.model_type);
  EXPECT_EQ(a.architectures, b.architectures);
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.hidden_size, b.hidden_size);
  EXPECT_EQ(a.intermediate_size, b.intermediate_size);
  EXPECT_EQ(a.moe_intermediate_size, b.moe_intermediate_size);
  EXPECT_EQ(a.shared_expert_intermediate_size, b.shared_expert_intermediate_size);
  EXPECT_EQ(a.num_hidden_layers, b.num_hidden_layers);
  EXPECT_EQ(a.num_attention_heads, b.num_attention_heads);
  EXPECT_EQ(a.num_key_value_heads, b.num_key_value_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.hidden_act, b.hidden_act);
  EXPECT_EQ(a.rms_norm_eps, b.rms_norm_eps);
  EXPECT_EQ(a.rope_theta, b.rope_theta);
  EXPECT_EQ(a.rope_scaling.type, b.rope_scaling.type);
  EXPECT_EQ(a.rope_scaling.factor, b.rope_scaling.factor);
  EXPECT_EQ(a.rope_scaling.factor_given, b.rope_scaling.factor_given);
  EXPECT_EQ(a.rope_scaling.original_max_position_embeddings, b.rope_scaling.original_max_position_embeddings);
  EXPECT_EQ(a.rope_scaling.attention_factor, b.rope_scaling.attention_factor);
  EXPECT_EQ(a.rope_scaling.beta_fast, b.rope_scaling.beta_fast);
  EXPECT_EQ(a.rope_scaling.beta_slow, b.rope_scaling.beta_slow);
  EXPECT_EQ(a.rope_scaling.truncate, b.rope_scaling.truncate);
  EXPECT_EQ(a.max_position_embeddings, b.max_position_embeddings);
  for (int i = 0; i < a.num_hidden_layers; ++i) {
    EXPECT_EQ(a.sliding_window_for_layer(i), b.sliding_window_for_layer(i)) << "layer " << i;
    EXPECT_EQ(a.is_moe_layer(i), b.is_moe_layer(i)) << "layer " << i;
  }
  EXPECT_EQ(a.qkv_bias, b.qkv_bias);
  EXPECT_EQ(a.o_proj_bias, b.o_proj_bias);
  EXPECT_EQ(a.qk_norm, b.qk_norm);
  EXPECT_EQ(a.clip_qkv, b.clip_qkv);
  EXPECT_EQ(a.num_experts, b.num_experts);
  EXPECT_EQ(a.num_experts_per_tok, b.num_experts_per_tok);
  EXPECT_EQ(a.norm_topk_prob, b.norm_topk_prob);
  EXPECT_EQ(a.decoder_sparse_step, b.decoder_sparse_step);
  EXPECT_EQ(a.mlp_only_layers, b.mlp_only_layers);
  EXPECT_EQ(a.tie_word_embeddings, b.tie_word_embeddings);
  EXPECT_EQ(a.bos_token_id, b.bos_token_id);
  EXPECT_EQ(a.eos_token_ids, b.eos_token_ids);
  EXPECT_EQ(a.pad_token_id, b.pad_token_id);
  EXPECT_EQ(a.dtype, b.dtype);
}

TEST_P(HfFixture, AllConfigSpellingsDescribeTheSameModel) {
  auto v4 = load_hf_config(dir_ + "/config.json");
  ASSERT_TRUE(v4.is_ok()) << v4.status().to_string();
  EXPECT_EQ(v4->model_type, golden_["model_type"].get<std::string>());
  int compared = 0;
  for (const char* variant : {"config.v5.json", "config.v4-legacy.json"}) {
    const std::string p = dir_ + "/" + variant;
    if (!std::filesystem::exists(p)) continue;
    auto other = load_hf_config(p);
    ASSERT_TRUE(other.is_ok()) << other.status().to_string();
    expect_same_model(*v4, *other, variant);
    ++compared;
  }
  EXPECT_GT(compared, 0);
}

TEST_P(HfFixture, ConfigMatchesWhatTransformersRecorded) {
  auto c = load_hf_config(dir_);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  const auto& s = golden_["config_summary"];
  EXPECT_EQ(c->hidden_size, s["hidden_size"].get<int64_t>());
  EXPECT_EQ(c->num_hidden_layers, s["num_hidden_layers"].get<int64_t>());
  EXPECT_EQ(c->num_attention_heads, s["num_attention_heads"].get<int64_t>());
  EXPECT_EQ(c->num_key_value_heads, s["num_key_value_heads"].get<int64_t>());
  EXPECT_EQ(c->head_dim, s["head_dim"].get<int64_t>());
  EXPECT_EQ(c->vocab_size, s["vocab_size"].get<int64_t>());
  EXPECT_EQ(c->num_experts, s["num_experts"].get<int64_t>());
  EXPECT_EQ(c->num_experts_per_tok, s["num_experts_per_tok"].get<int64_t>());
  EXPECT_EQ(c->norm_topk_prob, s["renormalize_topk"].get<bool>());
  EXPECT_EQ(c->tie_word_embeddings, s["tie_word_embeddings"].get<bool>());
  std::vector<int> moe;
  for (int i = 0; i < c->num_hidden_layers; ++i)
    if (c->is_moe_layer(i)) moe.push_back(i);
  EXPECT_EQ(moe, golden_["moe_layers"].get<std::vector<int>>());
}

// Shape of `name` in the checkpoint, or {} with a failure when absent.
std::vector<int64_t> shape_of(const SafetensorsModel& m, const std::string& name) {
  const TensorView* t = m.find(name);
  EXPECT_NE(t, nullptr) << "missing " << name;
  return t ? t->shape : std::vector<int64_t>{};
}

TEST_P(HfFixture, TensorsFollowTheConfigRules) {
  auto cr = load_hf_config(dir_);
  ASSERT_TRUE(cr.is_ok());
  const MoeModelConfig& c = *cr;
  auto mr = SafetensorsModel::open(dir_);
  ASSERT_TRUE(mr.is_ok()) << mr.status().to_string();
  const SafetensorsModel& m = **mr;
  const int64_t H = c.hidden_size, D = c.head_dim, nH = c.num_attention_heads, nKV = c.num_key_value_heads;
  using S = std::vector<int64_t>;

  // golden.json lists every parameter (a tied lm_head is listed but not stored).
  const auto& shapes = golden_["parameter_shapes"];
  size_t stored = 0;
  for (const auto& [name, shape] : shapes.items()) {
    if (c.tie_word_embeddings && name == "lm_head.weight") {
      EXPECT_EQ(m.find(name), nullptr);
      continue;
    }
    ++stored;
    EXPECT_EQ(shape_of(m, name), shape.get<S>()) << name;
  }
  EXPECT_EQ(m.tensors().size(), stored);

  EXPECT_EQ(shape_of(m, "model.embed_tokens.weight"), (S{c.vocab_size, H}));
  EXPECT_EQ(m.find("lm_head.weight") != nullptr, !c.tie_word_embeddings);
  const bool mixtral = c.architecture == Architecture::kMixtral;
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    const std::string p = "model.layers." + std::to_string(l) + ".";
    EXPECT_EQ(shape_of(m, p + "self_attn.q_proj.weight"), (S{nH * D, H}));
    EXPECT_EQ(shape_of(m, p + "self_attn.k_proj.weight"), (S{nKV * D, H}));
    EXPECT_EQ(shape_of(m, p + "self_attn.v_proj.weight"), (S{nKV * D, H}));
    EXPECT_EQ(shape_of(m, p + "self_attn.o_proj.weight"), (S{H, nH * D}));
    EXPECT_EQ(m.find(p + "self_attn.q_proj.bias") != nullptr, c.qkv_bias);
    EXPECT_EQ(m.find(p + "self_attn.v_proj.bias") != nullptr, c.qkv_bias);
    EXPECT_EQ(m.find(p + "self_attn.o_proj.bias") != nullptr, c.o_proj_bias);
    switch (c.qk_norm) {
      case QkNorm::kNone:
        EXPECT_EQ(m.find(p + "self_attn.q_norm.weight"), nullptr);
        break;
      case QkNorm::kPerHead:
        EXPECT_EQ(shape_of(m, p + "self_attn.q_norm.weight"), (S{D}));
        EXPECT_EQ(shape_of(m, p + "self_attn.k_norm.weight"), (S{D}));
        break;
      case QkNorm::kWholeProjection:
        EXPECT_EQ(shape_of(m, p + "self_attn.q_norm.weight"), (S{nH * D}));
        EXPECT_EQ(shape_of(m, p + "self_attn.k_norm.weight"), (S{nKV * D}));
        break;
    }
    const std::string moe = p + (mixtral ? "block_sparse_moe." : "mlp.");
    if (c.is_moe_layer(l)) {
      EXPECT_EQ(shape_of(m, moe + "gate.weight"), (S{c.num_experts, H}));
      for (int e = 0; e < c.num_experts; ++e) {
        const std::string x = moe + "experts." + std::to_string(e) + ".";
        const char* gate = mixtral ? "w1" : "gate_proj";
        const char* down = mixtral ? "w2" : "down_proj";
        EXPECT_EQ(shape_of(m, x + gate + ".weight"), (S{c.moe_intermediate_size, H}));
        EXPECT_EQ(shape_of(m, x + down + ".weight"), (S{H, c.moe_intermediate_size}));
      }
      EXPECT_EQ(m.find(moe + "experts." + std::to_string(c.num_experts) + ".w1.weight"), nullptr);
      if (c.has_shared_expert()) {
        EXPECT_EQ(shape_of(m, p + "mlp.shared_expert.up_proj.weight"), (S{c.shared_expert_intermediate_size, H}));
        EXPECT_EQ(shape_of(m, p + "mlp.shared_expert_gate.weight"), (S{1, H}));
      }
    } else {
      EXPECT_EQ(shape_of(m, p + "mlp.gate_proj.weight"), (S{c.intermediate_size, H}));
      EXPECT_EQ(shape_of(m, p + "mlp.down_proj.weight"), (S{H, c.intermediate_size}));
      EXPECT_EQ(m.find(p + "mlp.gate.weight"), nullptr);
    }
  }
}

TEST_P(HfFixture, ParameterCountsMatchTransformers) {
  auto c = load_hf_config(dir_);
  ASSERT_TRUE(c.is_ok());
  auto m = SafetensorsModel::open(dir_);
  ASSERT_TRUE(m.is_ok());
  const ParameterCounts n = count_parameters((*m)->tensors(), c->architecture, c->num_experts_per_tok);
  EXPECT_EQ(n.total, golden_["num_parameters"].get<int64_t>());  // model.num_parameters(), tied once
  int moe = 0;
  for (int i = 0; i < c->num_hidden_layers; ++i) moe += c->is_moe_layer(i);
  EXPECT_EQ(n.moe_layers, moe);
  EXPECT_EQ(n.max_experts_per_layer, c->num_experts);
  // Expert tensors per MoE layer: E experts x 3 projections of I x H.
  EXPECT_EQ(n.routed_experts(), int64_t{moe} * c->num_experts * 3 * c->moe_intermediate_size * c->hidden_size);
  ASSERT_TRUE(n.active_per_token.has_value());
  EXPECT_EQ(*n.active_per_token,
            n.total - n.routed_experts() / c->num_experts * (c->num_experts - c->num_experts_per_tok));
  EXPECT_EQ(n.by_role[static_cast<size_t>(TensorRole::kOther)], 0);
}

TEST_P(HfFixture, GoldenTensorsFileReads) {
  // golden.safetensors was written by safetensors' torch API: another reference file.
  auto f = SafetensorsFile::open(dir_ + "/golden.safetensors");
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  const auto& want = golden_["golden_tensors"];
  EXPECT_EQ((*f)->tensors().size(), want.size());
  for (const auto& [name, shape] : want.items()) {
    const TensorView* t = (*f)->find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->dtype, DType::kF32);
    EXPECT_EQ(t->shape, shape.get<std::vector<int64_t>>()) << name;
  }
  // The recorded checksum of prompt 0's logits, recomputed from the file.
  const TensorView* logits = (*f)->find("prompt0.logits");
  ASSERT_NE(logits, nullptr);
  auto v = to_f32(*logits);
  ASSERT_TRUE(v.is_ok());
  double sum = 0, abs_sum = 0;
  for (float x : *v) {
    sum += x;
    abs_sum += std::abs(x);
  }
  const auto& ck = golden_["prompts"][0]["logits_checksum"];
  EXPECT_NEAR(sum, ck["sum"].get<double>(), 1e-6 * ck["abs_sum"].get<double>());
  EXPECT_NEAR(abs_sum, ck["abs_sum"].get<double>(), 1e-6 * ck["abs_sum"].get<double>());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HfFixture, ::testing::Values("mixtral", "qwen2_moe", "qwen3_moe", "olmoe"));

}  // namespace
}  // namespace submoe::io
