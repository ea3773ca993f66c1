#include "model/attention_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "submoe/core/cpu_features.h"

namespace submoe::model::detail {
namespace {

TEST(AttentionKernels, EveryImplementationMatchesFloat64) {
  std::vector<std::pair<const char*, const AttentionKernels*>> impls = {{"portable", &attention_kernels_portable()}};
  if (cpu_features().avx512) impls.push_back({"avx512", &attention_kernels_avx512()});
  std::mt19937 rng(9);
  std::normal_distribution<float> nd;
  for (auto [name, k] : impls)
    for (size_t D : {8u, 24u, 32u, 64u, 100u, 128u})
      for (size_t n : {1u, 2u, 15u, 16u, 17u, 33u, 70u}) {
        std::vector<float> q(D), keys(n * D), vals(n * D), p(n);
        for (float& x : q) x = nd(rng);
        for (float& x : keys) x = nd(rng);
        for (float& x : vals) x = nd(rng);
        for (float& x : p) x = std::abs(nd(rng));
        std::vector<float> scores(n + 16, -1.0f), out(D + 16, -1.0f);
        k->scores(q.data(), keys.data(), n, D, 0.125f, scores.data());
        k->mix(p.data(), vals.data(), n, D, out.data());
        for (size_t j = 0; j < n; ++j) {
          double want = 0, mag = 0;
          for (size_t d = 0; d < D; ++d) {
            want += static_cast<double>(q[d]) * keys[j * D + d];
            mag += std::abs(static_cast<double>(q[d]) * keys[j * D + d]);
          }
          ASSERT_NEAR(scores[j], want * 0.125, 0.125 * D * 1.2e-7 * mag) << name << " D=" << D << " n=" << n;
        }
        EXPECT_EQ(scores[n], -1.0f) << name << ": wrote past n";
        for (size_t d = 0; d < D; ++d) {
          double want = 0, mag = 0;
          for (size_t j = 0; j < n; ++j) {
            want += static_cast<double>(p[j]) * vals[j * D + d];
            mag += std::abs(static_cast<double>(p[j]) * vals[j * D + d]);
          }
          ASSERT_NEAR(out[d], want, n * 1.2e-7 * mag + 1e-30) << name << " D=" << D << " n=" << n;
        }
        EXPECT_EQ(out[D], -1.0f) << name << ": wrote past D";
      }
}

}  // namespace
}  // namespace submoe::model::detail
