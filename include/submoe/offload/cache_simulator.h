// Replays a routing trace against an expert cache in the true interleaved access
// order (token by token, layer by layer, the top_k choices of each layer) and
// counts hits. One cache of `capacity` expert slots is shared by all layers, as a
// DRAM or VRAM budget is. Belady (evict the slot whose next use is furthest in
// the future) is the optimal offline bound for every online policy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "submoe/core/status.h"
#include "submoe/offload/routing_trace.h"

namespace submoe::offload {

// kForecast (simulator only, like kBelady): evict the slot whose next use is
// forecast furthest away from what the layer-cyclic order and a profile know:
// slot (l, e) is next needed when layer l comes round again, and then with the
// profile's probability that a token picks e there (its repeat probability
// when the last token did), so its forecast is that visit plus L (1/p - 1)
// accesses-of-layer-l later; a slot forecast later than every resident one is
// not cached.
enum class CachePolicy { kLru, kLfu, kPinned, kHybrid, kBelady, kForecast };

const char* cache_policy_name(CachePolicy p);
Result<CachePolicy> parse_cache_policy(const std::string& name);

struct SimulationOptions {
  CachePolicy policy = CachePolicy::kLru;
  uint64_t capacity_slots = 0;
  // pinned / hybrid: popularity counts per (layer * num_experts + expert) from a
  // profile; empty = the trace's own counts (an oracle profile).
  std::vector<uint64_t> popularity;
  double hybrid_pinned_fraction = 0.5;  // share of the capacity pinned in hybrid
  uint64_t expert_bytes = 1;            // bytes fetched per miss
  // forecast: the per-token probabilities of each slot, from a profile
  // (forecast_probabilities()); empty = from the trace itself (an oracle profile).
  std::vector<double> choose_probability, repeat_probability;
};

// For each slot (layer * num_experts + expert) of a profile trace: the share of
// tokens that pick it, and the share of those whose next token picks it again
// (both smoothed: (n + 1) / (d + 2)).
struct ForecastProbabilities {
  std::vector<double> choose, repeat;
};
ForecastProbabilities forecast_probabilities(const RoutingTrace& profile);

struct SimulationResult {
  uint64_t accesses = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t bytes_fetched = 0;
  std::vector<uint64_t> layer_hits;    // per layer
  std::vector<uint64_t> layer_misses;  // per layer
  double hit_rate() const { return accesses ? double(hits) / double(accesses) : 0.0; }
};

// Slots are (layer, expert) pairs; capacity may exceed their number (all hit after warm-up).
Result<SimulationResult> simulate_cache(const RoutingTrace& trace, const SimulationOptions& options);

// Access counts per (layer * num_experts + expert) over the whole trace.
std::vector<uint64_t> expert_popularity(const RoutingTrace& trace);
// Co-routing counts between consecutive MoE layers, [L][E][E]: entry (l, e, f)
// counts the tokens t that chose e at layer l and f at layer l + 1 (for the
// last layer: f at layer 0 of token t + 1, the next layer the decode loop
// reaches). The affinity prefetcher ranks the next layer's experts by them.
std::vector<uint32_t> expert_affinity(const RoutingTrace& trace);

// Slot indices (layer * num_experts + expert) by decreasing popularity; ties:
// lower slot first, so the order is deterministic. Pinned policies take a prefix.
std::vector<uint32_t> popularity_order(const std::vector<uint64_t>& popularity);

}  // namespace submoe::offload
