#include "submoe/model/router.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <tuple>

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


// transformers' DeepseekV3TopkRouter, literally, in float64: sigmoid, + bias,
// group score = sum of the two best biased scores, keep topk_group groups,
// masked_fill(0.0), top-k, unbiased weights, / (sum + 1e-20).
struct OracleRoute {
  std::vector<int32_t> experts;
  std::vector<double> weights;
};

OracleRoute oracle_v3(const std::vector<float>& logits, const std::vector<float>& bias, size_t k, size_t n_group,
                      size_t topk_group, bool renormalize) {
  const size_t E = logits.size(), per = E / n_group;
  std::vector<double> s(E), sb(E);
  for (size_t e = 0; e < E; ++e) {
    s[e] = 1.0 / (1.0 + std::exp(-static_cast<double>(logits[e])));
    sb[e] = s[e] + bias[e];
  }
  std::vector<float> group(n_group);
  for (size_t g = 0; g < n_group; ++g) {
    std::vector<double> v(sb.begin() + static_cast<ptrdiff_t>(g * per), sb.begin() + static_cast<ptrdiff_t>((g + 1) * per));
    std::sort(v.rbegin(), v.rend());
    group[g] = static_cast<float>(v[0] + v[1]);
  }
  const std::vector<int32_t> kept = reference_top_k(group, topk_group);
  std::vector<float> masked(E);
  for (size_t e = 0; e < E; ++e) {
    const bool in = std::find(kept.begin(), kept.end(), static_cast<int32_t>(e / per)) != kept.end();
    masked[e] = in ? static_cast<float>(sb[e]) : 0.0f;
  }
  OracleRoute r;
  r.experts = reference_top_k(masked, k);
  double sum = 0;
  for (int32_t e : r.experts) sum += s[static_cast<size_t>(e)];
  for (int32_t e : r.experts) r.weights.push_back(s[static_cast<size_t>(e)] / (renormalize ? sum + 1e-20 : 1.0));
  return r;
}

TEST(Router, SigmoidGroupTop2MatchesTheTransformersRouter) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  struct Shape {
    size_t E, k, groups, kept;
  };
  for (Shape sh : {Shape{8, 2, 4, 2}, Shape{16, 3, 1, 1}, Shape{12, 5, 3, 2}, Shape{256, 8, 8, 4}, Shape{6, 6, 3, 3}}) {
    for (bool renorm : {true, false}) {
      const size_t T = 9;
      std::vector<float> logits(T * sh.E), bias(sh.E);
      for (float& v : logits) v = nd(rng);
      for (float& v : bias) v = 0.3f * nd(rng);
      const std::vector<float> orig = logits;
      Routing r;
      route_sigmoid_group_top2(logits, bias, T, sh.E, sh.k, sh.groups, sh.kept, renorm, &r);
      ASSERT_EQ(r.num_tokens, T);
      ASSERT_EQ(r.k, sh.k);
      for (size_t t = 0; t < T; ++t) {
        const std::vector<float> row(orig.begin() + static_cast<ptrdiff_t>(t * sh.E),
                                     orig.begin() + static_cast<ptrdiff_t>((t + 1) * sh.E));
        const OracleRoute want = oracle_v3(row, bias, sh.k, sh.groups, sh.kept, renorm);
        const std::vector<int32_t> got(r.experts.begin() + static_cast<ptrdiff_t>(t * sh.k),
                                       r.experts.begin() + static_cast<ptrdiff_t>((t + 1) * sh.k));
        ASSERT_EQ(got, want.experts) << "E=" << sh.E << " token " << t;
        for (size_t j = 0; j < sh.k; ++j) EXPECT_NEAR(r.weights[t * sh.k + j], want.weights[j], 6e-7) << t;
        // logits now hold the unbiased scores
        for (size_t e = 0; e < sh.E; ++e)
          EXPECT_NEAR(logits[t * sh.E + e], 1.0 / (1.0 + std::exp(-static_cast<double>(row[e]))), 1e-7);
      }
    }
  }
}

// transformers masks with 0.0, not -inf: with strongly negative biases every
// kept expert's biased score is below zero, so a masked expert (0.0) outranks
// them and is chosen, with its unbiased score as weight.
TEST(Router, SigmoidGroupTop2KeepsTheMaskedZeroQuirk) {
  const size_t E = 8, k = 2;
  std::vector<float> logits = {3.0f, 2.0f, -1.0f, -2.0f, 0.5f, 0.1f, -0.5f, -3.0f};
  std::vector<float> bias(E, -2.0f);
  bias[6] = bias[7] = -5.0f;  // group 3 ranks last
  const std::vector<float> orig = logits;
  Routing r;
  route_sigmoid_group_top2(logits, bias, 1, E, k, 4, 2, true, &r);
  const OracleRoute want = oracle_v3(orig, bias, k, 4, 2, true);
  EXPECT_EQ(r.experts, want.experts);
  // groups 0 and 2 are kept (best sums); the best two masked scores are 0.0 of
  // group 1 (experts 2, 3), ahead of every negative kept score.
  EXPECT_EQ(r.experts, (std::vector<int32_t>{2, 3}));
  for (size_t j = 0; j < k; ++j) EXPECT_NEAR(r.weights[j], want.weights[j], 6e-7);
}

// transformers' DeepseekV2Moe ("greedy" and "group_limited_greedy") in float64.
TEST(Router, SoftmaxGroupMaxMatchesTheTransformersRouter) {
  std::mt19937 rng(12);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  for (auto [E, k, groups, kept] : {std::tuple<size_t, size_t, size_t, size_t>{8, 2, 4, 2}, {10, 3, 1, 1},
                                    {12, 4, 6, 3}, {160, 6, 8, 3}, {4, 4, 2, 2}}) {
    const size_t T = 7;
    std::vector<float> logits(T * E);
    for (float& v : logits) v = nd(rng);
    const std::vector<float> orig = logits;
    Routing r;
    route_softmax_group_max(logits, T, E, k, groups, kept, &r);
    const size_t per = E / groups;
    for (size_t t = 0; t < T; ++t) {
      std::vector<double> p(E);
      double mx = -1e300, sum = 0;
      for (size_t e = 0; e < E; ++e) mx = std::max(mx, static_cast<double>(orig[t * E + e]));
      for (size_t e = 0; e < E; ++e) sum += p[e] = std::exp(static_cast<double>(orig[t * E + e]) - mx);
      std::vector<float> pf(E), gmax(groups, 0.0f);
      for (size_t e = 0; e < E; ++e) {
        pf[e] = static_cast<float>(p[e] / sum);
        gmax[e / per] = std::max(gmax[e / per], pf[e]);
      }
      const std::vector<int32_t> keep = reference_top_k(gmax, kept);
      for (size_t e = 0; e < E; ++e)
        if (std::find(keep.begin(), keep.end(), static_cast<int32_t>(e / per)) == keep.end()) pf[e] = 0.0f;
      const std::vector<int32_t> want = reference_top_k(pf, k);
      const std::vector<int32_t> got(r.experts.begin() + static_cast<ptrdiff_t>(t * k),
                                     r.experts.begin() + static_cast<ptrdiff_t>((t + 1) * k));
      ASSERT_EQ(got, want) << "E=" << E << " token " << t;
      for (size_t j = 0; j < k; ++j)
        EXPECT_NEAR(r.weights[t * k + j], pf[static_cast<size_t>(want[j])], 4e-7) << "no renormalisation";
    }
  }
}

}  // namespace
}  // namespace submoe::model
