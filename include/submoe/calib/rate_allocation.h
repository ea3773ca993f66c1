// Popularity-conditioned rates (seed 001, "Frequency-Conditioned Bit
// Allocation"): per-expert offsets on a representation's rate ladder from the
// experts' routing counts in one layer, with the layer's mean rate exactly the
// requested one. docs/allocation.md derives the rules and the rounding.
//
//   uniform    every expert at the requested rate (offset 0);
//   thirds     the seed's rank rule: the floor(E/3) most-routed experts of the
//              layer +1 step, the floor(E/3) least-routed -1 step, the rest 0;
//              ties in count are ranked by the lower expert index first;
//   waterfill  reverse water-filling for D(r) ~ 2^-2r:
//              r_e = r + 1/2 log2(pi_e / geometric mean of pi), in ladder steps
//              x_e = (r_e - r) / step, then the integer offsets k_e nearest to
//              x_e in squared distance with sum k_e = 0 and every k_e inside the
//              ladder (a separable convex integer problem, solved exactly by
//              unit moves of least marginal cost from the clamped floors).
//              pi_e = (count_e + 1/2) / (N + E/2): Jeffreys smoothing, so an
//              expert never routed in calibration gets a defined, low rate.
// Every expert has the same shape, so equal mean offset = equal mean bits.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "submoe/core/status.h"

namespace submoe::calib {

enum class RateAlloc { kUniform, kThirds, kWaterfill };

// "uniform" | "thirds" | "waterfill"; anything else is kInvalidArgument naming them.
Result<RateAlloc> parse_rate_alloc(std::string_view name);
std::string_view rate_alloc_name(RateAlloc a);

// The steps a ladder allows around the requested rate: offsets in
// [min_offset, max_offset] (min_offset <= 0 <= max_offset), `step_bits` bits each.
struct LadderRange {
  int min_offset = 0, max_offset = 0;
  double step_bits = 0;
};

// Offsets for the experts of one layer from their routing counts (counts.size()
// = experts >= 1). Errors: thirds on a ladder without a step on either side,
// a non-positive step for waterfill, an empty layer. Deterministic.
Result<std::vector<int>> allocate_rates(RateAlloc alloc, std::span<const uint64_t> counts, const LadderRange& ladder);

}  // namespace submoe::calib
