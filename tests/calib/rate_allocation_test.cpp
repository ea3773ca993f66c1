// Popularity-conditioned rates (calib/rate_allocation.h): thirds follows the
// seed's rank rule, waterfill equals the exact optimum of its integer problem
// (checked against brute force), both keep the layer mean exactly, respect the
// ladder and give never-routed experts a defined rate.
#include "submoe/calib/rate_allocation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numeric>
#include <random>

namespace submoe::calib {
namespace {

int sum_of(const std::vector<int>& k) { return std::accumulate(k.begin(), k.end(), 0); }

TEST(RateAllocation, NamesParseAndUnknownOnesAreRefused) {
  for (RateAlloc a : {RateAlloc::kUniform, RateAlloc::kThirds, RateAlloc::kWaterfill}) {
    auto p = parse_rate_alloc(rate_alloc_name(a));
    ASSERT_TRUE(p.is_ok());
    EXPECT_EQ(*p, a);
  }
  auto bad = parse_rate_alloc("thirdz");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("uniform, thirds or waterfill, got 'thirdz'"), std::string::npos);
}

TEST(RateAllocation, ThirdsRaisesTheTopThirdAndLowersTheBottomThird) {
  const LadderRange ladder{-3, 4, 0.5};
  // 16 experts: floor(16/3) = 5 up, 5 down, 6 unchanged; ties by lower index.
  const std::vector<uint64_t> counts = {50, 0, 7, 7, 90, 3, 12, 12, 0, 40, 5, 5, 20, 1, 60, 8};
  auto k = allocate_rates(RateAlloc::kThirds, counts, ladder);
  ASSERT_TRUE(k.is_ok()) << k.status().to_string();
  const std::vector<int> want = {1, -1, 0, 0, 1, -1, 0, 0, -1, 1, 0, -1, 1, -1, 1, 0};
  EXPECT_EQ(*k, want);
  EXPECT_EQ(sum_of(*k), 0);
  // Fewer than 3 experts: no third, everyone at the requested rate.
  auto two = allocate_rates(RateAlloc::kThirds, std::vector<uint64_t>{5, 1}, LadderRange{0, 0, 1});
  ASSERT_TRUE(two.is_ok());
  EXPECT_EQ(*two, (std::vector<int>{0, 0}));
  // The bottom of the ladder: no room below.
  auto none = allocate_rates(RateAlloc::kThirds, counts, LadderRange{0, 7, 0.5});
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("one rate step above and below"), std::string::npos);
}

// Brute force over every integer vector in the ladder with sum 0.
std::vector<int> brute_force(const std::vector<double>& x, int lo, int hi) {
  const size_t E = x.size();
  std::vector<int> k(E, lo), best;
  double best_cost = INFINITY;
  std::function<void(size_t, int)> rec = [&](size_t i, int sum) {
    if (i == E) {
      if (sum != 0) return;
      double c = 0;
      for (size_t e = 0; e < E; ++e) c += (k[e] - x[e]) * (k[e] - x[e]);
      if (c < best_cost - 1e-12) {
        best_cost = c;
        best = k;
      }
      return;
    }
    for (int v = lo; v <= hi; ++v) {
      k[i] = v;
      rec(i + 1, sum + v);
    }
  };
  rec(0, 0);
  return best;
}

double cost(const std::vector<int>& k, const std::vector<double>& x) {
  double c = 0;
  for (size_t e = 0; e < k.size(); ++e) c += (k[e] - x[e]) * (k[e] - x[e]);
  return c;
}

TEST(RateAllocation, WaterfillIsTheExactIntegerOptimumWithTheMeanKept) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 60; ++trial) {
    const size_t E = 2 + static_cast<size_t>(rng() % 6);  // 2..7 experts
    const int lo = -static_cast<int>(rng() % 4), hi = static_cast<int>(rng() % 4);
    const double step = trial % 2 ? 0.5 : 1.0;
    std::vector<uint64_t> counts(E);
    for (auto& c : counts) c = rng() % 4 == 0 ? 0 : static_cast<uint64_t>(std::pow(2.0, (rng() % 120) / 10.0));
    auto k = allocate_rates(RateAlloc::kWaterfill, counts, LadderRange{lo, hi, step});
    ASSERT_TRUE(k.is_ok()) << k.status().to_string();
    EXPECT_EQ(sum_of(*k), 0) << "trial " << trial;
    // The real-valued targets, recomputed independently (double).
    double n = 0;
    for (uint64_t c : counts) n += static_cast<double>(c);
    std::vector<double> lp(E), x(E);
    double mean = 0;
    for (size_t e = 0; e < E; ++e) {
      lp[e] = std::log2((static_cast<double>(counts[e]) + 0.5) / (n + 0.5 * static_cast<double>(E)));
      mean += lp[e] / static_cast<double>(E);
    }
    for (size_t e = 0; e < E; ++e) x[e] = 0.5 * (lp[e] - mean) / step;
    const std::vector<int> best = brute_force(x, lo, hi);
    EXPECT_NEAR(cost(*k, x), cost(best, x), 1e-9) << "trial " << trial;
    for (int v : *k) {
      EXPECT_GE(v, lo);
      EXPECT_LE(v, hi);
    }
    // More popular never gets fewer bits (the targets are monotone in count).
    for (size_t a = 0; a < E; ++a)
      for (size_t b = 0; b < E; ++b)
        if (counts[a] > counts[b]) {
          EXPECT_GE((*k)[a], (*k)[b]) << "trial " << trial;
        }
  }
}

TEST(RateAllocation, WaterfillFollowsHalfABitPerDoublingAndRatesUnroutedExperts) {
  // Popularity doubling per expert: 1/2 bit per doubling = one 0.5-bit step.
  std::vector<uint64_t> counts;
  for (int e = 0; e < 7; ++e) counts.push_back(uint64_t{1000} << e);
  auto k = allocate_rates(RateAlloc::kWaterfill, counts, LadderRange{-7, 7, 0.5});
  ASSERT_TRUE(k.is_ok());
  EXPECT_EQ(*k, (std::vector<int>{-3, -2, -1, 0, 1, 2, 3}));
  // An expert never routed sits at the bottom of the ladder, defined and counted.
  const std::vector<uint64_t> with_zero = {0, 500, 500, 500};
  auto z = allocate_rates(RateAlloc::kWaterfill, with_zero, LadderRange{-1, 1, 0.5});
  ASSERT_TRUE(z.is_ok());
  EXPECT_EQ((*z)[0], -1);
  EXPECT_EQ(sum_of(*z), 0);
  // Uniform: zeros whatever the counts.
  auto u = allocate_rates(RateAlloc::kUniform, with_zero, LadderRange{});
  ASSERT_TRUE(u.is_ok());
  EXPECT_EQ(*u, (std::vector<int>(4, 0)));
  EXPECT_FALSE(allocate_rates(RateAlloc::kWaterfill, with_zero, LadderRange{0, 0, 0}).is_ok());
  EXPECT_FALSE(allocate_rates(RateAlloc::kThirds, std::vector<uint64_t>{}, LadderRange{-1, 1, 1}).is_ok());
}

}  // namespace
}  // namespace submoe::calib
