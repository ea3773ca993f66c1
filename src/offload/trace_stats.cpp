#include "submoe/offload/trace_stats.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace submoe::offload {

double fit_zipf_exponent(std::vector<uint64_t> counts) {
  std::sort(counts.begin(), counts.end(), std::greater<>());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  size_t n = 0;
  for (size_t i = 0; i < counts.size() && counts[i] > 0; ++i, ++n) {
    const double x = std::log(double(i + 1)), y = std::log(double(counts[i]));
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  if (n < 2) return 0.0;
  const double denom = double(n) * sxx - sx * sx;
  return denom == 0.0 ? 0.0 : -(double(n) * sxy - sx * sy) / denom;
}

TraceStats compute_trace_stats(const RoutingTrace& trace) {
  const uint32_t E = trace.num_experts(), K = trace.top_k();
  const uint64_t T = trace.num_tokens();
  TraceStats stats;
  stats.layers.resize(trace.num_layers());
  for (uint32_t l = 0; l < trace.num_layers(); ++l) {
    LayerRoutingStats& s = stats.layers[l];
    s.counts.assign(E, 0);
    uint64_t reused = 0, reuse_total = 0;
    std::vector<uint64_t> seen_at(E, UINT64_MAX);
    for (uint64_t t = 0; t < T; ++t) {
      const ExpertChoice* c = trace.token_layer(t, l);
      for (uint32_t k = 0; k < K; ++k) {
        s.counts[c[k].expert]++;
        if (t > 0) {
          ++reuse_total;
          reused += seen_at[c[k].expert] == t - 1;
        }
      }
      for (uint32_t k = 0; k < K; ++k) seen_at[c[k].expert] = t;
    }
    s.consecutive_reuse = reuse_total ? double(reused) / double(reuse_total) : 0.0;
    s.zipf_exponent = fit_zipf_exponent(s.counts);
    std::vector<uint64_t> sorted = s.counts;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    const size_t quartile = std::max<size_t>(1, (E + 3) / 4);
    uint64_t top = 0, all = 0;
    for (size_t i = 0; i < sorted.size(); ++i) {
      all += sorted[i];
      if (i < quartile) top += sorted[i];
    }
    s.top_quartile_mass = all ? double(top) / double(all) : 0.0;
    for (uint32_t b : kStatsBatchSizes) {
      // Non-overlapping windows of b tokens; a last partial window is skipped.
      uint64_t windows = 0, distinct_sum = 0;
      std::vector<uint64_t> mark(E, UINT64_MAX);
      for (uint64_t w0 = 0; w0 + b <= T; w0 += b, ++windows) {
        for (uint64_t t = w0; t < w0 + b; ++t) {
          const ExpertChoice* c = trace.token_layer(t, l);
          for (uint32_t k = 0; k < K; ++k) {
            if (mark[c[k].expert] != windows) {
              mark[c[k].expert] = windows;
              ++distinct_sum;
            }
          }
        }
      }
      s.distinct_per_batch.push_back(windows ? double(distinct_sum) / double(windows) : 0.0);
    }
    stats.mean_zipf_exponent += s.zipf_exponent / trace.num_layers();
    stats.mean_top_quartile_mass += s.top_quartile_mass / trace.num_layers();
    stats.mean_consecutive_reuse += s.consecutive_reuse / trace.num_layers();
  }
  return stats;
}

}  // namespace submoe::offload
