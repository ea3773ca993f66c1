#include "submoe/offload/cached_expert_provider.h"

#include <algorithm>

namespace submoe::offload {

CachedExpertProvider::CachedExpertProvider(std::shared_ptr<ExpertCache> cache, std::unique_ptr<Prefetcher> prefetcher,
                                           int num_layers, std::string notice)
    : cache_(std::move(cache)),
      prefetcher_(std::move(prefetcher)),
      notice_(std::move(notice)),
      layers_(static_cast<size_t>(std::max(0, num_layers))) {}

CachedExpertProvider::~CachedExpertProvider() {
  // The prefetcher's thread works on the cache: stop it before anything else goes.
  prefetcher_.reset();
  layers_.clear();
}

Status CachedExpertProvider::begin_layer(int layer, std::span<const int> experts) {
  if (layer < 0 || static_cast<size_t>(layer) >= layers_.size())
    return invalid_argument("expert provider: layer " + std::to_string(layer) + " out of range (" +
                            std::to_string(layers_.size()) + " layers)");
  if (!std::is_sorted(experts.begin(), experts.end()) ||
      std::adjacent_find(experts.begin(), experts.end()) != experts.end())
    return invalid_argument("expert provider: layer " + std::to_string(layer) + " experts are not ascending and distinct");
  std::vector<ExpertKey> keys;
  keys.reserve(experts.size());
  for (int e : experts) keys.push_back({layer, e});
  {
    // Another session's forward holds this layer: wait for its end_layer (sessions
    // walk the layers in order and release each, so they pipeline, never deadlock).
    std::unique_lock<std::mutex> lock(mutex_);
    LayerSlot& slot = layers_[static_cast<size_t>(layer)];
    if (slot.active && slot.holder == std::this_thread::get_id())
      return internal_error("expert provider: layer " + std::to_string(layer) +
                            " begun again by the thread that holds it, before end_layer");
    layer_released_.wait(lock, [&] { return !slot.active; });
    slot.active = true;
    slot.holder = std::this_thread::get_id();
  }
  // Loading happens without the provider lock: another layer may proceed meanwhile.
  Result<std::vector<ExpertHandle>> handles = cache_->acquire(keys);
  std::lock_guard<std::mutex> lock(mutex_);
  LayerSlot& slot = layers_[static_cast<size_t>(layer)];
  if (!handles.is_ok()) {
    slot.active = false;
    layer_released_.notify_all();
    return handles.status();
  }
  slot.experts.assign(experts.begin(), experts.end());
  slot.handles = std::move(handles).value();
  slot.last_experts = slot.experts;
  if (prefetcher_ && !pregating_) queue_prefetch(layer);
  return Status::ok();
}

void CachedExpertProvider::predict(int layer, std::span<const int> experts) {
  if (!prefetcher_ || layer < 0 || static_cast<size_t>(layer) >= layers_.size()) return;
  std::vector<ExpertKey> keys;
  keys.reserve(experts.size());
  for (int e : experts) keys.push_back({layer, e});
  prefetcher_->submit(std::move(keys));
}

Status CachedExpertProvider::set_affinity(std::vector<uint32_t> counts, int num_experts) {
  const size_t E = static_cast<size_t>(std::max(0, num_experts)), want = layers_.size() * E * E;
  if (num_experts <= 0 || counts.size() != want)
    return invalid_argument("offload: affinity prefetch needs co-routing counts of " + std::to_string(layers_.size()) +
                            " x " + std::to_string(E) + " x " + std::to_string(E) + ", got " +
                            std::to_string(counts.size()));
  affinity_ = std::move(counts);
  affinity_experts_ = num_experts;
  return Status::ok();
}

std::vector<ExpertKey> CachedExpertProvider::affinity_keys(int layer, const std::vector<int>& experts) const {
  const size_t E = static_cast<size_t>(affinity_experts_), L = layers_.size();
  const int next = static_cast<int>((static_cast<size_t>(layer) + 1) % L);
  std::vector<uint64_t> score(E, 0);
  for (int e : experts)
    if (e >= 0 && static_cast<size_t>(e) < E)
      for (size_t f = 0; f < E; ++f) score[f] += affinity_[(static_cast<size_t>(layer) * E + static_cast<size_t>(e)) * E + f];
  std::vector<int> order(E);
  for (size_t f = 0; f < E; ++f) order[f] = static_cast<int>(f);
  const size_t n = std::min(E, experts.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    [&](int a, int b) { return score[static_cast<size_t>(a)] != score[static_cast<size_t>(b)]
                                                   ? score[static_cast<size_t>(a)] > score[static_cast<size_t>(b)]
                                                   : a < b; });
  std::vector<ExpertKey> keys;
  for (size_t i = 0; i < n && score[static_cast<size_t>(order[i])] > 0; ++i) keys.push_back({next, order[i]});
  return keys;
}

// The next layer that has run before (wrapping to the first: the next token),
// with the experts it used last time: consecutive tokens share many experts.
// With co-routing counts, the next layer's experts most co-routed with this
// layer's instead.
void CachedExpertProvider::queue_prefetch(int layer) {
  if (!affinity_.empty()) {
    std::vector<ExpertKey> keys = affinity_keys(layer, layers_[static_cast<size_t>(layer)].experts);
    if (!keys.empty()) prefetcher_->submit(std::move(keys));
    return;
  }
  const size_t n = layers_.size();
  for (size_t step = 1; step <= n; ++step) {
    const size_t next = (static_cast<size_t>(layer) + step) % n;
    const LayerSlot& s = layers_[next];
    if (s.last_experts.empty()) continue;
    if (next == static_cast<size_t>(layer)) return;  // only this layer has history
    std::vector<ExpertKey> keys;
    keys.reserve(s.last_experts.size());
    for (int e : s.last_experts) keys.push_back({static_cast<int32_t>(next), e});
    prefetcher_->submit(std::move(keys));
    return;
  }
}

model::ExpertOps CachedExpertProvider::ops(int layer, int expert) const {
  // No lock: the slot is only written by begin/end_layer of this layer, which the
  // caller orders around its ops() calls.
  const LayerSlot& slot = layers_[static_cast<size_t>(layer)];
  const auto it = std::lower_bound(slot.experts.begin(), slot.experts.end(), expert);
  if (it == slot.experts.end() || *it != expert) return {};
  return slot.handles[static_cast<size_t>(it - slot.experts.begin())].as<ExpertObject>().ops();
}

void CachedExpertProvider::end_layer(int layer) {
  if (layer < 0 || static_cast<size_t>(layer) >= layers_.size()) return;
  std::vector<ExpertHandle> released;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    LayerSlot& slot = layers_[static_cast<size_t>(layer)];
    released = std::move(slot.handles);
    slot.handles.clear();
    slot.experts.clear();
    slot.active = false;
  }
  layer_released_.notify_all();
  // Released outside the provider lock: releasing may evict and free memory.
}

Result<std::unique_ptr<CachedExpertProvider>> make_cached_expert_provider(std::shared_ptr<const ExpertSource> source,
                                                                          const OffloadOptions& options) {
  if (!source) return invalid_argument("offload: no expert source");
  const int L = source->num_layers(), E = source->num_experts();
  if (L <= 0 || E <= 0) return invalid_argument("offload: the expert source has no layers or no experts");
  SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<ExpertStore> store, ExpertStore::open(source->file_path(), options.store));
  const std::string notice = store->notice();
  auto loader = std::make_shared<StoreExpertLoader>(source, std::shared_ptr<ExpertStore>(std::move(store)));

  ExpertCacheOptions cache_options;
  cache_options.policy = options.policy;
  cache_options.budget_bytes = options.budget_bytes;
  cache_options.hybrid_pinned_fraction = options.hybrid_pinned_fraction;
  if (options.policy == CachePolicy::kPinned || options.policy == CachePolicy::kHybrid) {
    const size_t slots = static_cast<size_t>(L) * static_cast<size_t>(E);
    if (options.popularity.size() != slots)
      return invalid_argument(std::string("offload: the ") + cache_policy_name(options.policy) +
                              " policy needs a popularity profile of " + std::to_string(slots) +
                              " (layer, expert) counts, got " + std::to_string(options.popularity.size()));
    if (!(options.hybrid_pinned_fraction >= 0.0 && options.hybrid_pinned_fraction <= 1.0))
      return invalid_argument("offload: hybrid pinned fraction must be within [0, 1]");
    const uint64_t pinned_budget =
        options.policy == CachePolicy::kPinned
            ? options.budget_bytes
            : static_cast<uint64_t>(options.hybrid_pinned_fraction * static_cast<double>(options.budget_bytes));
    cache_options.pinned = select_pinned_experts(options.popularity, static_cast<uint32_t>(E), pinned_budget,
                                                 [&](ExpertKey k) { return loader->estimate_charge(k); });
  }
  SUBMOE_ASSIGN_OR_RETURN(std::unique_ptr<ExpertCache> cache, ExpertCache::create(cache_options, loader));
  std::shared_ptr<ExpertCache> shared(std::move(cache));
  std::unique_ptr<Prefetcher> prefetcher;
  if (options.prefetch) prefetcher = std::make_unique<Prefetcher>(shared.get());
  auto provider = std::make_unique<CachedExpertProvider>(shared, std::move(prefetcher), L, notice);
  provider->set_pregating(options.prefetch_from == OffloadOptions::PrefetchFrom::kPregate);
  if (options.prefetch_from == OffloadOptions::PrefetchFrom::kAffinity)
    SUBMOE_RETURN_IF_ERROR(provider->set_affinity(options.affinity, E));
  return provider;
}

}  // namespace submoe::offload
