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

enum class CachePolicy { kLru, kLfu, kPinned, kHybrid, kBelady };

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
};

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
