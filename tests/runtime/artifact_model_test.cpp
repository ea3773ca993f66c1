// Whole models from hand-built artifacts (qwen3_moe and mixtral fixtures, plus
// qwen2_moe and olmoe; ternary and int experts):
//  (b) the reference-decoded model equals, bit for bit, a dense MoeModel whose
//      experts are the floats the builder's own grid decodes to (so the loader,
//      the codec's reference decoders and docs/format.md agree);
//  (a) the fused model's logits stay within a float tolerance of the
//      reference-decoded model's, and every fused expert op stays within the
//      summation bound of a float64 product with the decoded weights.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "artifact_builder.h"
#include "submoe/core/thread_pool.h"
#include "submoe/io/architecture.h"
#include "submoe/model/moe_model.h"
#include "submoe/runtime/artifact_model.h"

namespace submoe::runtime {
namespace {

using testing::ArtifactSpec;
using testing::cached_artifact;

std::vector<ArtifactSpec> specs() {
  std::vector<ArtifactSpec> s;
  for (const char* fixture : {"qwen3_moe", "mixtral"}) {
    ArtifactSpec t;
    t.fixture = fixture;
    s.push_back(t);
    ArtifactSpec i4 = t;
    i4.ternary = false;
    i4.bits = 4;
    i4.group_size = 0;
    s.push_back(i4);
    ArtifactSpec i3 = i4;
    i3.bits = 3;
    i3.group_size = 32;
    s.push_back(i3);
  }
  ArtifactSpec tun;
  tun.code = ternary::DictKind::kTunstall;
  tun.p0 = 0.8;
  s.push_back(tun);
  // Format version 2: ternary_dict and int matrices side by side in one model.
  ArtifactSpec mixed;
  mixed.mixed_v2 = true;
  mixed.bits = 3;
  mixed.group_size = 32;
  s.push_back(mixed);
  ArtifactSpec i2;
  i2.fixture = "mixtral";
  i2.ternary = false;
  i2.bits = 2;
  i2.group_size = 64;
  s.push_back(i2);
  // Shared expert and a dense MLP layer (qwen2_moe); whole-projection QK norm
  // and clip_qkv (olmoe): the dense parts go through the checkpoint loader.
  ArtifactSpec q2;
  q2.fixture = "qwen2_moe";
  s.push_back(q2);
  ArtifactSpec ol;
  ol.fixture = "olmoe";
  ol.ternary = false;
  ol.bits = 4;
  ol.group_size = 32;
  s.push_back(ol);
  return s;
}

class ArtifactModel : public ::testing::TestWithParam<ArtifactSpec> {};

std::string param_name(const ::testing::TestParamInfo<ArtifactSpec>& info) {
  std::string n = testing::spec_name(info.param);
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
}

// All-position logits of every golden prompt.
std::vector<std::vector<float>> run_prompts(const model::MoeModel& m, const std::string& fixture, ThreadPool* pool) {
  std::vector<std::vector<float>> out;
  for (const auto& ids : testing::fixture_prompts(fixture)) {
    model::Session s(m, pool);
    std::vector<float> logits;
    const Status st = s.forward(ids, model::LogitsMode::kAll, &logits);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    out.push_back(std::move(logits));
  }
  return out;
}

// A dense model whose routed experts are the builder's decoded floats.
struct DenseReference {
  std::vector<std::vector<float>> storage;  // the dense ops point into it
  std::unique_ptr<model::MoeModel> model;
};

DenseReference dense_reference(const testing::BuiltArtifact& a) {
  DenseReference r;
  auto cfg = io::load_hf_config(testing::fixture_dir(a.parts.fixture));
  EXPECT_TRUE(cfg.is_ok());
  auto src = io::SafetensorsModel::open(testing::fixture_dir(a.parts.fixture));
  EXPECT_TRUE(src.is_ok());
  model::LoadWeightsOptions o;
  o.skip_routed_experts = true;  // replaced by the decoded weights below
  o.read_elsewhere = [](const io::TensorView& t) { return t.name.find(".experts.") != std::string::npos; };
  auto w = model::load_checkpoint_weights(*cfg, io::architecture_descriptor(cfg->architecture),
                                          std::shared_ptr<const io::SafetensorsModel>(std::move(src).value()), o);
  EXPECT_TRUE(w.is_ok()) << w.status().to_string();
  EXPECT_EQ(w->experts, nullptr);
  std::vector<std::vector<model::ResidentExpertProvider::Expert>> experts(static_cast<size_t>(cfg->num_hidden_layers));
  r.storage.reserve(a.parts.decoded.size());
  for (const auto& [key, dec] : a.parts.decoded) {
    const auto [l, e, p] = key;
    const auto shape = a.parts.shapes.at(key);
    auto& row = experts[static_cast<size_t>(l)];
    if (row.size() <= static_cast<size_t>(e)) row.resize(static_cast<size_t>(e) + 1);
    r.storage.push_back(dec);
    auto op = model::make_dense_linear(r.storage.back().data(), model::DenseDType::kF32, shape[0], shape[1]);
    auto& x = row[static_cast<size_t>(e)];
    (p == 0 ? x.gate : p == 1 ? x.up : x.down) = std::move(op);
  }
  w->experts = std::make_unique<model::ResidentExpertProvider>(std::move(experts));
  auto m = model::MoeModel::create(*cfg, std::move(w).value());
  EXPECT_TRUE(m.is_ok()) << m.status().to_string();
  r.model = std::move(m).value();
  return r;
}

TEST_P(ArtifactModel, ReferenceDecodedModelEqualsDenseModelOfDecodedWeightsBitForBit) {
  const testing::BuiltArtifact& a = cached_artifact(GetParam());
  ArtifactModelOptions o;
  o.execution = ExecutionMode::kReferenceDecode;
  auto m = load_artifact_model(a.dir, o);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  DenseReference ref = dense_reference(a);
  ASSERT_NE(ref.model, nullptr);
  const auto got = run_prompts(**m, a.parts.fixture, nullptr);
  const auto want = run_prompts(*ref.model, a.parts.fixture, nullptr);
  ASSERT_EQ(got.size(), want.size());
  for (size_t p = 0; p < got.size(); ++p) {
    ASSERT_EQ(got[p].size(), want[p].size());
    for (size_t i = 0; i < got[p].size(); ++i) ASSERT_EQ(got[p][i], want[p][i]) << "prompt " << p << " logit " << i;
  }
  // Compression changed the model: the logits are not the fixture's.
  auto orig = model::MoeModel::load(testing::fixture_dir(a.parts.fixture));
  ASSERT_TRUE(orig.is_ok());
  const auto dense = run_prompts(**orig, a.parts.fixture, nullptr);
  double diff = 0;
  for (size_t i = 0; i < dense[0].size(); ++i) diff = std::max(diff, std::fabs(double(dense[0][i]) - got[0][i]));
  EXPECT_GT(diff, 1e-3);
}

// Tolerance of fused vs reference-decoded logits. The two models differ only in
// the order the expert projections sum their <= 64 products: per output at most
// (K + 2) 2^-24 sum|w x| <= 4e-6 sum|w x| (checked op by op below). The
// fixtures' README measured <= 4e-6 logit drift between two complete float32
// implementations whose every operation sums in a different order, and bounds
// such drift by atol 1e-4; ours is a subset of that perturbation.
constexpr double kLogitTolerance = 1e-4;

TEST_P(ArtifactModel, FusedModelMatchesReferenceDecodedModel) {
  const testing::BuiltArtifact& a = cached_artifact(GetParam());
  auto fused = load_artifact_model(a.dir);
  ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
  ArtifactModelOptions o;
  o.execution = ExecutionMode::kReferenceDecode;
  auto ref = load_artifact_model(a.dir, o);
  ASSERT_TRUE(ref.is_ok());
  ThreadPool pool(2);
  const auto want = run_prompts(**ref, a.parts.fixture, nullptr);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    const auto got = run_prompts(**fused, a.parts.fixture, p);
    const size_t V = static_cast<size_t>((*fused)->config().vocab_size);
    for (size_t pr = 0; pr < got.size(); ++pr) {
      ASSERT_EQ(got[pr].size(), want[pr].size());
      double max_diff = 0;
      for (size_t i = 0; i < got[pr].size(); ++i) max_diff = std::max(max_diff, std::fabs(double(got[pr][i]) - want[pr][i]));
      EXPECT_LE(max_diff, kLogitTolerance) << "prompt " << pr;
      // Same greedy choice wherever the reference's top two are clearly apart.
      for (size_t t = 0; t * V < got[pr].size(); ++t) {
        const float* g = &got[pr][t * V];
        const float* w = &want[pr][t * V];
        const size_t gi = static_cast<size_t>(std::max_element(g, g + V) - g);
        const size_t wi = static_cast<size_t>(std::max_element(w, w + V) - w);
        std::vector<float> sorted(w, w + V);
        std::nth_element(sorted.begin(), sorted.begin() + 1, sorted.end(), std::greater<float>());
        if (sorted[0] - sorted[1] > 2 * kLogitTolerance) {
          EXPECT_EQ(gi, wi) << "prompt " << pr << " position " << t;
        }
      }
    }
  }
}

TEST_P(ArtifactModel, EveryFusedExpertOpIsWithinTheSummationBoundOfItsDecodedWeights) {
  const testing::BuiltArtifact& a = cached_artifact(GetParam());
  auto art = Artifact::open(a.dir);
  ASSERT_TRUE(art.is_ok()) << art.status().to_string();
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  size_t checked = 0;
  for (const auto& [key, dec] : a.parts.decoded) {
    const auto [l, e, p] = key;
    auto x = (*art)->expert_resident(l, e);
    ASSERT_TRUE(x.is_ok()) << x.status().to_string();
    const model::LinearOp* op = p == 0 ? (*x)->gate.get() : p == 1 ? (*x)->up.get() : (*x)->down.get();
    const size_t rows = a.parts.shapes.at(key)[0], cols = a.parts.shapes.at(key)[1];
    ASSERT_EQ(op->out_features(), rows);
    ASSERT_EQ(op->in_features(), cols);
    for (size_t n : {size_t{1}, size_t{3}, size_t{70}}) {  // 70: two kernel chunks
      std::vector<float> in(n * cols), out(n * rows, NAN);
      for (float& v : in) v = nd(rng);
      op->forward(in.data(), n, out.data(), nullptr);
      for (size_t t = 0; t < n; ++t)
        for (size_t r = 0; r < rows; ++r) {
          double y = 0, mag = 0;
          for (size_t c = 0; c < cols; ++c) {
            y += double(dec[r * cols + c]) * in[t * cols + c];
            mag += std::fabs(double(dec[r * cols + c]) * in[t * cols + c]);
          }
          const double bound = 1.01 * double(cols + 2) * std::ldexp(1.0, -24) * mag;
          ASSERT_LE(std::fabs(out[t * rows + r] - y), bound) << op->describe() << " n=" << n;
          ++checked;
        }
    }
  }
  EXPECT_GT(checked, 10000u);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ArtifactModel, ::testing::ValuesIn(specs()), param_name);

TEST(ArtifactModelApi, DenseWeightsLeaveExpertsToTheCaller) {
  const testing::BuiltArtifact& a = cached_artifact(ArtifactSpec{});
  auto art = Artifact::open(a.dir);
  ASSERT_TRUE(art.is_ok());
  auto w = load_artifact_dense_weights(*art);
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  EXPECT_EQ(w->experts, nullptr);
  EXPECT_EQ(w->layers.size(), 2u);
  EXPECT_NE(w->storage, nullptr);
  // Without experts the model refuses to be built.
  EXPECT_FALSE(model::MoeModel::create((*art)->model_config(), std::move(w).value()).is_ok());
}

TEST(ArtifactModelApi, ModelOutlivesTheArtifactHandle) {
  const testing::BuiltArtifact& a = cached_artifact(ArtifactSpec{});
  std::unique_ptr<model::MoeModel> m;
  {
    auto art = Artifact::open(a.dir);
    ASSERT_TRUE(art.is_ok());
    auto r = load_artifact_model(*art);
    ASSERT_TRUE(r.is_ok());
    m = std::move(r).value();
  }
  const auto logits = run_prompts(*m, "qwen3_moe", nullptr);
  for (float v : logits[0]) ASSERT_TRUE(std::isfinite(v));
}

}  // namespace
}  // namespace submoe::runtime
