// Recording routing traces: against the routing transformers computed for the HF
// fixtures (golden.json), against a Session run per window by hand, file round
// trips, the token cap and errors.
#include "submoe/offload/trace_recorder.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/artifact_builder.h"
#include "submoe/core/thread_pool.h"
#include "submoe/io/file_util.h"
#include "submoe/io/tokenizer.h"
#include "submoe/model/synth_checkpoint.h"
#include "submoe/runtime/artifact_model.h"
#include "temp_dir.h"

namespace submoe::offload {
namespace {

namespace fs = std::filesystem;
using submoe::testing::TempDir;
const std::string kFixtures = std::string(SUBMOE_SOURCE_DIR) + "/tests/fixtures/";
const char* const kFixtureNames[] = {"mixtral", "qwen2_moe", "qwen3_moe", "olmoe"};


nlohmann::json golden(const std::string& fixture) {
  auto text = io::read_file_to_string(kFixtures + fixture + "/golden.json");
  EXPECT_TRUE(text.is_ok());
  return nlohmann::json::parse(*text);
}

// Every prompt of a fixture's golden file, concatenated.
std::vector<int32_t> golden_tokens(const std::string& fixture) {
  const nlohmann::json g = golden(fixture);
  std::vector<int32_t> tokens;
  for (const auto& p : g["prompts"])
    for (const auto& id : p["input_ids"]) tokens.push_back(id.get<int32_t>());
  return tokens;
}

// Expected trace of `tokens`: each window run by its own fresh Session in one
// forward call, the routing taken straight from the observer.
RoutingTrace expected_trace(const model::MoeModel& m, const std::vector<int32_t>& tokens, size_t context) {
  const auto& c = m.config();
  std::vector<int> moe;
  for (int l = 0; l < c.num_hidden_layers; ++l)
    if (c.is_moe_layer(l)) moe.push_back(l);
  const size_t k = static_cast<size_t>(c.num_experts_per_tok);
  RoutingTrace trace(static_cast<uint32_t>(moe.size()), static_cast<uint32_t>(c.num_experts), static_cast<uint32_t>(k));
  for (size_t start = 0; start < tokens.size(); start += context) {
    const size_t n = std::min(context, tokens.size() - start);
    std::map<int, model::Routing> by_layer;
    model::Session session(m, nullptr);
    session.set_routing_observer([&](int layer, size_t first, const model::Routing& r) {
      EXPECT_EQ(first, 0u);
      by_layer[layer] = r;
    });
    std::vector<float> logits;
    EXPECT_TRUE(session.forward(std::span(tokens).subspan(start, n), model::LogitsMode::kNone, &logits).is_ok());
    for (size_t t = 0; t < n; ++t) {
      std::vector<ExpertChoice> choices;
      for (int l : moe)
        for (size_t j = 0; j < k; ++j)
          choices.push_back({static_cast<uint16_t>(by_layer.at(l).experts[t * k + j]),
                             float_to_bf16(by_layer.at(l).weights[t * k + j])});
      EXPECT_TRUE(trace.append_token(choices).is_ok());
    }
  }
  return trace;
}

void expect_same_routing(const RoutingTrace& a, const RoutingTrace& b) {
  ASSERT_EQ(a.num_layers(), b.num_layers());
  ASSERT_EQ(a.num_experts(), b.num_experts());
  ASSERT_EQ(a.top_k(), b.top_k());
  ASSERT_EQ(a.num_tokens(), b.num_tokens());
  for (uint64_t t = 0; t < a.num_tokens(); ++t)
    for (uint32_t l = 0; l < a.num_layers(); ++l)
      for (uint32_t j = 0; j < a.top_k(); ++j) {
        const ExpertChoice x = a.token_layer(t, l)[j], y = b.token_layer(t, l)[j];
        ASSERT_EQ(x.expert, y.expert) << "token " << t << " layer " << l << " slot " << j;
        // Chunked and whole prefill may round the last float bit differently.
        EXPECT_LE(std::abs(int(x.weight.bits) - int(y.weight.bits)), 1) << "token " << t << " layer " << l;
      }
}

// The trace of each fixture prompt equals the routing transformers computed.
TEST(TraceRecord, MatchesTransformersRoutingOnTheFixtures) {
  TempDir tmp;
  ThreadPool pool(2);
  for (const char* fixture : kFixtureNames) {
    SCOPED_TRACE(fixture);
    const auto g = golden(fixture);
    const std::vector<int> moe_layers = g["moe_layers"].get<std::vector<int>>();
    for (size_t p = 0; p < g["prompts"].size(); ++p) {
      const auto& prompt = g["prompts"][p];
      const std::string text = tmp.write("prompt.txt", prompt["text"].get<std::string>());
      TraceRecordOptions opt;
      opt.prefill_chunk = 5;  // several forward calls per window
      auto s = record_trace_file(kFixtures + fixture, text, tmp.file("t.trace"), opt, &pool);
      ASSERT_TRUE(s.is_ok()) << s.status().to_string();
      const size_t T = prompt["input_ids"].size();
      EXPECT_EQ(s->text_tokens, T);
      EXPECT_EQ(s->tokens, T);
      EXPECT_EQ(s->layers, moe_layers.size());
      EXPECT_EQ(s->windows, 1u);
      EXPECT_FALSE(s->artifact);
      auto trace = RoutingTrace::load(tmp.file("t.trace"));
      ASSERT_TRUE(trace.is_ok()) << trace.status().to_string();
      ASSERT_EQ(trace->num_tokens(), T);
      ASSERT_EQ(trace->num_layers(), moe_layers.size());
      EXPECT_EQ(trace->num_experts(), g["config_summary"]["num_experts"].get<uint32_t>());
      const uint32_t k = trace->top_k();
      ASSERT_EQ(k, g["config_summary"]["num_experts_per_tok"].get<uint32_t>());
      EXPECT_EQ(fs::file_size(tmp.file("t.trace")), 48 + T * moe_layers.size() * k * 4);
      for (size_t j = 0; j < moe_layers.size(); ++j) {
        const auto& r = prompt["routing"][j];
        ASSERT_EQ(r["layer"].get<int>(), moe_layers[j]);
        for (size_t t = 0; t < T; ++t)
          for (uint32_t i = 0; i < k; ++i) {
            const ExpertChoice c = trace->token_layer(t, static_cast<uint32_t>(j))[i];
            ASSERT_EQ(c.expert, r["experts"][t][i].get<int>()) << "prompt " << p << " token " << t;
            const double w = r["weights"][t][i].get<double>();
            // bf16 rounding (half an ulp: at most 2^-8 relative) on top of the engine's float error.
            EXPECT_NEAR(bf16_to_float(c.weight), w, std::abs(w) * 0x1p-8 + 2e-5) << "prompt " << p << " token " << t;
          }
      }
    }
  }
}

TEST(TraceRecord, WindowsStartFreshAndChunkingDoesNotMatter) {
  auto m = model::MoeModel::load(kFixtures + "qwen2_moe");  // layer 1 is dense: 2 traced layers
  ASSERT_TRUE(m.is_ok());
  const std::vector<int32_t> tokens = golden_tokens("qwen2_moe");
  ThreadPool pool(3);
  for (size_t context : {size_t{1}, size_t{7}, size_t{16}, tokens.size(), size_t{512}}) {
    for (size_t chunk : {size_t{1}, size_t{3}, size_t{128}}) {
      SCOPED_TRACE("context " + std::to_string(context) + " chunk " + std::to_string(chunk));
      TraceRecordOptions opt;
      opt.context = context;
      opt.prefill_chunk = chunk;
      uint64_t last = 0;
      opt.progress = [&](uint64_t done, uint64_t total) {
        EXPECT_GT(done, last);
        EXPECT_EQ(total, tokens.size());
        last = done;
      };
      auto trace = record_routing_trace(**m, tokens, opt, chunk == 3 ? &pool : nullptr);
      ASSERT_TRUE(trace.is_ok()) << trace.status().to_string();
      EXPECT_EQ(last, tokens.size());
      EXPECT_EQ(trace->num_layers(), 2u);
      expect_same_routing(*trace, expected_trace(**m, tokens, context));
    }
  }
  // Windows change the routing of the tokens after a cut (else the test above
  // could not tell windows from one long sequence).
  TraceRecordOptions whole, cut;
  cut.context = 5;
  auto a = record_routing_trace(**m, tokens, whole, nullptr);
  auto b = record_routing_trace(**m, tokens, cut, nullptr);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  size_t differ = 0;
  for (uint64_t t = 0; t < a->num_tokens(); ++t)
    for (uint32_t l = 0; l < a->num_layers(); ++l)
      for (uint32_t j = 0; j < a->top_k(); ++j)
        differ += a->token_layer(t, l)[j].weight.bits != b->token_layer(t, l)[j].weight.bits;
  EXPECT_GT(differ, 10u);
}

// Pre-gating's predictions recorded beside the routing: the same layout and
// tokens; MoE layer 0 is the actual routing (nothing predicts it); the later
// layers are each router's choices on the previous MoE layer's hidden state,
// distinct experts with top-k weights, independent of chunking and threads;
// the routing itself is unchanged by recording them.
TEST(TraceRecord, PredictionsHaveTheTracesLayoutAndDoNotDependOnChunking) {
  auto m = model::MoeModel::load(kFixtures + "qwen2_moe");  // layer 1 is dense: 2 traced layers
  ASSERT_TRUE(m.is_ok());
  const std::vector<int32_t> tokens = golden_tokens("qwen2_moe");
  ThreadPool pool(2);
  TraceRecordOptions plain;
  auto want = record_routing_trace(**m, tokens, plain, nullptr);
  ASSERT_TRUE(want.is_ok());
  std::optional<RoutingTrace> first;
  for (size_t chunk : {size_t{1}, size_t{5}, size_t{128}}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    RoutingTrace predictions;
    TraceRecordOptions opt;
    opt.prefill_chunk = chunk;
    opt.predictions = &predictions;
    auto trace = record_routing_trace(**m, tokens, opt, chunk == 5 ? &pool : nullptr);
    ASSERT_TRUE(trace.is_ok()) << trace.status().to_string();
    expect_same_routing(*trace, *want);
    ASSERT_EQ(predictions.num_layers(), 2u);
    ASSERT_EQ(predictions.num_tokens(), tokens.size());
    ASSERT_EQ(predictions.top_k(), trace->top_k());
    size_t differ = 0;
    for (uint64_t t = 0; t < tokens.size(); ++t) {
      for (uint32_t j = 0; j < trace->top_k(); ++j) {
        EXPECT_EQ(predictions.token_layer(t, 0)[j].expert, trace->token_layer(t, 0)[j].expert);
        EXPECT_EQ(predictions.token_layer(t, 0)[j].weight.bits, trace->token_layer(t, 0)[j].weight.bits);
        differ += predictions.token_layer(t, 1)[j].expert != trace->token_layer(t, 1)[j].expert;
      }
      const ExpertChoice* p = predictions.token_layer(t, 1);
      std::set<int> distinct;
      for (uint32_t j = 0; j < predictions.top_k(); ++j) {
        distinct.insert(p[j].expert);
        EXPECT_LT(p[j].expert, predictions.num_experts());
      }
      EXPECT_EQ(distinct.size(), predictions.top_k());
    }
    EXPECT_GT(differ, 0u);  // a prediction, not a copy of the routing
    if (!first) {
      first = std::move(predictions);
    } else {
      expect_same_routing(predictions, *first);
    }
  }
}

TEST(TraceRecord, MaxTokensKeepsThePrefix) {
  TempDir tmp;
  const auto g = golden("mixtral");
  std::string text;
  for (const auto& p : g["prompts"]) text += p["text"].get<std::string>() + "\n";
  const std::string path = tmp.write("text.txt", text);
  auto tok = io::Tokenizer::load(kFixtures + "mixtral");
  ASSERT_TRUE(tok.is_ok());
  const size_t all = tok->encode(text).size();
  ASSERT_GT(all, 40u);
  TraceRecordOptions opt;
  opt.context = 16;
  auto full = record_trace_file(kFixtures + "mixtral", path, tmp.file("full.trace"), opt, nullptr);
  ASSERT_TRUE(full.is_ok()) << full.status().to_string();
  EXPECT_EQ(full->tokens, all);
  EXPECT_EQ(full->windows, (all + 15) / 16);
  for (uint64_t cap : {uint64_t{1}, uint64_t{17}, uint64_t{all}, uint64_t{all + 100}}) {
    SCOPED_TRACE(cap);
    opt.max_tokens = cap;
    auto s = record_trace_file(kFixtures + "mixtral", path, tmp.file("cap.trace"), opt, nullptr);
    ASSERT_TRUE(s.is_ok());
    EXPECT_EQ(s->text_tokens, all);
    EXPECT_EQ(s->tokens, std::min<uint64_t>(cap, all));
    auto a = RoutingTrace::load(tmp.file("full.trace"));
    auto b = RoutingTrace::load(tmp.file("cap.trace"));
    ASSERT_TRUE(a.is_ok() && b.is_ok());
    ASSERT_EQ(b->num_tokens(), s->tokens);
    const size_t per_token = size_t{a->num_layers()} * a->top_k();
    for (uint64_t t = 0; t < b->num_tokens(); ++t)
      for (size_t i = 0; i < per_token; ++i) {
        ASSERT_EQ(a->token_layer(t, 0)[i].expert, b->token_layer(t, 0)[i].expert);
        ASSERT_EQ(a->token_layer(t, 0)[i].weight.bits, b->token_layer(t, 0)[i].weight.bits);
      }
  }
}

// A synthetic checkpoint with a fixture's tokenizer records end to end, and
// its routing is spread over the experts.
TEST(TraceRecord, RecordsASyntheticCheckpoint) {
  TempDir tmp;
  model::SynthSpec spec;
  spec.architecture = io::Architecture::kQwen3Moe;
  spec.layers = 3;
  spec.experts = 8;
  spec.top_k = 2;
  spec.hidden = 64;
  spec.ffn = 32;
  spec.heads = 4;
  spec.kv_heads = 2;
  model::SynthWriteOptions w;
  w.tokenizer_from = kFixtures + "qwen3_moe";
  w.fsync = false;
  ASSERT_TRUE(model::write_synth_checkpoint(spec, tmp.file("model"), w).is_ok());
  std::string text;
  const auto g = golden("qwen3_moe");
  for (const auto& p : g["prompts"]) text += p["text"].get<std::string>() + " ";
  const std::string path = tmp.write("text.txt", text + text);
  TraceRecordOptions opt;
  opt.context = 32;
  auto s = record_trace_file(tmp.file("model"), path, tmp.file("s.trace"), opt, nullptr);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  auto trace = RoutingTrace::load(tmp.file("s.trace"));
  ASSERT_TRUE(trace.is_ok());
  EXPECT_EQ(trace->num_layers(), 3u);
  EXPECT_EQ(trace->num_experts(), 8u);
  for (uint32_t l = 0; l < 3; ++l) {
    std::vector<int> used(8);
    for (uint64_t t = 0; t < trace->num_tokens(); ++t) {
      const ExpertChoice* c = trace->token_layer(t, l);
      EXPECT_NE(c[0].expert, c[1].expert);
      // norm_topk_prob: the two weights sum to 1 (up to bf16 rounding), largest first.
      EXPECT_NEAR(bf16_to_float(c[0].weight) + bf16_to_float(c[1].weight), 1.0f, 8e-3f);
      EXPECT_GE(bf16_to_float(c[0].weight), bf16_to_float(c[1].weight));
      used[c[0].expert]++;
      used[c[1].expert]++;
    }
    for (int n : used) EXPECT_GT(n, 0) << "layer " << l;
  }
}

// Compressed artifacts (built by the runtime tests' builder from the fixtures)
// are recorded through runtime::load_model_or_artifact, in both execution modes.
TEST(TraceRecord, RecordsCompressedArtifacts) {
  TempDir tmp;
  ThreadPool pool(2);
  runtime::testing::ArtifactSpec ternary;  // qwen3_moe, ternary dictionary code
  runtime::testing::ArtifactSpec int4;
  int4.fixture = "mixtral";
  int4.ternary = false;
  for (const auto& spec : {ternary, int4}) {
    SCOPED_TRACE(runtime::testing::spec_name(spec));
    const auto& built = runtime::testing::cached_artifact(spec);
    ASSERT_FALSE(built.dir.empty());
    const auto g = golden(spec.fixture);
    std::string text;
    for (const auto& p : g["prompts"]) text += p["text"].get<std::string>() + "\n";
    const std::string path = tmp.write("text.txt", text);
    auto tok = io::Tokenizer::load(built.dir);
    ASSERT_TRUE(tok.is_ok());
    const std::vector<int32_t> ids = tok->encode(text);
    TraceRecordOptions opt;
    opt.context = 20;
    opt.prefill_chunk = 7;
    for (runtime::ExecutionMode mode : {runtime::ExecutionMode::kFused, runtime::ExecutionMode::kReferenceDecode}) {
      SCOPED_TRACE(runtime::execution_mode_name(mode));
      runtime::ArtifactModelOptions load;
      load.execution = mode;
      auto s = record_trace_file(built.dir, path, tmp.file("a.trace"), opt, &pool, load);
      ASSERT_TRUE(s.is_ok()) << s.status().to_string();
      EXPECT_TRUE(s->artifact);
      EXPECT_EQ(s->tokens, ids.size());
      auto m = runtime::load_artifact_model(built.dir, load);
      ASSERT_TRUE(m.is_ok()) << m.status().to_string();
      auto trace = RoutingTrace::load(tmp.file("a.trace"));
      ASSERT_TRUE(trace.is_ok());
      expect_same_routing(*trace, expected_trace(**m, ids, opt.context));
    }
  }
}

TEST(TraceRecord, ErrorsAreReported) {
  TempDir tmp;
  auto m = model::MoeModel::load(kFixtures + "olmoe");
  ASSERT_TRUE(m.is_ok());
  const std::vector<int32_t> ok_ids = {1, 2, 3};
  TraceRecordOptions zero_ctx;
  zero_ctx.context = 0;
  EXPECT_EQ(record_routing_trace(**m, ok_ids, zero_ctx, nullptr).status().code(), ErrorCode::kInvalidArgument);
  TraceRecordOptions zero_chunk;
  zero_chunk.prefill_chunk = 0;
  EXPECT_EQ(record_routing_trace(**m, ok_ids, zero_chunk, nullptr).status().code(), ErrorCode::kInvalidArgument);
  const std::vector<int32_t> bad_ids = {1, 384, 3};  // vocab_size 384
  auto bad = record_routing_trace(**m, bad_ids, TraceRecordOptions{}, nullptr);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("outside the vocabulary"), std::string::npos);
  auto empty = record_routing_trace(**m, {}, TraceRecordOptions{}, nullptr);
  ASSERT_TRUE(empty.is_ok());
  EXPECT_EQ(empty->num_tokens(), 0u);

  const std::string text = tmp.write("t.txt", "hello");
  EXPECT_EQ(record_trace_file(kFixtures + "olmoe", tmp.file("missing.txt"), tmp.file("o.trace"), {}, nullptr)
                .status()
                .code(),
            ErrorCode::kNotFound);
  EXPECT_FALSE(record_trace_file(tmp.file("no-model"), text, tmp.file("o.trace"), {}, nullptr).is_ok());
  // The olmoe fixture's byte-level tokenizer adds nothing to an empty text.
  EXPECT_EQ(record_trace_file(kFixtures + "olmoe", tmp.write("e.txt", ""), tmp.file("o.trace"), {}, nullptr)
                .status()
                .code(),
            ErrorCode::kInvalidArgument);
  // A checkpoint without tokenizer.json.
  model::SynthSpec spec;
  spec.architecture = io::Architecture::kMixtral;
  spec.layers = 1;
  spec.experts = 2;
  spec.hidden = 32;
  spec.ffn = 8;
  spec.vocab = 300;
  model::SynthWriteOptions w;
  w.fsync = false;
  ASSERT_TRUE(model::write_synth_checkpoint(spec, tmp.file("bare"), w).is_ok());
  auto no_tok = record_trace_file(tmp.file("bare"), text, tmp.file("o.trace"), {}, nullptr);
  ASSERT_FALSE(no_tok.is_ok());
  EXPECT_NE(no_tok.status().message().find("tokenizer"), std::string::npos);
  EXPECT_FALSE(fs::exists(tmp.file("o.trace")));
}

}  // namespace
}  // namespace submoe::offload
