#include "submoe/model/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

namespace submoe::model {
namespace {

std::vector<float> random_logits(size_t n, uint32_t seed, float scale = 2.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

std::vector<double> softmax64(const std::vector<float>& l, double temperature) {
  double mx = -INFINITY;
  for (float v : l) mx = std::max(mx, v / temperature);
  std::vector<double> p(l.size());
  double s = 0;
  for (size_t i = 0; i < l.size(); ++i) s += p[i] = std::exp(l[i] / temperature - mx);
  for (double& x : p) x /= s;
  return p;
}

TEST(Sampler, ArgmaxTakesFirstMaximumAndSkipsNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(argmax(std::vector<float>{1, 3, 3, 2}), 1);
  EXPECT_EQ(argmax(std::vector<float>{nan, 0.5f, nan, 0.7f}), 3);
  EXPECT_EQ(argmax(std::vector<float>{-INFINITY, -INFINITY}), 0);
}

TEST(Sampler, TemperatureZeroIsGreedy) {
  Sampler s(SamplerOptions{0.0f, 5, 0.5f, 7});
  for (uint32_t seed = 0; seed < 20; ++seed) {
    const auto l = random_logits(100, seed);
    EXPECT_EQ(s.sample(l), argmax(l));
  }
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDiffers) {
  const auto l = random_logits(50, 1, 0.5f);  // flat: many likely tokens
  auto draw = [&](uint64_t seed) {
    Sampler s(SamplerOptions{1.0f, 0, 1.0f, seed});
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) out.push_back(s.sample(l));
    return out;
  };
  EXPECT_EQ(draw(42), draw(42));
  EXPECT_NE(draw(42), draw(43));
}

TEST(Sampler, DistributionMatchesTemperatureSoftmax) {
  const auto l = random_logits(40, 2);
  for (float t : {0.5f, 1.0f, 2.0f}) {
    Sampler s(SamplerOptions{t, 0, 1.0f, 0});
    const auto d = s.distribution(l);
    const auto want = softmax64(l, t);
    for (size_t i = 0; i < l.size(); ++i) EXPECT_NEAR(d[i], want[i], 1e-6);
  }
}

TEST(Sampler, TopKKeepsOnlyTheKMostLikely) {
  const auto l = random_logits(64, 3);
  Sampler s(SamplerOptions{1.0f, 5, 1.0f, 0});
  const auto d = s.distribution(l);
  std::vector<int32_t> order(l.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return l[static_cast<size_t>(a)] > l[static_cast<size_t>(b)]; });
  double kept_mass = 0;
  for (size_t r = 0; r < order.size(); ++r) {
    const float p = d[static_cast<size_t>(order[r])];
    if (r < 5) {
      EXPECT_GT(p, 0.0f);
      kept_mass += p;
    } else {
      EXPECT_EQ(p, 0.0f);
    }
  }
  EXPECT_NEAR(kept_mass, 1.0, 1e-6);
  // Renormalised among the five: ratios preserved.
  const auto full = softmax64(l, 1.0);
  EXPECT_NEAR(d[static_cast<size_t>(order[0])] / d[static_cast<size_t>(order[1])],
              full[static_cast<size_t>(order[0])] / full[static_cast<size_t>(order[1])], 1e-4);
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingTheMass) {
  for (uint32_t seed = 0; seed < 30; ++seed) {
    const auto l = random_logits(32, 100 + seed);
    const float top_p = 0.05f + 0.9f * static_cast<float>(seed) / 30.0f;
    Sampler s(SamplerOptions{1.0f, 0, top_p, 0});
    const auto d = s.distribution(l);
    const auto full = softmax64(l, 1.0);
    std::vector<size_t> order(l.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return full[a] > full[b]; });
    size_t want_keep = 0;
    double mass = 0;
    while (want_keep < order.size()) {
      mass += full[order[want_keep++]];
      if (mass >= top_p) break;
    }
    size_t kept = 0;
    for (float p : d) kept += p > 0.0f;
    EXPECT_EQ(kept, want_keep) << "top_p " << top_p;
    for (size_t r = 0; r < want_keep; ++r) EXPECT_NEAR(d[order[r]], full[order[r]] / mass, 1e-5);
  }
}

TEST(Sampler, EmpiricalFrequenciesFollowTheDistribution) {
  const std::vector<float> l = {2.0f, 1.0f, 0.0f, -1.0f, 0.5f};
  Sampler s(SamplerOptions{1.0f, 4, 0.9f, 99});
  const auto d = s.distribution(l);
  const int n = 40000;
  std::vector<int> count(l.size(), 0);
  for (int i = 0; i < n; ++i) ++count[static_cast<size_t>(s.sample(l))];
  for (size_t i = 0; i < l.size(); ++i) {
    const double sd = std::sqrt(n * d[i] * (1 - d[i])) + 1;
    EXPECT_NEAR(count[i], n * d[i], 5 * sd) << "token " << i;
  }
}

TEST(Sampler, NeverSamplesFilteredOrNanTokens) {
  std::vector<float> l = random_logits(20, 4);
  l[3] = std::numeric_limits<float>::quiet_NaN();
  l[7] = -INFINITY;
  Sampler s(SamplerOptions{1.5f, 0, 1.0f, 5});
  for (int i = 0; i < 2000; ++i) {
    const int32_t t = s.sample(l);
    EXPECT_NE(t, 3);
    EXPECT_NE(t, 7);
  }
}

TEST(Sampler, ValidateRejectsBadOptions) {
  EXPECT_TRUE(validate(SamplerOptions{}).is_ok());
  EXPECT_FALSE(validate(SamplerOptions{1.0f, -1, 1.0f, 0}).is_ok());
  EXPECT_FALSE(validate(SamplerOptions{1.0f, 0, 0.0f, 0}).is_ok());
  EXPECT_FALSE(validate(SamplerOptions{1.0f, 0, 1.5f, 0}).is_ok());
  EXPECT_FALSE(validate(SamplerOptions{NAN, 0, 1.0f, 0}).is_ok());
}

}  // namespace
}  // namespace submoe::model
