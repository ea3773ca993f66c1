// Builds a RoutingTrace from a live Session (Session::set_routing_observer), for
// any sequence of forward calls over consecutive positions: a prefill followed
// by decode steps records exactly the routing of a generation run.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "submoe/core/status.h"
#include "submoe/io/hf_config.h"
#include "submoe/model/router.h"
#include "submoe/offload/routing_trace.h"

namespace submoe::offload {

class RoutingTraceCollector {
 public:
  explicit RoutingTraceCollector(const io::MoeModelConfig& config);

  // Pass to Session::set_routing_observer (wrapped in a lambda).
  void observe(int layer, size_t first_position, const model::Routing& routing);
  // Call after every forward call: appends its tokens, which every MoE layer must
  // have routed, to the trace.
  Status end_forward();

  const RoutingTrace& trace() const { return trace_; }
  // Moves the trace out (the collector is then empty).
  RoutingTrace take_trace() { return std::move(trace_); }

 private:
  std::vector<int> moe_index_;  // decoder layer -> MoE layer, -1 for dense layers
  uint32_t moe_layers_ = 0, k_ = 0;
  size_t first_ = 0, tokens_ = 0, filled_ = 0;
  bool started_ = false;
  std::vector<ExpertChoice> pending_;  // [token][moe layer][k] of the current forward
  Status status_;
  RoutingTrace trace_;
};

}  // namespace submoe::offload
