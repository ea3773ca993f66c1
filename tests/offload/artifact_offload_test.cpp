// Offload glue on real compressed artifacts (built by the runtime tests' builder
// from the fixtures): a model whose experts are paged from model.safetensors
// through store + cache must give the resident artifact model's logits bit for
// bit, for every budget; and the run/eval flag translation rejects what it must.
#include "submoe/offload/artifact_offload.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "offload_test_util.h"
#include "runtime/artifact_builder.h"
#include "submoe/core/thread_pool.h"
#include "submoe/runtime/artifact_model.h"

namespace submoe::offload {
namespace {

std::vector<float> run_tokens(const model::MoeModel& m, ThreadPool* pool, std::vector<uint64_t>* popularity = nullptr) {
  model::Session session(m, pool);
  const size_t E = static_cast<size_t>(m.config().num_experts);
  if (popularity) {
    popularity->assign(static_cast<size_t>(m.config().num_hidden_layers) * E, 0);
    session.set_routing_observer([&](int layer, size_t, const model::Routing& r) {
      for (int32_t e : r.experts) (*popularity)[static_cast<size_t>(layer) * E + static_cast<size_t>(e)]++;
    });
  }
  std::mt19937 rng(5);
  const uint32_t vocab = static_cast<uint32_t>(m.config().vocab_size);
  std::vector<int32_t> prompt(8);
  for (auto& t : prompt) t = static_cast<int32_t>(rng() % vocab);
  std::vector<float> all, logits;
  EXPECT_TRUE(session.forward(prompt, model::LogitsMode::kAll, &logits).is_ok());
  all.insert(all.end(), logits.begin(), logits.end());
  for (int step = 0; step < 5; ++step) {
    const int32_t tok = static_cast<int32_t>(rng() % vocab);
    const Status s = session.forward(std::span<const int32_t>(&tok, 1), model::LogitsMode::kLast, &logits);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

class ArtifactOffload : public ::testing::TestWithParam<runtime::testing::ArtifactSpec> {};

TEST_P(ArtifactOffload, LogitsMatchTheResidentArtifactModel) {
  const auto& built = runtime::testing::cached_artifact(GetParam());
  auto artifact = runtime::Artifact::open(built.dir);
  ASSERT_TRUE(artifact.is_ok()) << artifact.status().to_string();
  auto resident = runtime::load_artifact_model(*artifact);
  ASSERT_TRUE(resident.is_ok()) << resident.status().to_string();
  ThreadPool pool(2);
  std::vector<uint64_t> popularity;
  const std::vector<float> want = run_tokens(**resident, &pool, &popularity);

  uint64_t all_bytes = 0;
  for (int l = 0; l < (*artifact)->num_layers(); ++l)
    for (int e = 0; e < (*artifact)->num_experts(); ++e)
      if ((*artifact)->has_expert(l, e)) all_bytes += (*artifact)->expert_byte_range(l, e)->length;
  struct Case {
    CachePolicy policy;
    IoBackend io;
    bool prefetch;
  };
  for (const Case& c : {Case{CachePolicy::kLru, IoBackend::kPread, false}, Case{CachePolicy::kHybrid, IoBackend::kUring, true},
                        Case{CachePolicy::kLfu, IoBackend::kDirect, true}}) {
    for (double fraction : {0.0, 0.25, 1.0}) {
      const std::string what = std::string(cache_policy_name(c.policy)) + "/" + io_backend_name(c.io) + " budget " +
                               std::to_string(fraction);
      OffloadOptions o;
      o.policy = c.policy;
      o.store.backend = c.io;
      o.prefetch = c.prefetch;
      // Charges are the ops' weight bytes, a little above the ranges' bytes.
      o.budget_bytes = static_cast<uint64_t>(fraction * 1.1 * static_cast<double>(all_bytes));
      if (c.policy == CachePolicy::kHybrid) o.popularity = popularity;
      CachedExpertProvider* provider = nullptr;
      auto m = load_artifact_model_offloaded(*artifact, o, {.execution = runtime::ExecutionMode::kFused}, &provider);
      ASSERT_TRUE(m.is_ok()) << what << ": " << m.status().to_string();
      const std::vector<float> got = run_tokens(**m, &pool);
      ASSERT_EQ(got.size(), want.size()) << what;
      EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << what;
      const CacheStats s = provider->cache().stats();
      EXPECT_GT(s.total.bytes_fetched, 0u) << what;
      EXPECT_LE(s.resident_bytes, o.budget_bytes) << what;
      if (fraction == 0.25) {
        EXPECT_GT(s.total.evictions, 0u) << what;  // the budget binds
      }
      if (fraction == 1.0) {
        EXPECT_EQ(s.total.evictions, 0u) << what;
      }
    }
  }
}

std::string spec_case_name(const ::testing::TestParamInfo<runtime::testing::ArtifactSpec>& info) {
  std::string n = runtime::testing::spec_name(info.param);
  for (char& ch : n)
    if (ch == '-') ch = '_';
  return n;
}

runtime::testing::ArtifactSpec int_spec() {
  runtime::testing::ArtifactSpec s;
  s.fixture = "mixtral";
  s.ternary = false;
  s.bits = 3;
  s.group_size = 32;
  return s;
}

INSTANTIATE_TEST_SUITE_P(Specs, ArtifactOffload, ::testing::Values(runtime::testing::ArtifactSpec{}, int_spec()),
                         spec_case_name);

TEST(ArtifactOffloadGlue, ReferenceDecodeModeMatchesToo) {
  const auto& built = runtime::testing::cached_artifact(runtime::testing::ArtifactSpec{});
  auto artifact = runtime::Artifact::open(built.dir);
  ASSERT_TRUE(artifact.is_ok()) << artifact.status().to_string();
  runtime::ArtifactModelOptions ro;
  ro.execution = runtime::ExecutionMode::kReferenceDecode;
  auto resident = runtime::load_artifact_model(*artifact, ro);
  ASSERT_TRUE(resident.is_ok()) << resident.status().to_string();
  const std::vector<float> want = run_tokens(**resident, nullptr);
  // Decoded experts are f32: a quarter of all of them.
  const uint64_t decoded = uint64_t{3} * (*artifact)->expert_hidden() * (*artifact)->expert_inner() * sizeof(float);
  OffloadOptions o;
  o.budget_bytes = decoded * static_cast<uint64_t>((*artifact)->num_layers() * (*artifact)->num_experts()) / 4;
  CachedExpertProvider* provider = nullptr;
  auto m = load_artifact_model_offloaded(*artifact, o, {.execution = runtime::ExecutionMode::kReferenceDecode}, &provider);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  const std::vector<float> got = run_tokens(**m, nullptr);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0);
  const CacheStats s = provider->cache().stats();
  EXPECT_LE(s.resident_bytes, o.budget_bytes);
  EXPECT_EQ(s.resident_bytes % decoded, 0u);  // charged at the decoded size, as estimated
  EXPECT_GT(s.total.evictions, 0u);
}

TEST(ArtifactOffloadGlue, CorruptExpertBytesFailTheForward) {
  const auto& built = runtime::testing::cached_artifact(runtime::testing::ArtifactSpec{});
  // A private copy of the artifact with every expert's last bytes flipped.
  testing::TempDir dir;
  for (const auto& entry : std::filesystem::directory_iterator(built.dir))
    std::filesystem::copy(entry.path(), dir.path() + "/" + entry.path().filename().string());
  auto artifact = runtime::Artifact::open(dir.path());
  ASSERT_TRUE(artifact.is_ok()) << artifact.status().to_string();
  const std::string weights = (*artifact)->expert_byte_range(0, 0)->path;
  {
    std::fstream f(weights, std::ios::in | std::ios::out | std::ios::binary);
    for (int l = 0; l < (*artifact)->num_layers(); ++l)
      for (int e = 0; e < (*artifact)->num_experts(); ++e) {
        if (!(*artifact)->has_expert(l, e)) continue;
        const auto r = (*artifact)->expert_byte_range(l, e);
        // The first field is gate's row_offsets: make its first offset nonzero.
        f.seekp(static_cast<std::streamoff>(r->offset));
        const char bad[4] = {0x7f, 0x7f, 0x7f, 0x7f};
        f.write(bad, 4);
      }
  }
  OffloadOptions o;
  o.budget_bytes = 1 << 20;
  auto m = load_artifact_model_offloaded(*artifact, o);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  model::Session session(**m, nullptr);
  std::vector<float> logits;
  const std::vector<int32_t> tokens = {1, 2, 3};
  const Status s = session.forward(tokens, model::LogitsMode::kLast, &logits);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), ErrorCode::kCorruptData) << s.to_string();
  EXPECT_NE(s.message().find("layer 0"), std::string::npos) << s.message();
}

TEST(ArtifactOffloadGlue, FlagsTranslateAndRejectBadValues) {
  OffloadFlags f;
  f.expert_cache_mb = 1.5;
  f.io = "uring";
  f.prefetch = true;
  auto o = offload_options_from_flags(f, 2, 8);
  ASSERT_TRUE(o.is_ok()) << o.status().to_string();
  EXPECT_EQ(o->budget_bytes, 1572864u);
  EXPECT_EQ(o->store.backend, IoBackend::kUring);
  EXPECT_TRUE(o->prefetch);
  EXPECT_EQ(o->policy, CachePolicy::kLru);

  auto bad = [](OffloadFlags g) { return offload_options_from_flags(g, 2, 8).status(); };
  OffloadFlags g;
  g.expert_cache_mb = -1;
  EXPECT_NE(bad(g).message().find("--expert-cache-mb"), std::string::npos);
  g = {};
  g.cache_policy = "belady";
  EXPECT_NE(bad(g).message().find("--cache-policy"), std::string::npos);
  g.cache_policy = "forecast";  // simulator only
  EXPECT_NE(bad(g).message().find("exists only in `trace simulate`"), std::string::npos);
  g.cache_policy = "mru";
  EXPECT_NE(bad(g).message().find("--cache-policy"), std::string::npos);
  g = {};
  g.io = "mmap";
  EXPECT_NE(bad(g).message().find("--io"), std::string::npos);
  g = {};
  g.cache_policy = "pinned";
  EXPECT_NE(bad(g).message().find("--cache-profile"), std::string::npos);
  g = {};
  g.cache_profile = "x.trace";
  EXPECT_NE(bad(g).message().find("--cache-profile"), std::string::npos);  // lru takes none

  // A profile of the right shape gives its popularity; a wrong shape is refused.
  testing::TempDir dir;
  RoutingTrace trace(2, 8, 2);
  ASSERT_TRUE(trace.append_token({{1, float_to_bf16(0.5f)}, {3, float_to_bf16(0.5f)},
                                  {1, float_to_bf16(0.5f)}, {7, float_to_bf16(0.5f)}}).is_ok());
  ASSERT_TRUE(trace.save(dir.file("p.trace")).is_ok());
  g = {};
  g.cache_policy = "hybrid";
  g.cache_profile = dir.file("p.trace");
  auto h = offload_options_from_flags(g, 2, 8);
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  ASSERT_EQ(h->popularity.size(), 16u);
  EXPECT_EQ(h->popularity[1], 1u);
  EXPECT_EQ(h->popularity[8 + 7], 1u);
  EXPECT_EQ(h->popularity[0], 0u);
  EXPECT_NE(offload_options_from_flags(g, 3, 8).status().message().find("2 layers x 8 experts"), std::string::npos);
  EXPECT_NE(std::string(offload_flags_help()).find("--cache-profile"), std::string::npos);
}

TEST(ArtifactOffloadGlue, NoArtifactIsInvalid) {
  EXPECT_EQ(make_artifact_expert_source(nullptr).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace submoe::offload
