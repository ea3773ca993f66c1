// ExpertCache: decoded routed experts held in DRAM under a byte budget.
//
// Keys are (layer, expert); values are type-erased objects from an ExpertLoader.
// acquire() returns handles that pin their entries: an entry in use is never
// evicted, even when that takes the cache over its budget for a while (counted
// as overcommit). When handles are released the cache evicts back to its budget.
// What is returned never depends on the budget, only how often it is loaded.
//
// Policies (the same definitions as the trace simulator, cache_simulator.h, so a
// sequential replay gives identical hit counts):
//   lru     evict the entry least recently acquired
//   lfu     evict the entry acquired least often (counts survive eviction; ties:
//           least recently acquired)
//   pinned  the given keys stay resident once loaded (those that fit the budget
//           at their estimated charge, in the given order); everything else is
//           dropped as soon as it is released
//   hybrid  pinned keys within hybrid_pinned_fraction of the budget; LRU over
//           the budget the pinned keys do not reserve
//
// Thread-safe. A key being loaded by one caller (or by the prefetcher) is waited
// for by every other caller that acquires it, never loaded twice. The cache must
// outlive its handles.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "submoe/core/status.h"
#include "submoe/offload/cache_simulator.h"
#include "submoe/offload/expert_key.h"
#include "submoe/offload/expert_loader.h"

namespace submoe::offload {

struct ExpertCacheOptions {
  CachePolicy policy = CachePolicy::kLru;  // lru, lfu, pinned or hybrid (belady is offline only)
  uint64_t budget_bytes = 0;
  // pinned / hybrid: keys to keep resident (see select_pinned_experts).
  std::vector<ExpertKey> pinned;
  double hybrid_pinned_fraction = 0.5;
};

struct CacheCounters {
  uint64_t hits = 0;           // acquired while resident
  uint64_t misses = 0;         // had to be loaded (or waited for a load in flight)
  uint64_t bytes_fetched = 0;  // read from storage for this layer (also by the prefetcher)
  uint64_t evictions = 0;
  // The same accesses by bytes (experts of mixed rates differ in size): the
  // charge of the experts acquired while resident, and the estimated charge of
  // those that had to be loaded or waited for.
  uint64_t hit_bytes = 0, missed_bytes = 0;
};

struct CacheStats {
  std::vector<CacheCounters> layers;  // index = layer (grows with the layers seen)
  CacheCounters total;
  uint64_t resident_entries = 0;
  uint64_t resident_bytes = 0;
  uint64_t peak_resident_bytes = 0;
  // Acquires that left the cache over budget because entries in use held it there.
  uint64_t overcommits = 0;
  uint64_t prefetched = 0;       // entries loaded by prefetch()
  uint64_t prefetch_hits = 0;    // of those, acquired before eviction (or joined while loading)
  uint64_t prefetch_wasted = 0;  // of those, evicted (or dropped) without being acquired
  double hit_rate() const {
    const uint64_t n = total.hits + total.misses;
    return n ? static_cast<double>(total.hits) / static_cast<double>(n) : 0.0;
  }
  // The hit rate by bytes: what a byte-aware cache of mixed-rate experts serves.
  double byte_hit_rate() const {
    const uint64_t n = total.hit_bytes + total.missed_bytes;
    return n ? static_cast<double>(total.hit_bytes) / static_cast<double>(n) : 0.0;
  }
};

class ExpertCache;
namespace detail {
struct CacheEntry;
}

// Pins one entry until destroyed (or reset()). Move-only.
class ExpertHandle {
 public:
  ExpertHandle() = default;
  ~ExpertHandle() { reset(); }
  ExpertHandle(ExpertHandle&& o) noexcept;
  ExpertHandle& operator=(ExpertHandle&& o) noexcept;
  ExpertHandle(const ExpertHandle&) = delete;
  ExpertHandle& operator=(const ExpertHandle&) = delete;

  explicit operator bool() const { return entry_ != nullptr; }
  ExpertKey key() const { return key_; }
  // The loader's object; valid while the handle lives.
  const void* get() const { return object_; }
  template <typename T>
  const T& as() const {
    return *static_cast<const T*>(object_);
  }
  // Releases the pin.
  void reset();

 private:
  friend class ExpertCache;
  ExpertHandle(ExpertCache* cache, detail::CacheEntry* entry, ExpertKey key, const void* object)
      : cache_(cache), entry_(entry), key_(key), object_(object) {}

  ExpertCache* cache_ = nullptr;
  detail::CacheEntry* entry_ = nullptr;
  ExpertKey key_;
  const void* object_ = nullptr;
};

enum class PrefetchOutcome {
  kLoaded,   // loaded and kept
  kPresent,  // already resident or being loaded
  kNoRoom,   // would need to evict something protected or in use
  kDropped,  // loaded, but the budget shrank meanwhile (in-use growth): discarded, counted wasted
  kFailed,   // the loader failed (the foreground will report it if it needs the key)
};

class ExpertCache {
 public:
  static Result<std::unique_ptr<ExpertCache>> create(const ExpertCacheOptions& options,
                                                     std::shared_ptr<ExpertLoader> loader);
  ~ExpertCache();
  ExpertCache(const ExpertCache&) = delete;
  ExpertCache& operator=(const ExpertCache&) = delete;

  // Pins keys (distinct) and returns one handle per key in the same order,
  // loading the missing ones together in one loader call (retried key by key if
  // that call fails, so a bad key fails only the callers that asked for it). On
  // error nothing stays pinned.
  Result<std::vector<ExpertHandle>> acquire(std::span<const ExpertKey> keys);
  Result<ExpertHandle> acquire(ExpertKey key);

  // Loads `key` in the background sense: only into free budget or by evicting
  // entries that are neither in use nor in `protected_keys`; the entry is left
  // unpinned. Blocks the calling (prefetch) thread during the load only.
  PrefetchOutcome prefetch(ExpertKey key, std::span<const ExpertKey> protected_keys);

  CacheStats stats() const;
  const ExpertCacheOptions& options() const { return options_; }
  // Bytes reserved for the pinned keys that fit their share.
  uint64_t pinned_budget_bytes() const { return pinned_cap_; }
  bool contains(ExpertKey key) const;  // resident and ready (tests, reports)

 private:
  using Entry = detail::CacheEntry;
  using IdleKey = std::tuple<uint64_t, uint64_t, ExpertKey>;  // (frequency or 0, last use, key)

  ExpertCache(const ExpertCacheOptions& options, std::shared_ptr<ExpertLoader> loader);
  friend class ExpertHandle;
  void release(Entry* e);
  void load_batch(std::span<const ExpertKey> keys, std::span<LoadedExpert> out, std::span<Status> status);
  // Under mutex_:
  void make_ready(Entry& e, LoadedExpert loaded);
  void unpin(Entry& e, std::vector<std::shared_ptr<const void>>* graveyard);
  void make_idle(Entry& e);
  void evict(Entry& e, std::vector<std::shared_ptr<const void>>* graveyard);
  // Evicts idle regular entries (skipping `protected_keys`) while over the
  // regular budget; returns whether it fits.
  bool evict_to_fit(std::span<const ExpertKey> protected_keys, std::vector<std::shared_ptr<const void>>* graveyard);
  uint64_t evictable_bytes(std::span<const ExpertKey> protected_keys) const;
  CacheCounters& layer_counters(int layer);
  void note_peak();

  ExpertCacheOptions options_;
  std::shared_ptr<ExpertLoader> loader_;
  uint64_t pinned_cap_ = 0;
  uint64_t regular_cap_ = 0;
  std::unordered_set<ExpertKey, ExpertKeyHash> pinned_keys_;

  mutable std::mutex mutex_;
  std::condition_variable loaded_;
  std::unordered_map<ExpertKey, std::shared_ptr<Entry>, ExpertKeyHash> entries_;
  std::set<IdleKey> idle_;  // ready regular entries nobody holds, eviction order first
  std::unordered_map<ExpertKey, uint64_t, ExpertKeyHash> frequency_;
  uint64_t clock_ = 0;
  uint64_t pinned_used_ = 0;
  uint64_t regular_used_ = 0;
  CacheStats stats_;
};

// The keys to pin: in popularity_order() (popularity indexed layer * num_experts
// + expert, as expert_popularity() returns it), each key that still fits
// `budget_bytes` at its charge. Keys never used in the profile are not pinned.
std::vector<ExpertKey> select_pinned_experts(const std::vector<uint64_t>& popularity, uint32_t num_experts,
                                             uint64_t budget_bytes, const std::function<uint64_t(ExpertKey)>& charge);

}  // namespace submoe::offload
