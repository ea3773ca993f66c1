// ExpertCache: replaying routing traces one access at a time must give exactly
// the trace simulator's hits and misses for every policy and budget (the
// simulator is the independent reference); entries in use are never evicted;
// loads are joined, not repeated; failures leave nothing pinned.
#include "submoe/offload/expert_cache.h"

#include <gtest/gtest.h>

#include <future>
#include <random>
#include <thread>

#include "offload_test_util.h"

namespace submoe::offload {
namespace {

using testing::CanaryObject;
using testing::FakeLoader;


std::unique_ptr<ExpertCache> make_cache(ExpertCacheOptions o, std::shared_ptr<FakeLoader> loader) {
  auto c = ExpertCache::create(o, std::move(loader));
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return c.is_ok() ? std::move(c).value() : nullptr;
}

TEST(ExpertCache, SequentialReplayMatchesSimulatorForEveryPolicy) {
  const RoutingTrace trace = testing::zipf_trace(3, 12, 2, 300, 1.0, 4, 5, 3);
  const uint64_t kCharge = 100;
  const std::vector<uint64_t> popularity = expert_popularity(trace);
  for (CachePolicy policy : {CachePolicy::kLru, CachePolicy::kLfu, CachePolicy::kPinned, CachePolicy::kHybrid}) {
    for (uint64_t slots : {0u, 1u, 3u, 5u, 8u, 13u, 36u, 50u}) {
      SimulationOptions so;
      so.policy = policy;
      so.capacity_slots = slots;
      so.hybrid_pinned_fraction = 0.5;
      so.expert_bytes = kCharge + 1;  // the fake loader reads charge + 1 bytes
      auto want = simulate_cache(trace, so);
      ASSERT_TRUE(want.is_ok());

      auto loader = std::make_shared<FakeLoader>(kCharge);
      ExpertCacheOptions o;
      o.policy = policy;
      o.budget_bytes = slots * kCharge;
      o.hybrid_pinned_fraction = 0.5;
      if (policy == CachePolicy::kPinned || policy == CachePolicy::kHybrid) {
        // The simulator's pinned set: a prefix of the popularity order, never-used
        // slots included, of floor(fraction * slots) slots.
        const uint64_t count = policy == CachePolicy::kPinned ? slots : static_cast<uint64_t>(0.5 * double(slots));
        const std::vector<uint32_t> order = popularity_order(popularity);
        for (uint64_t i = 0; i < std::min<uint64_t>(count, order.size()); ++i)
          o.pinned.push_back({static_cast<int32_t>(order[i] / trace.num_experts()),
                              static_cast<int32_t>(order[i] % trace.num_experts())});
      }
      auto cache = make_cache(o, loader);
      ASSERT_TRUE(cache);
      for (uint64_t t = 0; t < trace.num_tokens(); ++t)
        for (uint32_t l = 0; l < trace.num_layers(); ++l)
          for (uint32_t j = 0; j < trace.top_k(); ++j) {
            const ExpertKey key{static_cast<int32_t>(l), trace.token_layer(t, l)[j].expert};
            auto h = cache->acquire(key);
            ASSERT_TRUE(h.is_ok());
            ASSERT_TRUE(h->as<CanaryObject>().intact(key));
          }
      const CacheStats got = cache->stats();
      const std::string what = std::string(cache_policy_name(policy)) + " slots " + std::to_string(slots);
      EXPECT_EQ(got.total.hits, want->hits) << what;
      EXPECT_EQ(got.total.misses, want->misses) << what;
      EXPECT_EQ(got.total.bytes_fetched, want->bytes_fetched) << what;
      ASSERT_EQ(got.layers.size(), trace.num_layers()) << what;
      for (uint32_t l = 0; l < trace.num_layers(); ++l) {
        EXPECT_EQ(got.layers[l].hits, want->layer_hits[l]) << what << " layer " << l;
        EXPECT_EQ(got.layers[l].misses, want->layer_misses[l]) << what << " layer " << l;
      }
      EXPECT_LE(got.resident_bytes, o.budget_bytes) << what;
      EXPECT_LE(got.peak_resident_bytes, o.budget_bytes + kCharge) << what;  // one in use beyond the budget at most
      EXPECT_EQ(got.total.misses, got.resident_entries + got.total.evictions) << what;
      EXPECT_EQ(loader->live(), static_cast<int>(got.resident_entries)) << what;
    }
  }
}

TEST(ExpertCache, EntriesInUseAreNeverEvictedAndOvercommitIsCounted) {
  auto loader = std::make_shared<FakeLoader>(100);
  ExpertCacheOptions o;
  o.budget_bytes = 250;  // two entries
  auto cache = make_cache(o, loader);
  std::vector<ExpertKey> keys;
  for (int e = 0; e < 5; ++e) keys.push_back({1, e});
  auto handles = cache->acquire(keys);
  ASSERT_TRUE(handles.is_ok());
  ASSERT_EQ(handles->size(), keys.size());
  CacheStats s = cache->stats();
  EXPECT_EQ(s.resident_entries, 5u);
  EXPECT_EQ(s.resident_bytes, 500u);
  EXPECT_EQ(s.overcommits, 1u);
  EXPECT_EQ(s.total.evictions, 0u);
  EXPECT_EQ(loader->calls(), 1);  // all misses in one loader call
  // More pressure while they are held: the new key is loaded, nothing held goes.
  auto extra = cache->acquire(ExpertKey{2, 0});
  ASSERT_TRUE(extra.is_ok());
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_TRUE((*handles)[i].as<CanaryObject>().intact(keys[i]));
  EXPECT_EQ(cache->stats().overcommits, 2u);
  handles->clear();
  s = cache->stats();
  EXPECT_LE(s.resident_bytes, 250u);
  EXPECT_EQ(s.total.evictions, 4u);  // 6 loaded, the held one and the most recent kept
  EXPECT_TRUE(cache->contains({2, 0}));
  EXPECT_TRUE(cache->contains({1, 4}));  // most recently acquired of the batch
  EXPECT_EQ(loader->live(), 2);
}

TEST(ExpertCache, ZeroBudgetKeepsOnlyWhatIsInUse) {
  auto loader = std::make_shared<FakeLoader>(64);
  ExpertCacheOptions o;
  auto cache = make_cache(o, loader);
  for (int round = 0; round < 3; ++round) {
    auto h = cache->acquire(std::vector<ExpertKey>{ExpertKey{0, 1}, ExpertKey{0, 2}});
    ASSERT_TRUE(h.is_ok());
    EXPECT_EQ(loader->live(), 2);
  }
  EXPECT_EQ(loader->live(), 0);
  const CacheStats s = cache->stats();
  EXPECT_EQ(s.total.hits, 0u);
  EXPECT_EQ(s.total.misses, 6u);
  EXPECT_EQ(s.resident_bytes, 0u);
  // A key held by one caller is a hit for the next, even at budget 0.
  auto held = cache->acquire(ExpertKey{0, 7});
  auto again = cache->acquire(ExpertKey{0, 7});
  ASSERT_TRUE(held.is_ok() && again.is_ok());
  EXPECT_EQ(held->get(), again->get());
  EXPECT_EQ(cache->stats().total.hits, 1u);
}

// Experts of different sizes (mixed rates): the hit rate by bytes weighs each
// access by its expert's charge. Expert e costs 100 + 100 e bytes; the small
// expert 0 misses once and then hits twice, the large expert 3 misses both
// times (the budget of 150 bytes cannot keep it once released).
TEST(ExpertCache, HitRateByBytesWeighsAccessesByTheirCharge) {
  auto loader = std::make_shared<FakeLoader>(100, 100);
  ExpertCacheOptions o;
  o.budget_bytes = 150;  // expert 0 (100) fits, expert 3 (400) does not stay
  auto cache = make_cache(o, loader);
  for (int round = 0; round < 3; ++round) ASSERT_TRUE(cache->acquire(ExpertKey{0, 0}).is_ok());  // miss, hit, hit
  for (int round = 0; round < 2; ++round) ASSERT_TRUE(cache->acquire(ExpertKey{0, 3}).is_ok());  // too large to stay
  const CacheStats s = cache->stats();
  EXPECT_EQ(s.total.hits, 2u);
  EXPECT_EQ(s.total.misses, 3u);
  EXPECT_EQ(s.total.hit_bytes, 200u);
  EXPECT_EQ(s.total.missed_bytes, 100u + 2 * 400u);
  EXPECT_DOUBLE_EQ(s.hit_rate(), 2.0 / 5.0);
  EXPECT_DOUBLE_EQ(s.byte_hit_rate(), 200.0 / 1100.0);
  EXPECT_EQ(s.layers[0].hit_bytes, 200u);
  EXPECT_EQ(s.layers[0].missed_bytes, 900u);
}

TEST(ExpertCache, ValuesDoNotDependOnTheBudget) {
  std::mt19937 rng(3);
  std::vector<ExpertKey> seq;
  for (int i = 0; i < 400; ++i) seq.push_back({static_cast<int32_t>(rng() % 3), static_cast<int32_t>(rng() % 9)});
  for (uint64_t budget : {0u, 100u, 700u, 100000u}) {
    for (CachePolicy p : {CachePolicy::kLru, CachePolicy::kLfu}) {
      auto loader = std::make_shared<FakeLoader>(100, 7);
      ExpertCacheOptions o;
      o.policy = p;
      o.budget_bytes = budget;
      auto cache = make_cache(o, loader);
      for (const ExpertKey& k : seq) {
        auto h = cache->acquire(k);
        ASSERT_TRUE(h.is_ok());
        ASSERT_EQ(h->key(), k);
        ASSERT_TRUE(h->as<CanaryObject>().intact(k)) << to_string(k) << " budget " << budget;
      }
      EXPECT_LE(cache->stats().resident_bytes, budget);
    }
  }
}

TEST(ExpertCache, LfuEvictsTheLeastFrequentThenTheLeastRecent) {
  auto loader = std::make_shared<FakeLoader>(10);
  ExpertCacheOptions o;
  o.policy = CachePolicy::kLfu;
  o.budget_bytes = 30;
  auto cache = make_cache(o, loader);
  auto use = [&](int e, int times) {
    for (int i = 0; i < times; ++i) ASSERT_TRUE(cache->acquire(ExpertKey{0, e}).is_ok());
  };
  use(1, 3);
  use(2, 1);
  use(3, 2);
  use(4, 1);  // evicts 2 (frequency 1, older than 4)
  EXPECT_FALSE(cache->contains({0, 2}));
  EXPECT_TRUE(cache->contains({0, 1}) && cache->contains({0, 3}) && cache->contains({0, 4}));
  use(5, 1);  // evicts 4 (frequency 1)
  EXPECT_FALSE(cache->contains({0, 4}));
  use(2, 1);  // 2's count survived its eviction: now 2, evicts 5 (frequency 1)
  EXPECT_FALSE(cache->contains({0, 5}));
  EXPECT_TRUE(cache->contains({0, 2}));
}

TEST(ExpertCache, PinnedPolicyKeepsThePinnedSetAndDropsTheRest) {
  auto loader = std::make_shared<FakeLoader>(100);
  ExpertCacheOptions o;
  o.policy = CachePolicy::kPinned;
  o.budget_bytes = 250;
  o.pinned = {{0, 1}, {0, 2}, {0, 3}};  // only two fit
  auto cache = make_cache(o, loader);
  for (int e : {1, 2, 3, 4}) ASSERT_TRUE(cache->acquire(ExpertKey{0, e}).is_ok());
  EXPECT_TRUE(cache->contains({0, 1}));
  EXPECT_TRUE(cache->contains({0, 2}));
  EXPECT_FALSE(cache->contains({0, 3}));
  EXPECT_FALSE(cache->contains({0, 4}));
  for (int e : {1, 2, 3, 4}) ASSERT_TRUE(cache->acquire(ExpertKey{0, e}).is_ok());
  const CacheStats s = cache->stats();
  EXPECT_EQ(s.total.hits, 2u);
  EXPECT_EQ(s.total.misses, 6u);
  EXPECT_EQ(s.resident_bytes, 200u);
}

TEST(ExpertCache, HybridSplitsTheBudget) {
  auto loader = std::make_shared<FakeLoader>(100);
  ExpertCacheOptions o;
  o.policy = CachePolicy::kHybrid;
  o.budget_bytes = 400;
  o.hybrid_pinned_fraction = 0.5;
  o.pinned = {{0, 0}, {0, 1}};
  auto cache = make_cache(o, loader);
  EXPECT_EQ(cache->pinned_budget_bytes(), 200u);
  for (int e : {0, 1, 2, 3, 4, 5}) ASSERT_TRUE(cache->acquire(ExpertKey{0, e}).is_ok());
  // Pinned 0 and 1 stay although least recent; LRU keeps the last two others.
  for (int e : {0, 1, 4, 5}) EXPECT_TRUE(cache->contains({0, e})) << e;
  for (int e : {2, 3}) EXPECT_FALSE(cache->contains({0, e})) << e;

  // A pinned set smaller than its share leaves the rest to LRU.
  o.pinned = {{0, 0}};
  cache = make_cache(o, loader);
  EXPECT_EQ(cache->pinned_budget_bytes(), 100u);
  for (int e : {0, 1, 2, 3, 4, 5}) ASSERT_TRUE(cache->acquire(ExpertKey{0, e}).is_ok());
  for (int e : {0, 3, 4, 5}) EXPECT_TRUE(cache->contains({0, e})) << e;
  for (int e : {1, 2}) EXPECT_FALSE(cache->contains({0, e})) << e;
}

TEST(ExpertCache, ConcurrentAcquiresOfOneKeyShareOneLoad) {
  auto loader = std::make_shared<FakeLoader>(100);
  ExpertCacheOptions o;
  o.budget_bytes = 1000;
  auto cache = make_cache(o, loader);
  const ExpertKey k{3, 3};
  loader->close_gate(k);
  auto first = std::async(std::launch::async, [&] { return cache->acquire(k); });
  loader->wait_entered(k);
  auto second = std::async(std::launch::async, [&] { return cache->acquire(k); });
  // The second caller must wait for the first load, not start another.
  EXPECT_EQ(second.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  loader->open_gate(k);
  auto a = first.get();
  auto b = second.get();
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ(loader->load_count(k), 1);
  EXPECT_EQ(cache->stats().total.misses, 2u);  // both waited for storage
}

TEST(ExpertCache, LoadFailureNamesTheKeyAndLeavesNothingPinned) {
  auto loader = std::make_shared<FakeLoader>(100);
  ExpertCacheOptions o;
  o.budget_bytes = 0;
  auto cache = make_cache(o, loader);
  ASSERT_TRUE(cache->acquire(ExpertKey{0, 1}).is_ok());
  auto held = cache->acquire(ExpertKey{0, 2});  // ready, pinned by this handle
  ASSERT_TRUE(held.is_ok());
  loader->fail({0, 9});
  auto r = cache->acquire(std::vector<ExpertKey>{ExpertKey{0, 2}, ExpertKey{0, 9}});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kIoError);
  EXPECT_NE(r.status().message().find("layer 0 expert 9"), std::string::npos) << r.status().message();
  held->reset();
  EXPECT_EQ(loader->live(), 0);  // the failed acquire released its pin on {0, 2}
  EXPECT_FALSE(cache->contains({0, 9}));
  // A joiner of a failing load gets the error too, and a later retry loads again.
  const ExpertKey bad{1, 1};
  loader->fail(bad);
  loader->close_gate(bad);
  auto first = std::async(std::launch::async, [&] { return cache->acquire(bad); });
  loader->wait_entered(bad);
  auto second = std::async(std::launch::async, [&] { return cache->acquire(bad); });
  EXPECT_EQ(second.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  loader->open_gate(bad);
  EXPECT_FALSE(first.get().is_ok());
  EXPECT_FALSE(second.get().is_ok());
  EXPECT_EQ(loader->load_count(bad), 1);
  EXPECT_FALSE(cache->acquire(bad).is_ok());
  EXPECT_EQ(loader->load_count(bad), 2);
}

TEST(ExpertCache, ABadKeyFailsOnlyItselfNotItsBatchMates) {
  auto loader = std::make_shared<FakeLoader>(100);
  ExpertCacheOptions o;
  o.budget_bytes = 1000;
  auto cache = make_cache(o, loader);
  const ExpertKey good{0, 5}, bad{0, 9};
  loader->fail(bad);
  loader->close_gate(good);
  auto a = std::async(std::launch::async, [&] { return cache->acquire(std::vector<ExpertKey>{good, bad}); });
  loader->wait_entered(good);
  auto b = std::async(std::launch::async, [&] { return cache->acquire(good); });  // joins the batch's load
  EXPECT_EQ(b.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  loader->open_gate(good);
  auto ra = a.get();
  auto rb = b.get();
  ASSERT_FALSE(ra.is_ok());
  EXPECT_NE(ra.status().message().find("layer 0 expert 9"), std::string::npos) << ra.status().message();
  ASSERT_TRUE(rb.is_ok()) << rb.status().to_string();
  EXPECT_TRUE(rb->as<CanaryObject>().intact(good));
  EXPECT_EQ(loader->load_count(good), 2);  // the batch, then alone
}

TEST(ExpertCache, BadArguments) {
  auto loader = std::make_shared<FakeLoader>();
  ExpertCacheOptions o;
  o.policy = CachePolicy::kBelady;
  EXPECT_EQ(ExpertCache::create(o, loader).status().code(), ErrorCode::kInvalidArgument);
  o.policy = CachePolicy::kLru;
  o.pinned = {{0, 0}};
  EXPECT_EQ(ExpertCache::create(o, loader).status().code(), ErrorCode::kInvalidArgument);
  o.policy = CachePolicy::kHybrid;
  o.hybrid_pinned_fraction = 1.5;
  EXPECT_EQ(ExpertCache::create(o, loader).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ExpertCache::create({}, nullptr).status().code(), ErrorCode::kInvalidArgument);
  auto cache = make_cache({}, loader);
  EXPECT_EQ(cache->acquire(std::vector<ExpertKey>{ExpertKey{0, 1}, ExpertKey{0, 1}}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(cache->acquire(ExpertKey{-1, 0}).status().code(), ErrorCode::kInvalidArgument);
  auto none = cache->acquire(std::span<const ExpertKey>());
  ASSERT_TRUE(none.is_ok());
  EXPECT_TRUE(none->empty());
}

TEST(ExpertCache, SelectPinnedTakesPopularKeysThatFit) {
  // 2 layers x 4 experts; charge grows with the expert id.
  const std::vector<uint64_t> popularity = {5, 0, 9, 1, 9, 2, 0, 7};
  auto charge = [](ExpertKey k) { return uint64_t{10} + 10 * static_cast<uint64_t>(k.expert); };
  // Popularity order: slots 2 (30 B), 4 (10 B), 7 (40 B), 0 (10 B), 5 (20 B), 3 (40 B).
  // Within 60 B: 30 + 10, slot 7 no longer fits, + 10, the rest do not fit.
  const std::vector<ExpertKey> expected = {{0, 2}, {1, 0}, {0, 0}};
  EXPECT_EQ(select_pinned_experts(popularity, 4, 60, charge), expected);
  EXPECT_TRUE(select_pinned_experts(popularity, 4, 0, charge).empty());
  // Unused keys are never pinned, whatever the budget.
  EXPECT_EQ(select_pinned_experts(popularity, 4, 1u << 20, charge).size(), 6u);
}

}  // namespace
}  // namespace submoe::offload
