// Parity with transformers on the committed fixtures (tests/fixtures/<arch>/,
// made by tools/make_hf_fixtures.py from transformers' own classes, fp32, eager):
// full-prefill logits, chosen experts and routing weights per layer per token,
// and 8-token greedy generation through the KV cache with its per-step logits
// and routing. Every config spelling (v4, v5, legacy) must give the same model.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "submoe/core/thread_pool.h"
#include "submoe/io/file_util.h"
#include "submoe/io/tokenizer.h"
#include "submoe/model/moe_model.h"
#include "submoe/model/sampler.h"

namespace submoe::model {
namespace {

const std::string kFixtures = std::string(SUBMOE_SOURCE_DIR) + "/tests/fixtures/";

struct ParityCase {
  std::string fixture;
  std::string config_file;
};
void PrintTo(const ParityCase& c, std::ostream* os) { *os << c.fixture << "/" << c.config_file; }

std::vector<ParityCase> parity_cases() {
  std::vector<ParityCase> v;
  for (const char* f : {"mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "deepseek_v3", "deepseek_v3_plain_q", "gpt_oss",
                        "gpt_oss_mxfp4"})
    for (const char* c : {"config.json", "config.v5.json", "config.v4-legacy.json"}) v.push_back({f, c});
  return v;
}

Result<std::unique_ptr<MoeModel>> load_with_config(const std::string& dir, const std::string& config_file) {
  SUBMOE_ASSIGN_OR_RETURN(io::MoeModelConfig config, io::load_hf_config(dir + "/" + config_file));
  SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<io::SafetensorsModel> st, io::SafetensorsModel::open(dir + "/model.safetensors"));
  SUBMOE_ASSIGN_OR_RETURN(ModelWeights w, load_checkpoint_weights(config, io::architecture_descriptor(config.architecture),
                                                                   std::shared_ptr<const io::SafetensorsModel>(std::move(st))));
  return MoeModel::create(std::move(config), std::move(w));
}

std::vector<float> golden_tensor(const io::SafetensorsModel& g, const std::string& name) {
  const io::TensorView* t = g.find(name);
  if (!t) {
    ADD_FAILURE() << "golden tensor " << name << " missing";
    return {};
  }
  auto v = io::to_f32(*t);
  EXPECT_TRUE(v.is_ok());
  return v.is_ok() ? *v : std::vector<float>();
}

// max |a - b| <= 1e-3 * max |b| (the bar: 1e-3 of the logit scale).
void expect_logits_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0, worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, static_cast<double>(std::abs(want[i])));
    worst = std::max(worst, static_cast<double>(std::abs(got[i] - want[i])));
  }
  EXPECT_LE(worst, 1e-3 * scale) << what << ": max |diff| " << worst << " vs logit scale " << scale;
}

// Routing decisions recorded by the observer: layer -> per token (experts, weights).
struct Recorded {
  std::map<int, std::vector<std::vector<int>>> experts;
  std::map<int, std::vector<std::vector<float>>> weights;
  void clear() {
    experts.clear();
    weights.clear();
  }
};

RoutingObserver recorder(Recorded* rec) {
  return [rec](int layer, size_t, const Routing& r) {
    for (size_t t = 0; t < r.num_tokens; ++t) {
      rec->experts[layer].emplace_back(r.experts.begin() + static_cast<ptrdiff_t>(t * r.k),
                                       r.experts.begin() + static_cast<ptrdiff_t>((t + 1) * r.k));
      rec->weights[layer].emplace_back(r.weights.begin() + static_cast<ptrdiff_t>(t * r.k),
                                       r.weights.begin() + static_cast<ptrdiff_t>((t + 1) * r.k));
    }
  };
}

void expect_routing(const Recorded& rec, int layer, size_t token, const nlohmann::json& experts,
                    const nlohmann::json& weights, const std::string& what) {
  ASSERT_TRUE(rec.experts.count(layer)) << what << " layer " << layer << " not routed";
  ASSERT_LT(token, rec.experts.at(layer).size()) << what;
  EXPECT_EQ(rec.experts.at(layer)[token], experts.get<std::vector<int>>()) << what << " layer " << layer << " token " << token;
  const auto w = weights.get<std::vector<float>>();
  for (size_t j = 0; j < w.size(); ++j)
    EXPECT_NEAR(rec.weights.at(layer)[token][j], w[j], 1e-5) << what << " layer " << layer << " token " << token;
}

class HfParity : public ::testing::TestWithParam<ParityCase> {};

TEST_P(HfParity, LogitsExpertsAndGreedyGenerationMatchTransformers) {
  const ParityCase& c = GetParam();
  const std::string dir = kFixtures + c.fixture;
  ASSERT_TRUE(std::filesystem::exists(dir + "/golden.json")) << "fixture missing: " << dir;
  auto text = io::read_file_to_string(dir + "/golden.json");
  ASSERT_TRUE(text.is_ok());
  const nlohmann::json golden = nlohmann::json::parse(*text);
  auto gt = io::SafetensorsModel::open(dir + "/golden.safetensors");
  ASSERT_TRUE(gt.is_ok()) << gt.status().to_string();
  auto model = load_with_config(dir, c.config_file);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  auto tok = io::Tokenizer::load(dir);
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  const size_t V = static_cast<size_t>((*model)->config().vocab_size);

  ThreadPool pool(2);
  for (size_t pi = 0; pi < golden["prompts"].size(); ++pi) {
    const nlohmann::json& p = golden["prompts"][pi];
    const std::string what = c.fixture + "/" + c.config_file + " prompt " + std::to_string(pi);
    const auto ids = p["input_ids"].get<std::vector<int32_t>>();
    // The tokenizer reproduces the prompt ids HF used (the `run` pipeline).
    EXPECT_EQ((*tok).encode(p["text"].get<std::string>(), true), ids) << what;

    Recorded rec;
    Session s(**model, &pool);
    s.set_routing_observer(recorder(&rec));
    std::vector<float> logits;
    ASSERT_TRUE(s.forward(ids, LogitsMode::kAll, &logits).is_ok());
    expect_logits_close(logits, golden_tensor(**gt, "prompt" + std::to_string(pi) + ".logits"), what + " prefill");
    for (const auto& r : p["routing"]) {
      const int layer = r["layer"].get<int>();
      ASSERT_EQ(rec.experts[layer].size(), ids.size()) << what;
      for (size_t t = 0; t < ids.size(); ++t)
        expect_routing(rec, layer, t, r["experts"][t], r["weights"][t], what + " prefill");
    }
    EXPECT_EQ(rec.experts.size(), golden["moe_layers"].size()) << what;

    // Greedy decode through the KV cache: step 0 comes from the prefill logits.
    const auto want_ids = p["generated_ids"].get<std::vector<int32_t>>();
    const std::vector<float> step_logits = golden_tensor(**gt, "prompt" + std::to_string(pi) + ".generate.logits");
    std::vector<float> last(logits.end() - static_cast<ptrdiff_t>(V), logits.end());
    std::vector<int32_t> got_ids;
    for (size_t step = 0; step < want_ids.size(); ++step) {
      expect_logits_close(last, std::vector<float>(step_logits.begin() + static_cast<ptrdiff_t>(step * V),
                                                   step_logits.begin() + static_cast<ptrdiff_t>((step + 1) * V)),
                          what + " decode step " + std::to_string(step));
      got_ids.push_back(argmax(last));
      if (step + 1 == want_ids.size()) break;
      rec.clear();
      const int32_t one[1] = {got_ids.back()};
      ASSERT_TRUE(s.forward(one, LogitsMode::kLast, &last).is_ok());
      for (const auto& r : p["decode_routing"][step])
        expect_routing(rec, r["layer"].get<int>(), 0, r["experts"], r["weights"], what + " decode " + std::to_string(step));
    }
    EXPECT_EQ(got_ids, want_ids) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HfParity, ::testing::ValuesIn(parity_cases()),
                         [](const ::testing::TestParamInfo<ParityCase>& i) {
                           std::string n = i.param.fixture + "_" + i.param.config_file;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace submoe::model
