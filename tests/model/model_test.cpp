// The forward pass against a float64 reference on random tiny checkpoints of each
// architecture, KV-cache decode against full prefill, threads, and error paths.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "submoe/core/thread_pool.h"
#include "submoe/model/moe_model.h"
#include "tiny_checkpoint.h"

namespace submoe::model {
namespace {

using testing::ReferenceOutput;
using testing::TinyCheckpoint;
using testing::TinySpec;

struct Case {
  std::string name;
  TinySpec spec;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> cases() {
  std::vector<Case> c;
  {
    TinySpec s;  // Mixtral: head_dim != H/nH, GQA, sliding window 5, linear rope
    s.model_type = "mixtral";
    s.sliding_window = 5;
    s.rope_linear_factor = 2.0;
    c.push_back({"mixtral_window", s});
  }
  {
    TinySpec s;
    s.model_type = "qwen2_moe";
    s.head_dim = 6;  // = hidden / heads
    s.layers = 3;
    s.shared_inner = 12;
    s.norm_topk_prob = false;
    s.mlp_only_layers = {1};
    s.sliding_window = 4;
    s.max_window_layers = 2;  // only layer 2 slides
    s.seed = 2;
    c.push_back({"qwen2_moe_shared_dense_window", s});
  }
  {
    TinySpec s;
    s.model_type = "qwen3_moe";
    s.head_dim = 8;
    s.attention_bias = true;
    s.tie_word_embeddings = true;
    s.top_k = 3;
    s.rms_norm_eps = 1e-6;
    s.seed = 3;
    c.push_back({"qwen3_moe_bias_tied_top3", s});
  }
  {
    TinySpec s;
    s.model_type = "olmoe";
    s.head_dim = 6;
    s.kv_heads = 4;
    s.clip_qkv = 0.6;
    s.norm_topk_prob = false;
    s.seed = 4;
    c.push_back({"olmoe_clip", s});
  }
  {
    TinySpec s;
    s.model_type = "qwen3_moe";
    s.head_dim = 8;
    s.bf16 = true;
    s.fused_experts = true;
    s.seed = 5;
    c.push_back({"qwen3_moe_bf16_fused", s});
  }
  {
    TinySpec s;
    s.model_type = "mixtral";
    s.fused_experts = true;
    s.bf16 = true;
    s.seed = 6;
    c.push_back({"mixtral_bf16_fused", s});
  }
  return c;
}

std::vector<int32_t> token_ids(size_t n, int vocab, uint32_t seed) {
  std::vector<int32_t> ids(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& id : ids) {
    x = x * 1664525u + 1013904223u;
    id = static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(vocab));
  }
  return ids;
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

class ModelVsReference : public ::testing::TestWithParam<Case> {};

TEST_P(ModelVsReference, PrefillLogitsAndExpertsMatchFloat64Reference) {
  const Case& c = GetParam();
  auto ck = testing::write_tiny_checkpoint(c.spec);
  ASSERT_TRUE(ck.is_ok()) << ck.status().to_string();
  auto model = MoeModel::load(ck->dir);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const auto ids = token_ids(13, c.spec.vocab, c.spec.seed);
  const ReferenceOutput ref = testing::reference_forward(c.spec, *ck, ids);
  const double scale = max_abs(ref.logits);
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    Session session(**model, &pool);
    std::map<int, std::vector<std::vector<int>>> seen;
    session.set_routing_observer([&](int layer, size_t, const Routing& r) {
      for (size_t t = 0; t < r.num_tokens; ++t)
        seen[layer].push_back(std::vector<int>(r.experts.begin() + static_cast<ptrdiff_t>(t * r.k),
                                               r.experts.begin() + static_cast<ptrdiff_t>((t + 1) * r.k)));
    });
    std::vector<float> logits;
    ASSERT_TRUE(session.forward(ids, LogitsMode::kAll, &logits).is_ok());
    ASSERT_EQ(logits.size(), ref.logits.size());
    double worst = 0;
    for (size_t i = 0; i < logits.size(); ++i) worst = std::max(worst, std::abs(logits[i] - ref.logits[i]));
    // f32 activations against float64: relative error ~1e-6 per op over a few
    // dozen ops; 1e-4 of the logit scale leaves room, 1e-3 is the HF-parity bar.
    EXPECT_LE(worst, 1e-4 * scale) << c.name << " threads " << threads;
    EXPECT_EQ(seen, ref.experts) << c.name << " threads " << threads;
    EXPECT_EQ(session.length(), ids.size());
  }
}

TEST_P(ModelVsReference, DecodeWithKvCacheEqualsFullPrefill) {
  const Case& c = GetParam();
  auto ck = testing::write_tiny_checkpoint(c.spec);
  ASSERT_TRUE(ck.is_ok()) << ck.status().to_string();
  auto model = MoeModel::load(ck->dir);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const auto ids = token_ids(17, c.spec.vocab, c.spec.seed + 100);
  ThreadPool pool(2);
  Session full(**model, &pool);
  std::vector<float> all;
  ASSERT_TRUE(full.forward(ids, LogitsMode::kAll, &all).is_ok());
  double scale = 0;
  for (float x : all) scale = std::max(scale, static_cast<double>(std::abs(x)));
  const size_t V = static_cast<size_t>(c.spec.vocab);

  // Prefill 6 tokens, then 3 tokens at once, then one at a time (grows the cache
  // from a small reservation too).
  Session s(**model, &pool);
  s.reserve(2);
  std::vector<float> out;
  size_t pos = 0;
  auto step = [&](size_t n) {
    ASSERT_TRUE(s.forward(std::span<const int32_t>(ids).subspan(pos, n), LogitsMode::kAll, &out).is_ok());
    ASSERT_EQ(out.size(), n * V);
    for (size_t i = 0; i < n * V; ++i)
      ASSERT_NEAR(out[i], all[pos * V + i], 2e-5 * scale) << c.name << " position " << pos + i / V;
    pos += n;
  };
  step(6);
  step(3);
  while (pos < ids.size()) step(1);
  EXPECT_EQ(s.length(), ids.size());

  // kLast returns the last row only; reset starts over.
  s.reset();
  ASSERT_TRUE(s.forward(std::span<const int32_t>(ids).subspan(0, 5), LogitsMode::kLast, &out).is_ok());
  ASSERT_EQ(out.size(), V);
  for (size_t i = 0; i < V; ++i) EXPECT_NEAR(out[i], all[4 * V + i], 2e-5 * scale);
}

// Continuous batching: three sequences advance together in one BatchForward per
// step, each by a different number of tokens (prefill chunks beside single-token
// decode steps, sequences joining late), and every logit row equals the row of
// that sequence's own full prefill: rows attend only within their session.
TEST_P(ModelVsReference, BatchedSessionsEqualEachSessionAlone) {
  const Case& c = GetParam();
  auto ck = testing::write_tiny_checkpoint(c.spec);
  ASSERT_TRUE(ck.is_ok()) << ck.status().to_string();
  auto model = MoeModel::load(ck->dir);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const size_t V = static_cast<size_t>(c.spec.vocab);
  ThreadPool pool(2);
  constexpr size_t kSeqs = 3;
  std::vector<std::vector<int32_t>> ids;
  std::vector<std::vector<float>> alone(kSeqs);
  double scale = 0;
  for (size_t q = 0; q < kSeqs; ++q) {
    ids.push_back(token_ids(13 + q, c.spec.vocab, c.spec.seed + 200 + static_cast<uint32_t>(q)));
    Session s(**model, &pool);
    ASSERT_TRUE(s.forward(ids[q], LogitsMode::kAll, &alone[q]).is_ok());
    for (float x : alone[q]) scale = std::max(scale, static_cast<double>(std::abs(x)));
  }
  // Tokens each sequence takes per step (0 = not in this step's batch).
  const std::vector<std::vector<size_t>> plan = {{5, 0, 1}, {1, 4, 1}, {1, 1, 6}, {3, 1, 1}, {1, 7, 1}, {2, 0, 3}, {0, 1, 2}};
  std::vector<std::unique_ptr<Session>> sessions;
  for (size_t q = 0; q < kSeqs; ++q) sessions.push_back(std::make_unique<Session>(**model, &pool));
  BatchForward batch(**model, &pool);
  std::vector<size_t> pos(kSeqs, 0);
  std::vector<float> out;
  for (const auto& step : plan) {
    std::vector<BatchEntry> entries;
    std::vector<size_t> who;
    for (size_t q = 0; q < kSeqs; ++q) {
      const size_t n = std::min(step[q], ids[q].size() - pos[q]);
      if (n == 0) continue;
      entries.push_back({sessions[q].get(), std::span<const int32_t>(ids[q]).subspan(pos[q], n), true});
      who.push_back(q);
    }
    ASSERT_TRUE(batch.forward(entries, &out).is_ok());
    ASSERT_EQ(out.size(), entries.size() * V);
    for (size_t e = 0; e < entries.size(); ++e) {
      const size_t q = who[e];
      pos[q] += entries[e].tokens.size();
      ASSERT_EQ(sessions[q]->length(), pos[q]);
      for (size_t i = 0; i < V; ++i)
        ASSERT_NEAR(out[e * V + i], alone[q][(pos[q] - 1) * V + i], 2e-5 * scale)
            << c.name << " sequence " << q << " position " << pos[q] - 1;
    }
  }
  for (size_t q = 0; q < kSeqs; ++q) EXPECT_EQ(pos[q], ids[q].size());
}

INSTANTIATE_TEST_SUITE_P(Architectures, ModelVsReference, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

TEST(Model, RejectsOutOfRangeTokensWithoutTouchingTheCache) {
  TinySpec spec;
  auto ck = testing::write_tiny_checkpoint(spec);
  ASSERT_TRUE(ck.is_ok());
  auto model = MoeModel::load(ck->dir);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  Session s(**model, nullptr);
  std::vector<float> out;
  const std::vector<int32_t> ok = {1, 2, 3};
  ASSERT_TRUE(s.forward(ok, LogitsMode::kLast, &out).is_ok());
  for (int32_t bad : {-1, spec.vocab, 1 << 30}) {
    const std::vector<int32_t> ids = {4, bad};
    Status st = s.forward(ids, LogitsMode::kLast, &out);
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(s.length(), 3u);
  }
}

TEST(Model, BatchForwardRejectsBadEntriesWithoutTouchingAnyCache) {
  TinySpec spec;
  auto ck = testing::write_tiny_checkpoint(spec);
  ASSERT_TRUE(ck.is_ok());
  auto model = MoeModel::load(ck->dir);
  auto other = MoeModel::load(ck->dir);
  ASSERT_TRUE(model.is_ok() && other.is_ok());
  Session a(**model, nullptr), b(**model, nullptr), foreign(**other, nullptr);
  BatchForward batch(**model, nullptr);
  std::vector<float> out;
  const std::vector<int32_t> ok = {1, 2, 3}, bad = {4, spec.vocab}, none;
  ASSERT_TRUE(batch.forward(std::vector<BatchEntry>{{&a, ok, true}}, &out).is_ok());
  auto expect_refused = [&](std::vector<BatchEntry> entries, const std::string& needle) {
    Status st = batch.forward(entries, &out);
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << needle;
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
    EXPECT_EQ(a.length(), 3u);
    EXPECT_EQ(b.length(), 0u);
  };
  expect_refused({{&a, ok, true}, {&b, bad, true}}, "batch entry 1: token id");
  expect_refused({{&b, ok, true}, {&b, ok, true}}, "listed twice");
  expect_refused({{&a, ok, true}, {&b, none, true}}, "no tokens");
  expect_refused({{&foreign, ok, true}}, "another model");
  expect_refused({{nullptr, ok, true}}, "no session");
  // Logits only of the entries that ask for them.
  ASSERT_TRUE(batch.forward(std::vector<BatchEntry>{{&a, ok, false}, {&b, ok, true}}, &out).is_ok());
  EXPECT_EQ(out.size(), static_cast<size_t>(spec.vocab));
  EXPECT_EQ(a.length(), 6u);
  EXPECT_EQ(b.length(), 3u);
}

TEST(Model, MissingOrMisshapedTensorIsAnErrorNamingIt) {
  TinySpec spec;
  auto ck = testing::write_tiny_checkpoint(spec);
  ASSERT_TRUE(ck.is_ok());
  // Re-write the checkpoint without one expert tensor, then with a wrong shape.
  auto st = io::SafetensorsModel::open(ck->dir);
  ASSERT_TRUE(st.is_ok());
  const std::string victim = "model.layers.1.block_sparse_moe.experts.3.w2.weight";
  for (int variant = 0; variant < 2; ++variant) {
    io::SafetensorsWriter w;
    for (const io::TensorView* t : (*st)->tensors()) {
      if (t->name == victim) {
        if (variant == 0) continue;
        std::vector<float> z(static_cast<size_t>(t->numel()), 0.0f);
        ASSERT_TRUE(w.add_f32(t->name, {t->shape[1], t->shape[0]}, z).is_ok());
        continue;
      }
      ASSERT_TRUE(w.add(t->name, t->dtype, t->shape, t->bytes()).is_ok());
    }
    const std::string dir = ck->dir + "/broken" + std::to_string(variant);
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(ck->dir + "/config.json", dir + "/config.json");
    ASSERT_TRUE(w.write(dir + "/model.safetensors").is_ok());
    auto m = MoeModel::load(dir);
    ASSERT_FALSE(m.is_ok());
    EXPECT_EQ(m.status().code(), variant == 0 ? ErrorCode::kNotFound : ErrorCode::kInvalidArgument);
    EXPECT_NE(m.status().message().find(victim), std::string::npos) << m.status().to_string();
  }
}

// A tensor nothing reads (a layer's extra projection, a stray name) means the
// config does not describe the checkpoint: an error naming it, unless allowed;
// the same model then loads and equals the one without the tensor.
TEST(Model, UnusedTensorIsAnErrorUnlessAllowed) {
  for (const std::string model_type : {"mixtral", "qwen3_moe", "qwen2_moe", "olmoe"}) {
    SCOPED_TRACE(model_type);
    TinySpec spec;
    spec.model_type = model_type;
    if (model_type == "qwen2_moe") spec.shared_inner = 8;
    auto ck = testing::write_tiny_checkpoint(spec);
    ASSERT_TRUE(ck.is_ok());
    ASSERT_TRUE(MoeModel::load(ck->dir).is_ok()) << "every tensor of a matching checkpoint is read";
    auto st = io::SafetensorsModel::open(ck->dir);
    ASSERT_TRUE(st.is_ok());
    for (const std::string extra : {"model.layers.0.self_attn.rotary_emb.inv_freq", "model.extra_head.weight"}) {
      io::SafetensorsWriter w;
      for (const io::TensorView* t : (*st)->tensors()) ASSERT_TRUE(w.add(t->name, t->dtype, t->shape, t->bytes()).is_ok());
      ASSERT_TRUE(w.add_f32(extra, {3}, std::vector<float>{1, 2, 3}).is_ok());
      const std::string dir = ck->dir + "/extra";
      std::filesystem::create_directories(dir);
      std::filesystem::copy_file(ck->dir + "/config.json", dir + "/config.json",
                                 std::filesystem::copy_options::overwrite_existing);
      ASSERT_TRUE(w.write(dir + "/model.safetensors").is_ok());
      auto m = MoeModel::load(dir);
      ASSERT_FALSE(m.is_ok());
      EXPECT_EQ(m.status().code(), ErrorCode::kCorruptData);
      EXPECT_NE(m.status().message().find("1 tensor(s) this model does not read ('" + extra + "')"), std::string::npos)
          << m.status().to_string();
      EXPECT_NE(m.status().message().find("--allow-extra-tensors"), std::string::npos);
      LoadWeightsOptions allow;
      allow.allow_unused_tensors = true;
      auto ok = MoeModel::load(dir, allow);
      ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
    }
  }
}

TEST(Model, ConfigThatContradictsTheArchitectureIsRejected) {
  TinySpec spec;
  spec.model_type = "qwen2_moe";
  spec.head_dim = 6;
  spec.shared_inner = 0;  // qwen2_moe without a shared expert is not a Qwen2-MoE
  auto ck = testing::write_tiny_checkpoint(spec);
  ASSERT_TRUE(ck.is_ok());
  auto m = MoeModel::load(ck->dir);
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("shared"), std::string::npos) << m.status().to_string();
}

}  // namespace
}  // namespace submoe::model
