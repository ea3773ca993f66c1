// The "no use-after-evict" proof: many threads acquire random keys from a cache
// far too small for them, with a prefetcher and a failing key in the mix, and
// check each object's canary while they hold it. Objects are destroyed (and
// poisoned) on eviction, so an eviction of an entry in use shows up as a broken
// canary here and as a use-after-free under AddressSanitizer.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "offload_test_util.h"
#include "submoe/offload/expert_cache.h"
#include "submoe/offload/prefetcher.h"

namespace submoe::offload {
namespace {

using testing::CanaryObject;
using testing::FakeLoader;

constexpr int kLayers = 4, kExperts = 12;
const ExpertKey kPoison{3, 11};

ExpertKey random_key(std::mt19937& rng) {
  return {static_cast<int32_t>(rng() % kLayers), static_cast<int32_t>(rng() % kExperts)};
}

void run_stress(CachePolicy policy, int threads, int iterations, uint64_t budget) {
  auto loader = std::make_shared<FakeLoader>(100, 3);
  loader->fail(kPoison);
  ExpertCacheOptions o;
  o.policy = policy;
  o.budget_bytes = budget;
  if (policy == CachePolicy::kHybrid || policy == CachePolicy::kPinned) o.pinned = {{0, 0}, {1, 1}};
  auto created = ExpertCache::create(o, loader);
  ASSERT_TRUE(created.is_ok()) << created.status().to_string();
  std::unique_ptr<ExpertCache> cache = std::move(created).value();
  auto prefetcher = std::make_unique<Prefetcher>(cache.get());

  std::atomic<uint64_t> keys_acquired{0}, broken{0}, unexpected_errors{0}, poison_errors{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937 rng(1000 + static_cast<uint32_t>(t));
      std::vector<ExpertHandle> kept;  // some pins live across iterations
      for (int it = 0; it < iterations; ++it) {
        std::vector<ExpertKey> keys;
        const size_t n = 1 + rng() % 4;
        while (keys.size() < n) {
          const ExpertKey k = random_key(rng);
          bool dup = std::find(keys.begin(), keys.end(), k) != keys.end();
          for (const ExpertHandle& h : kept) dup = dup || h.key() == k;
          if (!dup) keys.push_back(k);
        }
        const bool has_poison = std::find(keys.begin(), keys.end(), kPoison) != keys.end();
        keys_acquired += keys.size();
        auto handles = cache->acquire(keys);
        if (!handles.is_ok()) {
          const bool named = handles.status().message().find(to_string(kPoison)) != std::string::npos;
          if (!(has_poison && named)) ADD_FAILURE() << handles.status().to_string();
          (has_poison && named ? poison_errors : unexpected_errors)++;
          continue;
        }
        if (has_poison) ++unexpected_errors;
        for (size_t i = 0; i < keys.size(); ++i)
          if (!(*handles)[i].as<CanaryObject>().intact(keys[i])) ++broken;
        std::this_thread::yield();
        for (const ExpertHandle& h : kept)
          if (!h.as<CanaryObject>().intact(h.key())) ++broken;
        if (rng() % 4 == 0 && kept.size() < 2) kept.push_back(std::move(handles->front()));
        if (rng() % 3 == 0 && !kept.empty()) kept.erase(kept.begin());
        // Re-check after other threads had a chance to evict.
        for (size_t i = 1; i < keys.size(); ++i)
          if (!(*handles)[i].as<CanaryObject>().intact(keys[i])) ++broken;
        handles->clear();
        // Odd threads pause between steps (as a model computes between layers),
        // which leaves the prefetcher free budget now and then.
        if (t % 2 == 1) std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    });
  }
  std::thread hinter([&] {
    std::mt19937 rng(7);
    while (!done.load()) {
      std::vector<ExpertKey> keys;
      for (int i = 0; i < 3; ++i) keys.push_back(random_key(rng));
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      prefetcher->submit(std::move(keys));
      (void)cache->stats();
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  });
  for (auto& w : workers) w.join();
  done = true;
  hinter.join();
  prefetcher.reset();

  EXPECT_EQ(broken.load(), 0u);
  EXPECT_EQ(unexpected_errors.load(), 0u);
  EXPECT_GT(poison_errors.load(), 0u);
  const CacheStats s = cache->stats();
  EXPECT_EQ(s.total.hits + s.total.misses, keys_acquired.load());
  EXPECT_LE(s.resident_bytes, o.budget_bytes);
  EXPECT_EQ(loader->live(), static_cast<int>(s.resident_entries));
  EXPECT_GT(s.total.evictions, 0u);
  // Pinned admits prefetches of pinned keys only, which the workers load first.
  if (policy != CachePolicy::kPinned) {
    EXPECT_GT(s.prefetched, 0u);
  }
  EXPECT_LE(s.prefetch_hits + s.prefetch_wasted, s.prefetched);
  std::printf("[ info ] %s: %llu keys, hit rate %.3f, %llu evictions, %llu overcommits, peak %llu B, prefetched %llu "
              "(hits %llu, wasted %llu)\n",
              cache_policy_name(policy), static_cast<unsigned long long>(keys_acquired.load()), s.hit_rate(),
              static_cast<unsigned long long>(s.total.evictions), static_cast<unsigned long long>(s.overcommits),
              static_cast<unsigned long long>(s.peak_resident_bytes), static_cast<unsigned long long>(s.prefetched),
              static_cast<unsigned long long>(s.prefetch_hits), static_cast<unsigned long long>(s.prefetch_wasted));
  cache.reset();
  EXPECT_EQ(loader->live(), 0);  // nothing leaked
}

// Budgets of three to eight objects (charges 100..133 B) for 8 to 16 threads
// that each hold up to six at once.
TEST(CacheStress, TwelveThreadsTinyBudgetLru) { run_stress(CachePolicy::kLru, 12, 1500, 350); }
TEST(CacheStress, TwelveThreadsTinyBudgetLfu) { run_stress(CachePolicy::kLfu, 12, 1200, 500); }
TEST(CacheStress, SixteenThreadsTinyBudgetHybrid) { run_stress(CachePolicy::kHybrid, 16, 1000, 800); }
TEST(CacheStress, EightThreadsTinyBudgetPinned) { run_stress(CachePolicy::kPinned, 8, 1200, 350); }

}  // namespace
}  // namespace submoe::offload
