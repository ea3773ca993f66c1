// The deterministic N(0,1) generator of rvq.h (splitmix64 + Box-Muller).
#include <cmath>
#include <numbers>

#include "codec/rvq/rvq_internal.h"
#include "submoe/codec/rvq.h"

namespace submoe::rvq {

uint64_t SplitMix64::next() {
  state_ += 0x9e3779b97f4a7c15ULL;
  return detail::mix64(state_);
}

double SplitMix64::uniform_open0() { return static_cast<double>((next() >> 11) + 1) * 0x1.0p-53; }

void fill_gaussian(std::span<float> out, uint64_t seed) {
  SplitMix64 rng(seed);
  for (size_t i = 0; i < out.size(); i += 2) {
    const double u1 = rng.uniform_open0();
    const double u2 = rng.uniform_open0();
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * std::numbers::pi * u2;
    out[i] = static_cast<float>(radius * std::cos(angle));
    if (i + 1 < out.size()) out[i + 1] = static_cast<float>(radius * std::sin(angle));
  }
}

std::vector<float> gaussian_vectors(size_t count, uint64_t seed) {
  std::vector<float> v(count * kRvqDim);
  fill_gaussian(v, seed);
  return v;
}

}  // namespace submoe::rvq
