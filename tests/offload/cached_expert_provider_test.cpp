// CachedExpertProvider end to end: the qwen3_moe fixture's experts are written to
// a file in a test layout, paged back through store + cache (+ prefetcher) by a
// source that builds dense LinearOps over the read buffers, and the model's
// logits must be bit-identical to the resident checkpoint's for every budget,
// policy and I/O backend.
#include "submoe/offload/cached_expert_provider.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "offload_test_util.h"
#include "submoe/core/thread_pool.h"
#include "submoe/io/hf_config.h"
#include "submoe/io/safetensors.h"
#include "submoe/io/architecture.h"
#include "submoe/model/moe_model.h"
#include "submoe/offload/trace_replay.h"

namespace submoe::offload {
namespace {

const std::string kFixture = std::string(SUBMOE_SOURCE_DIR) + "/tests/fixtures/qwen3_moe";
constexpr uint32_t kMagic = 0x54525058;  // "XPRT"

// Test layout: 100 junk bytes, then per (layer, expert): a 16-byte header
// {magic, layer, expert, 0}, gate [I, H], up [I, H], down [H, I] as f32, then a
// 12-byte gap. Offsets stay 4-aligned but not block-aligned, so unbuffered reads
// hand out windows that start mid-block.
class DenseFileSource final : public ExpertSource {
 public:
  DenseFileSource(std::string path, int layers, int experts, size_t hidden, size_t inner)
      : path_(std::move(path)), layers_(layers), experts_(experts), H_(hidden), I_(inner) {}

  int num_layers() const override { return layers_; }
  int num_experts() const override { return experts_; }
  const std::string& file_path() const override { return path_; }
  uint64_t expert_bytes() const { return 16 + 3 * H_ * I_ * sizeof(float); }

  Result<ByteRange> byte_range(ExpertKey key) const override {
    if (key.layer < 0 || key.layer >= layers_ || key.expert < 0 || key.expert >= experts_)
      return invalid_argument("no " + to_string(key));
    const uint64_t index = static_cast<uint64_t>(key.layer) * static_cast<uint64_t>(experts_) + static_cast<uint64_t>(key.expert);
    return ByteRange{100 + index * (expert_bytes() + 12), expert_bytes()};
  }

  Result<std::unique_ptr<ExpertObject>> decode(ExpertKey key, IoBuffer&& bytes) const override {
    if (bytes.size() != expert_bytes()) return corrupt_data("expert record has " + std::to_string(bytes.size()) + " bytes");
    uint32_t header[4];
    std::memcpy(header, bytes.bytes().data(), sizeof(header));
    if (header[0] != kMagic || header[1] != static_cast<uint32_t>(key.layer) || header[2] != static_cast<uint32_t>(key.expert))
      return corrupt_data("expert record header does not match");
    return std::unique_ptr<ExpertObject>(new Object(std::move(bytes), H_, I_));
  }

 private:
  // Computes on the read buffer in place (no copy): the ops view its f32 data.
  class Object final : public ExpertObject {
   public:
    Object(IoBuffer bytes, size_t H, size_t I) : bytes_(std::move(bytes)) {
      const float* w = reinterpret_cast<const float*>(bytes_.bytes().data() + 16);
      gate_ = model::make_dense_linear(w, model::DenseDType::kF32, I, H);
      up_ = model::make_dense_linear(w + I * H, model::DenseDType::kF32, I, H);
      down_ = model::make_dense_linear(w + 2 * I * H, model::DenseDType::kF32, H, I);
    }
    model::ExpertOps ops() const override { return {gate_.get(), up_.get(), down_.get()}; }
    uint64_t resident_bytes() const override { return bytes_.size(); }

   private:
    IoBuffer bytes_;
    std::unique_ptr<model::LinearOp> gate_, up_, down_;
  };

  std::string path_;
  int layers_, experts_;
  size_t H_, I_;
};

struct Fixture {
  io::MoeModelConfig config;
  std::unique_ptr<model::MoeModel> resident;
  testing::TempDir dir;
  std::shared_ptr<DenseFileSource> source;
  std::vector<uint8_t> file;
};

// Writes the fixture's experts in the test layout and opens the resident model.
std::unique_ptr<Fixture> make_fixture() {
  auto f = std::make_unique<Fixture>();
  auto config = io::load_hf_config(kFixture);
  EXPECT_TRUE(config.is_ok()) << config.status().to_string();
  f->config = *config;
  auto resident = model::MoeModel::load(kFixture);
  EXPECT_TRUE(resident.is_ok()) << resident.status().to_string();
  f->resident = std::move(resident).value();
  auto st = io::SafetensorsModel::open(kFixture);
  EXPECT_TRUE(st.is_ok());
  const int L = static_cast<int>(f->config.num_hidden_layers), E = static_cast<int>(f->config.num_experts);
  const size_t H = static_cast<size_t>(f->config.hidden_size);
  const size_t I = static_cast<size_t>(f->config.moe_intermediate_size);
  f->source = std::make_shared<DenseFileSource>(f->dir.file("experts.bin"), L, E, H, I);
  f->file = testing::random_bytes(100, 1);
  for (int l = 0; l < L; ++l)
    for (int e = 0; e < E; ++e) {
      const uint32_t header[4] = {kMagic, static_cast<uint32_t>(l), static_cast<uint32_t>(e), 0};
      const auto* hb = reinterpret_cast<const uint8_t*>(header);
      f->file.insert(f->file.end(), hb, hb + sizeof(header));
      for (const char* proj : {"gate_proj", "up_proj", "down_proj"}) {
        const std::string name = "model.layers." + std::to_string(l) + ".mlp.experts." + std::to_string(e) + "." + proj + ".weight";
        const io::TensorView* t = (*st)->find(name);
        EXPECT_NE(t, nullptr) << name;
        auto w = io::to_f32(*t);
        EXPECT_TRUE(w.is_ok());
        const auto* wb = reinterpret_cast<const uint8_t*>(w->data());
        f->file.insert(f->file.end(), wb, wb + w->size() * sizeof(float));
      }
      const std::vector<uint8_t> gap = testing::random_bytes(12, static_cast<uint32_t>(l * 100 + e));
      f->file.insert(f->file.end(), gap.begin(), gap.end());
    }
  testing::write_bytes(f->source->file_path(), f->file);
  return f;
}

Result<std::unique_ptr<model::MoeModel>> model_with(const Fixture& f, std::unique_ptr<model::ExpertProvider> provider) {
  SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<io::SafetensorsModel> st, io::SafetensorsModel::open(kFixture));
  SUBMOE_ASSIGN_OR_RETURN(model::ModelWeights w,
                          model::load_checkpoint_weights(f.config, io::architecture_descriptor(f.config.architecture),
                                                         std::shared_ptr<const io::SafetensorsModel>(std::move(st))));
  w.experts = std::move(provider);
  return model::MoeModel::create(f.config, std::move(w));
}

// Prefill of 9 tokens (all logits), then 6 greedy-free decode steps on fixed
// tokens (last logits); everything concatenated.
Result<std::vector<float>> run_tokens(const model::MoeModel& m, ThreadPool* pool,
                                      std::vector<uint64_t>* popularity = nullptr) {
  model::Session session(m, pool);
  const size_t E = static_cast<size_t>(m.config().num_experts);
  if (popularity) {
    popularity->assign(static_cast<size_t>(m.config().num_hidden_layers) * E, 0);
    session.set_routing_observer([&](int layer, size_t, const model::Routing& r) {
      for (int32_t e : r.experts) (*popularity)[static_cast<size_t>(layer) * E + static_cast<size_t>(e)]++;
    });
  }
  std::mt19937 rng(17);
  const int vocab = static_cast<int>(m.config().vocab_size);
  std::vector<int32_t> prompt(9);
  for (auto& t : prompt) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
  std::vector<float> all, logits;
  SUBMOE_RETURN_IF_ERROR(session.forward(prompt, model::LogitsMode::kAll, &logits));
  all.insert(all.end(), logits.begin(), logits.end());
  for (int step = 0; step < 6; ++step) {
    const int32_t tok = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
    SUBMOE_RETURN_IF_ERROR(session.forward(std::span<const int32_t>(&tok, 1), model::LogitsMode::kLast, &logits));
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

struct Config {
  CachePolicy policy;
  IoBackend io;
  bool prefetch;
};

TEST(CachedExpertProvider, LogitsMatchTheResidentModelForEveryBudget) {
  auto f = make_fixture();
  ThreadPool pool(3);
  std::vector<uint64_t> popularity;
  auto want = run_tokens(*f->resident, &pool, &popularity);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  const uint64_t all_bytes = static_cast<uint64_t>(f->source->num_layers() * f->source->num_experts()) * f->source->expert_bytes();
  const Config configs[] = {
      {CachePolicy::kLru, IoBackend::kPread, false},  {CachePolicy::kLru, IoBackend::kUring, true},
      {CachePolicy::kLfu, IoBackend::kDirect, false}, {CachePolicy::kHybrid, IoBackend::kPread, true},
      {CachePolicy::kPinned, IoBackend::kUringDirect, true},
  };
  for (const Config& c : configs) {
    for (double fraction : {0.0, 0.25, 1.0}) {
      const std::string what = std::string(cache_policy_name(c.policy)) + "/" + io_backend_name(c.io) +
                               (c.prefetch ? "/prefetch" : "") + " budget " + std::to_string(fraction);
      OffloadOptions o;
      o.store.backend = c.io;
      o.policy = c.policy;
      o.budget_bytes = static_cast<uint64_t>(fraction * static_cast<double>(all_bytes));
      o.prefetch = c.prefetch;
      if (c.policy == CachePolicy::kPinned || c.policy == CachePolicy::kHybrid) o.popularity = popularity;
      auto provider = make_cached_expert_provider(f->source, o);
      ASSERT_TRUE(provider.is_ok()) << what << ": " << provider.status().to_string();
      CachedExpertProvider* raw = provider->get();
      auto m = model_with(*f, std::move(provider).value());
      ASSERT_TRUE(m.is_ok()) << what << ": " << m.status().to_string();
      auto got = run_tokens(**m, &pool);
      ASSERT_TRUE(got.is_ok()) << what << ": " << got.status().to_string();
      ASSERT_EQ(got->size(), want->size()) << what;
      EXPECT_EQ(std::memcmp(got->data(), want->data(), want->size() * sizeof(float)), 0) << what;

      const CacheStats s = raw->cache().stats();
      EXPECT_LE(s.resident_bytes, o.budget_bytes) << what;  // nothing is in use any more
      if (fraction == 0.0) {
        EXPECT_EQ(s.total.hits, 0u) << what;
      }
      uint64_t used_slots = 0;
      for (uint64_t p : popularity) used_slots += p > 0 ? 1 : 0;
      if (fraction == 0.25) {
        EXPECT_GT(s.total.evictions, 0u) << what;  // the budget binds
        EXPECT_GT(s.total.hits, 0u) << what;
      }
      if (fraction == 1.0) {
        // Everything fits: nothing leaves, and prefetch guesses (experts used
        // before) never bring in anything the run did not use.
        EXPECT_EQ(s.total.evictions, 0u) << what;
        EXPECT_EQ(s.resident_entries, used_slots) << what;
      }
      if (fraction == 1.0 && !c.prefetch) {
        EXPECT_EQ(s.total.misses, used_slots) << what;  // each loaded once
      }
      if (!raw->notice().empty()) std::printf("[ info ] %s: %s\n", what.c_str(), raw->notice().c_str());
    }
  }
}

// Sessions of one offloaded model on several threads (one pool shared): the
// provider lets one session hold a layer at a time and the others wait, so every
// thread gets the resident model's logits bit for bit, under a binding budget.
TEST(CachedExpertProvider, ConcurrentSessionsMatchTheResidentModel) {
  auto f = make_fixture();
  ThreadPool pool(2);
  auto want = run_tokens(*f->resident, &pool);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  const uint64_t all_bytes =
      static_cast<uint64_t>(f->source->num_layers() * f->source->num_experts()) * f->source->expert_bytes();
  for (bool prefetch : {false, true}) {
    OffloadOptions o;
    o.budget_bytes = all_bytes / 4;
    o.prefetch = prefetch;
    auto provider = make_cached_expert_provider(f->source, o);
    ASSERT_TRUE(provider.is_ok()) << provider.status().to_string();
    auto m = model_with(*f, std::move(provider).value());
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    constexpr int kThreads = 4;
    std::vector<Result<std::vector<float>>> got(kThreads, Result<std::vector<float>>(internal_error("not run")));
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        for (int rep = 0; rep < 3 && (rep == 0 || got[t].is_ok()); ++rep) got[t] = run_tokens(**m, &pool);
      });
    for (auto& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) {
      ASSERT_TRUE(got[t].is_ok()) << "thread " << t << ": " << got[t].status().to_string();
      ASSERT_EQ(got[t]->size(), want->size());
      EXPECT_EQ(std::memcmp(got[t]->data(), want->data(), want->size() * sizeof(float)), 0)
          << "thread " << t << (prefetch ? " with prefetch" : "");
    }
  }
}

TEST(CachedExpertProvider, CorruptExpertRecordFailsTheForwardNamingIt) {
  auto f = make_fixture();
  // Break every expert's header (its layer field), so whichever the router
  // picks first is found corrupt.
  for (int l = 0; l < f->source->num_layers(); ++l)
    for (int e = 0; e < f->source->num_experts(); ++e) {
      auto r = f->source->byte_range({l, e});
      ASSERT_TRUE(r.is_ok());
      f->file[r->offset + 4] ^= 0xFF;
    }
  testing::write_bytes(f->source->file_path(), f->file);
  OffloadOptions o;
  o.budget_bytes = 1 << 20;
  auto provider = make_cached_expert_provider(f->source, o);
  ASSERT_TRUE(provider.is_ok());
  auto m = model_with(*f, std::move(provider).value());
  ASSERT_TRUE(m.is_ok());
  auto got = run_tokens(**m, nullptr);
  ASSERT_FALSE(got.is_ok());
  EXPECT_EQ(got.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(got.status().message().find("layer 0 expert"), std::string::npos) << got.status().message();
  EXPECT_NE(got.status().message().find(f->source->file_path()), std::string::npos) << got.status().message();
}

TEST(CachedExpertProvider, AffinityPrefetchLoadsTheNextLayersMostCoRoutedExperts) {
  // Co-routing: expert 1 of layer 0 goes with 5 of layer 1 (10 times) and 6 (3
  // times); expert 4 with 6 (2 times): after layer 0 begins with {1, 4} the
  // prefetcher loads layer 1's 5 and 6 (two, as many as layer 0 uses), which
  // layer 1 then hits.
  auto f = make_fixture();
  const size_t L = 2, E = 8;
  OffloadOptions o;
  o.prefetch = true;
  o.prefetch_from = OffloadOptions::PrefetchFrom::kAffinity;
  o.budget_bytes = uint64_t{1} << 30;  // room for every expert
  o.affinity.assign(L * E * E, 0);
  o.affinity[(0 * E + 1) * E + 5] = 10;
  o.affinity[(0 * E + 1) * E + 6] = 3;
  o.affinity[(0 * E + 4) * E + 6] = 2;
  o.affinity[(0 * E + 4) * E + 7] = 4;
  auto provider = make_cached_expert_provider(f->source, o);
  ASSERT_TRUE(provider.is_ok()) << provider.status().to_string();
  CachedExpertProvider& p = **provider;
  const std::vector<int> first = {1, 4}, second = {5, 6};
  ASSERT_TRUE(p.begin_layer(0, first).is_ok());
  for (int i = 0; i < 400 && p.prefetcher()->stats().loaded + p.prefetcher()->stats().no_room < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(p.prefetcher()->stats().requested, 2u);
  EXPECT_EQ(p.prefetcher()->stats().loaded, 2u);
  p.end_layer(0);
  ASSERT_TRUE(p.begin_layer(1, second).is_ok());
  const CacheStats s = p.cache().stats();
  EXPECT_EQ(s.layers[1].misses, 0u);
  EXPECT_EQ(s.layers[1].hits, 2u);
  EXPECT_EQ(s.prefetch_hits, 2u);
  p.end_layer(1);

  o.affinity.resize(5);  // not [L][E][E]
  EXPECT_EQ(make_cached_expert_provider(f->source, o).status().code(), ErrorCode::kInvalidArgument);
}

TEST(CachedExpertProvider, PregatingPrefetchesWhatTheModelPredictsAndKeepsLogitsExact) {
  auto f = make_fixture();
  OffloadOptions o;
  o.prefetch = true;
  o.prefetch_from = OffloadOptions::PrefetchFrom::kPregate;
  o.budget_bytes = uint64_t{1} << 30;
  {
    // The provider alone: begin_layer queues nothing itself; predict() loads
    // the named experts, which the next begin_layer then hits.
    auto provider = make_cached_expert_provider(f->source, o);
    ASSERT_TRUE(provider.is_ok()) << provider.status().to_string();
    CachedExpertProvider& p = **provider;
    EXPECT_TRUE(p.wants_predictions());
    const std::vector<int> first = {1, 4}, second = {2, 5, 7};
    ASSERT_TRUE(p.begin_layer(0, first).is_ok());
    p.predict(1, second);
    for (int i = 0; i < 400 && p.prefetcher()->stats().loaded + p.prefetcher()->stats().no_room < 3; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(p.prefetcher()->stats().requested, 3u);  // only the prediction, nothing from begin_layer
    EXPECT_EQ(p.prefetcher()->stats().loaded, 3u);
    p.end_layer(0);
    ASSERT_TRUE(p.begin_layer(1, second).is_ok());
    EXPECT_EQ(p.cache().stats().layers[1].misses, 0u);
    EXPECT_EQ(p.cache().stats().prefetch_hits, 3u);
    p.end_layer(1);
    p.predict(7, second);  // a layer outside the model: ignored
    EXPECT_EQ(p.prefetcher()->stats().requested, 3u);
  }
  // Through the model under a binding budget: the logits stay the resident
  // model's bit for bit, and the model's predictions reach the prefetcher.
  ThreadPool pool(2);
  auto want = run_tokens(*f->resident, &pool);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  o.budget_bytes = static_cast<uint64_t>(f->source->num_layers() * f->source->num_experts()) * f->source->expert_bytes() / 2;
  auto provider = make_cached_expert_provider(f->source, o);
  ASSERT_TRUE(provider.is_ok()) << provider.status().to_string();
  CachedExpertProvider* raw = provider->get();
  auto m = model_with(*f, std::move(provider).value());
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  auto got = run_tokens(**m, &pool);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  ASSERT_EQ(got->size(), want->size());
  EXPECT_EQ(std::memcmp(got->data(), want->data(), want->size() * sizeof(float)), 0);
  EXPECT_GT(raw->prefetcher()->stats().requested, 0u);
  // Without --prefetch there is no prefetcher and no prediction is asked for.
  o.prefetch = false;
  auto plain = make_cached_expert_provider(f->source, o);
  ASSERT_TRUE(plain.is_ok());
  EXPECT_FALSE((*plain)->wants_predictions());
}

// trace replay with pre-gating's predictions: perfect predictions (the trace
// itself) submit every later layer's experts to the prefetcher, never layer
// 0's; predictions of another layout are refused.
TEST(CachedExpertProvider, ReplayPrefetchesFromRecordedPredictions) {
  auto f = make_fixture();
  const uint32_t L = 2, E = 8, k = 2;
  RoutingTrace trace(L, E, k);
  std::mt19937 rng(5);
  for (int t = 0; t < 40; ++t) {
    std::vector<ExpertChoice> c;
    for (uint32_t l = 0; l < L; ++l) {
      const uint16_t a = static_cast<uint16_t>(rng() % E), b = static_cast<uint16_t>((a + 1 + rng() % (E - 1)) % E);
      c.push_back({a, float_to_bf16(0.6f)});
      c.push_back({b, float_to_bf16(0.4f)});
    }
    ASSERT_TRUE(trace.append_token(c).is_ok());
  }
  OffloadOptions o;
  o.prefetch = true;
  o.prefetch_from = OffloadOptions::PrefetchFrom::kPregate;
  o.budget_bytes = 6 * f->source->expert_bytes();  // binding: 6 of 16 experts
  auto provider = make_cached_expert_provider(f->source, o);
  ASSERT_TRUE(provider.is_ok()) << provider.status().to_string();
  TraceReplayOptions ro;
  ro.predictions = &trace;
  auto r = replay_trace(trace, *f->source, **provider, nullptr, ro);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const CacheStats s = (*provider)->cache().stats();
  EXPECT_EQ(s.total.hits + s.total.misses, 40u * L * k);
  // Every token's two distinct predictions of layer 1 were submitted, none of
  // layer 0 (whether the prefetcher wins a race with the foreground is timing).
  EXPECT_EQ((*provider)->prefetcher()->stats().requested, 40u * k);
  EXPECT_LE(s.prefetch_hits, s.prefetched);

  RoutingTrace other(L, E, 1);
  ro.predictions = &other;
  auto bad = replay_trace(trace, *f->source, **provider, nullptr, ro);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("do not match the trace"), std::string::npos) << bad.status().message();
}

TEST(CachedExpertProvider, FactoryAndProviderRejectBadInput) {
  auto f = make_fixture();
  OffloadOptions o;
  o.policy = CachePolicy::kPinned;  // without a profile
  EXPECT_EQ(make_cached_expert_provider(f->source, o).status().code(), ErrorCode::kInvalidArgument);
  o.popularity.assign(3, 1);  // wrong size
  EXPECT_EQ(make_cached_expert_provider(f->source, o).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(make_cached_expert_provider(nullptr, OffloadOptions{}).status().code(), ErrorCode::kInvalidArgument);
  auto missing = std::make_shared<DenseFileSource>(f->dir.file("nope.bin"), 2, 8, 64, 16);
  EXPECT_EQ(make_cached_expert_provider(missing, OffloadOptions{}).status().code(), ErrorCode::kNotFound);

  auto provider = make_cached_expert_provider(f->source, OffloadOptions{});
  ASSERT_TRUE(provider.is_ok());
  CachedExpertProvider& p = **provider;
  const std::vector<int> ok = {1, 4}, unsorted = {4, 1}, missing_expert = {1, 99};
  EXPECT_EQ(p.begin_layer(7, ok).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(p.begin_layer(0, unsorted).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(p.begin_layer(0, missing_expert).code(), ErrorCode::kInvalidArgument);
  ASSERT_TRUE(p.begin_layer(0, ok).is_ok());
  EXPECT_EQ(p.begin_layer(0, ok).code(), ErrorCode::kInternal);  // not ended yet
  EXPECT_NE(p.ops(0, 4).gate, nullptr);
  EXPECT_EQ(p.ops(0, 2).gate, nullptr);  // not listed
  p.end_layer(0);
  ASSERT_TRUE(p.begin_layer(0, ok).is_ok());
  p.end_layer(0);
}

}  // namespace
}  // namespace submoe::offload
