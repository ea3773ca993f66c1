// The collector (prefill + decode steps of a live session) records the same
// routing as the trace recorder's independent window path over the same tokens.
#include "submoe/offload/routing_trace_collector.h"

#include <gtest/gtest.h>

#include "submoe/model/moe_model.h"
#include "submoe/offload/trace_recorder.h"

namespace submoe::offload {
namespace {

TEST(RoutingTraceCollector, PrefillPlusDecodeEqualsRecordedTrace) {
  for (const char* arch : {"qwen3_moe", "qwen2_moe", "mixtral"}) {
    auto m = model::MoeModel::load(std::string(SUBMOE_SOURCE_DIR) + "/tests/fixtures/" + arch);
    ASSERT_TRUE(m.is_ok()) << m.status().message();
    const model::MoeModel& model = *m.value();
    std::vector<int32_t> ids;
    for (int i = 0; i < 20; ++i) ids.push_back((i * 53 + 7) % model.config().vocab_size);

    RoutingTraceCollector collector(model.config());
    model::Session s(model, nullptr);
    s.set_routing_observer([&](int l, size_t first, const model::Routing& r) { collector.observe(l, first, r); });
    ASSERT_TRUE(s.forward(std::span(ids).first(7), model::LogitsMode::kNone, nullptr).is_ok());
    ASSERT_TRUE(collector.end_forward().is_ok());
    for (size_t t = 7; t < ids.size(); ++t) {
      ASSERT_TRUE(s.forward(std::span(ids).subspan(t, 1), model::LogitsMode::kNone, nullptr).is_ok());
      ASSERT_TRUE(collector.end_forward().is_ok());
    }

    TraceRecordOptions o;
    o.context = ids.size();
    o.prefill_chunk = 5;
    auto ref = record_routing_trace(model, ids, o, nullptr);
    ASSERT_TRUE(ref.is_ok());
    const RoutingTrace& got = collector.trace();
    ASSERT_EQ(got.num_tokens(), ref.value().num_tokens()) << arch;
    ASSERT_EQ(got.num_layers(), ref.value().num_layers());
    for (uint64_t t = 0; t < got.num_tokens(); ++t)
      for (uint32_t l = 0; l < got.num_layers(); ++l)
        for (uint32_t j = 0; j < got.top_k(); ++j) {
          EXPECT_EQ(got.token_layer(t, l)[j].expert, ref.value().token_layer(t, l)[j].expert) << arch << t << l;
          EXPECT_EQ(got.token_layer(t, l)[j].weight.bits, ref.value().token_layer(t, l)[j].weight.bits);
        }
  }
}

TEST(RoutingTraceCollector, MissingLayerIsAnError) {
  auto m = model::MoeModel::load(std::string(SUBMOE_SOURCE_DIR) + "/tests/fixtures/qwen3_moe");
  ASSERT_TRUE(m.is_ok());
  RoutingTraceCollector collector(m.value()->config());
  model::Routing r;
  r.num_tokens = 1;
  r.k = static_cast<size_t>(m.value()->config().num_experts_per_tok);
  r.experts.assign(r.k, 0);
  r.weights.assign(r.k, 0.5f);
  collector.observe(0, 0, r);  // only layer 0 of several
  EXPECT_FALSE(collector.end_forward().is_ok());
  collector.observe(99, 0, r);
  EXPECT_FALSE(collector.end_forward().is_ok());
}

}  // namespace
}  // namespace submoe::offload
