// The global-vs-per-layer codebook experiment (runtime/rvq_codebook_fit.h) on
// the qwen3_moe fixture: one entry per MoE layer with the expected vector
// counts (even experts train, odd experts test), errors inside the range a
// 1-bit code of near-Gaussian data can have, a per-layer set that fits its own
// training data better than the held-out data, and bad options refused.
#include "submoe/runtime/rvq_codebook_fit.h"

#include <gtest/gtest.h>

namespace submoe::runtime {
namespace {

const std::string kModel = std::string(SUBMOE_SOURCE_DIR) + "/tests/fixtures/qwen3_moe";

TEST(RvqCodebookFit, PerLayerSetsAgainstTheGlobalOneOnTheFixture) {
  RvqCodebookFitOptions o;
  o.bits = 1.0;
  o.train_vectors = 512;
  o.iters = 4;
  o.beam = 2;
  auto r = fit_rvq_codebooks(kModel, o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->stages, 2u);
  ASSERT_EQ(r->layers.size(), 2u);
  for (const RvqCodebookFitLayer& l : r->layers) {
    // 4 experts per half x (gate 16x64 + up 16x64 + down 64x16) = 4 x (64 + 64 + 64) subvectors.
    EXPECT_EQ(l.train_vectors, 512u) << "capped at --train-vectors";
    EXPECT_EQ(l.test_vectors, 768u);
    for (double m : {l.mse_global, l.mse_layer}) {
      EXPECT_GT(m, 0.1) << "layer " << l.layer;  // 1 bit of a 16-dim Gaussian-like source: ~0.2 held out
      EXPECT_LT(m, 0.5) << "layer " << l.layer;
    }
    // 512 training vectors for 2 x 256 centroids: the layer set memorizes them.
    EXPECT_GT(l.mse_layer_train, 0.0);
    EXPECT_LT(l.mse_layer_train, 0.5 * l.mse_layer) << "layer " << l.layer;
  }
  EXPECT_GT(r->mse_global, 0);
  EXPECT_GT(r->mse_layer, 0);
}

TEST(RvqCodebookFit, BadOptionsAndInputsAreRefused) {
  RvqCodebookFitOptions o;
  o.bits = 0.75;
  EXPECT_NE(fit_rvq_codebooks(kModel, o).status().message().find("steps of 0.5"), std::string::npos);
  o.bits = 1.0;
  o.beam = 0;
  EXPECT_NE(fit_rvq_codebooks(kModel, o).status().message().find("--beam"), std::string::npos);
  o.beam = 1;
  o.train_vectors = 10;
  EXPECT_NE(fit_rvq_codebooks(kModel, o).status().message().find("--train-vectors"), std::string::npos);
  o.train_vectors = 512;
  EXPECT_FALSE(fit_rvq_codebooks(std::string(SUBMOE_SOURCE_DIR) + "/tests/fixtures/calib", o).is_ok());
}

}  // namespace
}  // namespace submoe::runtime
