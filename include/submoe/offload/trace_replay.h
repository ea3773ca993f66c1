// Trace-driven execution of routed experts (issue 15 section 1): the routing of
// a recorded trace drives an artifact's experts through the expert cache, with
// real reads of their bytes and the real fused kernels, so that the routing of a
// trained model can exercise an artifact as large as a real MoE's (synth-model).
// Only the routed experts run: every token's input to an expert is a fixed
// random vector (the numbers do not matter, the bytes read and the kernels do).
//
// B tokens go together (batched decode): at each layer the union of the experts
// the B tokens route to is acquired once (one begin_layer, its misses read in one
// batch), and each expert runs once on its tokens with the batch kernels.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "submoe/core/status.h"
#include "submoe/offload/cached_expert_provider.h"
#include "submoe/offload/expert_source.h"
#include "submoe/offload/routing_trace.h"

namespace submoe {
class ThreadPool;
}

namespace submoe::offload {

struct TraceReplayOptions {
  uint32_t batch = 1;       // tokens per step (1..kMaxReplayBatch)
  uint64_t max_tokens = 0;  // replay at most this many of the trace's tokens; 0 = all
  uint64_t seed = 1;        // of the random expert inputs
  // Pre-gating's predictions recorded with the trace (trace record
  // --predictions-out; same layout and tokens): after acquiring layer i, the
  // union of the step's predicted experts of layer i + 1 goes to
  // provider.predict(), as the model does at run time. Null: none.
  const RoutingTrace* predictions = nullptr;
  // Called after each step with (tokens done, tokens in total).
  std::function<void(uint64_t, uint64_t)> progress;
};
inline constexpr uint32_t kMaxReplayBatch = 256;

struct TraceReplayLayer {
  int model_layer = 0;        // the artifact's layer index
  uint64_t expert_runs = 0;   // distinct experts acquired, summed over steps
  double read_seconds = 0;    // in begin_layer: waiting for the cache (its misses' reads and decoding)
  double compute_seconds = 0; // running the experts' three projections
};

struct TraceReplayResult {
  uint64_t tokens = 0, steps = 0;
  uint32_t batch = 1;
  double read_seconds = 0, compute_seconds = 0, wall_seconds = 0;
  std::vector<TraceReplayLayer> layers;  // one per trace layer
  double tokens_per_s() const { return wall_seconds > 0 ? static_cast<double>(tokens) / wall_seconds : 0.0; }
  // Distinct experts per layer and step (the seed's figure c for this batch size).
  double mean_distinct_experts() const;
};

// Trace layer i is the i-th layer of `source` that holds routed experts.
// kInvalidArgument when the trace's layer or expert counts do not match the
// source's, or on a bad option; errors of the cache (reads, corrupt bytes)
// are returned with the layer and step. The provider's cache statistics
// (hits, misses, bytes) are the caller's to read afterwards.
Result<TraceReplayResult> replay_trace(const RoutingTrace& trace, const ExpertSource& source,
                                       CachedExpertProvider& provider, ThreadPool* pool,
                                       const TraceReplayOptions& options);

}  // namespace submoe::offload
