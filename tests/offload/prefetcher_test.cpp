// Prefetcher and ExpertCache::prefetch: fills free budget only, never evicts what
// is in use or protected, is joined (not repeated) by a foreground acquire of the
// same key, never makes the foreground wait for another key, drops stale
// requests, and counts hits and waste.
#include "submoe/offload/prefetcher.h"

#include <gtest/gtest.h>

#include <future>

#include "offload_test_util.h"

namespace submoe::offload {
namespace {

using testing::CanaryObject;
using testing::FakeLoader;

struct Rig {
  std::shared_ptr<FakeLoader> loader;
  std::unique_ptr<ExpertCache> cache;
};

Rig make_rig(uint64_t budget, CachePolicy policy = CachePolicy::kLru, std::vector<ExpertKey> pinned = {}) {
  Rig r;
  r.loader = std::make_shared<FakeLoader>(100);
  ExpertCacheOptions o;
  o.policy = policy;
  o.budget_bytes = budget;
  o.pinned = std::move(pinned);
  auto c = ExpertCache::create(o, r.loader);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  r.cache = std::move(c).value();
  return r;
}

TEST(Prefetcher, FillsFreeBudgetAndCountsHits) {
  Rig r = make_rig(400);
  Prefetcher p(r.cache.get());
  p.submit({{0, 1}, {0, 2}, {0, 3}});
  p.wait_idle();
  for (int e : {1, 2, 3}) EXPECT_TRUE(r.cache->contains({0, e}));
  CacheStats s = r.cache->stats();
  EXPECT_EQ(s.prefetched, 3u);
  EXPECT_EQ(s.total.bytes_fetched, 3u * 101u);
  EXPECT_EQ(s.total.misses, 0u);  // prefetches are not foreground accesses
  auto h = r.cache->acquire(std::vector<ExpertKey>{{0, 1}, {0, 2}});
  ASSERT_TRUE(h.is_ok());
  EXPECT_TRUE((*h)[0].as<CanaryObject>().intact({0, 1}));
  s = r.cache->stats();
  EXPECT_EQ(s.total.hits, 2u);
  EXPECT_EQ(s.prefetch_hits, 2u);
  EXPECT_EQ(p.stats().loaded, 3u);
  // Already resident: nothing to do.
  p.submit({{0, 3}});
  p.wait_idle();
  EXPECT_EQ(p.stats().present, 1u);
  EXPECT_EQ(r.loader->load_count({0, 3}), 1);
}

TEST(Prefetcher, NeverEvictsInUseOrProtectedEntries) {
  Rig r = make_rig(200);
  Prefetcher p(r.cache.get());
  auto a = r.cache->acquire(ExpertKey{0, 0});  // in use
  ASSERT_TRUE(a.is_ok());
  ASSERT_TRUE(r.cache->acquire(ExpertKey{0, 1}).is_ok());  // resident, idle
  // {0,1} is protected by the request itself; {0,0} is in use: no room for {0,2}.
  p.submit({{0, 1}, {0, 2}});
  p.wait_idle();
  EXPECT_TRUE(r.cache->contains({0, 0}));
  EXPECT_TRUE(r.cache->contains({0, 1}));
  EXPECT_FALSE(r.cache->contains({0, 2}));
  EXPECT_EQ(r.loader->load_count({0, 2}), 0);
  EXPECT_EQ(p.stats().no_room, 1u);
  // Without the protection it may replace the idle entry, never the one in use.
  p.submit({{0, 2}});
  p.wait_idle();
  EXPECT_TRUE(r.cache->contains({0, 0}));
  EXPECT_FALSE(r.cache->contains({0, 1}));
  EXPECT_TRUE(r.cache->contains({0, 2}));
  EXPECT_TRUE(a->as<CanaryObject>().intact({0, 0}));
  EXPECT_LE(r.cache->stats().resident_bytes, 200u);
}

TEST(Prefetcher, EvictedBeforeUseCountsAsWasted) {
  Rig r = make_rig(100);
  Prefetcher p(r.cache.get());
  p.submit({{1, 5}});
  p.wait_idle();
  ASSERT_TRUE(r.cache->contains({1, 5}));
  ASSERT_TRUE(r.cache->acquire(ExpertKey{1, 6}).is_ok());  // the foreground needs the room
  const CacheStats s = r.cache->stats();
  EXPECT_EQ(s.prefetched, 1u);
  EXPECT_EQ(s.prefetch_hits, 0u);
  EXPECT_EQ(s.prefetch_wasted, 1u);
}

TEST(Prefetcher, ForegroundJoinsAPrefetchInFlight) {
  Rig r = make_rig(1000);
  Prefetcher p(r.cache.get());
  const ExpertKey k{2, 7};
  r.loader->close_gate(k);
  p.submit({k});
  r.loader->wait_entered(k);
  auto fg = std::async(std::launch::async, [&] { return r.cache->acquire(k); });
  EXPECT_EQ(fg.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  r.loader->open_gate(k);
  auto h = fg.get();
  ASSERT_TRUE(h.is_ok());
  EXPECT_TRUE(h->as<CanaryObject>().intact(k));
  p.wait_idle();
  EXPECT_EQ(r.loader->load_count(k), 1);
  const CacheStats s = r.cache->stats();
  EXPECT_EQ(s.total.misses, 1u);
  EXPECT_EQ(s.prefetch_hits, 1u);
  EXPECT_EQ(s.prefetch_wasted, 0u);
}

TEST(Prefetcher, ForegroundNeverWaitsForAnotherKey) {
  Rig r = make_rig(1000);
  Prefetcher p(r.cache.get());
  const ExpertKey slow{0, 1};
  r.loader->close_gate(slow);
  p.submit({slow});
  r.loader->wait_entered(slow);
  // The prefetch of `slow` is stuck in the loader; other keys load meanwhile.
  auto fg = std::async(std::launch::async, [&] { return r.cache->acquire(std::vector<ExpertKey>{{0, 2}, {0, 3}}); });
  ASSERT_EQ(fg.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  auto h = fg.get();
  ASSERT_TRUE(h.is_ok());
  h->clear();
  r.loader->open_gate(slow);
  p.wait_idle();
  EXPECT_TRUE(r.cache->contains(slow));
}

TEST(Prefetcher, NewRequestsCancelStaleOnes) {
  Rig r = make_rig(1000);
  Prefetcher p(r.cache.get());
  const ExpertKey first{0, 1};
  r.loader->close_gate(first);
  p.submit({first, {0, 2}, {0, 3}});
  r.loader->wait_entered(first);
  p.submit({{1, 4}});
  r.loader->open_gate(first);
  p.wait_idle();
  EXPECT_EQ(r.loader->load_count({0, 2}), 0);
  EXPECT_EQ(r.loader->load_count({0, 3}), 0);
  EXPECT_TRUE(r.cache->contains({1, 4}));
  EXPECT_TRUE(r.cache->contains(first));  // in flight when cancelled: completes
  const PrefetcherStats s = p.stats();
  EXPECT_EQ(s.requested, 4u);
  EXPECT_EQ(s.cancelled, 2u);
  EXPECT_EQ(s.loaded, 2u);
}

TEST(Prefetcher, PinnedPolicyPrefetchesOnlyPinnedKeys) {
  Rig r = make_rig(200, CachePolicy::kPinned, {{0, 0}, {0, 1}});
  Prefetcher p(r.cache.get());
  p.submit({{0, 0}, {0, 5}, {0, 1}});
  p.wait_idle();
  EXPECT_TRUE(r.cache->contains({0, 0}));
  EXPECT_TRUE(r.cache->contains({0, 1}));
  EXPECT_FALSE(r.cache->contains({0, 5}));
  EXPECT_EQ(r.loader->load_count({0, 5}), 0);
  EXPECT_EQ(p.stats().no_room, 1u);
}

TEST(Prefetcher, FailedPrefetchIsCountedAndTheForegroundRetries) {
  Rig r = make_rig(1000);
  Prefetcher p(r.cache.get());
  r.loader->fail({0, 9});
  p.submit({{0, 9}});
  p.wait_idle();
  EXPECT_EQ(p.stats().failed, 1u);
  EXPECT_FALSE(r.cache->contains({0, 9}));
  auto h = r.cache->acquire(ExpertKey{0, 9});
  ASSERT_FALSE(h.is_ok());
  EXPECT_NE(h.status().message().find("layer 0 expert 9"), std::string::npos) << h.status().message();
  EXPECT_EQ(r.loader->load_count({0, 9}), 2);
}

}  // namespace
}  // namespace submoe::offload
