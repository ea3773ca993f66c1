#include "submoe/model/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace submoe::model {
namespace {

uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

Status validate(const SamplerOptions& o) {
  if (!std::isfinite(o.temperature)) return invalid_argument("temperature must be finite");
  if (o.top_k < 0) return invalid_argument("top-k must be >= 0 (0 = no limit), got " + std::to_string(o.top_k));
  if (!(o.top_p > 0.0f && o.top_p <= 1.0f))
    return invalid_argument("top-p must be in (0, 1], got " + std::to_string(o.top_p));
  return Status::ok();
}

int32_t argmax(std::span<const float> values) {
  int32_t best = 0;
  bool have = false;
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) continue;
    if (!have || values[i] > values[static_cast<size_t>(best)]) {
      best = static_cast<int32_t>(i);
      have = true;
    }
  }
  return best;
}

Sampler::Sampler(const SamplerOptions& options) : options_(options), state_(options.seed) {}

double Sampler::next_uniform() { return static_cast<double>(splitmix64(&state_) >> 11) * 0x1.0p-53; }

void Sampler::candidates(std::span<const float> logits, std::vector<Candidate>* out) const {
  out->clear();
  const float inv_t = 1.0f / options_.temperature;
  out->reserve(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    // NaN logits can never be sampled; -inf ones get probability 0 below.
    if (std::isnan(logits[i])) continue;
    out->push_back({static_cast<int32_t>(i), logits[i] * inv_t});
  }
  if (out->empty()) return;
  auto before = [](const Candidate& a, const Candidate& b) { return a.p > b.p || (a.p == b.p && a.id < b.id); };
  const bool need_order = options_.top_p < 1.0f;
  if (options_.top_k > 0 && static_cast<size_t>(options_.top_k) < out->size()) {
    const auto kth = out->begin() + options_.top_k;
    std::nth_element(out->begin(), kth - 1, out->end(), before);
    out->resize(static_cast<size_t>(options_.top_k));
  }
  if (need_order) std::sort(out->begin(), out->end(), before);
  float mx = -std::numeric_limits<float>::infinity();
  for (const Candidate& c : *out) mx = std::max(mx, c.p);
  if (!std::isfinite(mx)) {
    // Every logit is -inf (or +inf): fall back to a uniform choice among the maxima.
    size_t n = 0;
    for (Candidate& c : *out) {
      c.p = (c.p == mx) ? 1.0f : 0.0f;
      if (c.p > 0.0f) ++n;
    }
    for (Candidate& c : *out) c.p /= static_cast<float>(n);
    return;
  }
  double sum = 0.0;
  for (Candidate& c : *out) {
    c.p = std::exp(c.p - mx);
    sum += c.p;
  }
  for (Candidate& c : *out) c.p = static_cast<float>(c.p / sum);
  if (need_order) {
    double mass = 0.0;
    size_t keep = 0;
    while (keep < out->size()) {
      mass += (*out)[keep].p;
      ++keep;
      if (mass >= options_.top_p) break;
    }
    out->resize(keep);
    for (Candidate& c : *out) c.p = static_cast<float>(c.p / mass);
  }
}

int32_t Sampler::sample(std::span<const float> logits) {
  if (options_.temperature <= 0.0f) return argmax(logits);
  candidates(logits, &scratch_);
  if (scratch_.empty()) return argmax(logits);
  const double u = next_uniform();
  double cum = 0.0;
  for (const Candidate& c : scratch_) {
    cum += c.p;
    if (u < cum) return c.id;
  }
  // Rounding left the total a hair under 1: take the last token with mass.
  for (size_t i = scratch_.size(); i-- > 0;)
    if (scratch_[i].p > 0.0f) return scratch_[i].id;
  return scratch_.back().id;
}

std::vector<float> Sampler::distribution(std::span<const float> logits) const {
  std::vector<float> dist(logits.size(), 0.0f);
  if (logits.empty()) return dist;
  if (options_.temperature <= 0.0f) {
    dist[static_cast<size_t>(argmax(logits))] = 1.0f;
    return dist;
  }
  std::vector<Candidate> c;
  candidates(logits, &c);
  for (const Candidate& x : c) dist[static_cast<size_t>(x.id)] = x.p;
  return dist;
}

}  // namespace submoe::model
