#include "submoe/offload/cache_simulator.h"

#include <cstring>
#include <gtest/gtest.h>

#include <random>

#include "offload_test_util.h"
#include "submoe/offload/trace_stats.h"

namespace submoe::offload {
namespace {

// Every token picks the same k experts in every layer: after warm-up every access
// would hit if the cache could hold the k*L slots of one token.
RoutingTrace cyclic_trace(uint32_t layers, uint32_t experts, uint32_t k, uint64_t tokens) {
  RoutingTrace t(layers, experts, k);
  std::vector<ExpertChoice> choices;
  for (uint64_t tok = 0; tok < tokens; ++tok) {
    choices.clear();
    for (uint32_t l = 0; l < layers; ++l)
      for (uint32_t j = 0; j < k; ++j) choices.push_back({static_cast<uint16_t>(j), float_to_bf16(1.0f / k)});
    EXPECT_TRUE(t.append_token(choices).is_ok());
  }
  return t;
}


TEST(CacheSimulator, LruCliffBelowKTimesLSlots) {
  const uint32_t L = 6, E = 16, K = 2;
  RoutingTrace t = cyclic_trace(L, E, K, 50);
  for (uint64_t cap : {1u, 5u, 11u}) {  // < k*L = 12: LRU evicts each slot just before its reuse
    auto r = simulate_cache(t, {CachePolicy::kLru, cap});
    ASSERT_TRUE(r.is_ok());
    EXPECT_EQ(r->hits, 0u) << "capacity " << cap;
    // Belady keeps cap slots resident and hits them every token.
    auto b = simulate_cache(t, {CachePolicy::kBelady, cap});
    EXPECT_EQ(b->hits, cap * 49) << "capacity " << cap;
  }
  auto r = simulate_cache(t, {CachePolicy::kLru, 12});
  EXPECT_EQ(r->misses, 12u);  // only the compulsory misses
  EXPECT_EQ(r->accesses, 50u * 12u);
}

TEST(CacheSimulator, BeladyBoundsEveryPolicy) {
  RoutingTrace t = testing::zipf_trace(4, 32, 2, 400, 0.9, 7, 7, 1);
  for (uint64_t cap : {4u, 16u, 40u, 100u}) {
    auto best = simulate_cache(t, {CachePolicy::kBelady, cap});
    ASSERT_TRUE(best.is_ok());
    for (CachePolicy p : {CachePolicy::kLru, CachePolicy::kLfu, CachePolicy::kPinned, CachePolicy::kHybrid,
                          CachePolicy::kForecast}) {
      auto r = simulate_cache(t, {p, cap});
      ASSERT_TRUE(r.is_ok());
      EXPECT_LE(r->hits, best->hits) << cache_policy_name(p) << " capacity " << cap;
      EXPECT_EQ(r->hits + r->misses, r->accesses);
      uint64_t per_layer = 0;
      for (auto h : r->layer_hits) per_layer += h;
      EXPECT_EQ(per_layer, r->hits);
    }
  }
}

TEST(CacheSimulator, PinnedHitRateIsThePinnedPopularityMass) {
  RoutingTrace t = testing::zipf_trace(3, 16, 2, 300, 1.2, 3, 7, 1);
  auto pop = expert_popularity(t);
  std::vector<uint64_t> sorted = pop;
  std::sort(sorted.rbegin(), sorted.rend());
  uint64_t top10 = 0;
  for (int i = 0; i < 10; ++i) top10 += sorted[i];
  auto r = simulate_cache(t, {CachePolicy::kPinned, 10});
  EXPECT_EQ(r->hits, top10 - 10);  // each pinned slot is loaded once, on first use
}

TEST(CacheSimulator, CapacityCoveringEverySlotOnlyMissesCompulsorily) {
  RoutingTrace t = testing::zipf_trace(2, 8, 2, 200, 0.5, 1, 7, 1);
  for (CachePolicy p : {CachePolicy::kLru, CachePolicy::kLfu, CachePolicy::kHybrid, CachePolicy::kBelady,
                        CachePolicy::kForecast}) {
    auto r = simulate_cache(t, {p, 16});
    uint64_t used = 0;
    for (auto c : expert_popularity(t)) used += c > 0;
    EXPECT_EQ(r->misses, used) << cache_policy_name(p);
  }
}

// Each layer picks expert 0 at every token and one of experts 1..7 at random:
// with one slot per layer, forecast keeps every layer's expert 0 (repeat
// probability 1) and hits it at every token after the first, where LRU, cycling
// through k L > L slots, never hits.
TEST(CacheSimulator, ForecastKeepsTheSlotsThatRepeat) {
  const uint32_t L = 4, E = 8, K = 2;
  const uint64_t T = 100;
  RoutingTrace t(L, E, K);
  std::mt19937 rng(3);
  for (uint64_t tok = 0; tok < T; ++tok) {
    std::vector<ExpertChoice> c;
    for (uint32_t l = 0; l < L; ++l) {
      c.push_back({static_cast<uint16_t>(1 + rng() % (E - 1)), float_to_bf16(0.5f)});
      c.push_back({0, float_to_bf16(0.5f)});
    }
    ASSERT_TRUE(t.append_token(c).is_ok());
  }
  auto f = simulate_cache(t, {CachePolicy::kForecast, L});
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_GE(f->hits, (T - 1) * L);
  auto lru = simulate_cache(t, {CachePolicy::kLru, L});
  EXPECT_EQ(lru->hits, 0u);
  auto best = simulate_cache(t, {CachePolicy::kBelady, L});
  EXPECT_LE(f->hits, best->hits);
  // Probabilities from a profile of another layout are refused.
  SimulationOptions o{CachePolicy::kForecast, L};
  o.choose_probability.assign(3, 0.5);
  o.repeat_probability.assign(3, 0.5);
  EXPECT_EQ(simulate_cache(t, o).status().code(), ErrorCode::kInvalidArgument);
}

// forecast_probabilities on a hand-made trace: (chosen + 1) / (tokens + 2) and
// (repeats + 1) / (followed + 2).
TEST(CacheSimulator, ForecastProbabilitiesCountPicksAndRepeats) {
  RoutingTrace t(1, 4, 1);
  for (uint16_t e : {0, 0, 1, 0, 2, 2}) ASSERT_TRUE(t.append_token({{e, float_to_bf16(1.0f)}}).is_ok());
  const ForecastProbabilities p = forecast_probabilities(t);
  ASSERT_EQ(p.choose.size(), 4u);
  EXPECT_DOUBLE_EQ(p.choose[0], 4.0 / 8.0);  // 3 of 6 tokens
  EXPECT_DOUBLE_EQ(p.choose[3], 1.0 / 8.0);  // never
  EXPECT_DOUBLE_EQ(p.repeat[0], 2.0 / 5.0);  // followed 3 times (tokens 0, 1, 3), repeated once (0 -> 1)
  EXPECT_DOUBLE_EQ(p.repeat[2], 2.0 / 3.0);  // followed once (token 4 -> 5), repeated
  EXPECT_DOUBLE_EQ(p.repeat[1], 1.0 / 3.0);  // followed once, not repeated
}

TEST(ExpertAffinity, CountsCoRoutingBetweenConsecutiveLayersAndAcrossTokens) {
  // 2 layers, 4 experts, top-2. Token 0: {0, 1} then {2, 3}; token 1: {1, 2} then {0, 3}.
  RoutingTrace t(2, 4, 2);
  auto token = [](std::vector<uint16_t> ids) {
    std::vector<ExpertChoice> c;
    for (uint16_t e : ids) c.push_back({e, bf16_t{0}});
    return c;
  };
  ASSERT_TRUE(t.append_token(token({0, 1, 2, 3})).is_ok());
  ASSERT_TRUE(t.append_token(token({1, 2, 0, 3})).is_ok());
  const std::vector<uint32_t> a = expert_affinity(t);
  ASSERT_EQ(a.size(), 2u * 4 * 4);
  auto at = [&](int l, int e, int f) { return a[(static_cast<size_t>(l) * 4 + static_cast<size_t>(e)) * 4 + static_cast<size_t>(f)]; };
  EXPECT_EQ(at(0, 1, 3), 2u);  // both tokens
  EXPECT_EQ(at(0, 0, 2), 1u);
  EXPECT_EQ(at(0, 2, 0), 1u);
  EXPECT_EQ(at(0, 3, 0), 0u);
  EXPECT_EQ(at(1, 2, 1), 1u);  // token 0's last layer -> token 1's first
  EXPECT_EQ(at(1, 3, 2), 1u);
  EXPECT_EQ(at(1, 0, 1), 0u);  // token 1 is the last: nothing wraps from it
  uint64_t total = 0;
  for (uint32_t v : a) total += v;
  EXPECT_EQ(total, 12u);  // 2 tokens x 1 layer pair x 4 pairs, plus 1 wrap x 4 pairs
}

TEST(TraceStats, ZipfFitRecoversTheExponentOfExactPowerLaw) {
  std::vector<uint64_t> counts;
  for (int r = 1; r <= 64; ++r) counts.push_back(static_cast<uint64_t>(1e6 / std::pow(r, 1.3)));
  EXPECT_NEAR(fit_zipf_exponent(counts), 1.3, 0.01);
  EXPECT_EQ(fit_zipf_exponent({5}), 0.0);
}

TEST(TraceStats, CyclicTraceHasFullReuseAndKDistinctExperts) {
  RoutingTrace t = cyclic_trace(3, 8, 2, 128);
  TraceStats s = compute_trace_stats(t);
  ASSERT_EQ(s.layers.size(), 3u);
  EXPECT_DOUBLE_EQ(s.mean_consecutive_reuse, 1.0);
  EXPECT_DOUBLE_EQ(s.layers[0].top_quartile_mass, 1.0);  // 2 experts = the top quarter of 8
  for (double d : s.layers[1].distinct_per_batch) EXPECT_DOUBLE_EQ(d, 2.0);
}

TEST(RoutingTrace, SaveLoadRoundTripAndCorruptionIsRejected) {
  RoutingTrace t = testing::zipf_trace(3, 10, 2, 20, 1.0, 2, 7, 1);
  const std::string path = ::testing::TempDir() + "/trace_roundtrip.bin";
  ASSERT_TRUE(t.save(path).is_ok());
  auto back = RoutingTrace::load(path);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  ASSERT_EQ(back->num_tokens(), 20u);
  for (uint64_t tok = 0; tok < 20; ++tok)
    for (uint32_t l = 0; l < 3; ++l)
      for (uint32_t k = 0; k < 2; ++k) EXPECT_EQ(back->token_layer(tok, l)[k].expert, t.token_layer(tok, l)[k].expert);
  std::vector<uint8_t> bytes(48 + 20 * 3 * 2 * 4);
  {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    ASSERT_EQ(std::fread(bytes.data(), 1, bytes.size(), f), bytes.size());
    std::fclose(f);
  }
  EXPECT_TRUE(RoutingTrace::parse(bytes.data(), bytes.size(), "ok").is_ok());
  EXPECT_EQ(RoutingTrace::parse(bytes.data(), bytes.size() - 1, "short").status().code(), ErrorCode::kCorruptData);
  EXPECT_FALSE(RoutingTrace::parse(bytes.data(), 20, "tiny").is_ok());
  auto bad = bytes;
  bad[0] = 'X';
  EXPECT_FALSE(RoutingTrace::parse(bad.data(), bad.size(), "magic").is_ok());
  bad = bytes;
  bad[48] = 200;  // expert id 200 >= 10
  EXPECT_FALSE(RoutingTrace::parse(bad.data(), bad.size(), "expert").is_ok());
  bad = bytes;
  bad[24] = 0xff;  // token count far beyond the file
  EXPECT_FALSE(RoutingTrace::parse(bad.data(), bad.size(), "tokens").is_ok());
  // A trace of zero tokens is valid (and copies nothing); absurd layer counts
  // are refused before statistics allocate layers x experts counters.
  std::vector<uint8_t> empty(bytes.begin(), bytes.begin() + 48);
  std::memset(&empty[24], 0, 8);
  auto e = RoutingTrace::parse(empty.data(), empty.size(), "empty");
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ(e->num_tokens(), 0u);
  for (uint32_t layers : {4097u, 0xffffffffu}) {
    std::memcpy(&empty[12], &layers, 4);
    auto r = RoutingTrace::parse(empty.data(), empty.size(), "layers");
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("at most 4096 layers"), std::string::npos) << r.status().to_string();
  }
  bad = bytes;
  bad[20] = 11;  // top_k > experts
  EXPECT_FALSE(RoutingTrace::parse(bad.data(), bad.size(), "topk").is_ok());
  EXPECT_FALSE(t.append_token({{0, {0}}}).is_ok());
}

}  // namespace
}  // namespace submoe::offload
