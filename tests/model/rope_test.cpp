#include "submoe/model/rope.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

namespace submoe::model {
namespace {

std::vector<double> default_inv_freq(double theta, int dim) {
  std::vector<double> f(static_cast<size_t>(dim / 2));
  for (int i = 0; i < dim / 2; ++i) f[static_cast<size_t>(i)] = 1.0 / std::pow(theta, 2.0 * i / dim);
  return f;
}

void expect_rel_near(std::span<const float> got, const std::vector<double>& want, double rel) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], rel * std::abs(want[i])) << "i=" << i;
}

TEST(Rope, DefaultFrequencies) {
  for (double theta : {10000.0, 500000.0, 1e6}) {
    for (int dim : {2, 24, 64, 128}) {
      RopeParams p;
      p.theta = theta;
      p.dim = dim;
      auto rope = Rope::create(p);
      ASSERT_TRUE(rope.is_ok()) << rope.status().to_string();
      expect_rel_near(rope->inv_freq(), default_inv_freq(theta, dim), 2e-6);
      EXPECT_EQ(rope->attention_scaling(), 1.0f);
    }
  }
}

TEST(Rope, LinearDividesFrequencies) {
  RopeParams p;
  p.theta = 500000.0;
  p.dim = 24;
  p.type = "linear";
  p.factor = 2.0;
  auto rope = Rope::create(p);
  ASSERT_TRUE(rope.is_ok());
  auto want = default_inv_freq(p.theta, p.dim);
  for (double& w : want) w /= 2.0;
  expect_rel_near(rope->inv_freq(), want, 2e-6);
}

// Doc §1.3, in double precision.
TEST(Rope, YarnMatchesFormula) {
  for (bool truncate : {true, false}) {
    RopeParams p;
    p.type = "yarn";
    p.theta = 50000.0;
    p.dim = 32;
    p.factor = 4.0;
    p.original_max_position_embeddings = 64;
    p.max_position_embeddings = 256;
    p.truncate = truncate;
    auto rope = Rope::create(p);
    ASSERT_TRUE(rope.is_ok());
    const double d = p.dim, s = p.factor, L0 = 64.0;
    auto corr = [&](double r) { return d * std::log(L0 / (r * 2 * std::numbers::pi)) / (2 * std::log(p.theta)); };
    double low = corr(32.0), high = corr(1.0);
    if (truncate) low = std::floor(low), high = std::ceil(high);
    low = std::max(low, 0.0);
    high = std::min(high, d - 1);
    std::vector<double> want(16);
    for (size_t i = 0; i < 16; ++i) {
      const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
      const double base = std::pow(p.theta, 2.0 * static_cast<double>(i) / d);
      want[i] = (1.0 / (s * base)) * ramp + (1.0 / base) * (1 - ramp);
    }
    expect_rel_near(rope->inv_freq(), want, 3e-6);
    EXPECT_NEAR(rope->attention_scaling(), 0.1 * std::log(4.0) + 1.0, 1e-6);
  }
}

TEST(Rope, YarnAttentionFactorVariants) {
  RopeParams p;
  p.type = "yarn";
  p.theta = 10000.0;
  p.dim = 16;
  p.factor = 40.0;
  p.original_max_position_embeddings = 4096;
  p.mscale = 1.0;
  p.mscale_all_dim = 0.707;
  auto a = Rope::create(p);
  ASSERT_TRUE(a.is_ok());
  const double want = (0.1 * 1.0 * std::log(40.0) + 1) / (0.1 * 0.707 * std::log(40.0) + 1);
  EXPECT_NEAR(a->attention_scaling(), want, 1e-6);
  p.attention_factor = 1.25;
  auto b = Rope::create(p);
  ASSERT_TRUE(b.is_ok());
  EXPECT_FLOAT_EQ(b->attention_scaling(), 1.25f);
}

TEST(Rope, Llama3MatchesFormula) {
  RopeParams p;
  p.type = "llama3";
  p.theta = 500000.0;
  p.dim = 128;
  p.factor = 8.0;
  p.low_freq_factor = 1.0;
  p.high_freq_factor = 4.0;
  p.original_max_position_embeddings = 8192;
  auto rope = Rope::create(p);
  ASSERT_TRUE(rope.is_ok());
  auto want = default_inv_freq(p.theta, p.dim);
  int low = 0, mid = 0, high = 0;
  for (double& f : want) {
    const double wl = 2 * std::numbers::pi / f;
    if (wl < 8192.0 / 4.0) {
      ++high;
    } else if (wl > 8192.0 / 1.0) {
      f /= 8.0;
      ++low;
    } else {
      const double smooth = (8192.0 / wl - 1.0) / (4.0 - 1.0);
      f = (1 - smooth) * f / 8.0 + smooth * f;
      ++mid;
    }
  }
  EXPECT_GT(low, 0);
  EXPECT_GT(mid, 0);
  EXPECT_GT(high, 0);
  expect_rel_near(rope->inv_freq(), want, 1e-5);
}

TEST(Rope, RejectsBadParameters) {
  RopeParams p;
  p.dim = 7;
  EXPECT_EQ(Rope::create(p).status().code(), ErrorCode::kInvalidArgument);
  p.dim = 8;
  p.theta = 0;
  EXPECT_EQ(Rope::create(p).status().code(), ErrorCode::kInvalidArgument);
  p.theta = 10000;
  p.type = "longrope";
  EXPECT_EQ(Rope::create(p).status().code(), ErrorCode::kUnsupported);
  p.type = "llama3";
  EXPECT_EQ(Rope::create(p).status().code(), ErrorCode::kInvalidArgument);  // no original length
}

// rotate_half convention: element i pairs with i + d/2, rotated by angle pos * inv_freq[i].
TEST(Rope, RotateIsHalfSplitComplexRotation) {
  RopeParams p;
  p.dim = 16;
  auto rope = Rope::create(p);
  ASSERT_TRUE(rope.is_ok());
  std::mt19937 rng(4);
  std::normal_distribution<float> nd;
  const size_t heads = 3, stride = 16;
  for (size_t pos : {0u, 1u, 17u, 1000u}) {
    std::vector<float> x(heads * stride), cs(8), sn(8);
    for (float& v : x) v = nd(rng);
    const std::vector<float> orig = x;
    rope->angles(pos, cs.data(), sn.data());
    Rope::rotate(x.data(), heads, stride, 16, cs.data(), sn.data());
    for (size_t h = 0; h < heads; ++h) {
      for (size_t i = 0; i < 8; ++i) {
        const double a = static_cast<double>(pos) * static_cast<double>(rope->inv_freq()[i]);
        const double re = orig[h * stride + i], im = orig[h * stride + i + 8];
        const double want_re = re * std::cos(a) - im * std::sin(a);
        const double want_im = im * std::cos(a) + re * std::sin(a);
        EXPECT_NEAR(x[h * stride + i], want_re, 2e-4 * (1 + static_cast<double>(pos) * 1e-3)) << pos;
        EXPECT_NEAR(x[h * stride + i + 8], want_im, 2e-4 * (1 + static_cast<double>(pos) * 1e-3)) << pos;
      }
    }
  }
}

// rotate_interleaved against transformers' DeepSeek form, in float64: permute
// the rope slice to [x0, x2, ..., x1, x3, ...], rotate halves; the result is
// the in-place pair rotation under that permutation (odd head strides, a tail
// of non-rope values left alone).
TEST(Rope, RotateInterleavedIsPermutedHalfRotation) {
  RopeParams p;
  p.dim = 12;
  auto rope = Rope::create(p);
  ASSERT_TRUE(rope.is_ok());
  std::mt19937 rng(9);
  std::normal_distribution<float> nd;
  const size_t heads = 3, stride = 19;
  for (size_t pos : {0u, 1u, 5u, 333u}) {
    std::vector<float> x(heads * stride), cs(6), sn(6);
    for (float& v : x) v = nd(rng);
    const std::vector<float> orig = x;
    rope->angles(pos, cs.data(), sn.data());
    Rope::rotate_interleaved(x.data(), heads, stride, 12, cs.data(), sn.data());
    for (size_t h = 0; h < heads; ++h) {
      const float* o = &orig[h * stride];
      std::vector<double> perm(12), want(12);
      for (size_t i = 0; i < 6; ++i) {
        perm[i] = o[2 * i];
        perm[i + 6] = o[2 * i + 1];
      }
      for (size_t i = 0; i < 12; ++i) {
        const double a = static_cast<double>(pos) * static_cast<double>(rope->inv_freq()[i % 6]);
        const double rotated_half = i < 6 ? -perm[i + 6] : perm[i - 6];
        want[i] = perm[i] * std::cos(a) + rotated_half * std::sin(a);
      }
      const double tol = 2e-4 * (1 + static_cast<double>(pos) * 1e-3);
      for (size_t i = 0; i < 6; ++i) {
        EXPECT_NEAR(x[h * stride + 2 * i], want[i], tol) << pos << " head " << h << " pair " << i;
        EXPECT_NEAR(x[h * stride + 2 * i + 1], want[i + 6], tol) << pos << " head " << h << " pair " << i;
      }
      for (size_t i = 12; i < stride; ++i) EXPECT_EQ(x[h * stride + i], o[i]) << "outside the rope slice";
    }
  }
}

// The property attention relies on: <R(p) q, R(p') k> depends only on p - p'.
TEST(Rope, DotProductDependsOnlyOnRelativePosition) {
  RopeParams p;
  p.dim = 32;
  auto rope = Rope::create(p);
  ASSERT_TRUE(rope.is_ok());
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  std::vector<float> q(32), k(32);
  for (float& v : q) v = nd(rng);
  for (float& v : k) v = nd(rng);
  auto rotated_dot = [&](size_t pq, size_t pk) {
    std::vector<float> a = q, b = k, c(16), s(16);
    rope->angles(pq, c.data(), s.data());
    Rope::rotate(a.data(), 1, 32, 32, c.data(), s.data());
    rope->angles(pk, c.data(), s.data());
    Rope::rotate(b.data(), 1, 32, 32, c.data(), s.data());
    double d = 0;
    for (size_t i = 0; i < 32; ++i) d += static_cast<double>(a[i]) * b[i];
    return d;
  };
  const double ref = rotated_dot(5, 2);
  EXPECT_NEAR(rotated_dot(105, 102), ref, 1e-3);
  EXPECT_NEAR(rotated_dot(3, 0), ref, 1e-3);
  EXPECT_GT(std::abs(rotated_dot(6, 2) - ref), 1e-3);  // a different offset differs
}

}  // namespace
}  // namespace submoe::model
