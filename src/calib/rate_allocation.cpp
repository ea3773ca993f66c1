#include "submoe/calib/rate_allocation.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace submoe::calib {

Result<RateAlloc> parse_rate_alloc(std::string_view name) {
  if (name == "uniform") return RateAlloc::kUniform;
  if (name == "thirds") return RateAlloc::kThirds;
  if (name == "waterfill") return RateAlloc::kWaterfill;
  return invalid_argument("--alloc must be uniform, thirds or waterfill, got '" + std::string(name) + "'");
}

std::string_view rate_alloc_name(RateAlloc a) {
  switch (a) {
    case RateAlloc::kUniform: return "uniform";
    case RateAlloc::kThirds: return "thirds";
    case RateAlloc::kWaterfill: return "waterfill";
  }
  return "?";
}

namespace {

// Experts by decreasing count, ties to the lower index.
std::vector<size_t> by_popularity(std::span<const uint64_t> counts) {
  std::vector<size_t> order(counts.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return counts[a] > counts[b]; });
  return order;
}

std::vector<int> thirds(std::span<const uint64_t> counts) {
  const size_t E = counts.size(), third = E / 3;
  const std::vector<size_t> order = by_popularity(counts);
  std::vector<int> k(E, 0);
  for (size_t i = 0; i < third; ++i) {
    k[order[i]] = 1;
    k[order[E - 1 - i]] = -1;
  }
  return k;
}

std::vector<int> waterfill(std::span<const uint64_t> counts, const LadderRange& ladder) {
  const size_t E = counts.size();
  double total = 0;
  for (uint64_t c : counts) total += static_cast<double>(c);
  // Jeffreys-smoothed probabilities and their geometric mean (in log2).
  std::vector<double> log_pi(E);
  double mean_log = 0;
  for (size_t e = 0; e < E; ++e) {
    log_pi[e] = std::log2((static_cast<double>(counts[e]) + 0.5) / (total + 0.5 * static_cast<double>(E)));
    mean_log += log_pi[e] / static_cast<double>(E);
  }
  // Real-valued offsets in ladder steps; they sum to 0 by construction.
  std::vector<double> x(E);
  for (size_t e = 0; e < E; ++e) x[e] = 0.5 * (log_pi[e] - mean_log) / ladder.step_bits;
  const double lo = ladder.min_offset, hi = ladder.max_offset;
  std::vector<int> k(E);
  long sum = 0;
  for (size_t e = 0; e < E; ++e) {
    k[e] = static_cast<int>(std::clamp(std::floor(x[e]), lo, hi));
    sum += k[e];
  }
  // Unit moves of least marginal cost (k - x)^2 until the sum is 0: optimal for
  // a separable convex objective under one linear constraint. Ties go to the
  // more popular expert when raising and the less popular when lowering.
  const std::vector<size_t> order = by_popularity(counts);
  while (sum != 0) {
    const bool raise = sum < 0;
    size_t best = E;
    double best_cost = 0;
    for (size_t i = 0; i < E; ++i) {
      const size_t e = raise ? order[i] : order[E - 1 - i];
      if (raise ? k[e] >= ladder.max_offset : k[e] <= ladder.min_offset) continue;
      const double d = k[e] - x[e];
      const double cost = raise ? 1 + 2 * d : 1 - 2 * d;
      if (best == E || cost < best_cost) {
        best = e;
        best_cost = cost;
      }
    }
    if (best == E) break;  // unreachable: min_offset <= 0 <= max_offset keeps 0 feasible
    k[best] += raise ? 1 : -1;
    sum += raise ? 1 : -1;
  }
  return k;
}

}  // namespace

Result<std::vector<int>> allocate_rates(RateAlloc alloc, std::span<const uint64_t> counts, const LadderRange& ladder) {
  if (counts.empty()) return invalid_argument("rate allocation: a layer without experts");
  if (ladder.min_offset > 0 || ladder.max_offset < 0)
    return internal_error("rate allocation: the ladder range excludes the requested rate");
  switch (alloc) {
    case RateAlloc::kUniform:
      return std::vector<int>(counts.size(), 0);
    case RateAlloc::kThirds:
      if (counts.size() >= 3 && (ladder.min_offset > -1 || ladder.max_offset < 1))
        return invalid_argument("--alloc thirds needs one rate step above and below the requested rate; the "
                                "ladder allows " + std::to_string(ladder.min_offset) + ".." +
                                std::to_string(ladder.max_offset) + " steps of " + std::to_string(ladder.step_bits) +
                                " bits");
      return thirds(counts);
    case RateAlloc::kWaterfill:
      if (!(ladder.step_bits > 0)) return invalid_argument("--alloc waterfill needs a rate ladder with a positive step");
      return waterfill(counts, ladder);
  }
  return internal_error("rate allocation: unknown policy");
}

}  // namespace submoe::calib
