// Tensor classification and parameter counts against hand-computed totals.
#include <gtest/gtest.h>

#include "submoe/io/param_stats.h"

namespace submoe::io {
namespace {

struct Spec {
  std::string name;
  std::vector<int64_t> shape;
};

std::vector<TensorView> views(const std::vector<Spec>& specs) {
  std::vector<TensorView> v;
  for (const Spec& s : specs) {
    TensorView t;
    t.name = s.name;
    t.shape = s.shape;
    t.dtype = DType::kBF16;
    t.nbytes = static_cast<uint64_t>(t.numel()) * 2;
    v.push_back(std::move(t));
  }
  return v;
}

std::vector<const TensorView*> ptrs(const std::vector<TensorView>& v) {
  std::vector<const TensorView*> p;
  for (const TensorView& t : v) p.push_back(&t);
  return p;
}

TEST(ParamStats, ClassifiesHubNamesPerArchitecture) {
  const auto mx = Architecture::kMixtral;
  const auto qw = Architecture::kQwen2Moe;
  struct Case {
    const char* name;
    std::optional<Architecture> arch;
    TensorRole role;
    int layer;
    int expert;
  };
  const Case cases[] = {
      {"model.layers.3.block_sparse_moe.experts.7.w1.weight", mx, TensorRole::kRoutedExpert, 3, 7},
      {"model.layers.3.block_sparse_moe.experts.12.w2.weight", std::nullopt, TensorRole::kRoutedExpert, 3, 12},
      {"model.layers.3.block_sparse_moe.gate.weight", mx, TensorRole::kRouter, 3, -1},
      {"model.layers.0.mlp.experts.gate_up_proj", mx, TensorRole::kRoutedExpert, 0, -1},
      {"model.layers.0.mlp.experts.down_proj", qw, TensorRole::kRoutedExpert, 0, -1},
      {"model.layers.10.mlp.experts.59.down_proj.weight", qw, TensorRole::kRoutedExpert, 10, 59},
      {"model.layers.10.mlp.shared_expert.up_proj.weight", qw, TensorRole::kSharedExpert, 10, -1},
      {"model.layers.10.mlp.shared_expert_gate.weight", qw, TensorRole::kSharedExpert, 10, -1},
      {"model.layers.10.mlp.gate.weight", qw, TensorRole::kRouter, 10, -1},
      {"model.layers.2.mlp.gate_proj.weight", qw, TensorRole::kDenseMlp, 2, -1},
      {"model.layers.2.self_attn.q_proj.bias", qw, TensorRole::kAttention, 2, -1},
      {"model.layers.2.self_attn.q_norm.weight", Architecture::kQwen3Moe, TensorRole::kNorm, 2, -1},
      {"model.layers.2.input_layernorm.weight", qw, TensorRole::kNorm, 2, -1},
      {"model.norm.weight", qw, TensorRole::kNorm, -1, -1},
      {"model.embed_tokens.weight", qw, TensorRole::kEmbedding, -1, -1},
      {"lm_head.weight", qw, TensorRole::kLmHead, -1, -1},
      {"something.else", qw, TensorRole::kOther, -1, -1},
      // Qwen's "mlp.experts" is not Mixtral's expert path and vice versa... but v5
      // Mixtral per-expert names under mlp are still experts.
      {"model.layers.1.mlp.experts.2.gate_proj.weight", mx, TensorRole::kRoutedExpert, 1, 2},
      {"model.layers.1.block_sparse_moe.experts.2.w3.weight", qw, TensorRole::kDenseMlp, 1, -1},
  };
  for (const Case& c : cases) {
    const TensorClass got = classify_tensor(c.name, c.arch);
    EXPECT_EQ(got.role, c.role) << c.name << " -> " << tensor_role_name(got.role);
    EXPECT_EQ(got.layer, c.layer) << c.name;
    EXPECT_EQ(got.expert, c.expert) << c.name;
  }
}

TEST(ParamStats, MixtralLikeCounts) {
  // V=10, H=4, I=6, E=4 experts, k=2, 2 layers, untied.
  std::vector<Spec> s = {{"model.embed_tokens.weight", {10, 4}}, {"lm_head.weight", {10, 4}}, {"model.norm.weight", {4}}};
  for (int l = 0; l < 2; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    for (const char* w : {"q_proj", "k_proj", "v_proj", "o_proj"}) s.push_back({p + "self_attn." + w + ".weight", {4, 4}});
    s.push_back({p + "input_layernorm.weight", {4}});
    s.push_back({p + "post_attention_layernorm.weight", {4}});
    s.push_back({p + "block_sparse_moe.gate.weight", {4, 4}});
    for (int e = 0; e < 4; ++e) {
      const std::string q = p + "block_sparse_moe.experts." + std::to_string(e) + ".";
      s.push_back({q + "w1.weight", {6, 4}});
      s.push_back({q + "w3.weight", {6, 4}});
      s.push_back({q + "w2.weight", {4, 6}});
    }
  }
  const auto v = views(s);
  const auto p = ptrs(v);
  const ParameterCounts c = count_parameters(p, Architecture::kMixtral, 2);
  const int64_t per_expert = 3 * 24;                // 72
  const int64_t routed = 2 * 4 * per_expert;        // 576
  const int64_t non_expert = 40 + 40 + 4 + 2 * (64 + 8 + 16);  // 260
  EXPECT_EQ(c.total, routed + non_expert);
  EXPECT_EQ(c.routed_experts(), routed);
  EXPECT_EQ(c.by_role[static_cast<size_t>(TensorRole::kRouter)], 32);
  EXPECT_EQ(c.by_role[static_cast<size_t>(TensorRole::kAttention)], 128);
  EXPECT_EQ(c.by_role[static_cast<size_t>(TensorRole::kNorm)], 20);
  EXPECT_EQ(c.moe_layers, 2);
  EXPECT_EQ(c.max_experts_per_layer, 4);
  ASSERT_TRUE(c.active_per_token.has_value());
  EXPECT_EQ(*c.active_per_token, non_expert + 2 * 2 * per_expert);
  EXPECT_DOUBLE_EQ(c.routed_share(), static_cast<double>(routed) / (routed + non_expert));
  EXPECT_FALSE(count_parameters(p, Architecture::kMixtral, std::nullopt).active_per_token.has_value());
  // Without the architecture the generic pattern finds the same experts.
  EXPECT_EQ(count_parameters(p, std::nullopt, 2).active_per_token, c.active_per_token);
}

TEST(ParamStats, QwenSharedExpertDenseLayerAndFusedStacks) {
  // Layer 0 dense (I=8), layer 1 MoE with E=3 experts of I=2, shared expert I=5, k=2.
  const std::vector<Spec> s = {
      {"model.embed_tokens.weight", {7, 4}},  // tied: no lm_head
      {"model.layers.0.mlp.gate_proj.weight", {8, 4}},
      {"model.layers.0.mlp.up_proj.weight", {8, 4}},
      {"model.layers.0.mlp.down_proj.weight", {4, 8}},
      {"model.layers.1.mlp.gate.weight", {3, 4}},
      {"model.layers.1.mlp.experts.gate_up_proj", {3, 4, 4}},  // fused v5: [E, 2I, H]
      {"model.layers.1.mlp.experts.down_proj", {3, 4, 2}},     // [E, H, I]
      {"model.layers.1.mlp.shared_expert.gate_proj.weight", {5, 4}},
      {"model.layers.1.mlp.shared_expert.up_proj.weight", {5, 4}},
      {"model.layers.1.mlp.shared_expert.down_proj.weight", {4, 5}},
      {"model.layers.1.mlp.shared_expert_gate.weight", {1, 4}},
  };
  const auto v = views(s);
  const ParameterCounts c = count_parameters(ptrs(v), Architecture::kQwen2Moe, 2);
  EXPECT_EQ(c.routed_experts(), 48 + 24);
  EXPECT_EQ(c.by_role[static_cast<size_t>(TensorRole::kSharedExpert)], 64);
  EXPECT_EQ(c.by_role[static_cast<size_t>(TensorRole::kDenseMlp)], 96);
  EXPECT_EQ(c.moe_layers, 1);
  EXPECT_EQ(c.max_experts_per_layer, 3);
  EXPECT_EQ(c.total, 28 + 96 + 12 + 72 + 64);
  EXPECT_EQ(*c.active_per_token, 28 + 96 + 12 + 64 + 48);  // 2 of 3 experts: 72 * 2 / 3
  // k larger than the expert count uses every expert once.
  EXPECT_EQ(*count_parameters(ptrs(v), Architecture::kQwen2Moe, 9).active_per_token, c.total);
}

}  // namespace
}  // namespace submoe::io
