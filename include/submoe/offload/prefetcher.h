// Prefetcher: one background thread that loads predicted experts into the
// cache ahead of use (e.g. the previous token's experts of the next layer, or a
// profile's hot set).
//
// Bounded: it only fills free budget or evicts entries that are neither in use
// nor in the current request (the protected set: what the next layer asked
// for); see ExpertCache::prefetch. A new submit() cancels the requests not yet
// started. The foreground never waits for it except on a key it acquires while
// that key is being prefetched, and then it joins that load instead of loading
// the key again.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "submoe/offload/expert_cache.h"

namespace submoe::offload {

struct PrefetcherStats {
  uint64_t requested = 0;  // keys submitted
  uint64_t cancelled = 0;  // dropped from the queue by a newer submit() (or shutdown)
  uint64_t loaded = 0;     // ExpertCache::prefetch outcomes, one count per started key
  uint64_t present = 0;
  uint64_t no_room = 0;
  uint64_t dropped = 0;
  uint64_t failed = 0;
};

class Prefetcher {
 public:
  // `cache` must outlive the prefetcher.
  explicit Prefetcher(ExpertCache* cache);
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Replaces the queue with `keys` (in order) and makes them the protected set.
  void submit(std::vector<ExpertKey> keys);
  // Blocks until the queue is empty and no load is in flight (tests, shutdown).
  void wait_idle();
  PrefetcherStats stats() const;

 private:
  void run();

  ExpertCache* cache_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::deque<ExpertKey> queue_;
  std::vector<ExpertKey> protected_;
  bool busy_ = false;
  bool stop_ = false;
  PrefetcherStats stats_;
  std::thread thread_;  // last: starts after everything it reads exists
};

}  // namespace submoe::offload
