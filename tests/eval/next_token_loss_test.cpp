#include "submoe/eval/next_token_loss.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/tiny_checkpoint.h"
#include "submoe/core/thread_pool.h"

namespace submoe::eval {
namespace {

TEST(TokenNll, MatchesLogSoftmax) {
  const std::vector<float> l = {1.0f, 2.0f, 3.0f, -1.0f};
  double z = 0;
  for (float v : l) z += std::exp(static_cast<double>(v));
  for (int32_t t = 0; t < 4; ++t) EXPECT_NEAR(token_nll(l, t), std::log(z) - l[static_cast<size_t>(t)], 1e-12);
  // Huge logits stay finite.
  const std::vector<float> big = {1e30f, 0.0f};
  EXPECT_NEAR(token_nll(big, 0), 0.0, 1e-9);
  EXPECT_TRUE(std::isfinite(token_nll(big, 1)));
}

class LossOnTinyModel : public ::testing::Test {
 protected:
  void SetUp() override {
    spec_.model_type = "qwen3_moe";
    spec_.head_dim = 8;
    spec_.seed = 11;
    auto ck = model::testing::write_tiny_checkpoint(spec_);
    ASSERT_TRUE(ck.is_ok()) << ck.status().to_string();
    auto m = model::MoeModel::load(ck->dir);
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    model_ = std::move(*m);
    for (int i = 0; i < 23; ++i) tokens_.push_back((i * 17 + 5) % spec_.vocab);
  }

  // Independent of next_token_loss's chunking: one forward per window.
  double reference_nll(size_t N, size_t* scored) {
    model::Session s(*model_, nullptr);
    double total = 0;
    *scored = 0;
    std::vector<float> logits;
    const size_t V = static_cast<size_t>(spec_.vocab);
    for (size_t w0 = 0; w0 < tokens_.size(); w0 += N) {
      const size_t n = std::min(N, tokens_.size() - w0);
      s.reset();
      EXPECT_TRUE(s.forward(std::span<const int32_t>(tokens_).subspan(w0, n), model::LogitsMode::kAll, &logits).is_ok());
      for (size_t i = 0; i + 1 < n; ++i) {
        double mx = -INFINITY, z = 0;
        for (size_t v = 0; v < V; ++v) mx = std::max(mx, static_cast<double>(logits[i * V + v]));
        for (size_t v = 0; v < V; ++v) z += std::exp(logits[i * V + v] - mx);
        total += mx + std::log(z) - logits[i * V + static_cast<size_t>(tokens_[w0 + i + 1])];
        ++*scored;
      }
    }
    return total / static_cast<double>(*scored);
  }

  model::testing::TinySpec spec_;
  std::unique_ptr<model::MoeModel> model_;
  std::vector<int32_t> tokens_;
};

TEST_F(LossOnTinyModel, WindowsSkipTheirFirstTokenAndChunkingDoesNotMatter) {
  ThreadPool pool(2);
  for (size_t N : {2u, 5u, 8u, 23u, 100u}) {
    size_t scored = 0;
    const double want = reference_nll(N, &scored);
    EXPECT_EQ(scored, tokens_.size() - (tokens_.size() + N - 1) / N);
    for (size_t chunk : {1u, 3u, 256u}) {
      LossOptions o;
      o.context = N;
      o.chunk = chunk;
      size_t calls = 0;
      auto r = next_token_loss(*model_, tokens_, o, &pool, [&](size_t done, size_t total, double) {
        ++calls;
        EXPECT_LE(done, total);
      });
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      EXPECT_EQ(r->tokens_scored, scored);
      EXPECT_EQ(r->tokens_processed, tokens_.size());
      EXPECT_EQ(r->windows, (tokens_.size() + N - 1) / N);
      EXPECT_EQ(calls, r->windows);
      EXPECT_NEAR(r->nll, want, 1e-5 * want) << "N=" << N << " chunk=" << chunk;
      EXPECT_NEAR(r->ppl, std::exp(want), 1e-4 * std::exp(want));
      EXPECT_GT(r->tokens_per_s, 0.0);
    }
  }
}

TEST_F(LossOnTinyModel, MaxTokensTruncatesAndBadOptionsAreRejected) {
  LossOptions o;
  o.context = 4;
  o.max_tokens = 9;
  auto r = next_token_loss(*model_, tokens_, o, nullptr);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->tokens_processed, 9u);
  EXPECT_EQ(r->tokens_scored, 9u - 3u);
  o.context = 1;
  EXPECT_EQ(next_token_loss(*model_, tokens_, o, nullptr).status().code(), ErrorCode::kInvalidArgument);
  o.context = 4;
  const std::vector<int32_t> one = {3};
  EXPECT_FALSE(next_token_loss(*model_, one, o, nullptr).is_ok());
  const std::vector<int32_t> bad = {3, 4, 100000};
  EXPECT_EQ(next_token_loss(*model_, bad, o, nullptr).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace submoe::eval
