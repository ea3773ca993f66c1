// CachedExpertProvider: the model's ExpertProvider over the expert cache.
// begin_layer acquires every listed expert (the misses are read together, one
// batch), ops() hands out the pinned objects' LinearOps, end_layer releases
// them. With a prefetcher, each begin_layer queues the experts the previous token
// used in the next sparse layer.
//
// Safe for concurrent sessions: one session at a time holds a layer; a second
// session's begin_layer of that layer waits for the first one's end_layer (so
// sessions pipeline through the layers). A thread that begins a layer it
// already holds gets an internal error (it would wait for itself).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "submoe/model/expert_provider.h"
#include "submoe/offload/cache_simulator.h"
#include "submoe/offload/expert_cache.h"
#include "submoe/offload/expert_source.h"
#include "submoe/offload/expert_store.h"
#include "submoe/offload/prefetcher.h"

namespace submoe::offload {

class CachedExpertProvider final : public model::ExpertProvider {
 public:
  // `prefetcher` (may be null) must work on `cache`. `notice` is carried for
  // reports (e.g. the store's fallback note).
  CachedExpertProvider(std::shared_ptr<ExpertCache> cache, std::unique_ptr<Prefetcher> prefetcher, int num_layers,
                       std::string notice = {});
  // With a prefetcher: rank the next layer's experts by these co-routing counts
  // ([num_layers][E][E], expert_affinity()) instead of repeating the previous
  // token's. kInvalidArgument when the counts are not num_layers x E x E.
  Status set_affinity(std::vector<uint32_t> counts, int num_experts);
  // With a prefetcher: prefetch what the model predicts by pre-gating (predict())
  // instead of what the previous token or the affinity counts name.
  void set_pregating(bool on) { pregating_ = on; }
  ~CachedExpertProvider() override;

  Status begin_layer(int layer, std::span<const int> experts) override;
  model::ExpertOps ops(int layer, int expert) const override;
  void end_layer(int layer) override;
  bool wants_predictions() const override { return prefetcher_ != nullptr && pregating_; }
  // Submits the predicted experts of `layer` to the prefetcher (replacing its queue).
  void predict(int layer, std::span<const int> experts) override;

  ExpertCache& cache() const { return *cache_; }
  const Prefetcher* prefetcher() const { return prefetcher_.get(); }
  const std::string& notice() const { return notice_; }

 private:
  struct LayerSlot {
    bool active = false;
    std::thread::id holder;    // the thread that began it (while active)
    std::vector<int> experts;  // ascending, as begun
    std::vector<ExpertHandle> handles;
    std::vector<int> last_experts;  // the previous begin's list (prefetch hint)
  };
  void queue_prefetch(int layer);
  // The next layer's experts most co-routed with `experts` of `layer`, best first.
  std::vector<ExpertKey> affinity_keys(int layer, const std::vector<int>& experts) const;

  std::shared_ptr<ExpertCache> cache_;
  std::unique_ptr<Prefetcher> prefetcher_;
  std::string notice_;
  mutable std::mutex mutex_;
  std::condition_variable layer_released_;
  std::vector<LayerSlot> layers_;
  std::vector<uint32_t> affinity_;  // empty: previous-token prediction
  int affinity_experts_ = 0;
  bool pregating_ = false;
};

struct OffloadOptions {
  ExpertStoreOptions store;  // backend, fallback, batch threads
  CachePolicy policy = CachePolicy::kLru;
  uint64_t budget_bytes = 0;
  double hybrid_pinned_fraction = 0.5;
  // pinned / hybrid: access counts per (layer * num_experts + expert), e.g.
  // expert_popularity() of a profiling trace; the most popular experts that fit
  // the pinned share of the budget (by their byte range length) are pinned.
  std::vector<uint64_t> popularity;
  bool prefetch = false;
  // What the prefetcher loads when a layer begins, for the next layer: the
  // experts that layer used at the previous token (kPrevious), or the experts
  // most co-routed with the current layer's (kAffinity: expert_affinity() of a
  // profiling trace, [L][E][E]), as many as the current layer uses.
  // kPregate: the next sparse layer's router run on the current hidden state
  // (the model's predict() calls; run and eval only, a trace has no hidden states).
  enum class PrefetchFrom { kPrevious, kAffinity, kPregate };
  PrefetchFrom prefetch_from = PrefetchFrom::kPrevious;
  std::vector<uint32_t> affinity;
};

// Opens the source's file with the store options and builds cache, optional
// prefetcher and provider.
Result<std::unique_ptr<CachedExpertProvider>> make_cached_expert_provider(std::shared_ptr<const ExpertSource> source,
                                                                          const OffloadOptions& options);

}  // namespace submoe::offload
