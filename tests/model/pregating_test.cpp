// Pre-gating (ExpertProvider::wants_predictions / predict): on the embedded
// trained model, a provider that asks for predictions gets, after each sparse
// layer's begin_layer and before the next one's, the next layer's predicted
// experts (ascending, distinct, at most T k of them), never for the last
// layer; the predictions change nothing in the logits; and they name the
// experts the next layer then uses far more often than chance (k / E).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "submoe/core/thread_pool.h"
#include "submoe/io/architecture.h"
#include "submoe/io/hf_config.h"
#include "submoe/io/safetensors.h"
#include "submoe/io/tokenizer.h"
#include "submoe/model/moe_model.h"

namespace submoe::model {
namespace {

const std::string kModel = std::string(SUBMOE_SOURCE_DIR) + "/models/default-moe";

struct Event {
  bool prediction;  // else begin_layer
  int layer;
  std::vector<int> experts;
};

// Forwards to the resident provider and records begin_layer and predict calls.
class RecordingProvider final : public ExpertProvider {
 public:
  RecordingProvider(std::unique_ptr<ExpertProvider> inner, bool wants) : inner_(std::move(inner)), wants_(wants) {}
  Status begin_layer(int layer, std::span<const int> experts) override {
    events.push_back({false, layer, {experts.begin(), experts.end()}});
    return inner_->begin_layer(layer, experts);
  }
  ExpertOps ops(int layer, int expert) const override { return inner_->ops(layer, expert); }
  void end_layer(int layer) override { inner_->end_layer(layer); }
  bool wants_predictions() const override { return wants_; }
  void predict(int layer, std::span<const int> experts) override {
    events.push_back({true, layer, {experts.begin(), experts.end()}});
  }
  std::vector<Event> events;

 private:
  std::unique_ptr<ExpertProvider> inner_;
  bool wants_;
};

Result<std::unique_ptr<MoeModel>> load(bool wants, RecordingProvider** recorder) {
  SUBMOE_ASSIGN_OR_RETURN(io::MoeModelConfig config, io::load_hf_config(kModel));
  SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<io::SafetensorsModel> st, io::SafetensorsModel::open(kModel + "/model.safetensors"));
  SUBMOE_ASSIGN_OR_RETURN(ModelWeights w, load_checkpoint_weights(config, io::architecture_descriptor(config.architecture),
                                                                   std::shared_ptr<const io::SafetensorsModel>(std::move(st))));
  auto rec = std::make_unique<RecordingProvider>(std::move(w.experts), wants);
  *recorder = rec.get();
  w.experts = std::move(rec);
  return MoeModel::create(std::move(config), std::move(w));
}

// Prefill of a sentence, then 24 greedy decode steps; every logit kept.
Result<std::vector<float>> generate(const MoeModel& m, ThreadPool* pool, RecordingProvider* rec, size_t* prefill_events) {
  SUBMOE_ASSIGN_OR_RETURN(io::Tokenizer tok, io::Tokenizer::load(kModel + "/tokenizer.json"));
  std::vector<int32_t> prompt = tok.encode("The old prince said that the war would be over before the winter came.");
  Session session(m, pool);
  std::vector<float> all, logits;
  SUBMOE_RETURN_IF_ERROR(session.forward(prompt, LogitsMode::kLast, &logits));
  *prefill_events = rec->events.size();
  for (int step = 0; step < 24; ++step) {
    all.insert(all.end(), logits.begin(), logits.end());
    const int32_t next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    SUBMOE_RETURN_IF_ERROR(session.forward(std::span<const int32_t>(&next, 1), LogitsMode::kLast, &logits));
  }
  return all;
}

TEST(Pregating, PredictionsComeInOrderChangeNothingAndBeatChance) {
  ThreadPool pool(2);
  RecordingProvider* plain = nullptr;
  RecordingProvider* pregated = nullptr;
  auto a = load(false, &plain);
  auto b = load(true, &pregated);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  size_t prefill_a = 0, prefill_b = 0;
  auto want = generate(**a, &pool, plain, &prefill_a);
  auto got = generate(**b, &pool, pregated, &prefill_b);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  ASSERT_EQ(want->size(), got->size());
  EXPECT_EQ(std::memcmp(want->data(), got->data(), want->size() * sizeof(float)), 0);
  for (const Event& e : plain->events) EXPECT_FALSE(e.prediction);

  const int L = static_cast<int>((*b)->config().num_hidden_layers), E = static_cast<int>((*b)->config().num_experts);
  const size_t k = static_cast<size_t>((*b)->config().num_experts_per_tok);
  // Every prediction names layer l + 1 right after layer l's begin_layer, and
  // the next event is that layer's begin_layer.
  size_t predicted = 0, hit = 0, decode_predicted = 0, decode_hit = 0;
  const auto& ev = pregated->events;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (!ev[i].prediction) {
      if (ev[i].layer + 1 < L) {
        ASSERT_LT(i + 1, ev.size());
        EXPECT_TRUE(ev[i + 1].prediction) << "no prediction after layer " << ev[i].layer;
      }
      continue;
    }
    ASSERT_GT(i, 0u);
    ASSERT_LT(i + 1, ev.size());
    EXPECT_FALSE(ev[i - 1].prediction);
    EXPECT_EQ(ev[i].layer, ev[i - 1].layer + 1);
    EXPECT_FALSE(ev[i + 1].prediction);
    EXPECT_EQ(ev[i + 1].layer, ev[i].layer);
    const std::vector<int>& p = ev[i].experts;
    EXPECT_TRUE(std::is_sorted(p.begin(), p.end()) && std::adjacent_find(p.begin(), p.end()) == p.end());
    EXPECT_FALSE(p.empty());
    EXPECT_TRUE(p.front() >= 0 && p.back() < E);
    const std::set<int> used(ev[i + 1].experts.begin(), ev[i + 1].experts.end());
    for (int e : used) {
      const bool named = std::binary_search(p.begin(), p.end(), e);
      ++predicted, hit += named ? 1 : 0;
      if (i >= prefill_b) ++decode_predicted, decode_hit += named ? 1 : 0;
    }
    if (i >= prefill_b) {
      EXPECT_LE(p.size(), k);
    }
  }
  ASSERT_EQ(decode_predicted, 24 * static_cast<size_t>(L - 1) * k);
  const double recall = static_cast<double>(decode_hit) / static_cast<double>(decode_predicted);
  std::printf("[ info ] pre-gating names %.1f%% of the next layer's experts at decode (chance %.1f%%), %.1f%% overall\n",
              100 * recall, 100.0 * static_cast<double>(k) / E, 100.0 * static_cast<double>(hit) / static_cast<double>(predicted));
  EXPECT_GT(recall, 3.0 * static_cast<double>(k) / E);
}

}  // namespace
}  // namespace submoe::model
