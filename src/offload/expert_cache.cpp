#include "submoe/offload/expert_cache.h"

#include <algorithm>
#include <cassert>

namespace submoe::offload {

namespace detail {

enum class CachePool { kNone, kPinned, kRegular };

struct CacheEntry {
  enum class State { kLoading, kReady, kFailed };
  ExpertKey key;
  State state = State::kLoading;
  std::shared_ptr<const void> object;
  uint64_t charge = 0;
  int refs = 0;  // handles plus callers waiting for the load
  CachePool pool = CachePool::kNone;
  bool prefetch_unused = false;  // loaded by prefetch(), not acquired since
  uint64_t last_use = 0;
  bool idle = false;
  std::tuple<uint64_t, uint64_t, ExpertKey> idle_key;
  Status error;  // kFailed
};

}  // namespace detail

using detail::CachePool;
using State = detail::CacheEntry::State;

// ---- ExpertHandle ----------------------------------------------------------

ExpertHandle::ExpertHandle(ExpertHandle&& o) noexcept
    : cache_(std::exchange(o.cache_, nullptr)),
      entry_(std::exchange(o.entry_, nullptr)),
      key_(o.key_),
      object_(std::exchange(o.object_, nullptr)) {}

ExpertHandle& ExpertHandle::operator=(ExpertHandle&& o) noexcept {
  if (this != &o) {
    reset();
    cache_ = std::exchange(o.cache_, nullptr);
    entry_ = std::exchange(o.entry_, nullptr);
    key_ = o.key_;
    object_ = std::exchange(o.object_, nullptr);
  }
  return *this;
}

void ExpertHandle::reset() {
  if (entry_ != nullptr) cache_->release(entry_);
  cache_ = nullptr;
  entry_ = nullptr;
  object_ = nullptr;
}

// ---- ExpertCache -----------------------------------------------------------

Result<std::unique_ptr<ExpertCache>> ExpertCache::create(const ExpertCacheOptions& options,
                                                         std::shared_ptr<ExpertLoader> loader) {
  if (!loader) return invalid_argument("expert cache: no loader");
  switch (options.policy) {
    case CachePolicy::kLru:
    case CachePolicy::kLfu:
      if (!options.pinned.empty())
        return invalid_argument(std::string("expert cache: pinned keys given to the ") + cache_policy_name(options.policy) +
                                " policy (only pinned and hybrid use them)");
      break;
    case CachePolicy::kPinned: break;
    case CachePolicy::kHybrid:
      if (!(options.hybrid_pinned_fraction >= 0.0 && options.hybrid_pinned_fraction <= 1.0))
        return invalid_argument("expert cache: hybrid pinned fraction must be within [0, 1]");
      break;
    case CachePolicy::kBelady:
      return invalid_argument("expert cache: belady needs the future and exists only in the trace simulator");
    case CachePolicy::kForecast:
      return invalid_argument("expert cache: forecast exists only in the trace simulator");
  }
  for (const ExpertKey& k : options.pinned)
    if (k.layer < 0 || k.expert < 0) return invalid_argument("expert cache: pinned key " + to_string(k) + " is negative");
  return std::unique_ptr<ExpertCache>(new ExpertCache(options, std::move(loader)));
}

// The pinned pool reserves exactly the estimated bytes of the pinned keys that
// fit the pinned share (in the given order, skipping any that no longer fits);
// a hybrid cache's LRU part gets everything else, so a pinned share the pinned
// set cannot use is not wasted.
ExpertCache::ExpertCache(const ExpertCacheOptions& options, std::shared_ptr<ExpertLoader> loader)
    : options_(options), loader_(std::move(loader)) {
  const uint64_t budget = options.budget_bytes;
  uint64_t share = 0;
  if (options.policy == CachePolicy::kPinned) share = budget;
  if (options.policy == CachePolicy::kHybrid)
    share = std::min(budget, static_cast<uint64_t>(options.hybrid_pinned_fraction * static_cast<double>(budget)));
  for (const ExpertKey& k : options.pinned) {
    const uint64_t c = loader_->estimate_charge(k);
    if (c > share - pinned_cap_ || pinned_keys_.count(k) != 0) continue;
    pinned_cap_ += c;
    pinned_keys_.insert(k);
  }
  regular_cap_ = options.policy == CachePolicy::kPinned ? 0 : budget - pinned_cap_;
}

ExpertCache::~ExpertCache() {
  for ([[maybe_unused]] const auto& [key, e] : entries_) assert(e->refs == 0 && "expert cache destroyed with handles alive");
}

CacheCounters& ExpertCache::layer_counters(int layer) {
  const size_t l = static_cast<size_t>(layer);
  if (stats_.layers.size() <= l) stats_.layers.resize(l + 1);
  return stats_.layers[l];
}

void ExpertCache::note_peak() {
  stats_.peak_resident_bytes = std::max(stats_.peak_resident_bytes, pinned_used_ + regular_used_);
}

void ExpertCache::make_ready(Entry& e, LoadedExpert loaded) {
  e.state = State::kReady;
  e.object = std::move(loaded.object);
  e.charge = loaded.charge_bytes;
  if (pinned_keys_.count(e.key) != 0 && pinned_used_ + e.charge <= pinned_cap_) {
    e.pool = CachePool::kPinned;
    pinned_used_ += e.charge;
  } else {
    e.pool = CachePool::kRegular;
    regular_used_ += e.charge;
  }
  layer_counters(e.key.layer).bytes_fetched += loaded.bytes_read;
  stats_.total.bytes_fetched += loaded.bytes_read;
  note_peak();
}

void ExpertCache::make_idle(Entry& e) {
  assert(e.state == State::kReady && e.refs == 0 && e.pool == CachePool::kRegular && !e.idle);
  const uint64_t freq = options_.policy == CachePolicy::kLfu ? frequency_[e.key] : 0;
  e.idle_key = {freq, e.last_use, e.key};
  idle_.insert(e.idle_key);
  e.idle = true;
}

void ExpertCache::evict(Entry& e, std::vector<std::shared_ptr<const void>>* graveyard) {
  assert(e.refs == 0 && e.idle);
  idle_.erase(e.idle_key);
  e.idle = false;
  regular_used_ -= e.charge;
  ++layer_counters(e.key.layer).evictions;
  ++stats_.total.evictions;
  if (e.prefetch_unused) ++stats_.prefetch_wasted;
  // Destroyed after the lock is dropped: a decoded expert can be large.
  graveyard->push_back(std::move(e.object));
  entries_.erase(e.key);  // may destroy e
}

bool ExpertCache::evict_to_fit(std::span<const ExpertKey> protected_keys,
                               std::vector<std::shared_ptr<const void>>* graveyard) {
  auto it = idle_.begin();
  while (regular_used_ > regular_cap_ && it != idle_.end()) {
    const ExpertKey key = std::get<2>(*it);
    ++it;
    if (std::find(protected_keys.begin(), protected_keys.end(), key) != protected_keys.end()) continue;
    evict(*entries_.at(key), graveyard);
  }
  return regular_used_ <= regular_cap_;
}

uint64_t ExpertCache::evictable_bytes(std::span<const ExpertKey> protected_keys) const {
  uint64_t bytes = 0;
  for (const IdleKey& k : idle_) {
    const ExpertKey key = std::get<2>(k);
    if (std::find(protected_keys.begin(), protected_keys.end(), key) == protected_keys.end())
      bytes += entries_.at(key)->charge;
  }
  return bytes;
}

void ExpertCache::unpin(Entry& e, std::vector<std::shared_ptr<const void>>* graveyard) {
  assert(e.refs > 0);
  if (--e.refs > 0 || e.state != State::kReady || e.pool != CachePool::kRegular) return;
  make_idle(e);
  evict_to_fit({}, graveyard);
}

void ExpertCache::release(Entry* e) {
  std::vector<std::shared_ptr<const void>> graveyard;
  std::lock_guard<std::mutex> lock(mutex_);
  unpin(*e, &graveyard);
}

Result<ExpertHandle> ExpertCache::acquire(ExpertKey key) {
  SUBMOE_ASSIGN_OR_RETURN(std::vector<ExpertHandle> handles, acquire(std::span<const ExpertKey>(&key, 1)));
  return std::move(handles.front());
}

// A failed batch is retried key by key, so one bad expert fails only itself:
// other callers may be waiting for the good keys of this batch.
void ExpertCache::load_batch(std::span<const ExpertKey> keys, std::span<LoadedExpert> out,
                             std::span<Status> status) {
  auto check = [&](size_t j, Status s) {
    if (s.is_ok() && !out[j].object) s = internal_error("expert cache: loader returned no object for " + to_string(keys[j]));
    status[j] = std::move(s);
  };
  const Status batch = loader_->load(keys, out);
  if (batch.is_ok() || keys.size() == 1) {
    for (size_t j = 0; j < keys.size(); ++j) check(j, batch);
    return;
  }
  for (size_t j = 0; j < keys.size(); ++j) {
    out[j] = LoadedExpert{};
    check(j, loader_->load(keys.subspan(j, 1), out.subspan(j, 1)));
  }
}

Result<std::vector<ExpertHandle>> ExpertCache::acquire(std::span<const ExpertKey> keys) {
  std::vector<ExpertKey> sorted(keys.begin(), keys.end());
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    return invalid_argument("expert cache: acquire lists " + to_string(*std::adjacent_find(sorted.begin(), sorted.end())) +
                            " twice");
  for (const ExpertKey& k : keys)
    if (k.layer < 0 || k.expert < 0) return invalid_argument("expert cache: invalid key " + to_string(k));

  std::vector<std::shared_ptr<Entry>> held(keys.size());
  std::vector<size_t> mine;  // indices this call loads
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < keys.size(); ++i) {
      const ExpertKey key = keys[i];
      ++frequency_[key];
      const uint64_t now = ++clock_;
      CacheCounters& layer = layer_counters(key.layer);
      std::shared_ptr<Entry>& slot = entries_[key];
      if (!slot) {
        slot = std::make_shared<Entry>();
        slot->key = key;
        mine.push_back(i);
        ++layer.misses;
        ++stats_.total.misses;
        const uint64_t estimate = loader_->estimate_charge(key);
        layer.missed_bytes += estimate;
        stats_.total.missed_bytes += estimate;
      } else if (slot->state == State::kReady) {
        ++layer.hits;
        ++stats_.total.hits;
        layer.hit_bytes += slot->charge;
        stats_.total.hit_bytes += slot->charge;
        if (slot->prefetch_unused) {
          slot->prefetch_unused = false;
          ++stats_.prefetch_hits;
        }
        if (slot->idle) {
          idle_.erase(slot->idle_key);
          slot->idle = false;
        }
      } else {  // loading elsewhere: joined below, not loaded twice
        ++layer.misses;
        ++stats_.total.misses;
        const uint64_t estimate = loader_->estimate_charge(key);
        layer.missed_bytes += estimate;
        stats_.total.missed_bytes += estimate;
      }
      slot->last_use = now;
      ++slot->refs;
      held[i] = slot;
    }
  }

  std::vector<LoadedExpert> loaded(mine.size());
  std::vector<Status> load_status(mine.size());
  if (!mine.empty()) {
    std::vector<ExpertKey> to_load;
    to_load.reserve(mine.size());
    for (size_t i : mine) to_load.push_back(keys[i]);
    load_batch(to_load, loaded, load_status);
  }

  std::vector<std::shared_ptr<const void>> graveyard;
  std::vector<ExpertHandle> handles;
  std::unique_lock<std::mutex> lock(mutex_);
  for (size_t j = 0; j < mine.size(); ++j) {
    Entry& e = *held[mine[j]];
    if (load_status[j].is_ok()) {
      make_ready(e, std::move(loaded[j]));
    } else {
      e.state = State::kFailed;
      e.error = load_status[j];
      entries_.erase(e.key);
    }
  }
  if (!mine.empty()) loaded_.notify_all();
  loaded_.wait(lock, [&] {
    return std::none_of(held.begin(), held.end(), [](const auto& e) { return e->state == State::kLoading; });
  });
  for (const auto& e : held) {
    if (e->state != State::kFailed) continue;
    for (const auto& other : held)
      if (other->state == State::kReady) unpin(*other, &graveyard);
    Status error = e->error.with_context("loading " + to_string(e->key));
    lock.unlock();
    return error;
  }
  evict_to_fit({}, &graveyard);
  if (regular_used_ > regular_cap_) ++stats_.overcommits;
  note_peak();
  handles.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) handles.push_back(ExpertHandle(this, held[i].get(), keys[i], held[i]->object.get()));
  lock.unlock();
  return handles;
}

PrefetchOutcome ExpertCache::prefetch(ExpertKey key, std::span<const ExpertKey> protected_keys) {
  if (key.layer < 0 || key.expert < 0) return PrefetchOutcome::kFailed;
  const uint64_t estimate = loader_->estimate_charge(key);
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (entries_.count(key) != 0) return PrefetchOutcome::kPresent;
    const bool fits_pinned = pinned_keys_.count(key) != 0 && pinned_used_ + estimate <= pinned_cap_;
    if (!fits_pinned) {
      const uint64_t free = regular_cap_ > regular_used_ ? regular_cap_ - regular_used_ : 0;
      if (estimate > free && estimate > free + evictable_bytes(protected_keys)) return PrefetchOutcome::kNoRoom;
    }
    entry = std::make_shared<Entry>();
    entry->key = key;
    entries_[key] = entry;
  }

  LoadedExpert loaded;
  Status s = loader_->load(std::span<const ExpertKey>(&key, 1), std::span<LoadedExpert>(&loaded, 1));
  if (s.is_ok() && !loaded.object) s = internal_error("expert cache: loader returned no object for " + to_string(key));

  std::vector<std::shared_ptr<const void>> graveyard;
  std::lock_guard<std::mutex> lock(mutex_);
  Entry& e = *entry;
  if (!s.is_ok()) {
    e.state = State::kFailed;
    e.error = s.with_context("prefetch");
    entries_.erase(key);
    loaded_.notify_all();
    return PrefetchOutcome::kFailed;
  }
  make_ready(e, std::move(loaded));
  ++stats_.prefetched;
  loaded_.notify_all();
  if (e.refs > 0) {  // a foreground acquire joined the load; it rebalances the budget
    ++stats_.prefetch_hits;
    return PrefetchOutcome::kLoaded;
  }
  e.prefetch_unused = true;
  if (e.pool != CachePool::kRegular) return PrefetchOutcome::kLoaded;
  // Recent, so LRU keeps it over older idle entries until it is used.
  e.last_use = ++clock_;
  make_idle(e);
  std::vector<ExpertKey> keep(protected_keys.begin(), protected_keys.end());
  keep.push_back(key);
  if (evict_to_fit(keep, &graveyard)) return PrefetchOutcome::kLoaded;
  evict(e, &graveyard);
  return PrefetchOutcome::kDropped;
}

CacheStats ExpertCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  CacheStats s = stats_;
  s.resident_entries = 0;
  for (const auto& [key, e] : entries_)
    if (e->state == State::kReady) ++s.resident_entries;
  s.resident_bytes = pinned_used_ + regular_used_;
  return s;
}

bool ExpertCache::contains(ExpertKey key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  return it != entries_.end() && it->second->state == State::kReady;
}

std::vector<ExpertKey> select_pinned_experts(const std::vector<uint64_t>& popularity, uint32_t num_experts,
                                             uint64_t budget_bytes, const std::function<uint64_t(ExpertKey)>& charge) {
  std::vector<ExpertKey> keys;
  if (num_experts == 0) return keys;
  uint64_t used = 0;
  for (uint32_t slot : popularity_order(popularity)) {
    if (popularity[slot] == 0) break;  // the order is decreasing: the rest are unused too
    const ExpertKey key{static_cast<int32_t>(slot / num_experts), static_cast<int32_t>(slot % num_experts)};
    const uint64_t c = charge(key);
    if (c > budget_bytes - used) continue;
    used += c;
    keys.push_back(key);
  }
  return keys;
}

}  // namespace submoe::offload
