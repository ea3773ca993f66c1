// Routing statistics of a trace: what decides how well an expert cache can work.
#pragma once

#include <cstdint>
#include <vector>

#include "submoe/offload/routing_trace.h"

namespace submoe::offload {

struct LayerRoutingStats {
  std::vector<uint64_t> counts;     // accesses per expert
  double zipf_exponent = 0.0;       // s in count(rank) ~ rank^-s, least squares in log-log over used ranks
  double top_quartile_mass = 0.0;   // share of accesses that go to the top 25% of experts
  double consecutive_reuse = 0.0;   // share of token t's experts also chosen at token t-1
  // Mean number of distinct experts in windows of B consecutive tokens, B = 1, 4, 16, 64.
  std::vector<double> distinct_per_batch;
};

inline constexpr uint32_t kStatsBatchSizes[] = {1, 4, 16, 64};

struct TraceStats {
  std::vector<LayerRoutingStats> layers;
  double mean_zipf_exponent = 0.0;
  double mean_top_quartile_mass = 0.0;
  double mean_consecutive_reuse = 0.0;
};

TraceStats compute_trace_stats(const RoutingTrace& trace);

// Least-squares slope of log(count) against log(rank) (ranks from 1, counts
// sorted decreasing, zero counts skipped), negated. 0 for fewer than 2 points.
double fit_zipf_exponent(std::vector<uint64_t> counts);

}  // namespace submoe::offload
