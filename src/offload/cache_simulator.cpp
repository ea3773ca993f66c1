#include "submoe/offload/cache_simulator.h"

#include <algorithm>
#include <limits>
#include <list>
#include <numeric>
#include <set>
#include <unordered_map>

namespace submoe::offload {

const char* cache_policy_name(CachePolicy p) {
  switch (p) {
    case CachePolicy::kLru: return "lru";
    case CachePolicy::kLfu: return "lfu";
    case CachePolicy::kPinned: return "pinned";
    case CachePolicy::kHybrid: return "hybrid";
    case CachePolicy::kBelady: return "belady";
    case CachePolicy::kForecast: return "forecast";
  }
  return "?";
}

Result<CachePolicy> parse_cache_policy(const std::string& name) {
  for (CachePolicy p : {CachePolicy::kLru, CachePolicy::kLfu, CachePolicy::kPinned, CachePolicy::kHybrid, CachePolicy::kBelady,
                        CachePolicy::kForecast}) {
    if (name == cache_policy_name(p)) return p;
  }
  return invalid_argument("unknown cache policy '" + name + "' (expected lru, lfu, pinned, hybrid, belady or forecast)");
}

std::vector<uint32_t> expert_affinity(const RoutingTrace& trace) {
  const uint32_t L = trace.num_layers(), E = trace.num_experts(), k = trace.top_k();
  std::vector<uint32_t> counts(size_t{L} * E * E, 0);
  const uint64_t T = trace.num_tokens();
  for (uint64_t t = 0; t < T; ++t)
    for (uint32_t l = 0; l < L; ++l) {
      const bool wraps = l + 1 == L;
      if (wraps && t + 1 == T) break;
      const ExpertChoice* now = trace.token_layer(t, l);
      const ExpertChoice* next = wraps ? trace.token_layer(t + 1, 0) : trace.token_layer(t, l + 1);
      for (uint32_t i = 0; i < k; ++i)
        for (uint32_t j = 0; j < k; ++j)
          if (now[i].expert < E && next[j].expert < E)
            ++counts[(size_t{l} * E + now[i].expert) * E + next[j].expert];
    }
  return counts;
}

std::vector<uint64_t> expert_popularity(const RoutingTrace& trace) {
  std::vector<uint64_t> counts(size_t{trace.num_layers()} * trace.num_experts(), 0);
  for (uint64_t t = 0; t < trace.num_tokens(); ++t)
    for (uint32_t l = 0; l < trace.num_layers(); ++l) {
      const ExpertChoice* c = trace.token_layer(t, l);
      for (uint32_t k = 0; k < trace.top_k(); ++k) counts[size_t{l} * trace.num_experts() + c[k].expert]++;
    }
  return counts;
}

ForecastProbabilities forecast_probabilities(const RoutingTrace& trace) {
  const uint32_t L = trace.num_layers(), E = trace.num_experts(), k = trace.top_k();
  const size_t slots = size_t{L} * E;
  std::vector<uint64_t> chosen(slots, 0), followed(slots, 0), repeated(slots, 0);
  std::vector<uint8_t> now(slots, 0), next(slots, 0);
  const uint64_t T = trace.num_tokens();
  for (uint64_t t = 0; t < T; ++t) {
    std::fill(next.begin(), next.end(), 0);
    for (uint32_t l = 0; l < L; ++l) {
      const ExpertChoice* c = trace.token_layer(t, l);
      for (uint32_t j = 0; j < k; ++j)
        if (c[j].expert < E) next[size_t{l} * E + c[j].expert] = 1;
    }
    for (size_t s = 0; s < slots; ++s) {
      chosen[s] += next[s];
      if (t > 0 && now[s]) {
        ++followed[s];
        repeated[s] += next[s];
      }
    }
    std::swap(now, next);
  }
  ForecastProbabilities p;
  p.choose.resize(slots);
  p.repeat.resize(slots);
  for (size_t s = 0; s < slots; ++s) {
    p.choose[s] = (static_cast<double>(chosen[s]) + 1) / (static_cast<double>(T) + 2);
    p.repeat[s] = (static_cast<double>(repeated[s]) + 1) / (static_cast<double>(followed[s]) + 2);
  }
  return p;
}

std::vector<uint32_t> popularity_order(const std::vector<uint64_t>& popularity) {
  std::vector<uint32_t> order(popularity.size());
  std::iota(order.begin(), order.end(), uint32_t{0});
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return popularity[a] > popularity[b]; });
  return order;
}

namespace {

using Slot = uint32_t;

// The access sequence in true order; a token that picks the same expert twice in
// one layer (impossible for top-k routers, possible in hand-made traces) counts twice.
std::vector<Slot> access_sequence(const RoutingTrace& trace) {
  std::vector<Slot> seq;
  seq.reserve(trace.num_tokens() * trace.num_layers() * trace.top_k());
  for (uint64_t t = 0; t < trace.num_tokens(); ++t)
    for (uint32_t l = 0; l < trace.num_layers(); ++l) {
      const ExpertChoice* c = trace.token_layer(t, l);
      for (uint32_t k = 0; k < trace.top_k(); ++k) seq.push_back(l * trace.num_experts() + c[k].expert);
    }
  return seq;
}

// The most popular `count` slots.
std::vector<bool> top_slots(const std::vector<uint64_t>& popularity, uint64_t count) {
  const std::vector<Slot> order = popularity_order(popularity);
  std::vector<bool> pinned(popularity.size(), false);
  for (uint64_t i = 0; i < std::min<uint64_t>(count, order.size()); ++i) pinned[order[i]] = true;
  return pinned;
}

// LRU over a capacity; returns true on hit.
class LruSet {
 public:
  explicit LruSet(uint64_t capacity) : capacity_(capacity) {}
  bool access(Slot s) {
    auto it = where_.find(s);
    if (it != where_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      return true;
    }
    if (capacity_ == 0) return false;
    if (order_.size() >= capacity_) {
      where_.erase(order_.back());
      order_.pop_back();
    }
    order_.push_front(s);
    where_[s] = order_.begin();
    return false;
  }

 private:
  uint64_t capacity_;
  std::list<Slot> order_;
  std::unordered_map<Slot, std::list<Slot>::iterator> where_;
};

// Evicts the resident slot with the largest key (its next use, known or
// forecast) and does not admit a slot whose key is larger than every resident
// one's: Belady's rule, and forecast's with estimated keys.
template <typename Key>
class FurthestNextUse {
 public:
  FurthestNextUse(uint64_t capacity, size_t num_slots) : capacity_(capacity), key_(num_slots), in_(num_slots, false) {}
  // True on a hit; a resident slot's key becomes `key`.
  bool access(Slot s, Key key) {
    const bool hit = in_[s];
    if (hit) {
      resident_.erase({key_[s], s});
    } else {
      if (capacity_ == 0) return false;
      if (resident_.size() >= capacity_) {
        auto victim = std::prev(resident_.end());
        if (victim->first < key) return false;  // used later than every resident slot: not cached
        in_[victim->second] = false;
        resident_.erase(victim);
      }
      in_[s] = true;
    }
    key_[s] = key;
    resident_.insert({key, s});
    return hit;
  }
  void rekey(Slot s, Key key) {
    if (!in_[s]) return;
    resident_.erase({key_[s], s});
    key_[s] = key;
    resident_.insert({key, s});
  }

 private:
  uint64_t capacity_;
  std::set<std::pair<Key, Slot>> resident_;
  std::vector<Key> key_;
  std::vector<bool> in_;
};

}  // namespace

Result<SimulationResult> simulate_cache(const RoutingTrace& trace, const SimulationOptions& options) {
  const size_t num_slots = size_t{trace.num_layers()} * trace.num_experts();
  if (!options.popularity.empty() && options.popularity.size() != num_slots) {
    return invalid_argument("popularity profile has " + std::to_string(options.popularity.size()) +
                            " slots, the trace " + std::to_string(num_slots));
  }
  if (!(options.hybrid_pinned_fraction >= 0.0 && options.hybrid_pinned_fraction <= 1.0)) {  // NaN fails too
    return invalid_argument("hybrid pinned fraction must be within [0, 1]");
  }
  const std::vector<Slot> seq = access_sequence(trace);
  const uint64_t cap = options.capacity_slots;
  SimulationResult r;
  r.layer_hits.assign(trace.num_layers(), 0);
  r.layer_misses.assign(trace.num_layers(), 0);
  std::vector<bool> hit(seq.size(), false);

  switch (options.policy) {
    case CachePolicy::kLru: {
      LruSet lru(cap);
      for (size_t i = 0; i < seq.size(); ++i) hit[i] = lru.access(seq[i]);
      break;
    }
    case CachePolicy::kLfu: {
      // Evict the resident slot with the fewest accesses so far; ties: least recent.
      std::vector<uint64_t> freq(num_slots, 0), last(num_slots, 0);
      std::set<std::tuple<uint64_t, uint64_t, Slot>> resident;
      std::vector<bool> in(num_slots, false);
      for (size_t i = 0; i < seq.size(); ++i) {
        const Slot s = seq[i];
        if (in[s]) {
          resident.erase({freq[s], last[s], s});
          hit[i] = true;
        } else if (cap > 0) {
          if (resident.size() >= cap) {
            auto victim = resident.begin();
            in[std::get<2>(*victim)] = false;
            resident.erase(victim);
          }
          in[s] = true;
        }
        ++freq[s];
        last[s] = i;
        if (in[s]) resident.insert({freq[s], last[s], s});
      }
      break;
    }
    case CachePolicy::kPinned:
    case CachePolicy::kHybrid: {
      const std::vector<uint64_t> popularity = options.popularity.empty() ? expert_popularity(trace) : options.popularity;
      const uint64_t pinned_count = options.policy == CachePolicy::kPinned
                                        ? cap
                                        : static_cast<uint64_t>(options.hybrid_pinned_fraction * double(cap));
      const std::vector<bool> pinned = top_slots(popularity, pinned_count);
      LruSet lru(options.policy == CachePolicy::kHybrid ? cap - std::min(cap, pinned_count) : 0);
      // A pinned slot is loaded on its first use and then never leaves; counting
      // that load as a miss keeps every policy comparable with Belady from cold.
      std::vector<bool> loaded(num_slots, false);
      for (size_t i = 0; i < seq.size(); ++i) {
        const Slot s = seq[i];
        if (pinned[s]) {
          hit[i] = loaded[s];
          loaded[s] = true;
        } else {
          hit[i] = lru.access(s);
        }
      }
      break;
    }
    case CachePolicy::kBelady: {
      constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
      std::vector<uint64_t> next_use(seq.size()), upcoming(num_slots, kNever);
      for (size_t i = seq.size(); i-- > 0;) {
        next_use[i] = upcoming[seq[i]];
        upcoming[seq[i]] = i;
      }
      FurthestNextUse<uint64_t> cache(cap, num_slots);
      for (size_t i = 0; i < seq.size(); ++i) hit[i] = cache.access(seq[i], next_use[i]);
      break;
    }
    case CachePolicy::kForecast: {
      ForecastProbabilities fp;
      if (options.choose_probability.empty()) {
        fp = forecast_probabilities(trace);
      } else {
        fp.choose = options.choose_probability;
        fp.repeat = options.repeat_probability;
      }
      if (fp.choose.size() != num_slots || fp.repeat.size() != num_slots)
        return invalid_argument("forecast probabilities cover " + std::to_string(fp.choose.size()) + " slots, the trace " +
                                std::to_string(num_slots));
      // Keys in units of layer visits: token t at layer l is t L + l.
      const uint32_t L = trace.num_layers(), E = trace.num_experts(), k = trace.top_k();
      const auto forecast = [&](uint64_t t, uint32_t l, double p) {
        return static_cast<double>((t + 1) * L + l) + static_cast<double>(L) * (1.0 / std::max(p, 1e-6) - 1.0);
      };
      FurthestNextUse<double> cache(cap, num_slots);
      std::vector<uint8_t> used(E, 0);
      size_t i = 0;
      for (uint64_t t = 0; t < trace.num_tokens(); ++t)
        for (uint32_t l = 0; l < L; ++l) {
          std::fill(used.begin(), used.end(), 0);
          for (uint32_t j = 0; j < k; ++j, ++i) {
            used[seq[i] % E] = 1;
            hit[i] = cache.access(seq[i], forecast(t, l, fp.repeat[seq[i]]));
          }
          // The layer's resident slots this token did not pick: next needed a visit later, at the base rate.
          for (uint32_t e = 0; e < E; ++e)
            if (!used[e]) cache.rekey(l * E + e, forecast(t, l, fp.choose[l * E + e]));
        }
      break;
    }
  }
  for (size_t i = 0; i < seq.size(); ++i) {
    const uint32_t layer = seq[i] / trace.num_experts();
    if (hit[i]) {
      ++r.hits;
      ++r.layer_hits[layer];
    } else {
      ++r.misses;
      ++r.layer_misses[layer];
    }
  }
  r.accesses = seq.size();
  r.bytes_fetched = r.misses * options.expert_bytes;
  return r;
}

}  // namespace submoe::offload
