// LayerRunner (layer-at-a-time calibration execution) must reproduce the forward
// pass: running every layer through it, with the resident experts, gives the
// same logits as Session::forward, for every fixture architecture (shared
// expert, sliding windows, QK norms included).
#include "submoe/model/layer_runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/forward_ops.h"
#include "submoe/core/thread_pool.h"
#include "submoe/io/architecture.h"
#include "submoe/io/hf_config.h"
#include "submoe/model/model_weights.h"
#include "submoe/model/moe_model.h"

namespace submoe::model {
namespace {

const std::string kFixtures = std::string(SUBMOE_SOURCE_DIR) + "/tests/fixtures/";

std::vector<float> logits_via_layer_runner(const MoeModel& m, const std::vector<int32_t>& ids, ThreadPool* pool) {
  const io::MoeModelConfig& c = m.config();
  const size_t T = ids.size(), H = static_cast<size_t>(c.hidden_size), V = static_cast<size_t>(c.vocab_size);
  const size_t E = static_cast<size_t>(c.num_experts);
  LayerRunner runner(m, pool);
  std::vector<float> h(T * H), x(T * H), block(T * H), dense(T * H), y;
  EXPECT_TRUE(runner.embed(ids, h.data()).is_ok());
  Routing r;
  std::vector<float> g, u;
  for (size_t l = 0; l < static_cast<size_t>(c.num_hidden_layers); ++l) {
    runner.attention(l, h.data(), T, x.data());
    std::fill(block.begin(), block.end(), 0.0f);
    if (m.weights().layers[l].sparse) {
      runner.route(l, x.data(), T, &r);
      std::vector<int> all(E);
      for (size_t e = 0; e < E; ++e) all[e] = static_cast<int>(e);
      EXPECT_TRUE(m.experts().begin_layer(static_cast<int>(l), all).is_ok());
      for (size_t e = 0; e < E; ++e) {  // ascending experts, each token's contribution
        for (size_t t = 0; t < T; ++t)
          for (size_t j = 0; j < r.k; ++j) {
            if (static_cast<size_t>(r.experts[t * r.k + j]) != e) continue;
            y.resize(H);
            expert_forward(expert_mlp(m, l, e), m.experts().ops(static_cast<int>(l), static_cast<int>(e)), &x[t * H],
                           1, y.data(), g, u, nullptr);
            for (size_t d = 0; d < H; ++d) block[t * H + d] += y[d] * r.weights[t * r.k + j];
          }
      }
      m.experts().end_layer(static_cast<int>(l));
    }
    runner.dense_ffn(l, x.data(), T, dense.data());
    for (size_t i = 0; i < T * H; ++i) block[i] += dense[i];
    for (size_t i = 0; i < T * H; ++i) h[i] += block[i];
  }
  std::vector<float> fx(T * H), logits(T * V);
  for (size_t t = 0; t < T; ++t)
    detail::rms_norm_to(&h[t * H], &fx[t * H], H, m.weights().final_norm.data(), static_cast<float>(c.rms_norm_eps));
  m.weights().lm_head->forward(fx.data(), T, logits.data(), pool);
  return logits;
}

class LayerRunnerParity : public ::testing::TestWithParam<std::string> {};

TEST_P(LayerRunnerParity, SameLogitsAsSession) {
  auto m = MoeModel::load(kFixtures + GetParam());
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  const MoeModel& model = *m.value();
  const size_t V = static_cast<size_t>(model.config().vocab_size);
  std::vector<int32_t> ids;
  for (int i = 0; i < 23; ++i) ids.push_back(static_cast<int32_t>((i * 37 + 11) % static_cast<int>(V)));
  ThreadPool pool(2);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    Session s(model, p);
    std::vector<float> ref;
    ASSERT_TRUE(s.forward(ids, LogitsMode::kAll, &ref).is_ok());
    const std::vector<float> got = logits_via_layer_runner(model, ids, p);
    ASSERT_EQ(got.size(), ref.size());
    // Same operations; per-token expert calls (n = 1) against the grouped ones
    // of the forward pass may round differently, so allow float noise.
    float max_abs = 0, max_diff = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      max_abs = std::max(max_abs, std::abs(ref[i]));
      max_diff = std::max(max_diff, std::abs(ref[i] - got[i]));
    }
    EXPECT_LE(max_diff, 1e-5f * std::max(1.0f, max_abs)) << GetParam();
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LayerRunnerParity, ::testing::Values("mixtral", "qwen2_moe", "qwen3_moe", "olmoe"));

Result<std::unique_ptr<MoeModel>> load_scaled(const std::string& dir, double routed_scaling_factor) {
  SUBMOE_ASSIGN_OR_RETURN(io::MoeModelConfig config, io::load_hf_config(dir));
  config.routed_scaling_factor = routed_scaling_factor;
  SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<io::SafetensorsModel> st, io::SafetensorsModel::open(dir));
  SUBMOE_ASSIGN_OR_RETURN(ModelWeights w, load_checkpoint_weights(config, config.descriptor(),
                                                                   std::shared_ptr<const io::SafetensorsModel>(std::move(st))));
  return MoeModel::create(std::move(config), std::move(w));
}

// The router hook routed_scaling_factor: the same experts, every weight times
// the factor after top-k (and after renormalisation), through the one router
// every path calls; a factor that is not positive and finite is refused.
TEST(DecoderLayer, RoutedScalingFactorScalesTheRoutedWeightsOnly) {
  for (const char* arch : {"mixtral", "qwen2_moe"}) {
    SCOPED_TRACE(arch);
    auto plain = load_scaled(kFixtures + arch, 1.0);
    auto scaled = load_scaled(kFixtures + arch, 2.5);
    ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
    ASSERT_TRUE(scaled.is_ok()) << scaled.status().to_string();
    const io::MoeModelConfig& c = plain.value()->config();
    const size_t H = static_cast<size_t>(c.hidden_size), T = 9;
    std::vector<float> x(T * H);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + 0.1));
    LayerRunner a(*plain.value(), nullptr), b(*scaled.value(), nullptr);
    size_t checked = 0;
    for (size_t l = 0; l < static_cast<size_t>(c.num_hidden_layers); ++l) {
      if (!plain.value()->weights().layers[l].sparse) continue;
      Routing ra, rb;
      a.route(l, x.data(), T, &ra);
      b.route(l, x.data(), T, &rb);
      ASSERT_EQ(ra.experts, rb.experts);
      ASSERT_EQ(ra.weights.size(), rb.weights.size());
      for (size_t i = 0; i < ra.weights.size(); ++i) EXPECT_EQ(rb.weights[i], ra.weights[i] * 2.5f) << i;
      // The non-routed part (shared expert) is not scaled.
      std::vector<float> da(T * H), db(T * H);
      a.dense_ffn(l, x.data(), T, da.data());
      b.dense_ffn(l, x.data(), T, db.data());
      EXPECT_EQ(da, db);
      ++checked;
    }
    EXPECT_GT(checked, 0u);
  }
  for (double bad : {0.0, -1.0, std::nan("")}) {
    auto m = load_scaled(kFixtures + "mixtral", bad);
    ASSERT_FALSE(m.is_ok()) << bad;
    EXPECT_NE(m.status().message().find("routed_scaling_factor"), std::string::npos) << m.status().message();
  }
}

// A GQA model's sessions keep keys and values of every KV head in every layer.
TEST(DecoderLayer, KvCacheShapesFollowTheConfig) {
  for (const char* arch : {"mixtral", "qwen2_moe", "qwen3_moe", "olmoe"}) {
    auto m = MoeModel::load(kFixtures + arch);
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    const io::MoeModelConfig& c = m.value()->config();
    Session s(*m.value(), nullptr);
    ASSERT_EQ(s.cache().num_layers(), static_cast<size_t>(c.num_hidden_layers)) << arch;
    const auto kv = static_cast<size_t>(c.num_key_value_heads), d = static_cast<size_t>(c.head_dim);
    for (size_t l = 0; l < s.cache().num_layers(); ++l) EXPECT_EQ(s.cache().layer_shape(l), (KvLayerShape{kv, d, d}));
    EXPECT_EQ(s.cache().bytes_per_position(), static_cast<size_t>(c.num_hidden_layers) * 2 * kv * d * sizeof(float));
  }
}

// Multi-head latent attention caches the compressed latent plus the shared RoPE
// key per position and layer: (kv_lora_rank + qk_rope_head_dim) x layers x 4
// bytes (float32), against 2 x heads x head_dim x layers x 4 for GQA.
TEST(DecoderLayer, MlaKvCacheHoldsTheLatentAndTheRopeKey) {
  auto c = io::parse_hf_config(R"({"model_type": "deepseek_v3", "num_hidden_layers": 61, "kv_lora_rank": 512,
                                  "qk_rope_head_dim": 64, "num_attention_heads": 128, "num_key_value_heads": 128})",
                               "dsv3.json");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  const std::vector<KvLayerShape> shapes = kv_cache_shapes(*c);
  ASSERT_EQ(shapes.size(), 61u);
  for (const KvLayerShape& s : shapes) EXPECT_EQ(s, (KvLayerShape{1, 512 + 64, 0}));
  KvCache cache(shapes);
  EXPECT_EQ(cache.bytes_per_position(), size_t{(512 + 64) * 61 * 4});
  c->kv_lora_rank = 256;
  c->qk_rope_head_dim = 32;
  EXPECT_EQ(KvCache(kv_cache_shapes(*c)).bytes_per_position(), size_t{(256 + 32) * 61 * 4});
}

TEST(LayerRunner, RejectsTokensOutsideVocabulary) {
  auto m = MoeModel::load(kFixtures + "qwen3_moe");
  ASSERT_TRUE(m.is_ok());
  LayerRunner runner(*m.value(), nullptr);
  std::vector<float> h(3 * static_cast<size_t>(m.value()->config().hidden_size));
  const std::vector<int32_t> ids = {1, -1, 2};
  EXPECT_FALSE(runner.embed(ids, h.data()).is_ok());
}

}  // namespace
}  // namespace submoe::model
