// Popularity profiles and the popularity-pinned hit-rate model (seed 001,
// "Cache Policy and the LRU Threshold": the hit rate of a pinned cache is the
// popularity mass of the pinned set).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "projection_internal.h"
#include "submoe/eval/projection.h"

namespace submoe::eval {
namespace {

Status check_dims(int64_t layers, int64_t experts, int64_t top_k) {
  if (layers < 1 || experts < 1 || top_k < 1) return invalid_argument("profile: layers, experts and top_k must be >= 1");
  if (top_k > experts) return invalid_argument("profile: top_k exceeds the number of experts");
  if (layers * experts > (int64_t{1} << 28)) return invalid_argument("profile: too many expert slots");
  return Status::ok();
}

}  // namespace

Result<std::vector<double>> cap_shares(std::vector<double> shares, double cap) {
  if (shares.empty()) return invalid_argument("cap_shares: no shares");
  if (!(cap > 0) || static_cast<double>(shares.size()) * cap < 1.0 - 1e-12) {
    return invalid_argument("cap_shares: n * cap must be >= 1");
  }
  double sum = 0;
  for (double s : shares) {
    if (!(s >= 0) || !std::isfinite(s)) return invalid_argument("cap_shares: shares must be finite and >= 0");
    sum += s;
  }
  if (!(sum > 0)) return invalid_argument("cap_shares: shares sum to zero");
  for (double& s : shares) s /= sum;
  std::vector<bool> capped(shares.size(), false);
  // Each pass caps at least one more share or stops, so at most n passes.
  for (size_t pass = 0; pass <= shares.size(); ++pass) {
    double free_mass = 1.0, free_sum = 0;
    size_t free_count = 0;
    for (size_t i = 0; i < shares.size(); ++i) {
      if (capped[i]) {
        free_mass -= cap;
      } else {
        free_sum += shares[i];
        ++free_count;
      }
    }
    free_mass = std::max(0.0, free_mass);
    // Mass left over with only zero shares uncapped (experts a trace never saw)
    // has no ratio to keep: it is spread evenly.
    const bool spread = free_sum <= 0 && free_count > 0;
    const double scale = free_sum > 0 ? free_mass / free_sum : 0.0;
    bool changed = false;
    for (size_t i = 0; i < shares.size(); ++i) {
      if (capped[i]) {
        shares[i] = cap;
        continue;
      }
      shares[i] = spread ? free_mass / static_cast<double>(free_count) : shares[i] * scale;
      if (shares[i] > cap * (1 + 1e-12)) {
        capped[i] = true;
        changed = true;
      }
    }
    if (!changed) break;
  }
  return shares;
}

Result<PopularityProfile> uniform_profile(int64_t layers, int64_t experts, int64_t top_k) {
  SUBMOE_RETURN_IF_ERROR(check_dims(layers, experts, top_k));
  PopularityProfile p;
  p.layers = layers;
  p.experts = experts;
  p.top_k = top_k;
  p.share.assign(static_cast<size_t>(layers * experts), 1.0 / static_cast<double>(experts));
  p.source = "uniform";
  return p;
}

Result<PopularityProfile> zipf_profile(int64_t layers, int64_t experts, int64_t top_k, double s) {
  SUBMOE_RETURN_IF_ERROR(check_dims(layers, experts, top_k));
  if (!(s >= 0) || s > 50) return invalid_argument("zipf exponent must be in [0, 50]");
  std::vector<double> layer(static_cast<size_t>(experts));
  for (int64_t i = 0; i < experts; ++i) layer[static_cast<size_t>(i)] = std::pow(static_cast<double>(i + 1), -s);
  SUBMOE_ASSIGN_OR_RETURN(layer, cap_shares(std::move(layer), 1.0 / static_cast<double>(top_k)));
  PopularityProfile p;
  p.layers = layers;
  p.experts = experts;
  p.top_k = top_k;
  p.share.reserve(static_cast<size_t>(layers * experts));
  for (int64_t l = 0; l < layers; ++l) p.share.insert(p.share.end(), layer.begin(), layer.end());
  char buf[64];
  std::snprintf(buf, sizeof(buf), "zipf:%g", s);
  p.source = buf;
  return p;
}

Result<PopularityProfile> profile_from_counts(const std::vector<uint64_t>& counts, int64_t trace_layers,
                                              int64_t experts, int64_t layers, int64_t top_k, std::string source) {
  SUBMOE_RETURN_IF_ERROR(check_dims(layers, experts, top_k));
  if (trace_layers < 1 || counts.size() != static_cast<size_t>(trace_layers * experts)) {
    return invalid_argument("profile: counts must hold trace_layers x experts entries");
  }
  PopularityProfile p;
  p.layers = layers;
  p.experts = experts;
  p.top_k = top_k;
  p.source = std::move(source);
  p.share.reserve(static_cast<size_t>(layers * experts));
  for (int64_t l = 0; l < layers; ++l) {
    const int64_t tl = l * trace_layers / layers;
    std::vector<double> layer(static_cast<size_t>(experts));
    for (int64_t e = 0; e < experts; ++e) layer[static_cast<size_t>(e)] = double(counts[size_t(tl * experts + e)]);
    auto capped = cap_shares(std::move(layer), 1.0 / static_cast<double>(top_k));
    if (!capped.is_ok()) return capped.status().with_context("trace layer " + std::to_string(tl));
    p.share.insert(p.share.end(), capped->begin(), capped->end());
  }
  return p;
}

std::vector<uint8_t> pinned_slots(const PopularityProfile& profile, int64_t capacity_slots) {
  const size_t n = profile.share.size();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  const size_t c = static_cast<size_t>(std::clamp<int64_t>(capacity_slots, 0, static_cast<int64_t>(n)));
  // Ties go to the lower slot index so the set is deterministic.
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(c), order.end(),
                    [&](uint32_t a, uint32_t b) {
                      return profile.share[a] != profile.share[b] ? profile.share[a] > profile.share[b] : a < b;
                    });
  std::vector<uint8_t> pinned(n, 0);
  for (size_t i = 0; i < c; ++i) pinned[order[i]] = 1;
  return pinned;
}

double pinned_hit_rate(const PopularityProfile& profile, int64_t capacity_slots) {
  if (profile.layers <= 0 || profile.share.empty()) return 0;
  const std::vector<uint8_t> pinned = pinned_slots(profile, capacity_slots);
  double mass = 0;
  for (size_t i = 0; i < pinned.size(); ++i) mass += pinned[i] ? profile.share[i] : 0.0;
  return std::min(1.0, mass / static_cast<double>(profile.layers));
}

StepLoads step_loads(const PopularityProfile& profile, const std::vector<uint8_t>& pinned, uint32_t batch) {
  StepLoads s;
  const double k = static_cast<double>(profile.top_k);
  for (size_t i = 0; i < profile.share.size(); ++i) {
    const double pi = std::min(1.0, k * profile.share[i]);
    // P(at least one of `batch` independent tokens picks this expert).
    const double load = pi >= 1.0 ? 1.0 : batch == 1 ? pi : -std::expm1(static_cast<double>(batch) * std::log1p(-pi));
    (pinned[i] ? s.resident : s.missed) += load;
  }
  return s;
}

}  // namespace submoe::eval
