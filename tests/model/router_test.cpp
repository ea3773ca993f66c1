#include "submoe/model/router.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

namespace submoe::model {
namespace {

// Reference: a stable sort of indices by value descending keeps equal values in
// ascending index order.
std::vector<int32_t> reference_top_k(const std::vector<float>& v, size_t k) {
  std::vector<int32_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) {
    const float x = v[static_cast<size_t>(a)], y = v[static_cast<size_t>(b)];
    if (std::isnan(x) != std::isnan(y)) return std::isnan(y);
    return x > y;
  });
  idx.resize(k);
  return idx;
}

TEST(Router, SoftmaxMatchesFloat64) {
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 8.0f);
  for (size_t n : {1u, 2u, 7u, 64u, 129u}) {
    std::vector<float> x(n);
    for (float& v : x) v = nd(rng);
    std::vector<float> p = x;
    softmax_f32(p);
    double mx = *std::max_element(x.begin(), x.end()), sum = 0.0;
    for (float v : x) sum += std::exp(static_cast<double>(v) - mx);
    for (size_t i = 0; i < n; ++i) {
      const double ref = std::exp(static_cast<double>(x[i]) - mx) / sum;
      EXPECT_NEAR(p[i], ref, 4e-7 * std::max(ref, 1e-3)) << "n=" << n << " i=" << i;
    }
  }
}

TEST(Router, SoftmaxSurvivesHugeLogits) {
  std::vector<float> x = {1e30f, -1e30f, 1e30f, 0.0f};
  softmax_f32(x);
  EXPECT_FLOAT_EQ(x[0], 0.5f);
  EXPECT_FLOAT_EQ(x[2], 0.5f);
  EXPECT_EQ(x[1], 0.0f);
}

TEST(Router, TopKMatchesStableSortOnRandomAndTiedValues) {
  std::mt19937 rng(2);
  for (int trial = 0; trial < 500; ++trial) {
    const size_t n = 1 + rng() % 70;
    const size_t k = 1 + rng() % n;
    std::vector<float> v(n);
    // Few distinct values: ties everywhere.
    const int distinct = 1 + static_cast<int>(rng() % 5);
    for (float& x : v) x = static_cast<float>(static_cast<int>(rng() % static_cast<unsigned>(distinct)));
    if (trial % 3 == 0)
      for (float& x : v) x = std::uniform_real_distribution<float>(-1, 1)(rng);
    std::vector<int32_t> idx(k);
    top_k_indices(v, idx);
    EXPECT_EQ(idx, reference_top_k(v, k)) << "trial " << trial;
  }
}

TEST(Router, TopKTiesPickLowerIndexFirst) {
  const std::vector<float> v = {0.25f, 0.25f, 0.25f, 0.25f};
  std::vector<int32_t> idx(2);
  top_k_indices(v, idx);
  EXPECT_EQ(idx, (std::vector<int32_t>{0, 1}));
  const std::vector<float> w = {0.1f, 0.3f, 0.2f, 0.3f, 0.1f};
  std::vector<int32_t> idx3(3);
  top_k_indices(w, idx3);
  EXPECT_EQ(idx3, (std::vector<int32_t>{1, 3, 2}));
}

TEST(Router, TopKRanksNanLast) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> v = {nan, -5.0f, nan, 3.0f};
  std::vector<int32_t> idx(3);
  top_k_indices(v, idx);
  EXPECT_EQ(idx, (std::vector<int32_t>{3, 1, 0}));
}

TEST(Router, RouteRenormalizesOnlyWhenAsked) {
  const size_t T = 3, E = 5, k = 2;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  std::vector<float> logits(T * E);
  for (float& v : logits) v = nd(rng);
  for (bool renorm : {false, true}) {
    std::vector<float> l = logits;
    Routing r;
    route_softmax_top_k(l, T, E, k, renorm, &r);
    ASSERT_EQ(r.experts.size(), T * k);
    for (size_t t = 0; t < T; ++t) {
      std::vector<float> p(logits.begin() + static_cast<ptrdiff_t>(t * E),
                           logits.begin() + static_cast<ptrdiff_t>((t + 1) * E));
      softmax_f32(p);
      const auto ref = reference_top_k(p, k);
      double sum = 0;
      for (size_t j = 0; j < k; ++j) sum += p[static_cast<size_t>(ref[j])];
      for (size_t j = 0; j < k; ++j) {
        EXPECT_EQ(r.experts[t * k + j], ref[j]);
        const double want = p[static_cast<size_t>(ref[j])] / (renorm ? sum : 1.0);
        EXPECT_NEAR(r.weights[t * k + j], want, 1e-6);
      }
      if (!renorm) {
        EXPECT_GE(r.weights[t * k], r.weights[t * k + 1]);
      }
    }
  }
}

TEST(Router, GroupByExpertListsTokensInOrder) {
  Routing r;
  r.num_tokens = 4;
  r.k = 2;
  r.experts = {2, 0, 0, 2, 1, 2, 2, 3};
  r.weights.assign(8, 0.5f);
  ExpertGroups g;
  group_by_expert(r, 5, &g);
  EXPECT_EQ(g.offsets, (std::vector<uint32_t>{0, 2, 3, 7, 8, 8}));
  EXPECT_EQ(std::vector<uint32_t>(g.tokens.begin(), g.tokens.begin() + 2), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(std::vector<uint32_t>(g.tokens.begin() + 3, g.tokens.begin() + 7), (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(std::vector<uint32_t>(g.slots.begin() + 3, g.slots.begin() + 7), (std::vector<uint32_t>{0, 3, 5, 6}));
  EXPECT_EQ(g.count(4), 0u);
  for (size_t i = 0; i < g.tokens.size(); ++i) EXPECT_EQ(g.tokens[i], g.slots[i] / 2);
}

}  // namespace
}  // namespace submoe::model
