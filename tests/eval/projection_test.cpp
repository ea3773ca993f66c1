#include "submoe/eval/projection.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "eval/projection_internal.h"
#include "submoe/io/safetensors.h"

namespace submoe::eval {
namespace {

const std::string kT1 = std::string(SUBMOE_SOURCE_DIR) + "/configs/t1.json";

MoeShape t1() {
  auto s = load_projection_config(kT1);
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? *s : MoeShape{};
}

ProjectionInputs t1_inputs(double rate, double dram_gb) {
  ProjectionInputs in;
  in.shape = t1();
  in.rate_bits = rate;
  in.dram_gb = dram_gb;
  in.profile = *uniform_profile(64, 320, 8);
  return in;
}

// Hand-computed T1 (seed 001): P_e = 3 x 8192 x 2048; attention per layer
// 2 x 8192^2 + 2 x 8192 x 1024; router 8192 x 320; 2 norms per layer + final;
// untied 129280 x 8192 embedding and output projection.
TEST(ProjectionParams, T1MatchesHandCount) {
  auto p = count_params(t1());
  ASSERT_TRUE(p.is_ok());
  EXPECT_DOUBLE_EQ(p->expert, 50331648.0);
  EXPECT_DOUBLE_EQ(p->routed, 1030792151040.0);
  EXPECT_DOUBLE_EQ(p->shared, 3221225472.0);
  EXPECT_DOUBLE_EQ(p->attention, 9663676416.0);
  EXPECT_DOUBLE_EQ(p->router, 167772160.0);
  EXPECT_DOUBLE_EQ(p->norms, 1056768.0);
  EXPECT_DOUBLE_EQ(p->embedding, 1059061760.0);
  EXPECT_DOUBLE_EQ(p->lm_head, 1059061760.0);
  EXPECT_DOUBLE_EQ(p->total, 1045964005376.0);
  EXPECT_DOUBLE_EQ(p->dense_active, 14112792576.0);
  EXPECT_DOUBLE_EQ(p->active, 39882596352.0);
}

// Independent check on a published model: DeepSeek-V3 is 671 B total, 37 B
// active (without the multi-token-prediction module).
TEST(ProjectionParams, DeepSeekV3MatchesPublishedSize) {
  const char* cfg = R"({"model_type": "deepseek_v3", "hidden_size": 7168, "num_hidden_layers": 61,
    "first_k_dense_replace": 3, "moe_layer_freq": 1, "n_routed_experts": 256, "n_shared_experts": 1,
    "num_experts_per_tok": 8, "moe_intermediate_size": 2048, "intermediate_size": 18432,
    "num_attention_heads": 128, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 129280, "tie_word_embeddings": false})";
  auto s = parse_projection_config(cfg, "dsv3");
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(s->moe_layers, 58);
  auto p = count_params(*s);
  ASSERT_TRUE(p.is_ok());
  EXPECT_NEAR(p->total / 1e9, 671.0, 0.5);
  EXPECT_NEAR(p->active / 1e9, 37.0, 0.5);
}

// The DeepSeek-V3 config.json gives the same figures as the equivalent submoe
// projection config (MLA attention written as its per-layer count), and a
// Kimi-K2-shaped config (model_type kimi_k2, 384 experts) matches Kimi-K2's
// published 1 T total and 32 B active parameters.
TEST(ProjectionParams, DeepSeekAndKimiConfigsEqualTheirProjectionConfigs) {
  const std::string hf = R"({"model_type": "deepseek_v3", "hidden_size": 7168, "num_hidden_layers": 61,
    "first_k_dense_replace": 3, "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
    "moe_intermediate_size": 2048, "intermediate_size": 18432, "num_attention_heads": 128,
    "num_key_value_heads": 128, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 129280, "n_group": 8, "topk_group": 4})";
  // q: 7168*1536 + 1536 + 1536*128*192; kv: 7168*576 + 512 + 512*128*256; o: 128*128*7168.
  const int64_t mla = 7168LL * 1536 + 1536 + 1536LL * 128 * 192 + 7168LL * 576 + 512 + 512LL * 128 * 256 +
                      128LL * 128 * 7168;
  const std::string schema = R"({"format": "submoe-projection-config", "version": 1, "num_layers": 61,
    "d_model": 7168, "num_experts": 256, "num_shared_experts": 1, "top_k": 8, "expert_intermediate": 2048,
    "shared_expert_intermediate": 2048, "dense_layers": 3, "dense_intermediate": 18432, "vocab_size": 129280,
    "attention_params_per_layer": )" + std::to_string(mla) + "}";
  auto a = parse_projection_config(hf, "dsv3");
  auto b = parse_projection_config(schema, "schema");
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_EQ(a->attention_params_per_layer, mla);
  auto pa = count_params(*a), pb = count_params(*b);
  ASSERT_TRUE(pa.is_ok() && pb.is_ok());
  EXPECT_DOUBLE_EQ(pa->total, pb->total);
  EXPECT_DOUBLE_EQ(pa->active, pb->active);
  EXPECT_DOUBLE_EQ(pa->routed, pb->routed);
  EXPECT_DOUBLE_EQ(pa->shared, pb->shared);
  EXPECT_DOUBLE_EQ(pa->attention, pb->attention);
  EXPECT_DOUBLE_EQ(pa->dense_active, pb->dense_active);

  std::string kimi = hf;
  for (auto [from, to] : {std::pair<std::string, std::string>{"\"deepseek_v3\"", "\"kimi_k2\""},
                          {"\"n_routed_experts\": 256", "\"n_routed_experts\": 384"},
                          {"\"first_k_dense_replace\": 3", "\"first_k_dense_replace\": 1"},
                          {"\"num_attention_heads\": 128", "\"num_attention_heads\": 64"},
                          {"\"num_key_value_heads\": 128", "\"num_key_value_heads\": 64"},
                          {"\"vocab_size\": 129280", "\"vocab_size\": 163840"},
                          {"\"n_group\": 8, \"topk_group\": 4", "\"n_group\": 1, \"topk_group\": 1"}}) {
    const size_t at = kimi.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    kimi.replace(at, from.size(), to);
  }
  auto k = parse_projection_config(kimi, "kimi");
  ASSERT_TRUE(k.is_ok()) << k.status().to_string();
  EXPECT_EQ(k->moe_layers, 60);
  auto pk = count_params(*k);
  ASSERT_TRUE(pk.is_ok());
  EXPECT_NEAR(pk->total / 1e12, 1.04, 0.02);
  EXPECT_NEAR(pk->active / 1e9, 32.5, 1.0);
}

// HF config.json path: the parameter count equals the element count of the
// fixture checkpoint's tensors.
TEST(ProjectionParams, MixtralFixtureMatchesCheckpoint) {
  const std::string dir = std::string(SUBMOE_SOURCE_DIR) + "/tests/fixtures/mixtral";
  auto s = load_projection_config(dir + "/config.json");
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  auto p = count_params(*s);
  ASSERT_TRUE(p.is_ok());
  auto f = io::SafetensorsFile::open(dir + "/model.safetensors");
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  double numel = 0;
  for (const auto& t : (*f)->tensors()) numel += static_cast<double>(t.numel());
  EXPECT_DOUBLE_EQ(p->total, numel);
}

TEST(ProjectionConfig, RejectsBadSchemas) {
  auto missing = parse_projection_config(
      R"({"format": "submoe-projection-config", "version": 1, "num_layers": 2, "d_model": 8, "num_experts": 4,
          "top_k": 2, "expert_intermediate": 4, "vocab_size": 10})",
      "x.json");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("kv_width"), std::string::npos);
  auto wrong_type = parse_projection_config(
      R"({"format": "submoe-projection-config", "version": 1, "num_layers": "2", "d_model": 8, "num_experts": 4,
          "top_k": 2, "expert_intermediate": 4, "vocab_size": 10, "kv_width": 4})",
      "x.json");
  ASSERT_FALSE(wrong_type.is_ok());
  EXPECT_NE(wrong_type.status().message().find("num_layers"), std::string::npos);
  auto topk = parse_projection_config(
      R"({"format": "submoe-projection-config", "version": 1, "num_layers": 2, "d_model": 8, "num_experts": 4,
          "top_k": 5, "expert_intermediate": 4, "vocab_size": 10, "kv_width": 4})",
      "x.json");
  EXPECT_FALSE(topk.is_ok());
  EXPECT_FALSE(parse_projection_config("[1,2]", "x").is_ok());
  EXPECT_FALSE(parse_projection_config("{", "x").is_ok());
  EXPECT_FALSE(parse_projection_config(R"({"hello": 1})", "x").is_ok());
  EXPECT_FALSE(parse_projection_config(R"({"format": "other"})", "x").is_ok());
  EXPECT_FALSE(load_projection_config("/nonexistent/config.json").is_ok());
}

// Footprint, cache, resident slots, fraction and eq. 2 at the two reported rates,
// recomputed from the hand counts above.
TEST(Projection, T1FootprintAndResidency) {
  for (double rate : {0.8, 2.0}) {
    auto r = project(t1_inputs(rate, 16));
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    const RatePoint& a = r->at_rate;
    EXPECT_NEAR(a.footprint_bytes, 1045964005376.0 * rate / 8, 1);
    EXPECT_NEAR(a.expert_bytes, 50331648.0 * rate / 8, 1e-6);
    const double dense = 14112792576.0 * rate / 8;
    EXPECT_NEAR(a.cache_bytes, 16e9 - dense, 1);
    const int64_t slots = static_cast<int64_t>(std::floor((16e9 - dense) / (50331648.0 * rate / 8)));
    EXPECT_EQ(a.resident_slots, slots);
    EXPECT_EQ(a.total_slots, 20480);
    EXPECT_DOUBLE_EQ(a.resident_fraction, static_cast<double>(slots) / 20480.0);
    EXPECT_EQ(a.lru_operative, slots >= 512);
    // Uniform popularity: h = f.
    EXPECT_NEAR(a.hit_rate, a.resident_fraction, 1e-12);
    EXPECT_NEAR(a.storage_bytes_per_token, 512 * (1 - a.hit_rate) * a.expert_bytes, 1e-9 * a.storage_bytes_per_token);
    EXPECT_NEAR(a.batch1.storage_bytes_per_step, a.storage_bytes_per_token, 1e-9 * a.storage_bytes_per_token);
    EXPECT_NEAR(a.batch1.experts_loaded, 512, 1e-9);
    // Default host: 3 GB/s storage, 29.9 GB/s DRAM, no compute bound.
    const double t_io = a.storage_bytes_per_token / 3e9;
    const double t_mem = (512 * a.expert_bytes + dense) / 29.9e9;
    EXPECT_NEAR(a.batch1.tokens_per_s, 1.0 / std::max(t_io, t_mem), 1e-9);
  }
  EXPECT_EQ(project(t1_inputs(0.8, 16))->at_rate.resident_slots, 2898);
  EXPECT_EQ(project(t1_inputs(2.0, 16))->at_rate.resident_slots, 991);
}

TEST(Projection, Bf16BaselineSpillsDenseWeights) {
  auto r = project(t1_inputs(0.8, 16));
  ASSERT_TRUE(r.is_ok());
  const RatePoint& b = r->baseline;
  EXPECT_DOUBLE_EQ(b.rate_bits, 16);
  EXPECT_NEAR(b.dense_bytes, 14112792576.0 * 2, 1);
  EXPECT_NEAR(b.dense_spill_bytes, 14112792576.0 * 2 - 16e9, 1);
  EXPECT_EQ(b.resident_slots, 0);
  EXPECT_DOUBLE_EQ(b.hit_rate, 0);
  EXPECT_FALSE(b.lru_operative);
  EXPECT_NEAR(r->compression, 20.0, 1e-9);
  EXPECT_GT(r->speedup_b1, r->compression);  // amplification: more than compression alone
  EXPECT_NEAR(r->amplification_b1, r->speedup_b1 / r->compression, 1e-12);
}

// Uniform popularity: the pinned hit rate is C / (L E) exactly.
TEST(PinnedHitRate, UniformIsCapacityFraction) {
  auto p = uniform_profile(3, 7, 2);
  ASSERT_TRUE(p.is_ok());
  for (int64_t c = 0; c <= 25; ++c) {
    EXPECT_NEAR(pinned_hit_rate(*p, c), std::min<double>(c, 21) / 21.0, 1e-12) << c;
  }
}

// The pinned set must be the best set of C slots: brute force over all subsets.
TEST(PinnedHitRate, ZipfMatchesBruteForce) {
  for (double s : {0.0, 0.7, 1.3, 3.0}) {
    auto p = zipf_profile(2, 6, 2, s);
    ASSERT_TRUE(p.is_ok());
    // Perturb one layer so the layers differ (the trace case).
    PopularityProfile q = *p;
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(0.5, 1.5);
    std::vector<double> layer1(q.share.begin() + 6, q.share.end());
    for (double& v : layer1) v *= u(rng);
    auto capped = cap_shares(layer1, 0.5);
    ASSERT_TRUE(capped.is_ok());
    std::copy(capped->begin(), capped->end(), q.share.begin() + 6);
    for (const PopularityProfile* prof : {&*p, &q}) {
      const int n = 12;
      for (int c = 0; c <= n; ++c) {
        double best = 0;
        for (uint32_t mask = 0; mask < (1u << n); ++mask) {
          if (__builtin_popcount(mask) != c) continue;
          double m = 0;
          for (int i = 0; i < n; ++i) m += (mask >> i & 1) ? prof->share[static_cast<size_t>(i)] : 0.0;
          best = std::max(best, m / 2.0);
        }
        EXPECT_NEAR(pinned_hit_rate(*prof, c), best, 1e-12) << "s " << s << " c " << c;
      }
    }
  }
}

TEST(PopularityProfile, ZipfSharesFollowThePowerLawAndTheCap) {
  // E = 320, k = 8, s = 1: the top share 1/H_320 = 0.157 exceeds 1/k and is capped.
  auto p = zipf_profile(1, 320, 8, 1.0);
  ASSERT_TRUE(p.is_ok());
  const double sum = std::accumulate(p->share.begin(), p->share.end(), 0.0);
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_NEAR(p->share[0], 0.125, 1e-12);
  for (size_t i = 1; i < p->share.size(); ++i) EXPECT_LE(p->share[i], p->share[i - 1] + 1e-15);
  // Uncapped shares keep the ratio i^-s.
  for (size_t i = 2; i < 50; ++i) EXPECT_NEAR(p->share[i] / p->share[1], 2.0 / static_cast<double>(i + 1), 1e-12);
  // s = 0.5 at E = 64, k = 8: 1/sum(i^-0.5) = 0.072 < 1/8, nothing capped.
  auto m = zipf_profile(1, 64, 8, 0.5);
  ASSERT_TRUE(m.is_ok());
  double h = 0;
  for (int i = 1; i <= 64; ++i) h += std::pow(i, -0.5);
  EXPECT_NEAR(m->share[0], 1.0 / h, 1e-12);
  EXPECT_NEAR(m->share[63], std::pow(64, -0.5) / h, 1e-12);
}

TEST(PopularityProfile, CapSharesEdgeCases) {
  EXPECT_FALSE(cap_shares({}, 0.5).is_ok());
  EXPECT_FALSE(cap_shares({1, 1}, 0.4).is_ok());  // 2 x 0.4 < 1
  EXPECT_FALSE(cap_shares({0, 0}, 1).is_ok());
  EXPECT_FALSE(cap_shares({1, NAN}, 1).is_ok());
  EXPECT_FALSE(cap_shares({1, -1}, 1).is_ok());
  auto all = cap_shares({100, 0, 0, 0}, 0.25);  // exactly n * cap = 1: everything at the cap
  ASSERT_TRUE(all.is_ok());
  for (double v : *all) EXPECT_NEAR(v, 0.25, 1e-12);
  // Mass left after capping with only zero shares free is spread evenly.
  auto spread = cap_shares({100, 0, 0, 0}, 0.5);
  ASSERT_TRUE(spread.is_ok());
  EXPECT_NEAR((*spread)[0], 0.5, 1e-12);
  for (int i = 1; i < 4; ++i) EXPECT_NEAR((*spread)[static_cast<size_t>(i)], 0.5 / 3, 1e-12);
  auto cascade = cap_shares({8, 4, 2, 1, 1}, 0.3);  // capping the first pushes the second over
  ASSERT_TRUE(cascade.is_ok());
  EXPECT_NEAR((*cascade)[0], 0.3, 1e-12);
  EXPECT_NEAR((*cascade)[1], 0.3, 1e-12);
  EXPECT_NEAR((*cascade)[2], 0.4 * 2 / 4, 1e-12);
  EXPECT_NEAR((*cascade)[3], 0.4 / 4, 1e-12);
}

TEST(PopularityProfile, FromTraceCountsMapsLayers) {
  // 2 trace layers onto 4 model layers: layers 0,1 <- trace 0; 2,3 <- trace 1.
  const std::vector<uint64_t> counts = {3, 1, 0, 0, 1, 1, 1, 1};
  auto p = profile_from_counts(counts, 2, 4, 4, 1, "t");
  ASSERT_TRUE(p.is_ok());
  EXPECT_NEAR(p->share_at(1, 0), 0.75, 1e-12);
  EXPECT_NEAR(p->share_at(2, 3), 0.25, 1e-12);
  EXPECT_FALSE(profile_from_counts(counts, 3, 4, 4, 1, "t").is_ok());
  EXPECT_FALSE(profile_from_counts({0, 0, 0, 0}, 1, 4, 4, 1, "t").is_ok());
}

TEST(Projection, BatchLoadsMatchClosedForm) {
  ProjectionInputs in = t1_inputs(1.5, 24);
  in.batch = 5;
  auto r = project(in);
  ASSERT_TRUE(r.is_ok());
  for (uint32_t b : {1u, 5u, 32u}) {
    const ThroughputPoint& p = b == 1 ? r->at_rate.batch1 : (b == 5 ? r->at_rate.batch_n : r->at_rate.batch32);
    const double u = 64 * 320 * (1 - std::pow(1 - 8.0 / 320, b));
    EXPECT_NEAR(p.experts_loaded, u, 1e-6) << b;
    // Uniform: the resident share of loads is f.
    EXPECT_NEAR(p.hit_rate, r->at_rate.resident_fraction, 1e-9);
  }
  EXPECT_GT(r->at_rate.batch32.tokens_per_s, r->at_rate.batch1.tokens_per_s);
}

TEST(Projection, ThroughputIsMonotoneInHitRateAndMemory) {
  for (const char* profile : {"uniform", "zipf"}) {
    ProjectionInputs in = t1_inputs(1.5, 24);
    if (profile[0] == 'z') in.profile = *zipf_profile(64, 320, 8, 1.1);
    in.batch = 8;
    in.sweep_points = 21;
    auto r = project(in);
    ASSERT_TRUE(r.is_ok());
    ASSERT_EQ(r->sweep.size(), 21u);
    EXPECT_DOUBLE_EQ(r->sweep.front().hit_rate, 0.0);
    EXPECT_DOUBLE_EQ(r->sweep.back().hit_rate, 1.0);
    for (size_t i = 1; i < r->sweep.size(); ++i) {
      EXPECT_GE(r->sweep[i].tokens_per_s_b1, r->sweep[i - 1].tokens_per_s_b1);
      EXPECT_GE(r->sweep[i].tokens_per_s_b32, r->sweep[i - 1].tokens_per_s_b32);
      EXPECT_GE(r->sweep[i].tokens_per_s_bn, r->sweep[i - 1].tokens_per_s_bn);
    }
    EXPECT_GT(r->sweep.back().tokens_per_s_b1, r->sweep.front().tokens_per_s_b1);
    double last_h = -1, last_tps = 0;
    for (double g : {4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0}) {
      in.dram_gb = g;
      auto q = project(in);
      ASSERT_TRUE(q.is_ok());
      EXPECT_GE(q->at_rate.hit_rate, last_h);
      EXPECT_GE(q->at_rate.batch1.tokens_per_s, last_tps * (1 - 1e-12));
      last_h = q->at_rate.hit_rate;
      last_tps = q->at_rate.batch1.tokens_per_s;
    }
  }
}

// Zipf pinning beats uniform at the same capacity, and the hit rate is the
// top-C mass of the per-layer Zipf shares.
TEST(Projection, ZipfHitRateIsTopMass) {
  ProjectionInputs in = t1_inputs(0.8, 16);
  in.profile = *zipf_profile(64, 320, 8, 0.9);
  auto r = project(in);
  ASSERT_TRUE(r.is_ok());
  const int64_t c = r->at_rate.resident_slots;
  std::vector<double> all = in.profile.share;
  std::sort(all.begin(), all.end(), std::greater<>());
  const double expect = std::accumulate(all.begin(), all.begin() + c, 0.0) / 64.0;
  EXPECT_NEAR(r->at_rate.hit_rate, expect, 1e-12);
  EXPECT_GT(r->at_rate.hit_rate, r->at_rate.resident_fraction);
}

// Eq. 4: LRU needs k L resident slots; r* = 8 M / (P_e k L) is where the cache
// holds exactly k L of them (dense bits fixed so M does not move with r).
TEST(Projection, CriticalRateSeparatesLruRegimes) {
  ProjectionInputs in = t1_inputs(1.0, 64);
  in.dense_bits = 4;
  auto r = project(in);
  ASSERT_TRUE(r.is_ok());
  const double rstar = r->critical_rate_bits;
  EXPECT_NEAR(rstar, 8 * (64e9 - 14112792576.0 * 0.5) / (50331648.0 * 512), 1e-9);
  in.rate_bits = rstar * 0.999;
  EXPECT_TRUE(project(in)->at_rate.lru_operative);
  in.rate_bits = rstar * 1.001;
  EXPECT_FALSE(project(in)->at_rate.lru_operative);
}

TEST(Projection, ComputeBoundUsesKernelRate) {
  ProjectionInputs in = t1_inputs(0.8, 2000);  // everything resident: no storage traffic
  in.limits.kernel_name = "qmoe";
  in.limits.kernel_gweights_b1 = 10;
  // A batch-32 call streams the weights once but does 32x the arithmetic.
  in.limits.kernel_gweights_b32 = 2;
  in.limits.baseline_kernel_gweights_b1 = 5;
  auto r = project(in);
  ASSERT_TRUE(r.is_ok());
  const ThroughputPoint& p = r->at_rate.batch1;
  EXPECT_DOUBLE_EQ(p.storage_bytes_per_step, 0);
  EXPECT_NEAR(p.t_compute, 39882596352.0 / 10e9, 1e-9);
  EXPECT_EQ(p.bound, "compute");
  // Batch 32 takes the batch-32 figure; batch 4 lies on the line between them.
  const ThroughputPoint& q = r->at_rate.batch32;
  EXPECT_NEAR(q.t_compute, q.weights_per_step / 2e9, 1e-9);
  in.batch = 4;
  auto r4 = project(in);
  ASSERT_TRUE(r4.is_ok());
  const ThroughputPoint& b4 = r4->at_rate.batch_n;
  EXPECT_NEAR(b4.t_compute, b4.weights_per_step * (1e-10 + (5e-10 - 1e-10) * 3.0 / 31.0), 1e-9);
}

TEST(Projection, RejectsBadInputs) {
  ProjectionInputs in = t1_inputs(1.5, 16);
  auto bad = [&](auto change) {
    ProjectionInputs x = in;
    change(x);
    return !project(x).is_ok();
  };
  EXPECT_TRUE(bad([](ProjectionInputs& x) { x.rate_bits = 0; }));
  EXPECT_TRUE(bad([](ProjectionInputs& x) { x.rate_bits = NAN; }));
  EXPECT_TRUE(bad([](ProjectionInputs& x) { x.dram_gb = 0; }));
  EXPECT_TRUE(bad([](ProjectionInputs& x) { x.reserve_gb = 16; }));
  EXPECT_TRUE(bad([](ProjectionInputs& x) { x.batch = 0; }));
  EXPECT_TRUE(bad([](ProjectionInputs& x) { x.limits.storage_read_gbps = 0; }));
  EXPECT_TRUE(bad([](ProjectionInputs& x) { x.profile = *uniform_profile(63, 320, 8); }));
  EXPECT_TRUE(bad([](ProjectionInputs& x) { x.shape.top_k = 400; }));
  EXPECT_FALSE(bad([](ProjectionInputs&) {}));
}

TEST(Projection, RendersJsonAndTable) {
  ProjectionInputs in = t1_inputs(0.8, 16);
  in.batch = 8;
  auto r = project(in);
  ASSERT_TRUE(r.is_ok());
  const auto j = nlohmann::json::parse(projection_json(*r));
  EXPECT_EQ(j["at_rate"]["resident_slots"].get<int64_t>(), 2898);
  EXPECT_DOUBLE_EQ(j["at_rate"]["hit_rate"].get<double>(), r->at_rate.hit_rate);
  EXPECT_EQ(j["sweep"].size(), 11u);
  EXPECT_EQ(j["sweep_batch"].get<uint32_t>(), 8u);
  EXPECT_TRUE(j["capacity_gain"].is_null());  // the bf16 baseline holds no slot
  EXPECT_EQ(j["baseline"]["resident_slots"].get<int64_t>(), 0);
  const std::string table = projection_table(*r);
  for (const char* needle : {"resident slots", "critical rate", "tokens/s batch 8", "hit rate"}) {
    EXPECT_NE(table.find(needle), std::string::npos) << needle;
  }
}

TEST(HostLimits, FromRooflineJsonPicksExpertGranularity) {
  const char* j = R"({"format": "submoe-roofline", "version": 1,
    "storage": {"random_read": [
      {"block_bytes": 65536, "threads": 1, "GBps": 0.5}, {"block_bytes": 65536, "threads": 8, "GBps": 1.5},
      {"block_bytes": 1048576, "threads": 1, "GBps": 1.0}, {"block_bytes": 1048576, "threads": 4, "GBps": 2.5},
      {"block_bytes": 4194304, "threads": 2, "GBps": 3.0}]},
    "dram": {"read_GBps_nt": 20.0},
    "kernels": [{"codec": "qmoe", "batch": 1, "gweights_per_s": 7.0}, {"codec": "qmoe", "batch": 32, "gweights_per_s": 90.0},
                {"codec": "bf16", "batch": 1, "gweights_per_s": 4.0}]})";
  auto h = host_limits_from_roofline_json(j, 3e6, "qmoe", "r.json");
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  EXPECT_DOUBLE_EQ(h->storage_block_bytes, 1048576);
  EXPECT_DOUBLE_EQ(h->storage_read_gbps, 2.5);
  EXPECT_DOUBLE_EQ(h->dram_read_gbps, 20.0);
  EXPECT_DOUBLE_EQ(h->kernel_gweights_b1, 7.0);
  EXPECT_DOUBLE_EQ(h->kernel_gweights_b32, 90.0);
  EXPECT_DOUBLE_EQ(h->baseline_kernel_gweights_b1, 4.0);
  EXPECT_DOUBLE_EQ(host_limits_from_roofline_json(j, 1000, "none", "r")->storage_block_bytes, 65536);
  EXPECT_DOUBLE_EQ(host_limits_from_roofline_json(j, 1e9, "none", "r")->storage_read_gbps, 3.0);
  EXPECT_FALSE(host_limits_from_roofline_json(j, 1e6, "tunstall", "r").is_ok());
  EXPECT_FALSE(host_limits_from_roofline_json(R"({"format": "x"})", 1e6, "none", "r").is_ok());
  EXPECT_FALSE(host_limits_from_roofline_json(R"({"format": "submoe-roofline"})", 1e6, "none", "r").is_ok());
}

}  // namespace
}  // namespace submoe::eval
