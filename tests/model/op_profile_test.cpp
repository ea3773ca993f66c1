// OpProfile through Session::forward: every op class of the architecture is
// timed with the call counts the forward implies, the classes never add up
// to more than the forward's wall time, profiling changes no logit, and the
// thread pool's hand-offs are counted only while attached.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "submoe/core/thread_pool.h"
#include "submoe/model/moe_model.h"
#include "submoe/model/op_profile.h"
#include "tiny_checkpoint.h"

namespace submoe::model {
namespace {

TEST(OpProfile, ClassesCallsAndTotalsOfAForward) {
  testing::TinySpec spec;
  spec.model_type = "qwen2_moe";  // shared expert too
  spec.shared_inner = 8;
  spec.layers = 3;
  spec.mlp_only_layers = {1};
  auto ck = testing::write_tiny_checkpoint(spec);
  ASSERT_TRUE(ck.is_ok()) << ck.status().to_string();
  auto model = MoeModel::load(ck->dir);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const std::vector<int32_t> ids = {3, 1, 4, 1, 5, 9, 2};
  ThreadPool pool(2);
  std::vector<float> plain, profiled;
  {
    Session s(**model, &pool);
    ASSERT_TRUE(s.forward(ids, LogitsMode::kAll, &plain).is_ok());
  }
  OpProfile profile;
  profile.attach_pool(&pool);
  Session s(**model, &pool);
  s.set_profile(&profile);
  ASSERT_TRUE(s.forward(ids, LogitsMode::kAll, &profiled).is_ok());
  const int32_t one[1] = {7};
  std::vector<float> step;
  ASSERT_TRUE(s.forward(one, LogitsMode::kLast, &step).is_ok());
  EXPECT_EQ(plain, profiled) << "profiling must not change the numbers";

  const nlohmann::json j = profile.to_json();
  EXPECT_EQ(j["tokens"], 8);
  EXPECT_EQ(j["forwards"], 2);
  const auto& c = j["classes"];
  // Per forward: 3 layers x (q,k,v | o) = 6 projection scopes, 3 attention
  // cores, 3 x 3 norm scopes, 2 sparse layers' router/fetch/experts/combine/
  // shared expert, 1 dense MLP, 1 embed and 1 lm_head.
  const std::map<std::string, int> calls_per_forward = {
      {"attn projections", 6}, {"attn core", 3},  {"norms+residual", 9}, {"router", 2},     {"expert fetch", 2},
      {"expert kernels", 2},   {"moe combine", 2}, {"shared expert", 2},  {"dense mlp", 1}, {"embed", 1},
      {"lm_head", 1}};
  double sum = 0;
  for (const auto& [name, calls] : calls_per_forward) {
    ASSERT_TRUE(c.contains(name)) << name;
    EXPECT_EQ(c[name]["calls"], 2 * calls) << name;
    EXPECT_GE(c[name]["ms"].get<double>(), 0.0);
    sum += c[name]["ms"].get<double>();
  }
  EXPECT_EQ(c.size(), calls_per_forward.size()) << c.dump();
  EXPECT_LE(sum, j["forward_ms"].get<double>() * 1.0001);
  EXPECT_NEAR(sum + j["other_ms"].get<double>(), j["forward_ms"].get<double>(), 1e-6 + 1e-4 * sum);
  EXPECT_EQ(j["experts_by_representation"].size(), 1u) << j["experts_by_representation"].dump();
  EXPECT_TRUE(j["experts_by_representation"].contains("dense f32")) << j["experts_by_representation"].dump();
  ASSERT_TRUE(j.contains("thread_pool"));
  const uint64_t trips = j["thread_pool"]["round_trips"];
  EXPECT_GT(trips, 0u);
  // Uses of the pool after the last forward do not count.
  pool.run_on_all([](int) {});
  EXPECT_EQ(profile.to_json()["thread_pool"]["round_trips"], trips);
  profile.reset();
  EXPECT_EQ(profile.to_json()["tokens"], 0);
  EXPECT_EQ(profile.to_json()["thread_pool"]["round_trips"], 0);
}

TEST(OpProfile, ScopedTimerWithoutAProfileDoesNothing) {
  { ScopedOpTimer t(nullptr, OpClass::kExperts); }
  OpProfile p;
  { ScopedOpTimer t(&p, OpClass::kSampling); }
  const nlohmann::json j = p.to_json();
  EXPECT_EQ(j["classes"]["sampling"]["calls"], 1);
  EXPECT_FALSE(j.contains("thread_pool"));
  EXPECT_NE(p.table("x").find("sampling"), std::string::npos);
}

}  // namespace
}  // namespace submoe::model
